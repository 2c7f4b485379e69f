"""``course grades``: every student's status and score per assignment, where no status is a silent zero.

A student has, per assignment, exactly one of: a score (``graded``), ``needs manual review (why)``
until a grader has scored every flagged cell, ``failed to grade (why)``, ``not graded yet`` (a
submission autograde has not seen) or ``not submitted``. Scores come from the gradebook, so a
grader's manual scores count, and the comments a grader wrote in formgrader's *Manual Grading* are
in the CSV's ``comments`` column and listed under the table, each with its student and cell. A late
submission's score is after the late policy's penalty (:mod:`.late`), and the row says how late it
was and what that cost.

Every text is written safely (:mod:`.untrusted`): a record holds what a student wrote (a grade_id,
an error message), so the table shows it on one line without control characters, and the CSV
neutralises cells a spreadsheet would run as a formula. A record that cannot be read fails its own
row, never the export.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TextIO

from course_tools.course import Assignment, students_with_folders
from course_tools.classroom import late
from course_tools.grading import gradebook
from course_tools.grading.records import FAILED, GRADED, NOT_SUBMITTED, REVIEW, BadRecord, read_record
from course_tools.untrusted import csv_cell, safe_text, text_table

NOT_GRADED = "not graded yet"
COLUMNS = ("student", "assignment", "status", "score", "max_score", "late", "penalty", "why", "comments")


def rows(root: Path, selected: list[Assignment]) -> list[dict]:
    url = gradebook.db_url(root)
    roster = set(gradebook.students(url)) if exists(url) else set()
    roster |= students_with_folders(root)
    table = []
    plugin = late.policy(root)
    for assignment in selected:
        scores = gradebook.scores(url, assignment.id) if exists(url) else {}
        deadlines = late.deadlines(url, assignment.id) if exists(url) else {}
        for student in sorted(roster):
            row = _row(root, assignment, student, scores.get(student))
            _penalise(row, plugin, deadlines.get(student))
            table.append(row)
    return table


def _penalise(row: dict, plugin, deadline: late.Deadline | None) -> None:
    """The late policy on a row: its score after the penalty, how late, and the points it cost."""
    if row["status"] == NOT_SUBMITTED:
        return
    graded = row["status"] == GRADED
    lateness = late.lateness(plugin, row["student"], deadline, float(row["score"]) if graded else None)
    if lateness is None:
        return
    row["late"] = f"{late.duration_text(lateness.seconds)} after {late.shown(lateness.due)}"
    if graded:
        row.update(score=_number(float(row["score"]) - lateness.penalty), penalty=_number(lateness.penalty))


def exists(url: str) -> bool:
    """Whether the gradebook at ``url`` is there to read (a SQLite file is made by its first write)."""
    return not url.startswith("sqlite:///") or Path(url[len("sqlite:///"):]).is_file()


def _row(root: Path, assignment: Assignment, student: str, score: gradebook.Scores | None) -> dict:
    row = {"student": student, "assignment": assignment.id, "status": NOT_SUBMITTED,
           "score": "", "max_score": "", "late": "", "penalty": "", "why": "", "comments": ""}
    try:
        record = read_record(assignment, student)
    except BadRecord as error:
        why = f"the grading record cannot be read ({error}): run course autograde again"
        row.update(status=f"{FAILED} ({why})", why=why)
        return row
    if score is not None:
        row.update(score=_number(score.score), max_score=_number(score.max_score), status=GRADED,
                   comments=_comments(score.comments))
    if record is None:
        if score is None and assignment.submitted(student).is_dir():
            row["status"] = NOT_GRADED
        return row
    row["max_score"] = row["max_score"] or _number(record.max_score)
    if record.status == FAILED:
        row.update(status=f"{FAILED} ({'; '.join(record.reasons)})", score="", why="; ".join(record.reasons))
    elif record.status == REVIEW:
        flagged = {c.grade_id for c in record.checks if c.status == "review"}
        pending = flagged - set(score.manual if score else {})
        if pending or not flagged:  # whole-submission reasons stay until the next autograde run
            why = "; ".join(record.reasons)
            row.update(status=f"{REVIEW} ({why})", why=why)
    elif record.status == NOT_SUBMITTED:
        row["status"] = NOT_SUBMITTED
    return row


def _comments(comments: dict[str, str]) -> str:
    """A grader's comments as one cell: ``cell: comment``, one per line."""
    return "\n".join(safe_text(f"{cell}: {text}", one_line=True) for cell, text in sorted(comments.items()))


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def export(root: Path, selected: list[Assignment], csv_path: str | None = None,
           out: TextIO | None = None) -> int:
    """Print the table (and write ``csv_path``); exit status 1 when anything still needs attention."""
    out = out or sys.stdout
    table = rows(root, selected)
    if csv_path:
        with open(csv_path, "w", newline="", encoding="utf-8") as stream:
            writer = csv.DictWriter(stream, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows({key: csv_cell(value) for key, value in row.items()} for row in table)
    shown = [("student", "assignment", "score", "status", "late")] + [
        tuple(safe_text(cell, one_line=True) for cell in (
            r["student"], r["assignment"], f"{r['score']}/{r['max_score']}" if r["score"] != "" else "-",
            r["status"][:120], r["late"] + (f": −{r['penalty']} points" if r["penalty"] else "")))
        for r in table]
    for line in text_table(shown):
        print(line, file=out)
    commented = [r for r in table if r["comments"]]
    if commented:
        print("\ncomments from graders (formgrader's Manual Grading):", file=out)
    for r in commented:
        for comment in r["comments"].split("\n"):
            print(safe_text(f"  {r['student']} · {r['assignment']} · {comment}", one_line=True), file=out)
    return 1 if any(r["status"].startswith((REVIEW, FAILED, NOT_GRADED)) for r in table) else 0
