"""Benchmark of notebook 02: run the solution notebook in the laptop profile and record its numbers.

    python -m benchmarks.attention_rnn
    python -m benchmarks.attention_rnn --reuse-01 runs/01_rnn_baselines   # compare with 01's own model
    python -m benchmarks.attention_rnn --profile smoke --output /tmp/nb02.json

Without ``--reuse-01`` the notebook finds no checkpoint of 01 and trains the attention-free
baseline itself, for a shorter budget (the report says which). Writes
``benchmarks/results/02_attention.json``: notebook and training time, BLEU of the RNN + attention
model on ``test`` (overall and by source length) and ``test_long``, the same for the baseline,
01's own benchmark numbers when ``benchmarks/results/01_rnn_baselines.json`` exists, and whether
the laptop targets (BLEU ≥ 95, notebook under 5 minutes on 2 idle cores) were met.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks._notebook_run import RESULTS, add_notebook_arguments, machine, run_notebook, write_report

ROOT = Path(__file__).resolve().parents[1]

ASSIGNMENT = "02_attention"
# the laptop profile's targets, on 2 idle CPU cores (benchmarks/README.md)
TARGET_BLEU, BUDGET_MINUTES = 95.0, 5.0


def run(profile: str = "laptop", output: Path | None = None, timeout: int = 1800,
        reuse_01: Path | None = None, threads: int | None = None, keep: Path | None = None) -> dict:
    before = machine()
    minutes, results = run_notebook(ASSIGNMENT, profile, timeout, reuse=[reuse_01] if reuse_01 else [],
                                    threads=threads, keep=keep)
    report = {
        "assignment": ASSIGNMENT,
        "profile": profile,
        "machine": {**before, "device": results.get("device"), "kernel_threads": threads or "torch default",
                    "load_average_after": machine()["load_average"]},
        "notebook_minutes": round(minutes, 2),
        "training_minutes": results.get("train_minutes"),
        "updates": results.get("updates"),
        "parameters": results.get("parameters"),
        "n_test": results.get("n_test"),
        "n_test_long": results.get("n_test_long"),
        "bleu_test": results.get("bleu_test"),
        "bleu_by_length": results.get("bleu_by_length"),
        "bleu_test_long": results.get("bleu_test_long"),
        "bleu_signature": results.get("bleu_signature"),
        "baseline": results.get("baseline"),
        "retrieval_task_accuracy": results.get("retrieval_task_accuracy"),
    }
    recorded_01 = RESULTS / "01_rnn_baselines.json"
    if recorded_01.is_file():  # 01's own benchmark run, for the comparison at full budget
        nb01 = json.loads(recorded_01.read_text(encoding="utf-8"))
        report["benchmark_01"] = {
            k: nb01.get(k)
            for k in ("date", "profile", "bleu_test", "bleu_by_length", "bleu_test_long")
        }
    if profile == "laptop":
        report["targets"] = {f"bleu_test >= {TARGET_BLEU:g}": (results.get("bleu_test") or 0) >= TARGET_BLEU,
                             f"notebook < {BUDGET_MINUTES:g} min": minutes < BUDGET_MINUTES}
    write_report(ASSIGNMENT, report, output)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_notebook_arguments(parser, ASSIGNMENT)
    parser.add_argument("--reuse-01", type=Path, default=None, metavar="DIR",
                        help="a runs/01_rnn_baselines folder whose checkpoint serves as the baseline")
    args = parser.parse_args(argv)
    report = run(args.profile, args.output, args.timeout, args.reuse_01, args.threads, args.keep)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
