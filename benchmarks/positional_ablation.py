"""Benchmark of notebook 04: run the solution notebook in the laptop profile and record the ablation.

    python -m benchmarks.positional_ablation
    python -m benchmarks.positional_ablation --profile smoke --output /tmp/nb04.json

Executes ``solutions/04_positional_encoding/04_positional_encoding.ipynb`` top to bottom (see
``benchmarks/_notebook_run.py``), measures the wall time, reads the results the notebook recorded
(none / sinusoidal / learned / RoPE on copy-with-offset, each trained with every seed of the
profile: the first seed's learning curves, accuracy by length and on positions never seen in
training, as means over the seeds and seed by seed) and writes them, with the machine they came from, to
``benchmarks/results/04_positional_encoding.json``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks._notebook_run import machine, run_notebook, write_report

ROOT = Path(__file__).resolve().parents[1]

ASSIGNMENT = "04_positional_encoding"
RECORDED = ("headline", "seeds", "accuracy_trained_length", "accuracy_positions_seen",
            "accuracy_positions_unseen", "accuracy_positions_seen_by_seed",
            "accuracy_positions_unseen_by_seed", "accuracy_by_length", "learning_curves", "updates",
            "train_seconds", "parameters", "task", "hyperparameters")


def run(profile: str = "laptop", output: Path | None = None, timeout: int = 1800,
        keep: Path | None = None) -> tuple[Path, dict]:
    minutes, results = run_notebook(ASSIGNMENT, profile=profile, timeout=timeout, keep=keep)
    report = {
        "assignment": ASSIGNMENT,
        "profile": profile,
        "machine": {**machine(), "device": results.get("device")},
        "notebook_minutes": round(minutes, 2),
        **{key: results.get(key) for key in RECORDED},
    }
    return write_report(ASSIGNMENT, report, output), report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="laptop", choices=["smoke", "laptop", "gpu"])
    parser.add_argument("--output", type=Path, default=None,
                        help=f"default: benchmarks/results/{ASSIGNMENT}.json")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds allowed per cell")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="copy the notebook's run folder and executed notebook to DIR/<assignment>")
    args = parser.parse_args(argv)
    path, report = run(args.profile, args.output, args.timeout, args.keep)
    print(json.dumps({k: v for k, v in report.items() if k != "learning_curves"}, indent=2))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
