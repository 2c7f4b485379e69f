"""Counting a Transformer's parameters and training FLOPs in closed form (notebook 05).

* ``transformer_param_count(cfg)``: the encoder-decoder of ``course_lib.transformer``, equal to
  ``sum(p.numel() for p in Transformer(cfg).parameters())``;
* ``gpt_param_count``: nanoGPT's formula for a GPT-2-style decoder-only model (its count,
  which leaves the position embedding out);
* ``decoder_only_param_count``: any decoder-only model, GPT-2 style (LayerNorm, GELU MLP, biases,
  learned positions, tied output) or Llama style (RMSNorm, SwiGLU, no biases, RoPE, untied output,
  grouped-query attention with ``n_kv_heads`` < ``n_heads``);
* ``LLAMA_TABLE``: the LLaMA models' published sizes (Touvron et al. 2023, table 2) beside
  Llama-style configurations;
* ``attention_params``, ``ffn_params``: the two sublayers every count above is built from (also
  ``course_lib.cost.block_param_counts``, notebook 03).

Training FLOPs and model FLOPs utilisation are the benchmarks' business (``benchmarks/flops.py``).
"""
from __future__ import annotations


def attention_params(d: int, bias: bool = True, d_kv: int | None = None) -> int:
    """q, k, v and output projections: d -> d for q and out, d -> d_kv for k and v."""
    d_kv = d if d_kv is None else d_kv
    return 2 * d * d + 2 * d * d_kv + (2 * d + 2 * d_kv if bias else 0)


def ffn_params(d: int, d_ff: int, bias: bool = True) -> int:
    """linear1 (d -> d_ff) and linear2 (d_ff -> d), with biases."""
    return 2 * d * d_ff + (d_ff + d if bias else 0)


def transformer_param_count(cfg) -> int:
    """Parameters of ``course_lib.transformer.Transformer(cfg)`` (any object with its config's fields).

    Per encoder layer: self-attention 4d² + 4d, FFN 2·d·d_ff + d_ff + d, two LayerNorms 2·2d.
    Per decoder layer: the same plus cross-attention (4d² + 4d) and a third LayerNorm (2d).
    Plus both embeddings (V·d each), a learned position table (max_len·d) if any, the final
    LayerNorm of each stack with pre-LN (2·2d), and the output projection V_tgt·d unless tied.
    """
    d, d_ff = cfg.d_model, cfg.d_ff
    attention, ffn, norm = attention_params(d), ffn_params(d, d_ff), 2 * d
    encoder = cfg.n_encoder_layers * (attention + ffn + 2 * norm)
    decoder = cfg.n_decoder_layers * (2 * attention + ffn + 3 * norm)
    embeddings = (cfg.src_vocab_size + cfg.tgt_vocab_size) * d
    positions = cfg.max_len * d if cfg.positional == "learned" else 0
    final_norms = 2 * norm if cfg.norm_first else 0
    output = 0 if cfg.tie_output else cfg.tgt_vocab_size * d
    return encoder + decoder + embeddings + positions + final_norms + output


def gpt_param_count(seq_len: int, vocab_size: int, d_model: int, n_layers: int) -> int:
    """nanoGPT's count (its ``scaling_laws.ipynb`` notebook) of a GPT-2-style model.

    Per block: attention 4d² + 4d, MLP (4d hidden) 8d² + 5d, two LayerNorms 4d, so 12d² + 13d;
    plus the final LayerNorm 2d and the output layer d·V. The token embedding is not counted
    separately because GPT-2 ties it to the output layer (d·V counts that one matrix once); the
    *position* embedding (seq_len·d) is left out. ``seq_len`` is accepted to show exactly that.
    """
    del seq_len  # the formula's point: position embeddings are not included
    return n_layers * (12 * d_model ** 2 + 13 * d_model) + 2 * d_model + d_model * vocab_size


def decoder_only_param_count(vocab_size: int, d_model: int, n_layers: int, d_ff: int, n_heads: int,
                             n_kv_heads: int | None = None, *, norm: str = "layer", ffn: str = "mlp",
                             bias: bool = True, tied: bool = True, max_len: int = 0) -> int:
    """Parameters of a decoder-only Transformer (every block: attention, FFN, two norms; one final norm).

    norm: "layer" (weight and bias, 2d) or "rms" (weight only, d); ffn: "mlp" (d -> d_ff -> d) or
    "swiglu" (gate and up d -> d_ff, down d_ff -> d: three matrices); ``n_kv_heads`` < ``n_heads``
    shrinks the key and value projections to n_kv_heads · d_head columns (grouped-query
    attention); ``tied``: the output layer reuses the token embedding; ``max_len``: rows of a
    learned position table (0 for sinusoidal, RoPE or none).
    """
    if norm not in ("layer", "rms") or ffn not in ("mlp", "swiglu"):
        raise ValueError(f"norm must be 'layer' or 'rms', ffn 'mlp' or 'swiglu'; got {norm!r}, {ffn!r}")
    d_kv = (n_kv_heads or n_heads) * (d_model // n_heads)
    norm_params = 2 * d_model if norm == "layer" else d_model
    if ffn == "mlp":
        ffn_count = ffn_params(d_model, d_ff, bias)
    else:
        ffn_count = 3 * d_model * d_ff + (2 * d_ff + d_model if bias else 0)
    block = attention_params(d_model, bias, d_kv) + ffn_count + 2 * norm_params
    embeddings = vocab_size * d_model * (1 if tied else 2) + max_len * d_model
    return n_layers * block + norm_params + embeddings


# The LLaMA models' published sizes (Touvron et al. 2023, table 2) beside Llama-style configurations.
LLAMA_TABLE = [
    # published size, dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size
    dict(published=6.7e9, dim=4096, hidden_dim=11008, n_layers=32, n_heads=32, n_kv_heads=32,
         vocab_size=32000),
    dict(published=13.0e9, dim=5120, hidden_dim=13824, n_layers=40, n_heads=40, n_kv_heads=40,
         vocab_size=32000),
    dict(published=32.5e9, dim=6656, hidden_dim=17920, n_layers=60, n_heads=52, n_kv_heads=52,
         vocab_size=32000),
    dict(published=65.2e9, dim=8192, hidden_dim=22016, n_layers=80, n_heads=64, n_kv_heads=8,
         vocab_size=32000),
]


def llama_param_count(dim: int, hidden_dim: int, n_layers: int, n_heads: int, n_kv_heads: int,
                      vocab_size: int, **_) -> int:
    """A Llama-style model: RMSNorm, SwiGLU, no biases, RoPE (no position table), untied output."""
    return decoder_only_param_count(vocab_size, dim, n_layers, hidden_dim, n_heads, n_kv_heads,
                                    norm="rms", ffn="swiglu", bias=False, tied=False)


__all__ = ["LLAMA_TABLE", "attention_params", "decoder_only_param_count", "ffn_params", "gpt_param_count",
           "llama_param_count", "transformer_param_count"]
