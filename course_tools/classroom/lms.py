"""``course grades --format canvas|moodle``: the grades as the sheet a learning-management system imports.

:mod:`.grades` decides each student's status and score; this module only lays them out:

* **Canvas** (Grades > Import): the gradebook CSV, columns ``Student``, ``ID``, ``SIS User ID``,
  ``SIS Login ID``, ``Section``, then one column per assignment. Canvas names an existing
  assignment's column ``Name (id)``; a column it does not know becomes a new assignment on import
  (its import asks), whose points come from the ``Points Possible`` row under the header, as in
  Canvas's own export.
* **Moodle** (Assignment > View all submissions > Upload grading worksheet): the offline grading
  worksheet, one per assignment, columns ``Identifier``, ``Full name``, ``Email address``,
  ``Status``, ``Grade``, ``Maximum Grade``, ``Grade can be changed``, ``Last modified
  (submission)``, ``Last modified (grade)``, ``Feedback comments`` (the late note and the comments
  a grader wrote in formgrader). Moodle finds a student by the
  ``Identifier`` it gave them (``Participant 1234``), which only Moodle knows: fill the worksheet
  Moodle exports (``--lms-file``), or give the identifiers in the roster.

With ``--lms-file`` the exported sheet is filled in place: its rows, their order and every other
column are kept, only our scores are written. ``--per-exercise`` adds one column per graded test
cell (its grade id). Identity comes from the roster (``--roster students.csv``, :data:`ROSTER_COLUMNS`)
or, without one, from the student ids themselves (Canvas: ``SIS Login ID`` or ``SIS User ID``;
Moodle: the email address or the part before its ``@``).

Nothing is dropped silently: a graded student missing from the roster or the LMS file, a roster or
LMS row with no submission, and a student whose status is not a score (needs manual review, failed
to grade, not graded yet) are each named on stderr, and the exit status is 1. Such a grade cell is
left empty, never 0: both LMSs skip an empty cell and keep what they hold. Every cell written goes
through :func:`.untrusted.csv_cell` (names and emails are typed by students).
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TextIO

from course_tools.course import Assignment, CourseError
from course_tools.grading.records import NOT_SUBMITTED
from course_tools.untrusted import safe_text

from .lms_grades import Grades, load_grades
from .lms_sheets import (
    CANVAS_KEYS,
    MOODLE_KEYS,
    Matcher,
    Sheet,
    find_or_add_column,
    read_roster,
    read_sheet,
    report_unmatched,
)

CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS = "Points Possible"
MOODLE_COLUMNS = (
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
)
MOODLE_REQUIRED = ("Identifier", "Grade", "Last modified (grade)")  # what Moodle's worksheet import looks up
MOODLE_SUBMITTED, MOODLE_NO_SUBMISSION = "Submitted for grading", "No submission"


def _roster(grades: Grades, roster_path: Path | None) -> list[dict[str, str]]:
    """The roster file's students, each graded student it lacks reported; without a file, the graded
    students."""
    if roster_path is None:
        return [{"student_id": student} for student in grades.students]
    roster = read_roster(roster_path)
    listed = {entry["student_id"] for entry in roster}
    for student in grades.students:
        if student not in listed:
            grades.problems.append(
                f"{student}: in the gradebook but not in the roster {roster_path.name}: not exported"
            )
    return roster


def _report_unlisted(grades: Grades, used: set[str], roster: list[dict[str, str]], where: str) -> None:
    """Students of the gradebook and the roster that no row of the LMS file received."""
    in_roster = {entry["student_id"] for entry in roster}
    for student in grades.students:
        if student in in_roster and student not in used:
            grades.problems.append(f"{student}: in the gradebook but has no row in {where}: not exported")


def _exported(
    lms_file: Path,
    required: tuple[str, ...],
    what: str,
    keys: tuple,
    name_column: str,
    roster: list[dict[str, str]],
    problems: list[str],
) -> tuple[Sheet, list, set[int]]:
    """A sheet exported from the LMS: its rows, the roster entry each row is (None: nobody) and the
    rows already reported as unmatched."""
    sheet = read_sheet(lms_file)
    missing = [name for name in required if name not in sheet.header]
    if missing:
        raise CourseError(f"{lms_file}: not {what} (no column {', '.join(missing)})")
    matches = Matcher(roster, keys).match(sheet)
    return (
        sheet,
        [match.entry for match in matches],
        report_unmatched(matches, sheet, name_column, lms_file, problems),
    )


# ------------------------------------------------------------------------------------ Canvas ----


def canvas_sheet(grades: Grades, roster: list[dict[str, str]], lms_file: Path | None) -> Sheet:
    if lms_file is None:
        sheet = Sheet(list(CANVAS_COLUMNS))
        sheet.rows = [
            [
                entry.get("name") or entry["student_id"],
                entry.get("canvas_id", ""),
                entry.get("sis_user_id", ""),
                entry.get("sis_login_id") or entry["student_id"],
                entry.get("section", ""),
            ]
            for entry in roster
        ]
        sheet.rows.insert(0, [CANVAS_POINTS, "", "", "", ""])
        owners = [None] + roster  # each row of a new sheet is the roster entry it was written for
        explained = set()
    else:
        sheet, owners, explained = _exported(
            lms_file,
            CANVAS_COLUMNS,
            "a Canvas gradebook export",
            CANVAS_KEYS,
            "Student",
            roster,
            grades.problems,
        )
    where = lms_file.name if lms_file else "the sheet"
    student_column = sheet.column("Student")
    targets = [
        (assignment.id, grade_id, find_or_add_column(sheet, name, grades.problems, lms_file))
        for assignment in grades.selected
        for grade_id, name in grades.columns(assignment.id)
    ]
    used = set()
    for number, (row, entry) in enumerate(zip(sheet.rows, owners), 2):
        if row[student_column].strip() == CANVAS_POINTS:
            for assignment, grade_id, column in targets:
                if not row[column].strip():
                    points = (
                        dict(grades.points[assignment]).get(grade_id)
                        if grade_id
                        else grades.maximum(assignment)
                    )
                    row[column] = f"{points:g}"
            continue
        if not any(row[sheet.column(name)].strip() for name in CANVAS_COLUMNS[:4]):
            continue  # Canvas's rows under the header that are not students (a posting policy)
        name = safe_text(row[student_column], one_line=True)[:80]
        who = entry["student_id"] if entry else f"{where} row {number} ({name})"
        if entry:
            used.add(entry["student_id"])
        for assignment, grade_id, column in targets:
            if entry is None:
                if grade_id is None and number not in explained:
                    grades.problems.append(
                        f"{who} · {assignment}: not in the gradebook (no submission): grade left as it was"
                    )
                continue
            row[column] = (
                grades.score(assignment, entry["student_id"], who)
                if grade_id is None
                else grades.exercise_score(assignment, entry["student_id"], grade_id)
            )
    _report_unlisted(grades, used, roster, where)
    return sheet


# ------------------------------------------------------------------------------------ Moodle ----


def _moodle_time(moment: dt.datetime) -> str:
    """Moodle's own date format (strftimedatetime), which its import reads back with strtotime."""
    return moment.strftime("%A, %d %B %Y, %I:%M %p")


def moodle_sheet(
    grades: Grades, roster: list[dict[str, str]], lms_file: Path | None, assignment: str
) -> Sheet:
    maximum = grades.maximum(assignment)
    exercises = [(grade_id, name) for grade_id, name in grades.columns(assignment) if grade_id]
    if lms_file is None:
        sheet = Sheet(list(MOODLE_COLUMNS))
        now = _moodle_time(dt.datetime.now())
        for entry in roster:
            student = entry["student_id"]
            if not entry.get("moodle_identifier"):
                grades.problems.append(
                    f"{student}: no moodle_identifier in the roster: Moodle will skip this row "
                    "(fill the worksheet Moodle exports with --lms-file instead)"
                )
            row = grades.rows.get((assignment, student))
            status = (
                MOODLE_NO_SUBMISSION if row is None or row["status"] == NOT_SUBMITTED else MOODLE_SUBMITTED
            )
            sheet.rows.append(
                [
                    entry.get("moodle_identifier", ""),
                    entry.get("name") or student,
                    entry.get("email", ""),
                    status,
                    "",
                    f"{maximum:g}",
                    "Yes",
                    "",
                    now,
                    "",
                ]
            )
        owners = roster
        explained = set()
    else:
        sheet, owners, explained = _exported(
            lms_file,
            MOODLE_REQUIRED,
            "a Moodle grading worksheet",
            MOODLE_KEYS,
            "Full name",
            roster,
            grades.problems,
        )
    where = lms_file.name if lms_file else "the sheet"
    grade_column = sheet.column("Grade")
    targets = [
        (grade_id, find_or_add_column(sheet, name, grades.problems, lms_file)) for grade_id, name in exercises
    ]
    used, maximum_reported = set(), False
    for number, (row, entry) in enumerate(zip(sheet.rows, owners), 2):
        label = (
            row[sheet.column("Full name")] if "Full name" in sheet.header else row[sheet.column("Identifier")]
        )
        if entry is None and number in explained:
            continue
        if entry is None:
            grades.problems.append(
                f"{where} row {number} ({safe_text(label, one_line=True)[:80]}) · "
                f"{assignment}: not in the gradebook (no submission): grade left as it was"
            )
            continue
        student = entry["student_id"]
        used.add(student)
        row[grade_column] = grades.score(assignment, student, student)
        note = grades.feedback(assignment, student)
        if (
            note
            and "Feedback comments" in sheet.header
            and not row[sheet.column("Feedback comments")].strip()
        ):
            row[sheet.column("Feedback comments")] = note  # a comment made in Moodle is never replaced
        for grade_id, column in targets:
            row[column] = grades.exercise_score(assignment, student, grade_id)
        if "Maximum Grade" in sheet.header and not maximum_reported:
            theirs = row[sheet.column("Maximum Grade")].strip()
            try:
                differs = theirs != "" and float(theirs) != maximum
            except ValueError:
                differs = True
            if differs:
                maximum_reported = True
                grades.problems.append(
                    f"{where}: Moodle's maximum grade is {safe_text(theirs, one_line=True)}, "
                    f"ours {maximum:g}: scores are written unscaled, and Moodle skips any above "
                    "its maximum"
                )
    _report_unlisted(grades, used, roster, where)
    return sheet


# ------------------------------------------------------------------------------------ command ----


def export_lms(
    root: Path,
    selected: list[Assignment],
    fmt: str,
    out: Path | None = None,
    *,
    per_exercise: bool = False,
    roster: Path | None = None,
    lms_file: Path | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Write the Canvas sheet (``out``: a file, default ``build/grades/canvas.csv``) or one Moodle
    worksheet per assignment (``out``: a folder, default ``build/grades/moodle``); name every
    problem on stderr. Exit status 1 when there is any, else 0."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if fmt == "moodle" and lms_file is not None and len(selected) != 1:
        raise CourseError(
            "a Moodle grading worksheet is per assignment: name exactly one ASSIGNMENT with --lms-file"
        )
    grades = load_grades(root, selected, per_exercise)
    entries = _roster(grades, roster)
    written = []
    if fmt == "canvas":
        path = out or root / "build" / "grades" / "canvas.csv"
        canvas_sheet(grades, entries, lms_file).write(path)
        written.append(path)
    else:
        folder = out or root / "build" / "grades" / "moodle"
        for assignment in selected:
            path = folder / f"{assignment.id}.csv"
            moodle_sheet(grades, entries, lms_file, assignment.id).write(path)
            written.append(path)
    for path in written:
        print(f"wrote {path}", file=stdout)
    for (assignment, student), row in sorted(grades.rows.items()):
        if note := grades.late_note(assignment, student):
            print(f"{safe_text(student, one_line=True)} · {assignment}: {note}", file=stdout)
    for problem in grades.problems:
        print(f"course grades: {safe_text(problem, one_line=True)}", file=stderr)
    if grades.problems:
        print(
            f"{len(grades.problems)} problem(s) named on stderr: those grade cells are empty, or those "
            "students "
            "are not in the sheet",
            file=stdout,
        )
    return 1 if grades.problems else 0
