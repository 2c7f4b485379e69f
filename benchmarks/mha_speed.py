"""Attention, naive and fused: course_lib's against torch's, training-step time and peak memory.

    python -m benchmarks.mha_speed                    # or: python -m benchmarks attention
    python -m benchmarks.mha_speed --lengths 32 64 --d-models 256 --no-memory

For every shape (B=32, d_model 128 and 256, 4 heads, T from 32 to 1024) and mask (none, causal),
one comparison times a training step (forward, a scalar loss, backward) of each contender, in
alternating rounds in this process (``_timing.alternate``), and keeps the medians and their
ratios to torch's counterpart:

    layer: q/k/v projections, attention, output projection (self-attention on x: (B, T, d_model))
      course_lib MHA fused        course_lib.attention.MultiHeadAttention(need_weights=False)
      course_lib MHA naive        the same with need_weights=True: (B, h, T, T) weights materialised
      course_lib Transformer MHA  course_lib.kv_cache.CachedMultiHeadAttention, called as the
                                  Transformer calls it (stacked q/k/v product, is_causal)
      nn.MultiheadAttention       need_weights=False, the same weights
    kernel: attention alone on q, k, v: (B, h, T, d_head)
      course_lib sdpa naive       course_lib.attention.scaled_dot_product_attention
      F.scaled_dot_product_attention

Peak memory of one step (without a mask) is measured per contender and shape: on a GPU with
torch's allocator statistics; on a CPU, which has none, as the growth of the peak resident memory
of a fresh process (forked from a server that has only imported torch) during the step.
Target: course_lib's fused multi-head attention takes at most 1.1× the time of
``nn.MultiheadAttention`` at the training shapes (T 32 to 64). Writes ``benchmarks/results/attention.json``.
"""
from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks._notebook_run import machine, write_report
from benchmarks._timing import alternate, medians
from course_lib.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from course_lib.kv_cache import CachedMultiHeadAttention

ROOT = Path(__file__).resolve().parents[1]

TARGET_RATIO = 1.1  # course_lib's fused MHA time / nn.MultiheadAttention's
TRAINING_LENGTHS = (32, 64)  # the T range of notebook 05's batches, where the target applies
TORCH_MHA, TORCH_SDPA = "nn.MultiheadAttention", "F.scaled_dot_product_attention"
# name -> the torch contender its time is divided by (None: it is the reference)
CONTENDERS = {
    "course_lib MHA fused": TORCH_MHA,
    "course_lib MHA naive": TORCH_MHA,
    "course_lib Transformer MHA": TORCH_MHA,
    TORCH_MHA: None,
    "course_lib sdpa naive": TORCH_SDPA,
    TORCH_SDPA: None,
}
FUSED = ("course_lib MHA fused", "course_lib Transformer MHA")  # the layers the target is about
# ru_maxrss is in kilobytes on Linux, in bytes on macOS
RSS_UNIT = 1 if sys.platform == "darwin" else 1024


def training_steps(B: int, T: int, d_model: int, heads: int, causal: bool, device: torch.device) -> dict:
    """contender name -> a function running one forward + backward of it; all layers see the same x, all
    kernels
    the same q, k, v."""
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=True).to(device)
    ours = MultiHeadAttention(d_model, heads).to(device).load_from_torch(theirs)
    transformers = CachedMultiHeadAttention(d_model, heads).to(device).load_from_torch(theirs)
    x = torch.randn(B, T, d_model, device=device, requires_grad=True)
    q, k, v = (torch.randn(B, heads, T, d_model // heads, device=device, requires_grad=True)
               for _ in range(3))
    mask = causal_mask(T, device=device) if causal else None  # (T, T), True = may attend
    blocked = None if mask is None else ~mask  # torch's boolean attn_mask means the opposite
    forwards = {  # name -> (tensors whose gradients it fills, forward)
        "course_lib MHA fused": ([*ours.parameters(), x], lambda: ours(x, x, x, mask, need_weights=False)[0]),
        "course_lib MHA naive": (
            [*ours.parameters(), x],
            lambda: ours(x, x, x, mask, need_weights=True, average_attn_weights=False)[0],
        ),
        # the Transformer's decoder passes no mask but is_causal, which lets the kernel skip masked blocks
        "course_lib Transformer MHA": (
            [*transformers.parameters(), x],
            lambda: transformers(x, x, x, is_causal=causal)[0],
        ),
        # with the is_causal hint, as nn.TransformerDecoderLayer calls it: torch's fastest causal path
        TORCH_MHA: (
            [*theirs.parameters(), x],
            lambda: theirs(x, x, x, attn_mask=blocked, need_weights=False, is_causal=causal)[0],
        ),
        "course_lib sdpa naive": ([q, k, v], lambda: scaled_dot_product_attention(q, k, v, mask)[0]),
        TORCH_SDPA: ([q, k, v], lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)),
    }

    def step(leaves, forward):
        def run():
            for t in leaves:
                t.grad = None  # what optimizer.zero_grad(set_to_none=True) does between training steps
            forward().square().mean().backward()

        return run

    return {name: step(*forwards[name]) for name in CONTENDERS}


def _peak_bytes(job: tuple) -> int:
    """Memory that one training step of a contender adds at its peak to what the process held before."""
    name, B, T, d_model, heads, device, threads = job
    torch.set_num_threads(threads)
    device = torch.device(device)
    # a tiny step first: one-time set-up (library code paged in, GPU workspaces) is not the step's memory
    training_steps(2, 4, d_model, heads, False, device)[name]()
    step = training_steps(B, T, d_model, heads, False, device)[name]
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        step()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * RSS_UNIT


def peak_memory(jobs: list[tuple], device: torch.device) -> list[int]:
    """``_peak_bytes`` of every job: in this process on a GPU, each in a fresh process on a CPU."""
    if device.type == "cuda":
        return [_peak_bytes(job) for job in jobs]
    # Freed memory stays in this process's heap and would hide the next step's peak; a fresh process
    # per job, forked from a server that has only imported torch and course_lib, starts from a clean heap.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["torch", "course_lib.kv_cache"])
    with context.Pool(1, maxtasksperchild=1) as pool:
        return pool.map(_peak_bytes, jobs, chunksize=1)


def run(
    batch: int = 32,
    d_models: tuple[int, ...] = (128, 256),
    lengths: tuple[int, ...] = (32, 64, 128, 256, 512, 1024),
    heads: int = 4,
    repeats: int = 20,
    warmup: int = 2,
    budget_s: float = 20.0,
    memory: bool = True,
    device: str = "cpu",
) -> dict:
    """Time (and measure the memory of) every contender at every shape; the report written to
    attention.json."""
    device = torch.device(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    before = machine()
    rows = []
    for d_model in d_models:
        for T in lengths:
            for causal in (False, True):
                times, _ = alternate(
                    training_steps(batch, T, d_model, heads, causal, device),
                    repeats,
                    warmup,
                    budget_s,
                    sync=sync,
                )
                median = medians(times)
                rows.append(
                    {
                        "B": batch,
                        "T": T,
                        "d_model": d_model,
                        "heads": heads,
                        "causal": causal,
                        "repeats": len(times[TORCH_MHA]),
                        "median_ms": {name: round(1000 * s, 4) for name, s in median.items()},
                        "ratio": {
                            name: round(median[name] / median[ref], 4)
                            for name, ref in CONTENDERS.items()
                            if ref
                        },
                    }
                )
    if memory:
        shapes = [(d_model, T) for d_model in d_models for T in lengths]
        jobs = [
            (name, batch, T, d_model, heads, str(device), torch.get_num_threads())
            for d_model, T in shapes
            for name in CONTENDERS
        ]
        peaks = iter(peak_memory(jobs, device))  # in the order of the jobs
        memory_mb = {shape: {name: round(next(peaks) / 2**20, 2) for name in CONTENDERS} for shape in shapes}
        for row in rows:
            if not row["causal"]:
                row["peak_memory_mb"] = memory_mb[row["d_model"], row["T"]]
    training = [row for row in rows if TRAINING_LENGTHS[0] <= row["T"] <= TRAINING_LENGTHS[1]]
    worst = {name: max(row["ratio"][name] for row in training) if training else None for name in FUSED}
    return {
        "machine": {**before, "device": str(device), "load_average_after": machine()["load_average"]},
        "ratio_to": {name: ref for name, ref in CONTENDERS.items() if ref},
        "timing": "one training step (forward, mean of squares, backward), median over alternating rounds",
        "memory_method": None
        if not memory
        else (
            "torch.cuda.max_memory_allocated during the step minus memory allocated before it"
            if device.type == "cuda"
            else "growth of ru_maxrss (peak resident memory) during the step, each contender and shape in a "
                 "fresh "
            "process forked from a server that has only imported torch"
        )
        + "; after a tiny warm-up step; no mask",
        "rows": rows,
        "target": {
            "ratio_at_most": TARGET_RATIO,
            "lengths": list(TRAINING_LENGTHS),
            "worst_ratio": worst,
            "met": {name: None if r is None else r <= TARGET_RATIO for name, r in worst.items()},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--d-models", "--d-model", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128, 256, 512, 1024])
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20, help="rounds at most (default 20)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--budget",
        type=float,
        default=20.0,
        metavar="S",
        help="seconds per comparison after which no new round starts (at least 3 rounds)",
    )
    parser.add_argument("--no-memory", action="store_true", help="time only")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    report = run(
        args.batch,
        tuple(args.d_models),
        tuple(args.lengths),
        args.heads,
        args.repeats,
        args.warmup,
        args.budget,
        not args.no_memory,
        args.device,
    )
    for row in report["rows"]:
        ratios = ", ".join(f"{name} {ratio:.2f}x" for name, ratio in row["ratio"].items())
        print(
            f"d_model {row['d_model']} T {row['T']:>4} {'causal' if row['causal'] else 'no mask'}: {ratios}"
        )
    print(f"written to {write_report('attention', report, args.output)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
