"""Sampling the next token and generating text with a decoder-only model (notebook 07's references).

    token = sample_next(logits, temperature=0.8, top_p=0.9)          # logits (B, V) -> (B,)
    out = generate(model, prompt, 200, temperature=0.8, use_cache=True)  # (B, T0) -> (B, T0 + 200)

The rules, exactly:

* ``temperature == 0``: the argmax (the lowest index among equal maxima); no randomness is used.
* otherwise the logits are divided by the temperature, then filtered, then softmaxed;
* ``top_k``: keep every token whose logit is ≥ the k-th largest (ties at the boundary are all kept);
* ``top_p``: keep the smallest set of most probable tokens whose total probability reaches top_p,
  equally probable tokens taken lowest index first: with the probabilities after temperature and
  top-k sorted from most to least probable by a stable sort, keep every token whose predecessors
  in that order total less than top_p. So the token that crosses top_p is kept, the most probable
  token always is, and nothing more once the total has reached top_p exactly.
* the token is drawn with ``torch.multinomial(probs, 1, generator=generator)``.

``generate`` stays inside the context the model was trained on: a model with a ``config.max_len``
(course_lib's ``GPT``, whose ``max_len`` the notebook sets to the training window) refuses a prompt
plus new tokens longer than that, because positions it never trained at are predicted far worse
(notebook 07 plots the loss per position). ``check_context`` is that test, for other loops.
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
        sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)             # (B, V) each
        keep_sorted = sorted_p.cumsum(dim=-1) - sorted_p < top_p  # predecessors' total < p
        keep = keep_sorted.scatter(-1, order, keep_sorted)  # back to vocabulary order
        probs = probs * keep
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]                     # (B,)


def trained_context(model) -> int | None:
    """The longest sequence ``model`` was trained on (``model.config.max_len``), or None if it does not
    say."""
    return getattr(getattr(model, "config", None), "max_len", None)


def check_context(model, length: int) -> None:
    """Raise ValueError if ``length`` positions do not fit in the context ``model`` was trained on."""
    context = trained_context(model)
    if context is not None and length > context:
        raise ValueError(
            f"{length} positions, but the model was trained on windows of {context}: ask for at most "
            f"{context} positions in all (prompt + new tokens), or crop the prompt")


@torch.no_grad()
def generate(model, prompt: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, use_cache: bool = True,
             generator: torch.Generator | None = None) -> torch.Tensor:
    """prompt (B, T0) -> (B, T0 + max_new_tokens): the prompt followed by the sampled tokens.

    With ``use_cache`` the prompt goes through the model once and every later step feeds only the
    newest token (``model(token, caches=caches)`` with one ``KVCache`` per block); without, every
    step feeds the whole sequence. The model is put in eval mode and left as it was found.
    ``T0 + max_new_tokens`` must fit in the model's trained context (``check_context``).
    """
    check_context(model, prompt.shape[1] + max_new_tokens)
    caches = [KVCache() for _ in model.blocks] if use_cache else None
    out, step_input = prompt, prompt                                                   # (B, T0)
    with eval_mode(model):
        for _ in range(max_new_tokens):
            logits = model(step_input, caches=caches)[:, -1]                           # (B, V)
            token = sample_next(logits, temperature, top_k, top_p, generator)[:, None]  # (B, 1)
            out = torch.cat([out, token], dim=1)                                       # (B, T + 1)
            step_input = token if use_cache else out
    return out


__all__ = ["check_context", "generate", "sample_next", "trained_context"]
