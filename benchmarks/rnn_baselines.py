"""Benchmark of notebook 01: run the solution notebook in the laptop profile and record its numbers.

    python -m benchmarks.rnn_baselines            # or: python benchmarks/rnn_baselines.py
    python -m benchmarks.rnn_baselines --profile smoke --output /tmp/nb01.json

Executes ``solutions/01_rnn_baselines/01_rnn_baselines.ipynb`` top to bottom with nbclient, with
``COURSE_PROFILE`` set and a temporary ``COURSE_RUNS_DIR``; measures the wall time; reads the
results the notebook recorded (``course_lib.train.read_results``) and writes them, with the
machine they came from, to ``benchmarks/results/01_rnn_baselines.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_rnn_baselines"
NOTEBOOK = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
DEFAULT_OUTPUT = ROOT / "benchmarks" / "results" / f"{ASSIGNMENT}.json"


def _machine() -> dict:
    import torch

    cpu = platform.processor() or platform.machine()
    try:  # the CPU model name, where Linux tells it
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cpu_count": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def _load() -> list[float] | None:
    """1-, 5- and 15-minute load averages: other work on the machine skews the timings."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def run(profile: str = "laptop", output: Path = DEFAULT_OUTPUT, timeout: int = 1800,
        threads: int | None = None) -> dict:
    import nbformat
    from nbclient import NotebookClient

    if threads:  # the kernel inherits it: torch then uses this many intra-op threads
        os.environ["OMP_NUM_THREADS"] = str(threads)
    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="bench01_") as runs:
        os.environ["COURSE_PROFILE"] = profile
        os.environ["COURSE_RUNS_DIR"] = runs
        os.environ.pop("NBGRADER_EXECUTION", None)  # it would force the smoke profile
        os.environ.setdefault("MPLBACKEND", "Agg")
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        start = time.perf_counter()
        client.execute()  # raises CellExecutionError on the first failing cell
        minutes = (time.perf_counter() - start) / 60

        from course_lib.train import read_results  # after COURSE_RUNS_DIR is set

        results = read_results(ASSIGNMENT)
        if not results:
            raise RuntimeError(f"the notebook recorded no results under {runs}/{ASSIGNMENT}")

    report = {
        "assignment": ASSIGNMENT,
        "profile": profile,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {**_machine(), "device": results.get("device"),
                    "kernel_threads": threads or "torch default",
                    "load_average_before": load_before, "load_average_after": _load()},
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
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="laptop", choices=["smoke", "laptop", "gpu"])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds allowed per cell")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS for the kernel (default: torch's own choice)")
    args = parser.parse_args(argv)
    report = run(args.profile, args.output, args.timeout, args.threads)
    print(json.dumps(report, indent=2))
    print(f"written to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # for `python benchmarks/rnn_baselines.py`
    raise SystemExit(main())
