"""``course explain STUDENT ASSIGNMENT``: every check of one student's grading, for the instructor.

When a student asks why they lost points, their feedback page says of a hidden check only the kind
of difference. This report reads the grading record and the probes saved beside it
(:mod:`.records`; the record itself holds no hidden value) and shows each test cell's
verdict and, for each call the grader replayed, whether it was visible or hidden, the run it came
from, its inputs, what the solution returned, what the student's code returned, and the whole
difference; then the submission's reasons, notes, lint findings and grading time. Nothing is run
again. Text on the terminal, and an HTML page under ``build/explain/`` (the course folder's
``build/`` is private: :mod:`.access`); it holds hidden inputs, so it is never for students.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from course_tools.course import CourseError, assignments
from course_tools.pages import render
from course_tools.untrusted import safe_text

from .records import BadRecord, Probe, Result, read_explanation, read_record


def explain(root: Path, assignment_id: str, student: str, html: Path | None = None,
            out: TextIO | None = None) -> int:
    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    try:
        record = read_record(assignment, student)
        if record is not None:
            record.probes = read_explanation(assignment, student)
    except BadRecord as error:
        raise CourseError(
            f"{student} · {assignment_id}: the grading record cannot be read ({error})") from None
    if record is None:
        raise CourseError(
            f"{student} · {assignment_id}: no grading record (run course autograde {assignment_id})")
    for line in text_lines(record):
        print(line, file=out)
    target = html or root / "build" / "explain" / assignment.id / f"{student}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page(record), encoding="utf-8")
    print(f"wrote {target}", file=out)
    return 0


def _headline(record: Result) -> str:
    score = "-" if record.score is None else f"{record.score:g} / {record.max_score:g}"
    return (
        f"{record.student} · {record.assignment}: {record.status}, {score}; graded in {record.seconds:.1f} s"
        + (" (kept from an earlier run)" if record.kept else ""))


def _about(record: Result) -> list[tuple[str, list[str]]]:
    return [("hidden inputs", [f"variant {record.variant} of {record.variants}"]),
            ("reasons", record.reasons), ("notes", record.notes), ("lint findings", record.findings)]


def _probe_fields(probe: Probe) -> list[tuple[str, str]]:
    return [("inputs", probe.inputs), ("expected", probe.expected), ("returned", probe.returned),
            ("difference", probe.difference)]


def _probe_title(probe: Probe) -> str:
    return (f"call {probe.number} {'hidden' if probe.hidden else 'visible'} {probe.target}: {probe.outcome}"
            + ("" if probe.counted else " (after the cell's first failure: not counted)") + f" — {probe.run}")


def _probes_by_cell(record: Result) -> dict[str, list[Probe]]:
    by_cell: dict[str, list[Probe]] = {}
    for probe in record.probes:
        by_cell.setdefault(probe.grade_id, []).append(probe)
    return by_cell


def text_lines(record: Result) -> list[str]:
    """The report as lines; every text on one line, without what a terminal would run."""
    def one(text: str) -> str:
        return safe_text(text, one_line=True)

    lines = [one(_headline(record))]
    for label, items in _about(record):
        lines += [f"  {label}: {one(item)}" for item in items]
    by_cell = _probes_by_cell(record)
    for check in record.checks:
        lines.append(f"{one(check.grade_id)}: {check.status}, {check.score:g} / {check.points:g}"
                     + (f" — the student read: {one(check.message)}" if check.message else ""))
        for probe in by_cell.get(check.grade_id, []):
            lines.append(f"  {one(_probe_title(probe))}")
            lines += [f"      {name}: {one(text)}" for name, text in _probe_fields(probe) if text]
        if check.grade_id not in by_cell:
            lines.append("  (no replayed call: a person scores this cell)")
    return lines


def page(record: Result) -> str:
    """The report as an HTML page (``templates/explain.html.j2``)."""
    by_cell = _probes_by_cell(record)
    checks = [(check, by_cell.get(check.grade_id, [])) for check in record.checks]
    return render(__file__, "explain.html.j2", record=record, headline=_headline(record),
                  about=_about(record), checks=checks, fields=_probe_fields)
