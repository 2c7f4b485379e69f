"""Sampling the next token and generating text with a decoder-only model (notebook 07's references).

    token = sample_next(logits, temperature=0.8, top_p=0.9)          # logits (B, V) -> (B,)
    out = generate(model, prompt, 200, temperature=0.8, use_cache=True)  # (B, T0) -> (B, T0 + 200)

The rules, exactly:

* ``temperature == 0``: the argmax (the lowest index among equal maxima); no randomness is used.
* otherwise the logits are divided by the temperature, then filtered, then softmaxed;
* ``top_k``: keep every token whose logit is ≥ the k-th largest (ties at the boundary are all kept);
* ``top_p``: with p_i the probabilities after temperature and top-k, keep token i when the total
  probability of the tokens *strictly* more probable than i is < top_p. So the token that crosses
  top_p is kept, the most probable token always is, and tied tokens are kept or dropped together.
* the token is drawn with ``torch.multinomial(probs, 1, generator=generator)``.
"""
from __future__ import annotations

import torch

from course_lib.gpt import KVCache
from course_lib.train import eval_mode


def sample_next(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """logits (B, V) -> next tokens (B,) int64, by the rules of the module docstring."""
    if temperature == 0:
        return logits.argmax(dim=-1)                                                   # (B,)
    logits = logits.float() / temperature                                              # (B, V)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]                         # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(dim=-1)                                                     # (B, V)
    if top_p is not None and top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)                          # (B, V) each
        mass = sorted_p.cumsum(dim=-1)                                                 # (B, V)
        # the mass strictly above each sorted token: the cumulative sum before the first token of its tie
        first_of_tie = torch.searchsorted(-sorted_p, -sorted_p, side="left")           # (B, V): index of first equal
        above = torch.where(first_of_tie > 0, mass.gather(-1, (first_of_tie - 1).clamp(min=0)),
                            torch.zeros_like(mass))                                    # (B, V)
        keep_sorted = above < top_p                                                    # (B, V)
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)           # back to vocabulary order
        probs = probs * keep
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]                     # (B,)


@torch.no_grad()
def generate(model, prompt: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, use_cache: bool = True,
             generator: torch.Generator | None = None) -> torch.Tensor:
    """prompt (B, T0) -> (B, T0 + max_new_tokens): the prompt followed by the sampled tokens.

    With ``use_cache`` the prompt goes through the model once and every later step feeds only the
    newest token (``model(token, caches=caches)`` with one ``KVCache`` per block); without, every
    step feeds the whole sequence. The model is put in eval mode and left as it was found.
    """
    caches = [KVCache() for _ in model.blocks] if use_cache else None
    out, step_input = prompt, prompt                                                   # (B, T0)
    with eval_mode(model):
        for _ in range(max_new_tokens):
            logits = model(step_input, caches=caches)[:, -1]                           # (B, V)
            token = sample_next(logits, temperature, top_k, top_p, generator)[:, None]  # (B, 1)
            out = torch.cat([out, token], dim=1)                                       # (B, T + 1)
            step_input = token if use_cache else out
    return out


__all__ = ["generate", "sample_next"]
