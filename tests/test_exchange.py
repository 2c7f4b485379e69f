"""nbgrader's exchange in a temporary course: ``course release --exchange``, students fetching and
submitting with nbgrader's own exchange classes, ``course collect``, ``course feedback --release``
and a student fetching their page (course_lib.instructor.exchange)."""
import io
import re
import shutil
import stat

import nbformat
import pytest

from course_lib.instructor.course import assignments, nbgrader_config
from course_lib.instructor.exchange import (collect_from_exchange, exchange_root, release_feedback_to_exchange,
                                            release_to_exchange)

from .conftest import ASSIGNMENTS, ROOT

ASSIGNMENT = "01_rnn_baselines"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"


@pytest.fixture
def course(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    for folder in ("solutions", "notebooks"):
        (course / folder / ASSIGNMENT).mkdir(parents=True)
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"# {folder}")])
        nbformat.write(notebook, course / folder / ASSIGNMENT / NOTEBOOK)
    return course


def as_student(course, home, student, step):
    """One of nbgrader's student-side exchange steps (FetchAssignment, Submit, FetchFeedback), as
    the Assignments tab runs it, with ``home`` as the student's folder."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeFactory
    from nbgrader.utils import capture_log

    config = nbgrader_config(course, CourseDirectory={"root": str(home), "student_id": student},
                             Exchange={"assignment_dir": str(home), "cache": str(home / "nbgrader_cache")})
    coursedir = CourseDirectory(config=config, assignment_id=ASSIGNMENT)
    app = getattr(ExchangeFactory(config=config), step)(coursedir=coursedir, authenticator=Authenticator(config=config),
                                                        config=config)
    result = capture_log(app)
    assert result["success"], result.get("log") or result.get("error")


def test_release_fetch_submit_collect_and_feedback_through_the_exchange(course, tmp_path):
    assignment = assignments(course, [ASSIGNMENT])[0]
    out = io.StringIO()
    release_to_exchange(assignment, out)
    release_to_exchange(assignment, out)  # a second release replaces the first
    exchange = exchange_root(course) / "attention-transformers"
    assert (exchange / "outbound" / ASSIGNMENT / NOTEBOOK).is_file()
    assert stat.S_IMODE((exchange / "inbound").stat().st_mode) & 0o777 == 0o733  # students cannot list others'

    homes = {student: tmp_path / "home" / student for student in ("alice", "bob")}
    for student, home in homes.items():
        home.mkdir(parents=True)
        as_student(course, home, student, "FetchAssignment")
        fetched = home / ASSIGNMENT / NOTEBOOK
        notebook = nbformat.read(fetched, as_version=4)
        notebook.cells[0].source = f"answer = {student!r}"
        nbformat.write(notebook, fetched)
        as_student(course, home, student, "Submit")

    assert collect_from_exchange(assignment, out) == ["alice", "bob"]
    assert collect_from_exchange(assignment, out) == []  # nothing newer
    for student in homes:
        submission = course / "submitted" / student / ASSIGNMENT
        assert nbformat.read(submission / NOTEBOOK, as_version=4).cells[0].source == f"answer = {student!r}"
        assert {"timestamp.txt", "submission_secret.txt"} <= {p.name for p in submission.iterdir()}

    # Feedback pages for alice and for carol, whose notebook came from an LMS archive (no secret).
    for student in ("alice", "carol"):
        page = course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>feedback for {student}</p>")
    (course / "submitted" / "carol" / ASSIGNMENT).mkdir(parents=True)
    report = io.StringIO()
    assert release_feedback_to_exchange(assignment, out=report) == 1
    assert "for 1 student(s): alice" in report.getvalue()
    assert "not released for 1" in report.getvalue() and "carol" in report.getvalue()

    as_student(course, homes["alice"], "alice", "FetchFeedback")
    pages = list((homes["alice"] / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert [p.read_text() for p in pages] == ["<p>feedback for alice</p>"]
    as_student(course, homes["bob"], "bob", "FetchFeedback")
    assert not (homes["bob"] / ASSIGNMENT / "feedback").exists()


@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_feedback_names_every_check_by_its_exercise_or_question(assignment):
    """Every graded cell of the course gets a label from the heading above it, "Exercise N · name"
    or "Question N · name" (the checks of understanding), or its section's title; never a bare
    grade id or a number the notebook does not show."""
    from course_lib.instructor.feedback import exercises

    labels = {grade_id: label for grade_id, (label, _) in exercises(assignment.source).items()}
    unnamed = {g: label for g, label in labels.items()
               if not re.match(r"(Exercise|Question) \d+ · \S", label) and label != "Mask-leak tests"}
    assert not unnamed, unnamed
    assert len(set(labels.values())) == len(labels), f"two checks share a name: {labels}"
    questions = [label for g, label in labels.items() if g.startswith("q")]
    if assignment.id <= "06":
        assert len(questions) >= 2 and all(label.startswith("Question ") for label in questions), labels
