"""A small causal language model for notebook 07's checks of generate and the training loop.

It is none of the graded classes (the grader replaces those in a student's sandbox), so the checks
of ``generate``, ``configure_optimizer`` and ``train_step`` can hand it to the student's code there.
It keeps the protocol of ``course_lib.gpt.GPT``: ``forward(tokens (B, T), caches=None) -> (B, T, V)``,
``self.blocks`` (one ``KVCache`` per block), and it has every kind of parameter an optimizer must
sort: embeddings (token and position), LayerNorm weights and biases, matrices with and without
biases, and an output layer tied to the token embedding or not. It also counts the positions fed
to it (``positions_fed``), which shows what a KV cache saves.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.gpt import KVCache


class _Mixer(nn.Module):
    """One single-head causal attention layer: x + proj(attend(norm(x))), with keys = values = norm(x)."""

    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.query = nn.Linear(d, d, bias=False)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        h = self.norm(x)                                                          # (B, T, d)
        kv = h[:, None]                                                           # (B, 1, T, d)
        T = x.shape[1]
        if cache is not None:
            kv, _ = cache.append(kv, kv)                                          # (B, 1, T_k, d)
        T_k = kv.shape[2]
        may = torch.ones(T, T_k, dtype=torch.bool, device=x.device).tril(T_k - T)   # (T, T_k)
        y = F.scaled_dot_product_attention(self.query(h)[:, None], kv, kv, attn_mask=may)  # (B, 1, T, d)
        return x + self.proj(y[:, 0])                                             # (B, T, d)


class StandInLM(nn.Module):
    """Token + position embeddings, ``n_layers`` mixers, LayerNorm, output layer (tied by default)."""

    def __init__(self, vocab_size: int = 11, d: int = 16, n_layers: int = 2, max_len: int = 64,
                 tie: bool = True):
        super().__init__()
        self.tok_embed = nn.Embedding(vocab_size, d)
        self.pos_embed = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList([_Mixer(d) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab_size, bias=False)
        for table in (self.tok_embed, self.pos_embed):  # small embeddings: a tied output starts near uniform
            nn.init.normal_(table.weight, std=0.3)
        if tie:
            self.out.weight = self.tok_embed.weight
        self.positions_fed = 0  # positions fed to forward since construction (or the last reset)

    def forward(self, tokens: torch.Tensor, caches: list[KVCache] | None = None) -> torch.Tensor:
        self.positions_fed += tokens.shape[1]
        start = caches[0].length if caches else 0
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)  # (T,)
        x = self.tok_embed(tokens) + self.pos_embed(positions)                           # (B, T, d)
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i] if caches else None)
        return self.out(self.norm(x))                                                    # (B, T, V)


__all__ = ["StandInLM"]
