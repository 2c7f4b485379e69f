"""A decoder-only language model, GPT-2 or Llama style (notebook 07's references).

    cfg = GPTConfig(vocab_size=69, d_model=128, n_layers=4, n_heads=4, d_ff=344, max_len=256)
    model = GPT(cfg)                          # Llama style: RMSNorm, SwiGLU, RoPE, no biases
    logits = model(tokens)                    # tokens (B, T) -> logits (B, T, V)
    caches = [KVCache() for _ in model.blocks]
    logits = model(tokens, caches=caches)     # the same, and the keys/values kept for the next step

Each block is pre-norm: ``x + attn(norm(x))`` then ``x + ffn(norm(x))``. ``style="gpt2"`` gives
LayerNorm, a GELU MLP and biases (with learned positions: GPT-2 itself). For notebook 07's ablations
``positional`` may be "rope", "learned", "sinusoidal" or "none" and ``score`` "dot" or "additive"
(the factorised additive score ``v·tanh(W_q x_i) + v·tanh(W_k x_j)``). Sampling and generation are in
``course_lib.sampling``, the training loop in ``course_lib.lm_train``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.kv_cache import KVCache
from course_lib.positional import apply_rope, sinusoidal_positional_encoding


@dataclass
class GPTConfig:
    vocab_size: int = 69            # V: tokens the model reads and predicts (characters here)
    d_model: int = 128              # width of every residual-stream vector
    n_layers: int = 4               # number of GPTBlocks
    n_heads: int = 4                # query heads; d_head = d_model // n_heads
    n_kv_heads: int | None = None   # key/value heads (grouped-query attention); None = n_heads
    d_ff: int = 344                 # hidden width of the FFN (Llama: about 8/3 d_model for SwiGLU)
    max_len: int = 256              # longest context: the training window (rows of a learned position table)
    positional: str = "rope"        # "rope" (rotate q, k), "learned", "sinusoidal" (added) or "none"
    tie_output: bool = True         # the output layer reuses the token embedding matrix
    style: str = "llama"            # "llama": RMSNorm, SwiGLU, no biases; "gpt2": LayerNorm, GELU MLP, biases
    score: str = "dot"              # attention score: "dot" (scaled dot product) or "additive" (below)
    dropout: float = 0.0            # dropout on attention weights and on each sublayer's output


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) * weight over the last axis; no mean subtracted, no bias.
    (..., d) -> (..., d)."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (..., 1)
        return x * rms * self.weight


class SwiGLU(nn.Module):
    """w2(silu(w1 x) * w3 x), three matrices without biases. (..., d_model) -> (..., d_model)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # the gate: goes through SiLU
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # the value it gates
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # back to d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MLP(nn.Module):
    """GPT-2's feed-forward: w2(gelu(w1 x)), with biases. (..., d_model) -> (..., d_model)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(x)))


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with RoPE on q and k and grouped-query attention.

    q_proj: d_model -> d_model; k_proj, v_proj: d_model -> n_kv_heads·d_head; out_proj: d_model -> d_model.
    Query head i reads key/value head i // (n_heads // n_kv_heads) (Llama's grouping).
    forward(x (B, T, d_model), cache: KVCache | None) -> (B, T, d_model); with a cache the new
    positions start at cache.length and attend to every cached position.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, rope: bool = True,
                 bias: bool = False, score: str = "dot", dropout: float = 0.0):
        super().__init__()
        n_kv_heads = n_kv_heads or n_heads
        if d_model % n_heads or n_heads % n_kv_heads:
            raise ValueError(
                f"need n_heads | d_model and n_kv_heads | n_heads; got {d_model}, {n_heads}, {n_kv_heads}")
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.rope, self.score, self.dropout = rope, score, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * self.d_head, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        # e_ij = v·tanh(q_i) + v·tanh(k_j), one v per head: the query term cancels in the softmax
        if score == "additive":
            self.v_score = nn.Parameter(torch.randn(n_heads, self.d_head) / math.sqrt(self.d_head))

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        B, T, _ = x.shape
        start = cache.length if cache is not None else 0
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)     # (B, h, T, d_head)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B, h_kv, T, d_head)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)  # (B, h_kv, T, d_head)
        if self.rope:
            positions = torch.arange(start, start + T, device=x.device)               # (T,)
            q, k = apply_rope(q, positions), apply_rope(k, positions)
        if cache is not None:
            k, v = cache.append(k, v)                                                 # (B, h_kv, T_k, d_head)
        group = self.n_heads // self.n_kv_heads
        if group > 1:
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, h, T_k, d_head)
        T_k = k.shape[2]
        p = self.dropout if self.training else 0.0
        if self.score == "dot" and start == 0 and T_k == T:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)  # (B, h, T, d_head)
        elif self.score == "dot" and T == 1:  # one new token sees every key
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        else:
            may = torch.ones(T, T_k, dtype=torch.bool,
                             device=x.device).tril(T_k - T)  # (T, T_k): key j ≤ start + i
            if self.score == "dot":
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=may, dropout_p=p)
            else:
                s_q = (torch.tanh(q) * self.v_score[:, None]).sum(-1)                # (B, h, T)
                s_k = (torch.tanh(k) * self.v_score[:, None]).sum(-1)  # (B, h, T_k)
                scores = (s_q[..., :, None] + s_k[..., None, :]).masked_fill(
                    ~may, float("-inf"))  # (B, h, T, T_k)
                y = F.dropout(scores.softmax(-1), p) @ v                            # (B, h, T, d_head)
        y = y.transpose(1, 2).reshape(B, T, self.n_heads * self.d_head)               # (B, T, d_model)
        return self.out_proj(y)


class GPTBlock(nn.Module):
    """Pre-norm block: x + attn(attn_norm(x)), then x + ffn(ffn_norm(x)). (B, T, d_model) -> (B, T,
    d_model)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, n_kv_heads: int | None = None,
                 rope: bool = True, style: str = "llama", score: str = "dot", dropout: float = 0.0):
        super().__init__()
        llama = style == "llama"
        Norm = RMSNorm if llama else nn.LayerNorm
        self.attn_norm = Norm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, n_kv_heads, rope, bias=not llama, score=score,
                                        dropout=dropout)
        self.ffn_norm = Norm(d_model)
        self.ffn = SwiGLU(d_model, d_ff) if llama else MLP(d_model, d_ff)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        x = x + self.drop(self.attn(self.attn_norm(x), cache))
        return x + self.drop(self.ffn(self.ffn_norm(x)))


class GPT(nn.Module):
    """Token embedding (+ positions), n_layers GPTBlocks, a final norm, the output layer.

    forward(tokens (B, T), caches: list of KVCache, one per block, or None) -> logits (B, T, V).
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        c = self.config = config
        if c.positional not in ("rope", "learned", "sinusoidal", "none") or c.style not in ("llama", "gpt2"):
            raise ValueError(f"unknown positional={c.positional!r} or style={c.style!r}")
        self.tok_embed = nn.Embedding(c.vocab_size, c.d_model)
        if c.positional == "learned":
            self.pos_embed = nn.Embedding(c.max_len, c.d_model)
        if c.positional == "sinusoidal":  # a formula, not a weight: not saved
            self.register_buffer("pe", sinusoidal_positional_encoding(c.max_len, c.d_model), persistent=False)
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList([
            GPTBlock(c.d_model, c.n_heads, c.d_ff, c.n_kv_heads, c.positional == "rope", c.style, c.score,
                     c.dropout) for _ in range(c.n_layers)
        ])
        self.norm = RMSNorm(c.d_model) if c.style == "llama" else nn.LayerNorm(c.d_model)
        self.out = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by 1/sqrt(2 n_layers)
            if name.endswith(("out_proj.weight", "w2.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.n_layers))
        if c.tie_output:
            self.out.weight = self.tok_embed.weight

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, tokens: torch.Tensor, caches: list[KVCache] | None = None) -> torch.Tensor:
        T = tokens.shape[1]
        start = caches[0].length if caches else 0
        x = self.tok_embed(tokens)                                                   # (B, T, d_model)
        if self.config.positional in ("learned", "sinusoidal"):
            if start + T > self.config.max_len:
                raise ValueError(f"positions up to {start + T - 1}, but max_len={self.config.max_len}")
            positions = torch.arange(start, start + T, device=tokens.device)         # (T,)
            # the sinusoids are scaled to the embeddings' initial size (std 0.02), or they would drown the
            # tokens
            x = x + (self.pos_embed(positions) if self.config.positional == "learned" else 0.02 *
                     self.pe[positions])
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i] if caches else None)
        return self.out(self.norm(x))                                                # (B, T, V)


def param_count(config: GPTConfig) -> int:
    """``course_lib.params.decoder_only_param_count`` for this configuration (no model is built)."""
    from course_lib.params import decoder_only_param_count

    llama = config.style == "llama"
    n = decoder_only_param_count(config.vocab_size, config.d_model, config.n_layers, config.d_ff,
                                 config.n_heads, config.n_kv_heads, norm="rms" if llama else "layer",
                                 ffn="swiglu" if llama else "mlp", bias=not llama, tied=config.tie_output,
                                 max_len=config.max_len if config.positional == "learned" else 0)
    additive = config.n_layers * config.d_model if config.score == "additive" else 0  # one v per head
    return n + additive


class CountingModel(nn.Module):
    """Wraps a GPT and counts the positions fed to it (``positions_fed``), to show what a KV cache saves."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.positions_fed = 0
        self.calls = 0

    @property
    def blocks(self):
        return self.model.blocks

    @property
    def config(self):
        return self.model.config

    def forward(self, tokens: torch.Tensor, caches=None) -> torch.Tensor:
        self.positions_fed += tokens.shape[1]
        self.calls += 1
        return self.model(tokens, caches=caches)


__all__ = [
    "CausalSelfAttention", "CountingModel", "GPT", "GPTBlock", "GPTConfig", "KVCache", "MLP", "RMSNorm",
    "SwiGLU", "param_count"
]
