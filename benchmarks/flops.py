"""Model FLOPs of a training step and the peak of common GPUs: model FLOPs utilisation (MFU) for the
gpu section of ``benchmarks/transformer.py``.

The count follows PaLM's appendix B (Chowdhery et al. 2022): 6·N FLOPs per token for the weight
products, plus the attention score and value products, which PaLM counts over all T² pairs; here a
decoder's self-attention counts only the T·(T + 1)/2 pairs its causal mask keeps
(``course_lib.cost.attention_pair_flops``, the count notebooks 03 and 07 teach).
"""
from __future__ import annotations

from course_lib.cost import attention_pair_flops


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
    meets (``matmul_params``), plus three times the forward FLOPs of the attention scores and the
    weighted sums: the encoder's s² pairs, the decoder's causal t·(t + 1)/2 and its cross-attention's
    t·s, 4·d each. Padding is not counted (it is not useful work).
    """
    n_enc, n_dec = matmul_params(cfg)
    d = cfg.d_model
    flops = 0.0
    for s, t in zip(src_lengths, tgt_lengths):
        s, t = int(s), int(t)
        flops += 6 * (n_enc * s + n_dec * t)
        pair_flops = (cfg.n_encoder_layers * attention_pair_flops(s, d, causal=False)
                      + cfg.n_decoder_layers * (attention_pair_flops(t, d) + 2 * 2 * d * t * s))  # cross: t·s
        flops += 3 * pair_flops
    return flops


# Dense (no sparsity) bf16 peak of common cards, FLOP/s, from the vendors' data sheets.
PEAK_BF16_FLOPS = {"H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "H200": 989e12,
                   "A100": 312e12, "L4": 121e12, "RTX 4090": 165e12}


def peak_flops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named ``torch.cuda.get_device_name()`` (the first key the name
    contains, so "H100 PCIe" is found before "H100"), or None for an unknown card."""
    return next((v for k, v in PEAK_BF16_FLOPS.items() if k.lower() in device_name.lower()), None)


__all__ = ["PEAK_BF16_FLOPS", "matmul_params", "peak_flops", "training_flops"]
