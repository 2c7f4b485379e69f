"""What attention and a Transformer block cost: FLOPs and parameters by formula (notebook 03),
and time and activation memory by measurement (notebooks 02 and 03); what a training run's budget
buys and what its state occupies (notebook 07's sections 16 and 17).

FLOPs count the matrix products only, one multiply-add = 2 FLOPs; biases, softmax, norms and
activations are element-wise work of order T·d or T², negligible next to them. The formulas agree
with ``torch.utils.flop_counter.FlopCounterMode`` (tests/test_cost.py).
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Callable

import torch

from course_lib.params import attention_params, ffn_params


def attention_flops(T: int, d_model: int) -> int:
    """FLOPs of one self-attention sublayer over T tokens: the four (T, d)·(d, d) projections
    (8·T·d²) plus the scores QKᵀ and the weighted sum AV (2·T²·d each). Heads split d_model
    among them and do not change the count."""
    return 8 * T * d_model**2 + 4 * T**2 * d_model  # written out: 03 forbids attention_pair_flops


def attention_pair_flops(T: int, d_model: int, causal: bool = True) -> int:
    """FLOPs of the scores QKᵀ and the weighted sum AV of one self-attention over T tokens, forward
    pass: 2·d for a score and 2·d for its row of AV, per (query, key) pair computed. A causal kernel
    computes the T·(T + 1)/2 pairs j <= i (on average (T + 1)/2 keys per query): 2·T·(T + 1)·d;
    without the mask, all T² pairs: 4·T²·d. A training step costs three times the forward count."""
    pairs = T * (T + 1) // 2 if causal else T * T
    return pairs * 2 * (2 * d_model)


def causal_attention_flops(T: int, d_model: int) -> int:
    """FLOPs of one self-attention sublayer over T tokens that computes only the pairs the causal mask
    keeps: the four projections (8·T·d²) and ``attention_pair_flops`` (notebook 03's question 2)."""
    return 8 * T * d_model**2 + attention_pair_flops(T, d_model, causal=True)


def ffn_flops(T: int, d_model: int, d_ff: int) -> int:
    """FLOPs of the position-wise feed-forward block over T tokens: (T, d)·(d, d_ff) and
    (T, d_ff)·(d_ff, d), i.e. 4·T·d·d_ff."""
    return 4 * T * d_model * d_ff


def block_param_counts(d_model: int, d_ff: int) -> dict[str, int]:
    """Parameters of one Transformer encoder block (``nn.TransformerEncoderLayer``'s layout).

    Returns ``{"attention", "ffn", "norms", "total"}``: W_q, W_k, W_v, W_o with biases; the two
    linear layers of the FFN with biases; two LayerNorms (a gain and a bias each).
    """
    counts = {
        "attention": attention_params(d_model), "ffn": ffn_params(d_model, d_ff), "norms": 2 * 2 * d_model
    }
    return {**counts, "total": sum(counts.values())}


def compute_optimal(flops: float, tokens_per_param: float = 20.0) -> tuple[float, float]:
    """The model size N and the training tokens D that spend a budget of ``flops`` = 6·N·D with
    D = ``tokens_per_param``·N (Hoffmann et al., 2022: about 20 tokens per parameter). So
    N = sqrt(flops / (6·r)) and D = r·N; returns ``(N, D)`` as Python floats."""
    n_params = math.sqrt(flops / (6 * tokens_per_param))
    return n_params, tokens_per_param * n_params


# Mixed-precision AdamW as ZeRO counts it (Rajbhandari et al., 2020), bytes per parameter: 16-bit
# weights and gradients, and K = 12 of fp32 optimizer state (a copy of the weights, momentum, variance)
WEIGHT_BYTES, GRADIENT_BYTES, OPTIMIZER_BYTES = 2, 2, 12


def model_state_bytes(n_params: float, n_gpus: int = 1, zero_stage: int = 0) -> float:
    """Bytes of weights, gradients and optimizer state that one of ``n_gpus`` data-parallel GPUs holds
    for mixed-precision AdamW, 16 per parameter in all: stage 0 replicates everything on every GPU;
    ZeRO stage 1 shards the optimizer state across the GPUs, stage 2 the gradients too, stage 3 the
    weights too (a shard is 1/n_gpus of the whole)."""
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    parts = ((OPTIMIZER_BYTES, 1), (GRADIENT_BYTES, 2), (WEIGHT_BYTES, 3))  # (bytes, first stage to shard)
    return float(sum(n_params * size / (n_gpus if zero_stage >= stage else 1) for size, stage in parts))


def saved_megabytes(fn: Callable[[], object]) -> float:
    """Megabytes of the tensors autograd keeps for the backward pass while ``fn()`` runs.

    This is the activation memory a training step must hold; it is measured by watching every
    tensor autograd saves (``saved_tensors_hooks``), each storage counted once.
    """
    storages: dict[tuple[int, torch.dtype], int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[(t.untyped_storage().data_ptr(), t.dtype)] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values()) / 2**20


def median_ms(fn: Callable[[], object], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in milliseconds over ``repeats`` calls, after ``warmup`` calls
    (CUDA work is waited for, so GPU timings are real)."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


__all__ = ["GRADIENT_BYTES", "OPTIMIZER_BYTES", "WEIGHT_BYTES", "attention_flops", "attention_pair_flops",
           "block_param_counts", "causal_attention_flops", "compute_optimal", "ffn_flops", "median_ms",
           "model_state_bytes", "saved_megabytes"]
