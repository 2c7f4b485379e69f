"""Shared by the notebook benchmarks: run a solution notebook in a profile, time it, read its results.

    minutes, results = run_notebook("02_attention", profile="laptop")
    write_report("02_attention", {...})          # -> benchmarks/results/02_attention.json

The notebook runs top to bottom with nbclient, with ``COURSE_PROFILE`` set and a fresh temporary
``COURSE_RUNS_DIR`` (so earlier runs never leak in), unless ``reuse`` names result folders to
copy into it first, e.g. 01's checkpoint for notebook 02's baseline, and ``keep`` names a folder
that receives the notebook's own run folder afterwards, so that later notebooks can reuse it.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SMOKE_OUTPUT = ROOT / "build" / "benchmarks-smoke"  # a smoke run never overwrites real measurements


def commit() -> str | None:
    """The checkout's commit (with "+changes" when its tracked files, other than the results the
    benchmarks write, differ from it), or None outside git."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)

    head = git("rev-parse", "--short", "HEAD")
    if head.returncode:
        return None
    changed = git("diff", "--quiet", "HEAD", "--", ".", ":!benchmarks/results",
                  ":!benchmarks/README.md").returncode
    return head.stdout.strip() + ("+changes" if changed else "")


def machine() -> dict:
    """Where the numbers come from: CPU model and count, torch and its threads, GPU, load average, and
    the commit measured."""
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
        # other processes on the machine slow every timing down; record how busy it was (1, 5, 15 min)
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "commit": commit(),
    }


def run_notebook(assignment: str, profile: str = "laptop", timeout: int = 1800,
                 reuse: Iterable[Path] = (), threads: int | None = None,
                 keep: Path | None = None) -> tuple[float, dict]:
    """Execute ``solutions/<assignment>/<assignment>.ipynb``; return (wall minutes, recorded results).

    ``reuse``: result folders (e.g. ``runs/01_rnn_baselines``) copied into the fresh runs folder
    before the notebook starts. ``threads`` sets ``OMP_NUM_THREADS`` for the kernel (torch's
    intra-op threads; on a machine shared with other jobs one thread is often faster than two).
    ``keep``: the notebook's run folder (checkpoints, results) is copied to ``keep/<assignment>``,
    replacing an earlier copy, with the executed notebook beside them (``course provenance
    --executed keep`` reads it). Raises nbclient's CellExecutionError on the first failing cell.
    """
    import nbformat
    from nbclient import NotebookClient

    notebook_path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    saved = {
        k: os.environ.get(k)
        for k in ("COURSE_PROFILE", "COURSE_RUNS_DIR", "NBGRADER_EXECUTION", "MPLBACKEND", "OMP_NUM_THREADS")
    }
    with tempfile.TemporaryDirectory(prefix=f"bench_{assignment}_") as runs:
        for folder in map(Path, reuse):
            shutil.copytree(folder, Path(runs) / folder.name)
        os.environ["COURSE_PROFILE"] = profile
        os.environ["COURSE_RUNS_DIR"] = runs
        os.environ.pop("NBGRADER_EXECUTION", None)  # it would force the smoke profile
        os.environ.setdefault("MPLBACKEND", "Agg")
        if threads:
            os.environ["OMP_NUM_THREADS"] = str(threads)  # the kernel inherits it
        try:
            notebook = nbformat.read(notebook_path, as_version=4)
            client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                    resources={"metadata": {"path": str(notebook_path.parent)}})
            start = time.perf_counter()
            client.execute()
            minutes = (time.perf_counter() - start) / 60
            from course_lib.checkpoints import read_results  # reads COURSE_RUNS_DIR at call time

            results = read_results(assignment)
            if keep is not None and results:
                kept = Path(keep) / assignment
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(Path(runs) / assignment, kept)
                nbformat.write(notebook, kept / notebook_path.name)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    if not results:
        raise RuntimeError(f"{notebook_path.name} recorded no results under {assignment}/")
    return minutes, results


def add_notebook_arguments(parser, assignment: str) -> None:
    """The options every notebook benchmark shares: --profile, --output, --timeout, --threads, --keep."""
    parser.add_argument("--profile", default="laptop", choices=["smoke", "laptop", "gpu"])
    parser.add_argument("--output", type=Path, default=None,
                        help=f"default: {RESULTS / (assignment + '.json')}")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds allowed per cell")
    parser.add_argument("--threads", type=int, default=None,
                        help="OMP_NUM_THREADS for the kernel (default: torch's own choice)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="copy the notebook's run folder (checkpoints, results) to DIR/<assignment>")


def write_report(name: str, report: dict, output: Path | None = None) -> Path:
    """Write ``report`` with the date to ``benchmarks/results/<name>.json`` (or ``output``)."""
    output = Path(output) if output else RESULTS / f"{name}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    report = {"benchmark": name, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), **report}
    output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return output
