"""What an LMS sheet is filled from: each student's grades row per assignment (:mod:`.grades`), the
points of each assignment and of its graded cells, and per-cell scores from the gradebook."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from course_tools.course import Assignment
from course_tools.grading import gradebook
from course_tools.grading.records import GRADED, NOT_SUBMITTED
from course_tools.grading.submission import source_cells

from .grades import rows as grade_rows


@dataclass
class Grades:
    """What the course knows: each student's row per assignment (:mod:`.grades`), the points of each
    assignment and of its graded cells, and per-cell scores when ``--per-exercise`` asks for them."""

    selected: list[Assignment]
    rows: dict[tuple[str, str], dict]  # (assignment id, student) -> grades row
    points: dict[str, list[tuple[str, float]]]  # assignment id -> (grade id, points) of its test cells
    exercises: dict[tuple[str, str], dict[str, float]]  # (assignment id, student) -> grade id -> score
    per_exercise: bool
    problems: list[str] = field(default_factory=list)

    @property
    def students(self) -> list[str]:
        return sorted({student for _, student in self.rows})

    def maximum(self, assignment: str) -> float:
        return sum(points for _, points in self.points[assignment])

    def score(self, assignment: str, student: str, who: str) -> str:
        """The grade cell: the score when the status is one, else empty and the reason reported."""
        row = self.rows.get((assignment, student))
        if row is None or row["status"] == NOT_SUBMITTED:
            self.problems.append(f"{who} · {assignment}: no submission: grade left empty")
            return ""
        if row["status"] != GRADED:
            self.problems.append(f"{who} · {assignment}: {row['status'][:200]}: grade left empty")
            return ""
        return row["score"]

    def late_note(self, assignment: str, student: str) -> str:
        """How late the submission was and what it cost (the score is after the penalty), or ""."""
        row = self.rows.get((assignment, student))
        if row is None or not row["late"]:
            return ""
        cost = f": −{row['penalty']} points, already taken off the grade" if row["penalty"] else ""
        return f"late: submitted {row['late']}{cost}"

    def feedback(self, assignment: str, student: str) -> str:
        """What the student's feedback column says: the late note, then each comment a grader wrote
        in formgrader (``cell: comment``, one per line, as in ``course grades``); "" when neither."""
        row = self.rows.get((assignment, student))
        comments = row["comments"] if row else ""
        return "\n".join(text for text in (self.late_note(assignment, student), comments) if text)

    def exercise_score(self, assignment: str, student: str, grade_id: str) -> str:
        row = self.rows.get((assignment, student))
        if row is None or row["status"] != GRADED:
            return ""  # the total's cell already reports why
        score = self.exercises.get((assignment, student), {}).get(grade_id)
        return "" if score is None else f"{score:g}"

    def columns(self, assignment: str) -> list[tuple[str | None, str]]:
        """(grade id, column name) of one assignment: the total, then each exercise when asked for."""
        exercises = [(grade_id, f"{assignment} {grade_id}") for grade_id, _ in self.points[assignment]]
        return [(None, assignment)] + (exercises if self.per_exercise else [])


def load_grades(root: Path, selected: list[Assignment], per_exercise: bool) -> Grades:
    rows = {(row["assignment"], row["student"]): row for row in grade_rows(root, selected)}
    points = {
        a.id: [(c.grade_id, c.points) for c in source_cells(a.source) if c.kind == "test"] for a in selected
    }
    exercises = exercise_scores(root, selected) if per_exercise else {}
    return Grades(selected, rows, points, exercises, per_exercise)


def exercise_scores(root: Path, selected: list[Assignment]) -> dict[tuple[str, str], dict[str, float]]:
    """Per student and graded cell, the gradebook's score (a grader's manual score wins, as in nbgrader)."""
    url = gradebook.db_url(root)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).is_file():
        return {}  # nothing graded yet; opening the Gradebook would create an empty database
    from nbgrader.api import MissingEntry

    found = {}
    with gradebook.opened(url) as book:
        for assignment in selected:
            try:
                submissions = book.find_assignment(assignment.id).submissions
            except MissingEntry:
                continue
            for submission in submissions:
                found[(assignment.id, submission.student.id)] = {
                    g.name: g.score for notebook in submission.notebooks for g in notebook.grades
                }
    return found
