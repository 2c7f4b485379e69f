"""``course feedback``: one self-contained HTML page per student and assignment.

The page shows each graded check under the name of its exercise ("Exercise 3 · ElmanRNNLM"), with
its score, the message it failed with (course_lib.grading's "expected ..., got ..."), the student's
own answer code it checked, the visible part of the check's code the student already has, the
comment a grader wrote on that answer in formgrader's *Manual Grading* (read from the gradebook),
and notes about the submission. Hidden tests never appear: only the visible parts of a test cell
are shown, and no test code ever entered the student's sandbox, so no message can quote it. Plain
HTML and inline CSS (``templates/feedback.html.j2``): it opens offline, with nothing fetched from a
CDN. Every text of a record (a student's grade_id, error message, file name) is printed as
:mod:`course_tools.pages` prints it: without lone surrogates or control characters, escaped; a
record that cannot be read costs only its own page. What the page says of a late submission comes
from the caller (:class:`LateNote`): grading knows no due date.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from course_tools.course import assignments
from course_tools.notebooks import nbgrader_meta, read_notebook
from course_tools.pages import render
from course_tools.untrusted import Unreadable, safe_text

from . import gradebook
from .records import FAILED, Result, read_record, recorded_students
from .submission import answers, cell_ids, read_submission, source_cells, split_test_cell

RESULT = {"passed": "passed", "failed": "failed", "review": "a person will review this check"}


@dataclass(frozen=True)
class LateNote:
    """What a student's page says of a late submission. The caller works it out (``course feedback``:
    :func:`course_tools.classroom.late.late_notes`, from the gradebook's due dates and the course's
    late policy), so that grading knows neither."""

    penalty: float  # points taken off the score
    said: str  # when it came and what it cost, in words
    policy: str  # the late policy, in words


# (student, score before any penalty, None when the submission could not be graded) -> what the page
# says of its lateness, None for a submission on time
LateNotes = Callable[[str, float | None], LateNote | None]


# "### Exercise 3 · The language model (`ElmanRNNLM`)" -> "Exercise", 3 and the names in backticks; the
# checks of understanding are headed "### Question 1 · ... (`encoding_distance`)"
EXERCISE_HEADING = re.compile(r"^#+\s*(Exercise|Question)\s+(\d+)\b[^\n]*", re.MULTILINE)
SECTION_HEADING = re.compile(r"^#{1,3}\s+(.+)$", re.MULTILINE)  # a new section ends the exercise above it


def exercises(source: Path) -> dict[str, tuple[str, list[str]]]:
    """Each test cell's grade_id -> (the name of its exercise, the answer cells' grade_ids it checks).

    The name is "Exercise N · names" (or "Question N · names") from the exercise heading the test
    cell stands under (N, and of the names in backticks those its own answer cells define, so that
    the two checks of "Exercise 3 · split_heads, merge_heads" are told apart); a check under a
    section of its own (03's "Mask-leak tests") is named by that section's heading; else "Exercise"
    with the test's position and the names its answer cells define. The answer cells of a test are
    the solution cells since the previous test cell.
    """
    found: dict[str, tuple[re.Match | None, str | None, list[str]]] = {}
    heading, section, since = None, None, []
    for cell in read_notebook(source).cells:
        if cell.cell_type == "markdown":
            if match := EXERCISE_HEADING.search(cell.source):
                heading, section = match, None
            elif titles := SECTION_HEADING.findall(cell.source):
                heading, section = None, titles[-1].strip()
            continue
        meta = nbgrader_meta(cell)
        if cell.cell_type != "code" or not meta:
            continue
        if meta.get("solution"):
            since.append(meta["grade_id"])
        elif meta.get("grade"):
            found[meta["grade_id"]] = (heading, section if heading is None and not since else None, since)
            since = []
    names = {c.grade_id: c.names for c in source_cells(source) if c.kind == "solution"}
    labels = {}
    for number, (grade_id, (heading, section, answered)) in enumerate(found.items(), 1):
        defined = [name for answer in answered for name in names.get(answer, ())]
        kind = "Exercise"
        if heading is not None:
            kind, number = heading.group(1), int(heading.group(2))
            named = re.findall(r"`([^`]+)`", heading.group(0))
            defined = [name for name in named if name in defined] or named or defined
        elif section:
            labels[grade_id] = (section, answered)
            continue
        labels[grade_id] = (f"{kind} {number} · {', '.join(defined)}" if defined else f"{kind} {number}",
                            answered)
    return labels


def student_answers(root: Path, assignment, student: str, cells: list, ids: dict[str, str]) -> dict[str, str]:
    """The student's answer cells (grade_id -> code) as they were graded, given the source's ``cells``
    and cell ``ids``: read from the graded copy under ``autograded/``, not from ``submitted/``, which a
    student may have replaced since; none when no graded copy can be read."""
    folder = assignment.autograded(student)
    try:
        raw = read_submission(folder / assignment.release.name, root=folder)
    except Unreadable:
        return {}
    return answers(raw, cells, ids).code


def visible_part(source: str) -> str:
    return "\n".join(code for kind, code in split_test_cell(source) if kind == "visible").rstrip()


@dataclass(frozen=True)
class CheckRow:
    """One row of the page's table of checks, as the template shows it."""

    label: str  # the exercise's name
    grade_id: str
    score: str  # "1.5 / 2"
    status: str
    result: str  # the status in words
    message: str  # what the check said, "" when nothing
    comments: list[str]  # a grader's comments on its answer cells and on itself
    yours: str  # the student's answer code it checked, "" when none can be read
    visible: str  # the visible part of the test cell, "" when none


def check_rows(record: Result, tests: dict[str, str], score: gradebook.Scores | None,
               labels: dict[str, tuple[str, list[str]]], code: dict[str, str]
               ) -> tuple[list[CheckRow], set[str]]:
    """The rows of the table of checks, and the cells whose comment one of them shows."""
    manual, comments = (score.manual, score.comments) if score else ({}, {})
    rows, shown = [], set()
    for check in record.checks:
        label, answered = labels.get(check.grade_id, (check.grade_id, []))
        remarks = [c for c in (*answered, check.grade_id) if c in comments and c not in shown]
        shown.update(remarks)
        rows.append(CheckRow(
            label, check.grade_id, f"{manual.get(check.grade_id, check.score):g} / {check.points:g}",
            check.status, RESULT.get(check.status, check.status), check.message,
            [comments[c] for c in remarks], "\n\n".join(code[a] for a in answered if a in code).strip(),
            visible_part(tests.get(check.grade_id, ""))))
    return rows, shown


def page(record: Result, tests: dict[str, str], score: gradebook.Scores | None,
         labels: dict[str, tuple[str, list[str]]] | None = None, code: dict[str, str] | None = None,
         late: LateNote | None = None) -> str:
    """The HTML page for one grading record (``templates/feedback.html.j2``); ``tests`` maps grade_id
    to the test cell's source, ``labels`` a test's grade_id to (its exercise's name, its answer
    cells), ``code`` an answer cell's grade_id to the student's code; ``late`` what to say of a late
    submission. A grader's comment on a cell stands beside the check of that answer; one on a cell no
    check shows, under the checks."""
    rows, shown = check_rows(record, tests, score, labels or {}, code or {})
    total = score.score if score else record.score
    return render(
        __file__, "feedback.html.j2", record=record, graded=record.status != FAILED,
        total=total, penalty=late.penalty if late else 0, late=late, rows=rows,
        others=sorted((cell, text) for cell, text in (score.comments if score else {}).items()
                      if cell not in shown))


def write_feedback(root: Path, assignment_id: str, students: list[str] | None = None,
                   out: TextIO | None = None, *, late: LateNotes) -> int:
    """Each graded student's page (or those of ``students``), saying of a late submission what
    ``late`` says; 1 when a record cannot be read (its page is not written), else 0."""
    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    cells = source_cells(assignment.source)
    tests = {c.grade_id: c.source for c in cells if c.kind == "test"}
    labels, ids = exercises(assignment.source), cell_ids(assignment.source)
    url = gradebook.db_url(root)
    scores = gradebook.scores(url, assignment.id)
    graded = recorded_students(assignment)
    written, failed = 0, []
    for student in graded:  # the folder's name, not what the record says
        if students and student not in students:
            continue
        try:
            record = read_record(assignment, student)
            score = scores.get(student)
            total = score.score if score else record.score
            text = page(record, tests, score, labels, student_answers(root, assignment, student, cells, ids),
                        late(student, total if record.status != FAILED else None))
        except Exception as error:  # one unreadable record must not stop the others' pages
            failed.append(f"{safe_text(student, one_line=True)} ({type(error).__name__})")
            continue
        target = assignment.feedback(student)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written += 1
    print(f"wrote feedback for {written} student(s) under feedback/", file=out)
    if failed:
        print(f"no feedback for {len(failed)}: their grading record cannot be read: {', '.join(failed)}",
              file=out)
    return 1 if failed else 0
