"""Validate against the grade: every catalogued fixture through nbgrader's Validator and ``course autograde``.

    python -m benchmarks.validate_agreement                          # every assignment (hours on 2 cores)
    python -m benchmarks.validate_agreement --assignments 04_positional_encoding --jobs 2
    python -m benchmarks agreement                                   # the same, as a section of the harness

For each assignment, a scratch course gets one submission per fixture of its catalogues: every bug
(tests/bugs) and every alternative correct answer (tests/alternatives), each the solution notebook's
answers with that one definition replaced. Each submission is then

- validated as the student's *Validate* button does (``nbgrader.validator.Validator`` from Python,
  under the course's nbgrader_config.py: the release's visible checks only), and
- graded by ``course autograde`` in its sandbox (visible and hidden checks, replayed outside),

and the two verdicts are compared test cell by test cell. A fixture agrees when both fail exactly
the same test cells; it is as its catalogue says when a bug fails a test cell of its own exercise and
an alternative fails none. Every disagreement is a contract defect: the text, the visible check and
the grader do not test the same thing. The suite holds the same verdicts more cheaply
(tests/test_bug_catalogue.py: each bug fails its exercise's visible checks in a live kernel;
tests/test_grading_the_course.py: the grader takes that exercise's points; the alternatives pass
both): this runs the real Validator on whole notebooks, where a notebook's later cells see the
fixture too. Writes ``benchmarks/results/validate_agreement.json``: one entry per assignment, each with
its own date and load, so assignments can be run at different times.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Fixture:
    student: str  # its submission's student id in the scratch course
    kind: str  # "bug" or "alternative"
    target: str  # the graded name it redefines
    description: str


@dataclass
class Verdict:
    fixture: Fixture
    own: list[str]  # the test cells of the target's own exercise
    validate_failed: list[str]  # test cells the Validator shows red
    grade_failed: list[str]  # test cells that lost points in course autograde
    grade_status: str  # the grader's status (graded, review, failed ...)

    @property
    def agrees(self) -> bool:
        return self.validate_failed == self.grade_failed

    def as_catalogued(self, failed: list[str]) -> bool:
        """What the catalogue says of ``failed``: a bug fails its own exercise, an alternative nothing."""
        return bool(set(failed) & set(self.own)) if self.fixture.kind == "bug" else not failed


def fixtures(assignment_id: str) -> list[tuple[Fixture, str]]:
    """Every bug and alternative of the assignment's catalogues, with its code."""
    from tests.alternatives import catalogue as alternatives
    from tests.bugs import catalogue as bugs

    found = [(Fixture(f"bug-{i:03d}", "bug", b.target, b.description), b.code)
             for i, b in enumerate(bugs(assignment_id))]
    found += [(Fixture(f"alt-{i:03d}", "alternative", a.target, a.description), a.code)
              for i, a in enumerate(alternatives(assignment_id))]
    return found


def _validate(course: Path, notebook: Path) -> list[str]:
    """The test cells nbgrader's Validator shows failing (run in a process of its own: one kernel each)."""
    from course_tools.publishing.execute import validate

    return sorted(validate(course, notebook).failed)


def cross_check(assignment, scratch: Path, jobs: int, only: int | None = None) -> dict:
    """Validate and autograde every fixture of ``assignment`` in the scratch course ``scratch``."""
    import nbformat

    from course_tools.grading.autograde import autograde
    from course_tools.grading.records import GRADED
    from course_tools.publishing.sample import scratch_course, submit
    from tests.catalogue_submissions import answers, defining, notebook_with, own_checks

    scratch_course(ROOT, scratch, [assignment])
    names, solution = answers(assignment)
    own = own_checks(assignment)
    chosen = fixtures(assignment.id)[:only]
    submitted = {}
    for fixture, code in chosen:
        path = submit(scratch, fixture.student, assignment.id, assignment.release)
        nbformat.write(notebook_with(assignment, defining({fixture.target: code}, names, solution)), path)
        submitted[fixture.student] = path
    started = time.perf_counter()
    # One torch thread per kernel, as the grader's runs have: ``jobs`` kernels each with torch's own
    # choice of threads oversubscribe the cores, and a timing cell (01's median_ms) then takes minutes.
    # The pool's workers, and the kernels they start, inherit it; the harness's later sections do not.
    threads = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        with ProcessPoolExecutor(jobs) as pool:
            validated = dict(zip(submitted, pool.map(_validate, [scratch] * len(submitted),
                                                     submitted.values())))
    finally:
        if threads is None:
            os.environ.pop("OMP_NUM_THREADS")
        else:
            os.environ["OMP_NUM_THREADS"] = threads
    validate_seconds = time.perf_counter() - started
    started = time.perf_counter()
    results = {
        r.student: r
        for r in autograde(scratch, assignment.id, jobs=jobs, out=io.StringIO(), progress=False)
    }
    grade_seconds = time.perf_counter() - started
    verdicts = []
    for fixture, _ in chosen:
        result = results[fixture.student]
        failed = sorted(c.grade_id for c in result.checks if c.score < c.points)
        # not graded (a person must look, or grading failed): it agrees with nothing
        if result.status != GRADED:
            failed.append(f"(status {result.status})")
        verdicts.append(
            Verdict(fixture, sorted(own.get(fixture.target, ())), validated[fixture.student], failed,
                    result.status))
    return {"fixtures": len(verdicts), "validate_seconds": round(validate_seconds, 1),
            "autograde_seconds": round(grade_seconds, 1),
            "disagreements": [_row(v) for v in verdicts if not v.agrees],
            "validate_misses": [_row(v) for v in verdicts if not v.as_catalogued(v.validate_failed)],
            "grade_misses": [_row(v) for v in verdicts if not v.as_catalogued(v.grade_failed)]}


def _row(verdict: Verdict) -> dict:
    return {**asdict(verdict.fixture), "own": verdict.own, "validate_failed": verdict.validate_failed,
            "grade_failed": verdict.grade_failed, "grade_status": verdict.grade_status}


def run(assignment_ids: list[str] | None = None, *, jobs: int = 2, only: int | None = None,
        output: Path | None = None) -> dict:
    """The cross-check of the selected assignments (all by default); ``only`` keeps each one's first
    fixtures.

    Each assignment's entry carries its own date, load and jobs. With ``output``, the entries of
    assignments not run this time are kept from that file (when measured at the same size), and the
    file is rewritten after each assignment, so a stopped run keeps what it finished.
    """
    from benchmarks._notebook_run import commit, machine, write_report
    from course_tools.course import assignments

    selected = [a for a in assignments(ROOT) if assignment_ids is None or a.id in assignment_ids]
    report = {"machine": machine(), "smoke": only is not None, "assignments": _kept(output, only)}
    with tempfile.TemporaryDirectory(prefix="agreement-") as work:
        for assignment in selected:
            print(f"-- {assignment.id}", file=sys.stderr)
            before = machine()["load_average"]
            found = cross_check(assignment, Path(work) / assignment.id, jobs, only)
            report["assignments"][assignment.id] = {
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit(),
                "load_average": before,
                "load_average_after": machine()["load_average"], "jobs": jobs,
                "fixtures_per_assignment": only, **found}
            if output is not None:
                write_report("validate_agreement", report, output)
    return report


def _kept(output: Path | None, only: int | None) -> dict:
    """The entries of an earlier run in ``output`` measured at the same size (``only``), by assignment."""
    if output is None or not output.is_file():
        return {}
    earlier = json.loads(output.read_text(encoding="utf-8")).get("assignments", {})
    return {name: entry for name, entry in earlier.items() if entry.get("fixtures_per_assignment") == only}


def main(argv: list[str] | None = None) -> int:
    from benchmarks._notebook_run import RESULTS, SMOKE_OUTPUT

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", nargs="*", default=None, help="assignment ids (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="validations and autograde runs at a time")
    parser.add_argument("--only", type=int, default=None,
                        help="each assignment's first N fixtures (a quick run)")
    parser.add_argument("--output", type=Path, default=None,
                        help="the results file: the assignments run replace their own entries in it "
                             f"(default in {RESULTS.relative_to(ROOT)}/, with --only in "
                             f"{SMOKE_OUTPUT.relative_to(ROOT)}/)")
    args = parser.parse_args(argv)
    output = args.output or (SMOKE_OUTPUT if args.only else RESULTS) / "validate_agreement.json"
    report = run(args.assignments, jobs=args.jobs, only=args.only, output=output)
    for assignment, found in report["assignments"].items():
        print(
            f"{assignment} ({found['date'][:10]}): {found['fixtures']} fixtures, "
            f"{len(found['disagreements'])} disagree, Validate misses {len(found['validate_misses'])}, "
            f"the grade misses {len(found['grade_misses'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
