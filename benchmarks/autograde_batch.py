"""Benchmark of ``course autograde`` on the whole course: seconds per student, --jobs 1 against --jobs 2.

    python -m benchmarks.autograde_batch                      # every assignment, 12 students each
    python -m benchmarks.autograde_batch --assignments 01_rnn_baselines --students 30 --jobs 2

For each assignment the batch is a third honest submissions (the solution), a sixth untouched
releases and the rest the assignment's bug catalogue (tests/bugs/<assignment>.py: each bug
redefines one graded function inside its answer cell). The solution's probes are recorded once
before the timed runs. Each --jobs setting grades every batch in its own copy of the course (a new
gradebook), assignment by assignment, the settings taking turns to go first; each run checks that
the honest students get full marks, the releases nothing and no bug full marks. Seconds per student
are for a student's whole course: the sum over the assignments divided by the students. Writes
``benchmarks/results/autograde_batch.json``.
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_batch(root: Path, assignment: str, students: int) -> dict[str, str]:
    """Submit ``students`` notebooks of ``assignment`` to the scratch course ``root``; student -> kind."""
    import nbformat

    from course_lib.instructor.submission import source_cells
    from tests.bugs import catalogue

    source = root / "solutions" / assignment / f"{assignment}.ipynb"
    release = root / "notebooks" / assignment / f"{assignment}.ipynb"
    owner = {name: c.grade_id for c in source_cells(source) if c.kind == "solution" for name in c.names}
    bugs = catalogue(assignment)
    kinds = {}
    for index in range(students):
        kind = "honest" if index % 3 == 0 else "blank" if index % 6 == 1 else "bug"
        notebook = nbformat.read(source if kind != "blank" else release, as_version=4)
        if kind == "bug":
            bug = bugs[index % len(bugs)]
            kind = f"bug: {bug.target}: {bug.description}"
            for cell in notebook.cells:
                if cell.metadata.get("nbgrader", {}).get("grade_id") == owner[bug.target]:
                    cell.source += "\n\n" + bug.code.strip()
        student = f"student{index:02d}"
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        kinds[student] = kind
    return kinds


def run(assignments: list[str], students: int, jobs: list[int]) -> dict:
    from benchmarks._notebook_run import machine
    from course_lib.instructor.autograde import autograde, build_reference, limits_for
    from course_lib.instructor.course import assignments as course_assignments
    from course_lib.instructor.sample import scratch_course
    from course_lib.instructor.sandbox import Sandbox
    from course_lib.instructor.submission import source_cells

    report: dict = {"assignments": assignments, "students": students, "machine": machine(), "batch": {},
                    "reference_seconds": {}, "by_assignment": {name: {} for name in assignments}}
    with tempfile.TemporaryDirectory(prefix="bench-autograde-") as scratch:
        template = Path(scratch) / "template"
        scratch_course(ROOT, template, course_assignments(ROOT, assignments))
        kinds = {}
        for assignment in assignments:
            kinds[assignment] = make_batch(template, assignment, students)
            report["batch"][assignment] = dict(Counter(k.split(":")[0] for k in kinds[assignment].values()))
            started = time.perf_counter()
            course = course_assignments(template, [assignment])[0]
            build_reference(course, source_cells(course.source), Sandbox(), limits_for(template),
                            {"files": course.release.parent})
            report["reference_seconds"][assignment] = round(time.perf_counter() - started, 1)
        roots = {n: shutil.copytree(template, Path(scratch) / f"jobs{n}") for n in jobs}
        for index, assignment in enumerate(assignments):
            for n in jobs if index % 2 == 0 else jobs[::-1]:  # take turns going first: load changes hit both alike
                started = time.perf_counter()
                results = autograde(roots[n], assignment, jobs=n, out=io.StringIO(), progress=False)
                seconds = time.perf_counter() - started
                kind = kinds[assignment]
                wrong = [r.student for r in results if (kind[r.student] == "honest" and r.score != r.max_score)
                         or (kind[r.student] == "blank" and r.score != 0)
                         or (kind[r.student].startswith("bug") and r.score == r.max_score)]
                report["by_assignment"][assignment][f"jobs{n}"] = {
                    "seconds": round(seconds, 1), "seconds_per_student": round(seconds / students, 2),
                    "statuses": dict(Counter(r.status for r in results)),
                    "unexpected": {s: kind[s] for s in wrong},
                    "flagged": {r.student: [kind[r.student], r.reasons] for r in results if r.status != "graded"},
                }
                print(f"{assignment} --jobs {n}: {seconds:.0f} s, {seconds / students:.1f} s per student",
                      file=sys.stderr)
    report["runs"] = {}
    for n in jobs:
        runs = [by_jobs[f"jobs{n}"] for by_jobs in report["by_assignment"].values()]
        seconds = sum(r["seconds"] for r in runs)
        report["runs"][f"jobs{n}"] = {"seconds": round(seconds, 1), "seconds_per_student": round(seconds / students, 2),
                                      "unexpected": sum(len(r["unexpected"]) for r in runs)}
    if "jobs1" in report["runs"] and len(report["runs"]) > 1:
        base = report["runs"]["jobs1"]["seconds"]
        report["speedup"] = {k: round(base / v["seconds"], 2) for k, v in report["runs"].items()}
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


def main(argv: list[str] | None = None) -> int:
    from benchmarks._notebook_run import write_report
    from course_lib.instructor.course import assignments

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", "--assignment", nargs="+", default=None, metavar="ASSIGNMENT",
                        help="default: every assignment of the course")
    parser.add_argument("--students", type=int, default=12, help="per assignment (default 12)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args.assignments or [a.id for a in assignments(ROOT)], args.students, args.jobs)
    path = write_report("autograde_batch", report, args.output)
    print(json.dumps(report, indent=2))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
