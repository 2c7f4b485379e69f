"""Benchmark of the generated corpus: seconds to generate the 200k-pair train split (target < 10 s).

    python -m benchmarks.corpus_speed [--repeats 3]

Each repeat generates the split from scratch in this process (the in-process cache is cleared);
the median is reported with the machine's load, since other work on the machine slows it down.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks._notebook_run import machine, write_report

ROOT = Path(__file__).resolve().parents[1]

TARGET_SECONDS = 10.0


def main(argv: list[str] | None = None) -> int:
    from course_lib import data

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    before = machine()
    seconds = []
    for _ in range(args.repeats):
        data._CACHE.clear()
        start = time.perf_counter()
        pairs = data.translation_pairs("train")
        seconds.append(time.perf_counter() - start)
    assert len({source for source, _ in pairs}) == data.DEFAULT_SIZES["train"]
    median = statistics.median(seconds)
    report = {"machine": before, "pairs": len(pairs), "seconds": [round(s, 2) for s in seconds],
              "median_seconds": round(median, 2), "target_seconds": TARGET_SECONDS,
              "met": median < TARGET_SECONDS}
    print(write_report("corpus_speed", report, args.output))
    print(f"200k train pairs: median {median:.2f} s over {args.repeats} runs (target < {TARGET_SECONDS:g} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
