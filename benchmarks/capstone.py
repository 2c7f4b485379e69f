"""Benchmark of notebook 06: the capstone comparison of every model of the course, timed.

    python -m benchmarks.capstone
    python -m benchmarks.capstone --profile smoke --output /tmp/nb06.json

Executes ``solutions/06_bleu/06_bleu.ipynb`` top to bottom (see ``benchmarks/_notebook_run.py``)
with copies of the run folders of notebooks 01, 02 and 05 (``runs/<assignment>/``, where a
student's earlier notebooks leave their checkpoints) when they exist; a model whose checkpoint is
missing is quickly retrained by the notebook, inside the timed run, and its row says so. Writes the
notebook minutes and what the notebook recorded (BLEU of every model on test and test_long, by
source length, the sacreBLEU signature) to ``benchmarks/results/06_bleu.json``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks._notebook_run import add_notebook_arguments, machine, run_notebook, write_report
from benchmarks.attention_rnn import BUDGET_MINUTES  # every notebook's, laptop profile

ROOT = Path(__file__).resolve().parents[1]

ASSIGNMENT = "06_bleu"
EARLIER = ("01_rnn_baselines", "02_attention", "05_transformer")  # the notebooks whose models it compares


def earlier_runs() -> list[Path]:
    """The run folders of notebooks 01, 02 and 05 that exist in this course's runs folder."""
    from course_lib.checkpoints import runs_dir

    return [runs_dir() / name for name in EARLIER if (runs_dir() / name).is_dir()]


def run(profile: str = "laptop", output: Path | None = None, timeout: int = 1800,
        reuse: list[Path] | None = None, threads: int | None = None, keep: Path | None = None) -> dict:
    reuse = earlier_runs() if reuse is None else reuse
    before = machine()
    minutes, results = run_notebook(ASSIGNMENT, profile, timeout, reuse=reuse, threads=threads, keep=keep)
    report = {
        "assignment": ASSIGNMENT,
        "profile": profile,
        "machine": {**before, "device": results.get("device"), "kernel_threads": threads or "torch default",
                    "load_average_after": machine()["load_average"]},
        "notebook_minutes": round(minutes, 2),
        "reused_runs": [str(path) for path in reuse],
        "headline": results.get("headline"),
        "models": results.get("models"),
        "signature": results.get("signature"),
        "n_test": results.get("n_test"),
        "n_test_long": results.get("n_test_long"),
    }
    if profile == "laptop":
        report["targets"] = {f"notebook < {BUDGET_MINUTES:g} min": minutes < BUDGET_MINUTES}
    write_report(ASSIGNMENT, report, output)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_notebook_arguments(parser, ASSIGNMENT)
    parser.add_argument(
        "--reuse", type=Path, nargs="*", default=None, metavar="DIR",
        help="run folders to start from (default: runs/01_rnn_baselines, runs/02_attention and "
        "runs/05_transformer where they exist; none: --reuse without a folder)")
    args = parser.parse_args(argv)
    report = run(args.profile, args.output, args.timeout, args.reuse, args.threads, args.keep)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
