"""Forward+backward time of course_lib's MultiHeadAttention against nn.MultiheadAttention.

    python -m benchmarks.mha_speed                  # or: python benchmarks/mha_speed.py
    python -m benchmarks.mha_speed --lengths 32 64 --repeats 50

Both layers run self-attention in training mode without returning weights (ours: the fused
``F.scaled_dot_product_attention`` path, ``need_weights=False``; torch: ``need_weights=False``),
at the shapes notebook 05 trains with (B=32, T=32..64, d_model=256, h=4), without a mask and with
a causal mask. The two are timed alternately in the same process, ``repeats`` times each after a
warm-up, and the medians and their ratio (ours / torch; the target is ≤ 1.1) are written to
``benchmarks/results/mha_speed.json``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # for `python benchmarks/mha_speed.py`
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from benchmarks._notebook_run import machine, write_report  # noqa: E402
from course_lib.attention import MultiHeadAttention, causal_mask  # noqa: E402

TARGET_RATIO = 1.1


def _step(layer, x, call):
    """One training step's worth of attention: forward, a scalar loss, backward."""
    layer.zero_grad(set_to_none=True)
    x.grad = None
    call(layer, x).square().mean().backward()


def measure(B: int, T: int, d_model: int, heads: int, causal: bool, repeats: int, warmup: int,
            device: torch.device) -> dict:
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=True).to(device).train()
    ours = MultiHeadAttention(d_model, heads).to(device).train().load_from_torch(theirs)
    x = torch.randn(B, T, d_model, device=device, requires_grad=True)
    mask = causal_mask(T, device=device) if causal else None
    calls = {
        "course_lib": (ours, lambda m, x: m(x, x, x, mask, need_weights=False)[0]),
        # torch's boolean attn_mask means "blocked", the opposite of ours
        "torch": (theirs, lambda m, x: m(x, x, x, attn_mask=None if mask is None else ~mask, need_weights=False)[0]),
    }
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = {name: [] for name in calls}
    for i in range(warmup + repeats):
        for name, (layer, call) in calls.items():  # alternate, so that load changes hit both alike
            sync()
            start = time.perf_counter()
            _step(layer, x, call)
            sync()
            if i >= warmup:
                times[name].append(time.perf_counter() - start)
    medians = {name: 1000 * statistics.median(t) for name, t in times.items()}
    return {"B": B, "T": T, "d_model": d_model, "heads": heads, "causal": causal,
            "median_ms": {k: round(v, 4) for k, v in medians.items()},
            "ratio": round(medians["course_lib"] / medians["torch"], 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 48, 64])
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    before = machine()
    rows = [measure(args.batch, T, args.d_model, args.heads, causal, args.repeats, args.warmup, device)
            for T in args.lengths for causal in (False, True)]
    worst = max(row["ratio"] for row in rows)
    report = {"machine": {**before, "device": str(device), "load_average_after": machine()["load_average"]},
              "repeats": args.repeats, "warmup": args.warmup, "rows": rows,
              "worst_ratio": worst, f"target ratio <= {TARGET_RATIO}": worst <= TARGET_RATIO}
    path = write_report("mha_speed", report, args.output)
    print(json.dumps(report, indent=2))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
