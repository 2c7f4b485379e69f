"""Turning a trained translation model into text.

``translate`` is model-agnostic: it tokenizes and batches the source sentences, calls a decoding
function such as ``course_lib.rnn.greedy_decode(model, src, max_len) -> (B, L) ids`` on each batch
and turns the ids back into corpus text, in the order of the input.

``beam_search`` decodes a Transformer-style model (``encode`` / ``decode(..., cache=)``) through a
``course_lib.kv_cache.DecoderCache``; ``beam_size=1`` is greedy decoding, so
``course_lib.transformer.greedy_decode`` uses it. Pass it to ``translate`` with
``functools.partial(beam_search, beam_size=4)``.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch import nn

from course_lib.kv_cache import DecoderCache
from course_lib.text import BOS_ID, EOS_ID, PAD_ID, Vocab, detokenize, pad_batch, tokenize
from course_lib.train import eval_mode

DecodeFn = Callable[[nn.Module, torch.Tensor, int], torch.Tensor]


@torch.no_grad()
def translate(decode_fn: DecodeFn, model: nn.Module, sources: Sequence[str], src_vocab: Vocab,
              tgt_vocab: Vocab, max_len: int | None = None, batch_size: int = 128,
              device: torch.device | str = "cpu") -> list[str]:
    """Translate ``sources`` (text) with ``decode_fn(model, src (B, S), max_len) -> ids (B, L)``.

    Sentences are decoded in batches of similar length (sorted, then restored to input order).
    ``max_len=None`` allows each sentence ``2 * S + 10`` target tokens, S its own source length
    (a hypothesis never depends on its batch-mates). Returns one detokenized hypothesis per source.
    """
    with eval_mode(model):
        encoded = [src_vocab.encode(tokenize(s)) for s in sources]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        hyps: list[str] = [""] * len(encoded)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            src = pad_batch([encoded[i] or [PAD_ID] for i in idx]).to(device)  # (B, S)
            limit = max_len if max_len is not None else 2 * src.shape[1] + 10
            ys = decode_fn(model, src, limit)  # (B, L)
            for i, row in zip(idx, ys.tolist()):
                own = max_len if max_len is not None else 2 * len(encoded[i]) + 10
                hyps[i] = detokenize(tgt_vocab.decode(row[:own]))
    return hyps


@torch.no_grad()
def beam_search(model: nn.Module, src: torch.Tensor, max_len: int, beam_size: int = 4,
                alpha: float = 0.6) -> torch.Tensor:
    """Beam search with length normalisation, decoding incrementally through a ``DecoderCache``.

    ``model`` offers ``encode(src) -> memory (B, S, d)`` and ``decode(tokens, memory, src_mask,
    cache=cache) -> logits (B, T, V)`` (``course_lib.transformer.Transformer``). Each sentence keeps
    the ``beam_size`` prefixes of highest total log-probability; a prefix that has produced <eos>
    is finished and only extended by <pad> at no cost. At the end each sentence returns the
    hypothesis with the best *normalised* score ``log p / lp``, ``lp = ((5 + length) / 6) ** alpha``
    (GNMT's length penalty: without it, every extra token lowers log p and short outputs win).
    ``beam_size=1`` is greedy decoding. src: (B, S) -> ys: (B, L), without <bos>, <pad> after <eos>.
    """
    with eval_mode(model):
        B, k, device = src.shape[0], beam_size, src.device
        memory = model.encode(src).repeat_interleave(
            k, dim=0)  # (B*k, S, d): row b*k + j is beam j of sentence b
        src_mask = (src != PAD_ID)[:, None, None, :].repeat_interleave(k, dim=0)  # (B*k, 1, 1, S)
        cache = DecoderCache()
        scores = torch.zeros(B, k, device=device)  # total log-probability of each beam
        scores[:, 1:] = float(
            "-inf")  # all beams start as the same <bos>: keep one, or the beam fills with copies
        tokens = torch.full((B * k, 1), BOS_ID, dtype=torch.long, device=device)  # (B*k, 1) the next input
        finished = torch.zeros(B * k, dtype=torch.bool, device=device)
        history: list[torch.Tensor] = []  # one (B*k,) tensor of chosen ids per step
        for _ in range(max_len):
            logp = model.decode(tokens, memory, src_mask, cache=cache)[:, -1].float().log_softmax(
                -1)  # (B*k, V)
            V = logp.shape[-1]
            logp[finished] = float("-inf")
            logp[finished, PAD_ID] = 0.0  # a finished hypothesis stays as it is
            candidates = (scores.view(-1, 1) + logp).view(B, k * V)  # every beam × every next token
            scores, flat = candidates.topk(k, dim=-1)  # (B, k) each
            rows = (torch.arange(B, device=device)[:, None] * k + flat // V).view(
                -1)  # (B*k,) beam each came from
            chosen = (flat % V).view(-1)  # (B*k,)
            history = [h[rows] for h in history] + [chosen]
            finished = finished[rows] | (chosen == EOS_ID)
            cache.reorder(rows)
            tokens = chosen[:, None]  # (B*k, 1)
            if bool(finished.all()):
                break
    if not history:
        return torch.zeros(B, 0, dtype=torch.long, device=device)
    ys = torch.stack(history, dim=1)  # (B*k, L)
    L = ys.shape[1]
    is_eos = ys == EOS_ID
    length = torch.where(is_eos.any(1),
                         is_eos.float().argmax(1) + 1, torch.full_like(ys[:, 0], L)).float()  # (B*k,)
    normalised = scores.view(-1) / ((5 + length) / 6) ** alpha  # (B*k,)
    best = normalised.view(B, k).argmax(dim=1)  # (B,)
    return ys.view(B, k, L)[torch.arange(B, device=device), best]  # (B, L)


__all__ = ["beam_search", "translate"]
