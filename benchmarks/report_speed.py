"""``course report`` on a class of synthetic grading records: seconds for the whole command.

    python -m benchmarks report              # 500 students, 3 rounds
    python -m benchmarks.report_speed --students 500 --rounds 3

The class is tests/report_class.py's (profiles of known outcome, cycled; three test cells; late
submissions under a per-day policy), written once; each round runs the command's work (the
records, the probes beside them and the gradebook read, the charts drawn, the page and the CSV
files written), and the median is reported.
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks._notebook_run import machine

ROOT = Path(__file__).resolve().parents[1]


def run(students: int = 500, rounds: int = 3) -> dict:
    from course_tools.classroom.report import report_command
    from course_tools.course import assignments
    from tests.report_class import make_class

    with tempfile.TemporaryDirectory(prefix="report-class-") as folder:
        started = time.perf_counter()
        root = make_class(Path(folder) / "course", students)
        made = time.perf_counter() - started
        seconds = []
        for _ in range(rounds):
            started = time.perf_counter()
            report_command(root, assignments(root), root / "build" / "report", stdout=io.StringIO())
            seconds.append(time.perf_counter() - started)
        page_bytes = (root / "build" / "report" / "index.html").stat().st_size
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    return {"machine": machine(), "commit": commit, "students": students, "rounds": rounds,
            "seconds": [round(s, 3) for s in seconds], "median_seconds": round(statistics.median(seconds), 3),
            "class_written_seconds": round(made, 1), "page_bytes": page_bytes,
            "load_average_after": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args(argv)
    print(run(arguments.students, arguments.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
