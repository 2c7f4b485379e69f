"""Attention (notebooks 02 and 03): softmax, scaled dot-product and additive attention, masks,
and multi-head attention.

These are the reference versions of the graded exercises, so that later notebooks build on a
correct implementation even when a student's is wrong. They are tested against torch's own
``softmax``, ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``.

Masks are boolean with ``True`` = *may attend* (the meaning of a boolean ``attn_mask`` in
``F.scaled_dot_product_attention``), broadcastable to ``(B, h, T_q, T_k)``. A query whose keys are
all masked gets zero weights (and a zero output), never NaN.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.text import PAD_ID


# --------------------------------------------------------------------------- softmax
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along ``dim``: ``exp(x - max) / sum(exp(x - max))``.

    Subtracting the row maximum changes nothing mathematically (it cancels in the ratio) but keeps
    every exponent ≤ 0, so ``exp`` never overflows. x: (..., n) -> (..., n)
    """
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None, dim: int = -1) -> torch.Tensor:
    """Softmax of ``scores`` over the positions where ``mask`` is True; zero elsewhere.

    scores: (..., T_q, T_k), mask: bool, broadcastable to scores (True = may attend)
    -> weights (..., T_q, T_k). A row with no True entry gets all-zero weights, not NaN.
    """
    if mask is None:
        return softmax(scores, dim=dim)
    scores = scores.masked_fill(~mask, float("-inf"))
    row_max = scores.amax(dim=dim, keepdim=True)
    # A fully masked row has max -inf and (-inf) - (-inf) = NaN: shift such rows by 0 instead.
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)  # exactly 0 where masked
    # Clamping the sum keeps 0 / 0 from fully masked rows at 0; other rows have a sum ≥ 1.
    return e / e.sum(dim=dim, keepdim=True).clamp_min(torch.finfo(e.dtype).tiny)


# --------------------------------------------------------------------------- single-head attention
def attention_lookup(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """A soft dictionary lookup: compare one query with every key, softmax the similarities,
    return the weighted sum of the values.

    query: (d_k,), keys: (n, d_k), values: (n, d_v) or (n,) -> (output: (d_v,) or (), weights: (n,))
    """
    weights = softmax(keys @ query, dim=-1)  # (n,) similarity of the query to each key
    return weights @ values, weights


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(q kᵀ / √d_k) v``, returning the weights as well.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v), mask: bool broadcastable to
    (..., T_q, T_k) -> (output: (..., T_q, d_v), weights: (..., T_q, T_k))
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)
    return weights @ v, weights  # (..., T_q, d_v)


class AdditiveAttention(nn.Module):
    """Bahdanau's additive attention ``e_ij = v · tanh(W_q q_i + W_k k_j)``.

    The keys' projection ``W_k k_j`` does not depend on the query, so a decoder that attends to
    the same keys at every step computes it once (``project_keys``) and calls ``attend``.
    """

    def __init__(self, d_query: int, d_key: int, d_attn: int):
        super().__init__()
        self.W_q = nn.Linear(d_query, d_attn, bias=False)
        self.W_k = nn.Linear(d_key, d_attn, bias=False)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """keys: (B, T_k, d_key) -> W_k keys: (B, T_k, d_attn)."""
        return self.W_k(keys)

    def attend(self, query: torch.Tensor, projected_keys: torch.Tensor, values: torch.Tensor,
               mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """query: (B, T_q, d_query), projected_keys: (B, T_k, d_attn), values: (B, T_k, d_v),
        mask: bool broadcastable to (B, T_q, T_k) -> (context: (B, T_q, d_v), weights: (B, T_q, T_k))."""
        # Every (query, key) pair gets its own d_attn-vector: (B, T_q, T_k, d_attn) in memory.
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))
        scores = self.v(hidden).squeeze(-1)  # (B, T_q, T_k)
        weights = masked_softmax(scores, mask)
        return weights @ values, weights  # (B, T_q, d_v)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """query: (B, T_q, d_query), keys: (B, T_k, d_key), values: (B, T_k, d_v)
        -> (context: (B, T_q, d_v), weights: (B, T_q, T_k))."""
        return self.attend(query, self.project_keys(keys), values, mask)


# --------------------------------------------------------------------------- masks and heads
def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(T, T) bool, True on and below the diagonal: position i may attend to positions j ≤ i."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(tokens: torch.Tensor, pad_id: int = PAD_ID) -> torch.Tensor:
    """tokens: (B, T_k) -> (B, 1, 1, T_k) bool, True where the key is a real token (not padding)."""
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, T_k): broadcast over heads and queries


def split_heads(x: torch.Tensor, h: int) -> torch.Tensor:
    """x: (B, T, d_model) -> (B, h, T, d_head) with d_head = d_model // h; head i holds features
    i·d_head ... (i+1)·d_head - 1."""
    B, T, d_model = x.shape
    return x.view(B, T, h, d_model // h).transpose(1, 2)  # (B, T, h, d_head) -> (B, h, T, d_head)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """x: (B, h, T, d_head) -> (B, T, h·d_head), the inverse of ``split_heads``."""
    B, h, T, d_head = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_head)  # (B, T, h, d_head) -> (B, T, d_model)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend in each head, merge, project.

    ``forward`` matches ``nn.MultiheadAttention(batch_first=True)`` after ``load_from_torch``.
    Without ``need_weights`` it calls the fused ``F.scaled_dot_product_attention``, which never
    materialises the (B, h, T_q, T_k) weights.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, need_weights: bool = True,
                average_attn_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """query: (B, T_q, d_model), key/value: (B, T_k, d_model), mask: bool broadcastable to
        (B, h, T_q, T_k) -> (output: (B, T_q, d_model), weights: (B, T_q, T_k) averaged over
        heads, or (B, h, T_q, T_k) with ``average_attn_weights=False``, or None without ``need_weights``)."""
        h = self.n_heads
        q = split_heads(self.q_proj(query), h)  # (B, h, T_q, d_head)
        k = split_heads(self.k_proj(key), h)  # (B, h, T_k, d_head)
        v = split_heads(self.v_proj(value), h)  # (B, h, T_k, d_head)
        p = self.dropout if self.training else 0.0
        if not need_weights:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            weights = None
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, h, T_q, T_k)
            weights = masked_softmax(scores, mask)
            out = F.dropout(weights, p) @ v  # (B, h, T_q, d_head)
            if average_attn_weights:
                weights = weights.mean(dim=1)  # (B, T_q, T_k)
        return self.out_proj(merge_heads(out)), weights  # (B, T_q, d_model)

    @torch.no_grad()
    def load_from_torch(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy the weights of ``nn.MultiheadAttention`` (same d_model, heads and bias); returns self.

        torch keeps the three input projections stacked in ``in_proj_weight`` (3·d_model, d_model).
        """
        if mha.embed_dim != self.d_model or mha.num_heads != self.n_heads or mha.in_proj_weight is None:
            raise ValueError(
                "nn.MultiheadAttention must have the same d_model and heads, and kdim = vdim = d_model")
        if (mha.in_proj_bias is None) != (self.q_proj.bias is None):
            raise ValueError("both modules must have biases, or neither")
        for proj, w in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_weight.chunk(3)):
            proj.weight.copy_(w)  # (d_model, d_model), the (out, in) layout of nn.Linear
        if mha.in_proj_bias is not None:
            for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_bias.chunk(3)):
                proj.bias.copy_(b)
            self.out_proj.bias.copy_(mha.out_proj.bias)
        self.out_proj.weight.copy_(mha.out_proj.weight)
        return self


__all__ = ["AdditiveAttention", "MultiHeadAttention", "attention_lookup", "causal_mask", "masked_softmax",
           "merge_heads", "padding_mask", "scaled_dot_product_attention", "softmax", "split_heads"]
