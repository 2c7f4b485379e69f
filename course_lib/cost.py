"""What attention and a Transformer block cost: FLOPs and parameters by formula (notebook 03),
and time and activation memory by measurement (notebooks 02 and 03).

FLOPs count the matrix products only, one multiply-add = 2 FLOPs; biases, softmax, norms and
activations are element-wise work of order T·d or T², negligible next to them. The formulas agree
with ``torch.utils.flop_counter.FlopCounterMode`` (tests/test_cost.py).
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from course_lib.params import attention_params, ffn_params


def attention_flops(T: int, d_model: int) -> int:
    """FLOPs of one self-attention sublayer over T tokens: the four (T, d)·(d, d) projections
    (8·T·d²) plus the scores QKᵀ and the weighted sum AV (2·T²·d each). Heads split d_model
    among them and do not change the count."""
    return 8 * T * d_model**2 + 4 * T**2 * d_model


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


__all__ = ["attention_flops", "block_param_counts", "ffn_flops", "median_ms", "saved_megabytes"]
