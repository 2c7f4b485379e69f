"""Incremental decoding: a key/value cache, and the multi-head attention that fills and reads it.

A decoder that produces one token per step would, without a cache, recompute the keys and values
of every earlier target position at every step: O(L²) projections for L tokens. Those keys and
values never change (a causal decoder's position t only ever looks back), so we keep them:

    cache = DecoderCache()
    logits = model.decode(tokens_so_far, memory, src_mask, cache=cache)   # first call: the whole prefix
    logits = model.decode(next_token, memory, src_mask, cache=cache)      # then one (B, 1) token per step

Each decoder layer owns two ``KVCache`` slots: its self-attention's keys/values, which grow by
the new positions at every call, and its cross-attention's keys/values of the encoder output,
computed on the first call and reused (the source does not change while we decode).
``DecoderCache.reorder`` selects batch rows, which beam search needs when it prunes hypotheses.
Notebook 07's decoder-only GPT keeps one ``KVCache`` per block (``course_lib.gpt``).

``CachedMultiHeadAttention`` is ``course_lib.attention.MultiHeadAttention`` (same parameters, same
state dict) whose ``forward`` also takes a cache slot, a rotation for queries and keys (RoPE, from
``course_lib.positional``), ``is_causal`` (so the fused kernel can skip building a mask), and can
keep the attention weights of its last call for plotting.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from course_lib.attention import MultiHeadAttention, masked_softmax, merge_heads, split_heads

Rotate = Callable[[torch.Tensor], torch.Tensor]  # (B, h, T, d_head) -> same shape


@dataclass
class KVCache:
    """The keys and values one attention layer has seen so far (after RoPE), for incremental decoding."""

    k: torch.Tensor | None = None  # (B, h_kv, T_past, d_head) keys, RoPE already applied
    v: torch.Tensor | None = None  # (B, h_kv, T_past, d_head) values

    @property
    def length(self) -> int:
        """Positions already cached: the position of the next token fed to the layer."""
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new positions' k, v (B, h_kv, T, d_head); return all of them (B, h_kv, T_past + T,
        d_head)."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=2)
        return self.k, self.v


class DecoderCache:
    """Per decoder layer: self-attention keys/values of the decoded prefix, cross-attention ones of the
    source.

    ``length`` is the number of target positions already decoded (the position of the next token).
    Slots are created on first use, so the cache needs no knowledge of the model's depth.
    """

    def __init__(self) -> None:
        self.self_attn: list[KVCache] = []
        self.cross_attn: list[KVCache] = []
        self.length = 0

    def layer(self, i: int) -> tuple[KVCache, KVCache]:
        """The (self-attention, cross-attention) slots of decoder layer ``i``."""
        while len(self.self_attn) <= i:
            self.self_attn.append(KVCache())
            self.cross_attn.append(KVCache())
        return self.self_attn[i], self.cross_attn[i]

    def reorder(self, index: torch.Tensor) -> None:
        """Keep batch rows ``index`` (B_new,) of every cached tensor, in that order (beam search)."""
        for slot in (*self.self_attn, *self.cross_attn):
            if slot.k is not None:
                slot.k, slot.v = slot.k.index_select(0, index), slot.v.index_select(0, index)


class CachedMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` with a KV-cache slot, RoPE on queries and keys, and a fused self-attention path.

    Self-attention (``query is key is value``) projects q, k and v with one matrix product of the
    three stacked weights, as ``nn.MultiheadAttention`` does; the parameters stay the three
    separate ``q_proj``/``k_proj``/``v_proj`` layers of the parent class.
    """

    keep_weights = False  # set True to store each call's (B, h, T_q, T_k) weights in ``last_weights``

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, need_weights: bool = False,
                average_attn_weights: bool = True, *, cache: KVCache | None = None,
                static_kv: bool = False, rotate_q: Rotate | None = None, rotate_k: Rotate | None = None,
                is_causal: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """query: (B, T_q, d_model), key/value: (B, T_k, d_model), mask: bool broadcastable to
        (B, h, T_q, T_k) over the keys *including cached ones*.

        ``cache``: with ``static_kv`` (cross-attention) the keys/values are computed once and reused;
        without it (self-attention) the new keys/values are appended to the cached ones.
        ``rotate_q``/``rotate_k`` turn the new queries/keys (RoPE) before they are used or cached.
        ``is_causal``: query i sees keys j <= i (only without cached keys and without ``mask``).
        Returns (output: (B, T_q, d_model), weights or None as in the parent class).
        """
        h = self.n_heads
        if query is key and key is value:  # self-attention: one product for q, k and v
            weight = torch.cat([self.q_proj.weight, self.k_proj.weight,
                                self.v_proj.weight])  # (3 d_model, d_model)
            bias = (None if self.q_proj.bias is None
                    else torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]))
            q, k, v = (split_heads(t, h)
                       for t in F.linear(query, weight, bias).chunk(3, dim=-1))  # (B, h, T, d_head) each
        elif static_kv and cache is not None and cache.k is not None:
            q, k, v = split_heads(self.q_proj(query), h), None, None  # keys/values come from the cache
        else:
            q = split_heads(self.q_proj(query), h)  # (B, h, T_q, d_head)
            k = split_heads(self.k_proj(key), h)  # (B, h, T_k, d_head)
            v = split_heads(self.v_proj(value), h)  # (B, h, T_k, d_head)
        if rotate_q is not None:
            q = rotate_q(q)
        if k is not None and rotate_k is not None:
            k = rotate_k(k)
        if cache is not None:
            if k is None:
                k, v = cache.k, cache.v
            elif static_kv:
                cache.k, cache.v = k, v
            else:
                k, v = cache.append(k, v)  # (B, h, T_past + T_q, d_head)
        p = self.dropout if self.training else 0.0
        if not (need_weights or self.keep_weights):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                                 is_causal=is_causal and mask is None)  # (B, h, T_q, d_head)
            return self.out_proj(merge_heads(out)), None  # (B, T_q, d_model)
        if is_causal and mask is None:
            mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool,
                              device=q.device).tril()  # (T_q, T_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, h, T_q, T_k)
        weights = masked_softmax(scores, mask)
        out = F.dropout(weights, p) @ v  # (B, h, T_q, d_head)
        if self.keep_weights:
            self.last_weights = weights.detach()
        if need_weights and average_attn_weights:
            weights = weights.mean(dim=1)  # (B, T_q, T_k)
        return self.out_proj(merge_heads(out)), weights if need_weights else None


__all__ = ["CachedMultiHeadAttention", "DecoderCache", "KVCache"]
