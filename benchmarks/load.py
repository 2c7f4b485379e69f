"""Notebooks 05 and 07 in the laptop profile, on an idle machine and beside CPU-bound processes.

    python -m benchmarks load                                   # both notebooks, idle then loaded
    python -m benchmarks.load --assignments 05_transformer --hogs 2 --output /tmp/load.json

A training notebook counts its training in updates, so a busy machine must change its time and
nothing else. Each notebook runs twice, one after the other: first with nothing else started, then
beside ``--hogs`` processes that keep a core busy each (``python -c 'while True: pass'``). The report
(``benchmarks/results/load.json``) holds, per run, the headline numbers (05: BLEU on test and
test_long; 07: the validation loss in nats per character), the updates, the notebook's wall minutes,
its training minutes and the estimate it printed before training, and the load average before and
after; per notebook, whether the two runs' headlines agree within the tolerance (BLEU ±0.5,
nats/char ±0.02) and whether they are identical. ``--keep DIR`` keeps the idle run's folder and
executed notebook in ``DIR/<assignment>`` (for ``course provenance --executed DIR``). A notebook not
named by ``--assignments`` keeps its entry of the earlier report, with its date.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from benchmarks._notebook_run import RESULTS, machine, run_notebook, write_report

# The headline numbers of each notebook and how far a rerun may move them (the tolerance)
HEADLINES: dict[str, dict[str, float]] = {"05_transformer": {"bleu_test": 0.5, "bleu_test_long": 0.5},
                                          "07_language_model": {"valid_loss": 0.02}}
HOGS = 2  # CPU-bound processes beside the loaded run: as many as the 2 cores the targets are set for
BUSY_LOOP = "while True: pass"


@contextlib.contextmanager
def busy(processes: int) -> Iterator[list[int]]:
    """``processes`` Python processes spinning on the CPU for the duration of the block; their pids."""
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(processes)]
    try:
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def run_once(assignment: str, profile: str, hogs: int, timeout: int, keep: Path | None) -> dict:
    """One execution of the notebook with ``hogs`` busy processes beside it."""
    before = os.getloadavg()
    with busy(hogs):
        minutes, results = run_notebook(assignment, profile, timeout, keep=keep)
        after = os.getloadavg()  # before the busy processes stop
    return {
        "hogs": hogs, "headline": {key: results.get(key)
                                   for key in HEADLINES[assignment]},
        "updates": results.get("updates", results.get("steps")), "notebook_minutes": round(minutes, 2),
        "train_minutes": results.get("train_minutes"),
        "estimated_train_minutes": results.get("estimated_train_minutes"),
        "load_average_before": [round(x, 2)
                                for x in before], "load_average_after": [round(x, 2) for x in after]
    }


def agreement(assignment: str, idle: dict, loaded: dict) -> dict:
    """Whether the loaded run reproduced the idle run's headline: within the tolerance, and exactly."""
    differences = {key: None if idle["headline"][key] is None or loaded["headline"][key] is None
                   else round(abs(loaded["headline"][key] - idle["headline"][key]), 4)
                   for key in HEADLINES[assignment]}
    return {"tolerance": HEADLINES[assignment], "difference": differences,
            "same": all(d is not None and d <= HEADLINES[assignment][key] for key, d in differences.items())
            and idle["updates"] == loaded["updates"],
            "identical": idle["headline"] == loaded["headline"] and idle["updates"] == loaded["updates"]}


def run(assignments: list[str], profile: str = "laptop", hogs: int = HOGS, timeout: int = 3600,
        keep: Path | None = None, earlier: dict | None = None) -> dict:
    """Both runs of each notebook of ``assignments``; the notebooks of ``earlier`` (a previous report of
    the same profile) that are not run again keep their entries, each with its own date."""
    kept = (earlier or {}).get("notebooks", {}) if (earlier or {}).get("profile") == profile else {}
    report: dict = {"machine": machine(), "profile": profile, "hogs": hogs, "busy_process": BUSY_LOOP,
                    "notebooks": dict(kept)}
    for assignment in assignments:
        print(f"-- {assignment}: idle", file=sys.stderr)
        idle = run_once(assignment, profile, 0, timeout, keep)
        print(f"-- {assignment}: beside {hogs} busy processes", file=sys.stderr)
        loaded = run_once(assignment, profile, hogs, timeout, None)
        report["notebooks"][assignment] = {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "idle": idle, "loaded": loaded,
            **agreement(assignment, idle, loaded)
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", nargs="+", choices=list(HEADLINES), default=list(HEADLINES))
    parser.add_argument("--profile", default="laptop", choices=["smoke", "laptop", "gpu"])
    parser.add_argument("--hogs", type=int, default=HOGS,
                        help=f"busy processes beside the second run (default {HOGS})")
    parser.add_argument("--timeout", type=int, default=3600,
                        help="seconds allowed per cell (a loaded run is slow)")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="keep the idle run's folder and executed notebook in DIR/<assignment>")
    parser.add_argument("--output", type=Path, default=None, help="default: benchmarks/results/load.json")
    args = parser.parse_args(argv)
    output = args.output or RESULTS / "load.json"
    earlier = json.loads(output.read_text(encoding="utf-8")) if output.is_file() else None
    report = run(args.assignments, args.profile, args.hogs, args.timeout, args.keep, earlier)
    write_report("load", report, output)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
