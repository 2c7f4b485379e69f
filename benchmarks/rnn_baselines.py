"""Benchmark of notebook 01: run the solution notebook in the laptop profile and record its numbers.

    python -m benchmarks.rnn_baselines
    python -m benchmarks.rnn_baselines --profile smoke --output /tmp/nb01.json

Executes ``solutions/01_rnn_baselines/01_rnn_baselines.ipynb`` top to bottom (see
``benchmarks/_notebook_run.py``), measures the wall time, reads the results the notebook recorded
and writes them, with the machine they came from, to ``benchmarks/results/01_rnn_baselines.json``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks._notebook_run import add_notebook_arguments, machine, run_notebook, write_report

ROOT = Path(__file__).resolve().parents[1]

ASSIGNMENT = "01_rnn_baselines"


def run(profile: str = "laptop", output: Path | None = None, timeout: int = 1800,
        threads: int | None = None, keep: Path | None = None) -> dict:
    before = machine()
    load_before = before.pop("load_average")
    minutes, results = run_notebook(ASSIGNMENT, profile, timeout, threads=threads, keep=keep)
    report = {
        "assignment": ASSIGNMENT,
        "profile": profile,
        "machine": {**before, "device": results.get("device"), "kernel_threads": threads or "torch default",
                    "load_average_before": load_before, "load_average_after": machine()["load_average"]},
        "notebook_minutes": round(minutes, 2),
        "training_minutes": results.get("train_minutes"),
        "updates": results.get("updates"),
        "parameters": results.get("parameters"),
        "bleu_test": results.get("bleu_test"),
        "bleu_by_length": results.get("bleu_by_length"),
        "bleu_test_long": results.get("bleu_test_long"),
        "bleu_signature": results.get("bleu_signature"),
        "lm_valid_perplexity": results.get("lm_valid_perplexity"),
    }
    write_report(ASSIGNMENT, report, output)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_notebook_arguments(parser, ASSIGNMENT)
    args = parser.parse_args(argv)
    report = run(args.profile, args.output, args.timeout, args.threads, args.keep)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
