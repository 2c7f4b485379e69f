"""Benchmark of ``course autograde`` on the whole course: seconds per student, --jobs 1 against --jobs 2.

    python -m benchmarks.autograde_batch                      # every assignment, 12 students each
    python -m benchmarks.autograde_batch --assignments 01_rnn_baselines --students 30 --jobs 2
    python -m benchmarks.autograde_batch --load 2             # then the grades beside 2 CPU-bound processes

For each assignment the batch is a third honest submissions (the solution), a sixth untouched
releases and the rest the assignment's bug catalogue (tests/bugs/<assignment>.py: each bug
redefines one graded function inside its answer cell). The solution's probes are recorded once
before the timed runs. Each --jobs setting grades every batch in its own copy of the course (a new
gradebook), assignment by assignment, the settings taking turns to go first; each run checks that
the honest students get full marks, the releases nothing and no bug full marks. Seconds per student
are for a student's whole course: the sum over the assignments divided by the students. The
students are spread over ``--variants`` variants of the hidden inputs (``c.HiddenVariants.count``).
Before the timed runs, each assignment's reference is built twice and timed: variant 0 alone, then
every variant at once (as ``course autograde`` builds them); the difference over the other
variants is what one more variant costs.

With ``--load N``, the batch again, with one student more per round of the alternatives catalogue
(tests/alternatives: full marks), graded with --jobs 2 once on its own and once beside N CPU-bound
processes (``python -c 'while 1: pass'``): every student's status, score and per-check scores must
be the same (the grader's limits are CPU seconds, so a busy machine changes only the time).
Writes ``benchmarks/results/autograde_batch.json``.
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_batch(root: Path, assignment: str, students: int) -> dict[str, str]:
    """Submit ``students`` notebooks of ``assignment`` to the scratch course ``root``; student -> kind."""
    import nbformat

    from course_tools.course import Assignment
    from course_tools.grading.submission import source_cells
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
        folder = Assignment(assignment, root).submitted(student)
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        kinds[student] = kind
    return kinds


def add_alternatives(root: Path, assignment: str) -> dict[str, str]:
    """One more student per round of the alternatives catalogue (round i: every graded name's i-th
    alternative, in the solution's answer cells); student -> "alternative"."""
    import nbformat

    from course_tools.course import Assignment
    from course_tools.grading.submission import source_cells
    from tests.alternatives import catalogue

    source = root / "solutions" / assignment / f"{assignment}.ipynb"
    owner = {name: c.grade_id for c in source_cells(source) if c.kind == "solution" for name in c.names}
    by_name: dict[str, list[str]] = {}
    for alternative in catalogue(assignment):
        by_name.setdefault(alternative.target, []).append(alternative.code)
    kinds = {}
    for i in range(max((len(codes) for codes in by_name.values()), default=0)):
        notebook = nbformat.read(source, as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            for name, codes in by_name.items():
                if owner.get(name) == grade_id:
                    cell.source += "\n\n" + codes[i % len(codes)].strip()
        student = f"alternative{i:02d}"
        folder = Assignment(assignment, root).submitted(student)
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        kinds[student] = "alternative"
    return kinds


def _outcomes(results: list) -> dict[str, list]:
    return {
        r.student: [r.status, r.score, r.max_score, {c.grade_id: c.score
                                                     for c in r.checks}]
        for r in results
    }


def _full(outcome: list) -> bool:
    status, score, max_score, _ = outcome
    return status == "graded" and score == max_score


def run_loaded(template: Path, assignments: list[str], kinds: dict[str, dict[str, str]], hogs: int) -> dict:
    """Every assignment's batch (and its alternatives) with --jobs 2, alone and beside ``hogs``
    CPU-bound processes: the students whose grades differ (there must be none), and the times."""
    from course_tools.grading.autograde import autograde

    report: dict = {"hogs": hogs, "by_assignment": {}}
    for assignment in assignments:
        root = shutil.copytree(template, template.parent / f"loaded-{assignment}")
        kinds[assignment].update(add_alternatives(root, assignment))
        seconds, outcomes = {}, {}
        for setting in ("alone", "loaded"):
            processes = [subprocess.Popen([sys.executable, "-c", "while 1: pass"])
                         for _ in range(hogs if setting == "loaded" else 0)]
            try:
                started = time.perf_counter()
                results = autograde(root, assignment, jobs=2, out=io.StringIO(), progress=False, regrade=True)
                seconds[setting] = round(time.perf_counter() - started, 1)
            finally:
                for process in processes:
                    process.kill()
                    process.wait()
            outcomes[setting] = _outcomes(results)
        differ = {s: {"alone": outcomes["alone"][s], "loaded": outcomes["loaded"].get(s)}
                  for s in outcomes["alone"] if outcomes["alone"][s] != outcomes["loaded"].get(s)}
        alternatives = [s for s, k in kinds[assignment].items() if k == "alternative"]
        report["by_assignment"][assignment] = {
            "students": len(outcomes["alone"]), "alternatives": len(alternatives), "seconds": seconds,
            "differ": differ,
            "alternatives_not_full": [s for s in alternatives if not _full(outcomes["alone"][s])]}
        print(f"{assignment} --jobs 2, alone {seconds['alone']} s, beside {hogs} CPU-bound processes "
              f"{seconds['loaded']} s: {len(differ)} grades differ", file=sys.stderr)
    report["differ"] = sum(len(a["differ"]) for a in report["by_assignment"].values())
    report["alternatives_not_full"] = sum(
        len(a["alternatives_not_full"]) for a in report["by_assignment"].values())
    return report


def run(assignments: list[str], students: int, jobs: list[int], load: int = 0, variants: int = 1) -> dict:
    from benchmarks._notebook_run import machine
    from course_tools.grading.autograde import autograde, limits_for
    from course_tools.grading.reference import build_references
    from course_tools.course import assignments as course_assignments
    from course_tools.publishing.sample import scratch_course
    from course_tools.grading.sandbox import Sandbox
    from course_tools.grading.submission import source_cells

    report: dict = {"assignments": assignments, "students": students, "machine": machine(), "batch": {},
                    "variants": variants, "reference_seconds": {}, "reference_seconds_per_variant": {},
                    "by_assignment": {name: {} for name in assignments}}
    with tempfile.TemporaryDirectory(prefix="bench-autograde-") as scratch:
        template = Path(scratch) / "template"
        scratch_course(ROOT, template, course_assignments(ROOT, assignments))
        with open(template / "nbgrader_config.py", "a", encoding="utf-8") as config:
            config.write(f"\nc.HiddenVariants.count = {variants}\n")
        kinds = {}
        for assignment in assignments:
            kinds[assignment] = make_batch(template, assignment, students)
            report["batch"][assignment] = dict(Counter(k.split(":")[0] for k in kinds[assignment].values()))
            course = course_assignments(template, [assignment])[0]
            seconds = {}
            # variant 0 alone, then every variant at once
            for built in ([0], list(range(variants))) if variants > 1 else ([0],):
                shutil.rmtree(template / "build" / "autograde" / assignment, ignore_errors=True)
                started = time.perf_counter()
                with Sandbox() as sandbox:
                    build_references(course, source_cells(course.source), sandbox, limits_for(template),
                                     {"files": course.release.parent}, built)
                seconds[len(built)] = round(time.perf_counter() - started, 1)
            report["reference_seconds"][assignment] = {"variant 0": seconds[1],
                                                       f"{variants} variants": seconds[variants]}
            if variants > 1:  # what each variant after the first adds
                report["reference_seconds_per_variant"][assignment] = round(
                    (seconds[variants] - seconds[1]) / (variants - 1), 1)
        roots = {n: shutil.copytree(template, Path(scratch) / f"jobs{n}") for n in jobs}
        for index, assignment in enumerate(assignments):
            # take turns going first: load changes hit both alike
            for n in jobs if index % 2 == 0 else jobs[::-1]:
                started = time.perf_counter()
                results = autograde(roots[n], assignment, jobs=n, out=io.StringIO(), progress=False)
                seconds = time.perf_counter() - started
                kind = kinds[assignment]
                wrong = [
                    r.student for r in results if (kind[r.student] == "honest" and r.score != r.max_score) or
                    (kind[r.student] == "blank" and r.score != 0) or
                    (kind[r.student].startswith("bug") and r.score == r.max_score)
                ]
                report["by_assignment"][assignment][f"jobs{n}"] = {
                    "seconds": round(seconds, 1),
                    "seconds_per_student": round(seconds / students, 2),
                    "statuses": dict(Counter(r.status for r in results)),
                    "unexpected": {s: kind[s]
                                   for s in wrong},
                    "flagged": {
                        r.student: [kind[r.student], r.reasons]
                        for r in results if r.status != "graded"
                    },
                }
                print(f"{assignment} --jobs {n}: {seconds:.0f} s, {seconds / students:.1f} s per student",
                      file=sys.stderr)
        if load:
            report["load"] = run_loaded(template, assignments, kinds, load)
    report["runs"] = {}
    for n in jobs:
        runs = [by_jobs[f"jobs{n}"] for by_jobs in report["by_assignment"].values()]
        seconds = sum(r["seconds"] for r in runs)
        report["runs"][f"jobs{n}"] = {
            "seconds": round(seconds, 1), "seconds_per_student": round(seconds / students, 2),
            "unexpected": sum(len(r["unexpected"]) for r in runs)
        }
    if "jobs1" in report["runs"] and len(report["runs"]) > 1:
        base = report["runs"]["jobs1"]["seconds"]
        report["speedup"] = {k: round(base / v["seconds"], 2) for k, v in report["runs"].items()}
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


def main(argv: list[str] | None = None) -> int:
    from benchmarks._notebook_run import write_report
    from course_tools.course import assignments

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", "--assignment", nargs="+", default=None, metavar="ASSIGNMENT",
                        help="default: every assignment of the course")
    parser.add_argument("--students", type=int, default=12, help="per assignment (default 12)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--load", type=int, default=0, metavar="N",
        help="then grade each batch with its alternatives again with --jobs 2, alone and beside N "
        "CPU-bound processes, and compare every grade (default 0: not)")
    parser.add_argument("--variants", type=int, default=4, metavar="N",
                        help="variants of the hidden inputs (c.HiddenVariants.count; default 4): each "
                             "variant's reference is built, and timed, before the timed runs")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args.assignments or [a.id for a in assignments(ROOT)], args.students, args.jobs, args.load,
                 args.variants)
    path = write_report("autograde_batch", report, args.output)
    print(json.dumps(report, indent=2))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
