"""Counting a Transformer's parameters and training FLOPs in closed form (notebook 05).

* ``transformer_param_count(cfg)``: the encoder-decoder of ``course_lib.transformer``, equal to
  ``sum(p.numel() for p in Transformer(cfg).parameters())``;
* ``gpt_param_count``: seed 001's formula for a GPT-2-style decoder-only model (nanoGPT's count,
  which leaves the position embedding out);
* ``decoder_only_param_count``: any decoder-only model, GPT-2 style (LayerNorm, GELU MLP, biases,
  learned positions, tied output) or Llama style (RMSNorm, SwiGLU, no biases, RoPE, untied output,
  grouped-query attention with ``n_kv_heads`` < ``n_heads``);
* ``LLAMA_TABLE``: seed 003's table of the Llama models, with the published sizes;
* ``training_flops``: model FLOPs of one training step counted as in PaLM's appendix B
  (6 N per token plus the attention score and value products), for model FLOPs utilisation.
"""
from __future__ import annotations


def _attention(d: int, bias: bool = True, d_kv: int | None = None) -> int:
    """q, k, v and output projections: d -> d for q and out, d -> d_kv for k and v."""
    d_kv = d if d_kv is None else d_kv
    return 2 * d * d + 2 * d * d_kv + (2 * d + 2 * d_kv if bias else 0)


def _ffn(d: int, d_ff: int, bias: bool = True) -> int:
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
    attention, ffn, norm = _attention(d), _ffn(d, d_ff), 2 * d
    encoder = cfg.n_encoder_layers * (attention + ffn + 2 * norm)
    decoder = cfg.n_decoder_layers * (2 * attention + ffn + 3 * norm)
    embeddings = (cfg.src_vocab_size + cfg.tgt_vocab_size) * d
    positions = cfg.max_len * d if cfg.positional == "learned" else 0
    final_norms = 2 * norm if cfg.norm_first else 0
    output = 0 if cfg.tie_output else cfg.tgt_vocab_size * d
    return encoder + decoder + embeddings + positions + final_norms + output


def gpt_param_count(seq_len: int, vocab_size: int, d_model: int, n_layers: int) -> int:
    """Seed 001's count (nanoGPT's scaling-laws notebook) of a GPT-2-style model.

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
        ffn_params = _ffn(d_model, d_ff, bias)
    else:
        ffn_params = 3 * d_model * d_ff + (2 * d_ff + d_model if bias else 0)
    block = _attention(d_model, bias, d_kv) + ffn_params + 2 * norm_params
    embeddings = vocab_size * d_model * (1 if tied else 2) + max_len * d_model
    return n_layers * block + norm_params + embeddings


# Seed 003: Llama (2023) sizes with the Llama-2 style configuration table beside them.
LLAMA_TABLE = [
    # published size, dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size
    dict(published=6.7e9, dim=4096, hidden_dim=11008, n_layers=32, n_heads=32, n_kv_heads=32, vocab_size=32000),
    dict(published=13.0e9, dim=5120, hidden_dim=13824, n_layers=40, n_heads=40, n_kv_heads=40, vocab_size=32000),
    dict(published=32.5e9, dim=6656, hidden_dim=17920, n_layers=60, n_heads=52, n_kv_heads=52, vocab_size=32000),
    dict(published=65.2e9, dim=8192, hidden_dim=22016, n_layers=80, n_heads=64, n_kv_heads=8, vocab_size=32000),
]


def llama_param_count(dim: int, hidden_dim: int, n_layers: int, n_heads: int, n_kv_heads: int,
                      vocab_size: int, **_) -> int:
    """A Llama-style model: RMSNorm, SwiGLU, no biases, RoPE (no position table), untied output."""
    return decoder_only_param_count(vocab_size, dim, n_layers, hidden_dim, n_heads, n_kv_heads,
                                    norm="rms", ffn="swiglu", bias=False, tied=False)


def matmul_params(cfg) -> tuple[int, int]:
    """Weights every encoder / decoder token is multiplied with (embedding look-ups excluded):
    (encoder layers, decoder layers + output projection)."""
    d, d_ff = cfg.d_model, cfg.d_ff
    encoder = cfg.n_encoder_layers * (4 * d * d + 2 * d * d_ff)
    decoder = cfg.n_decoder_layers * (8 * d * d + 2 * d * d_ff) + cfg.tgt_vocab_size * d
    return encoder, decoder


def training_flops(cfg, src_lengths, tgt_lengths) -> float:
    """Model FLOPs of one training step on a batch, as in PaLM's appendix B.

    6·N per token for the weight products (2 forward, 4 backward) with N the weights that token
    meets (``matmul_params``), plus 12·d·T_k per token and layer for the attention scores and
    the weighted sum of the values over T_k keys. Padding is not counted (it is not useful work).
    """
    n_enc, n_dec = matmul_params(cfg)
    d = cfg.d_model
    flops = 0.0
    for s, t in zip(src_lengths, tgt_lengths):
        s, t = int(s), int(t)
        flops += 6 * (n_enc * s + n_dec * t)
        flops += 12 * d * (cfg.n_encoder_layers * s * s + cfg.n_decoder_layers * (t * t + t * s))
    return flops


# Dense (no sparsity) bf16 peak of common cards, FLOP/s, from the vendors' data sheets.
PEAK_BF16_FLOPS = {"H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "H200": 989e12,
                   "A100": 312e12, "L4": 121e12, "RTX 4090": 165e12}


def peak_flops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named ``torch.cuda.get_device_name()`` (the first key the name
    contains, so "H100 PCIe" is found before "H100"), or None for an unknown card."""
    return next((v for k, v in PEAK_BF16_FLOPS.items() if k.lower() in device_name.lower()), None)


__all__ = ["LLAMA_TABLE", "PEAK_BF16_FLOPS", "decoder_only_param_count", "gpt_param_count", "llama_param_count",
           "matmul_params", "peak_flops", "training_flops", "transformer_param_count"]
