"""nbgrader's exchange in a temporary course: ``course release --exchange``, real student accounts
fetching, submitting and fetching feedback with nbgrader's own commands (tests/accounts.py),
``course collect`` and ``course feedback --release`` (course_tools.classroom.exchange). Hostile
inbox entries: tests/class_inputs/catalogue.py, run by tests/test_hostile_class.py."""
import io
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import nbformat
import pytest

from course_tools.course import assignments
from course_tools.classroom.exchange import (
    collect_from_exchange, exchange_root, release_feedback_to_exchange, release_to_exchange)

from .accounts import Step, accounts, act_as_students  # noqa: F401 (accounts: the session's fixture)
from .conftest import ASSIGNMENTS, ROOT

ASSIGNMENT = "01_rnn_baselines"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"


@pytest.fixture
def course():
    """A course the students' accounts can reach (in /tmp), with the students' Jupyter configuration."""
    course = Path(tempfile.mkdtemp(prefix="course-exchange-"))
    course.chmod(0o711)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "deploy" / "jupyter" / "student", course / "deploy" / "jupyter" / "student")
    for folder in ("solutions", "notebooks"):
        (course / folder / ASSIGNMENT).mkdir(parents=True)
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"# {folder}")])
        nbformat.write(notebook, course / folder / ASSIGNMENT / NOTEBOOK)
    yield course
    shutil.rmtree(course, ignore_errors=True)


def nbgrader_as(login: str, *argv: str) -> Step:
    """A student's nbgrader command (fetch_assignment, fetch_feedback), as the Assignments tab runs it."""
    return Step(login, code=("from nbgrader.apps.nbgraderapp import NbGraderApp\n"
                             f"try:\n    NbGraderApp.launch_instance(argv={list(argv)!r})\n"
                             "except SystemExit as exit:\n    assert not exit.code, exit.code\n"))


def test_release_fetch_submit_collect_and_feedback_through_the_exchange(course, accounts):
    alice, bob = accounts.make("e", 2)
    assignment = assignments(course, [ASSIGNMENT])[0]
    out = io.StringIO()
    release_to_exchange(assignment, out)
    release_to_exchange(assignment, out)  # a second release replaces the first
    exchange = exchange_root(course) / "attention-transformers"
    assert (exchange / "outbound" / ASSIGNMENT / NOTEBOOK).is_file()
    assert stat.S_IMODE(
        (exchange / "inbound").stat().st_mode) & 0o777 == 0o733  # students cannot list others'

    for done in act_as_students(accounts.python, course, [nbgrader_as(login, "fetch_assignment", ASSIGNMENT)
                                                          for login in (alice, bob)]):
        assert done.status == 0, done.log
    fetched = Path(os.path.expanduser(f"~{alice}")) / ASSIGNMENT / NOTEBOOK
    assert nbformat.read(fetched, as_version=4).cells[0].source == "# notebooks"
    answers = {
        login: nbformat.writes(
            nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"answer = {login!r}")]))
        for login in (alice, bob)
    }
    for done in act_as_students(accounts.python, course, [Step(login, ASSIGNMENT, answers[login])
                                                          for login in (alice, bob)]):
        assert done.status == 0, done.log

    assert collect_from_exchange(assignment, out).students == [alice, bob]
    assert collect_from_exchange(assignment, out).students == []  # nothing newer
    for login in (alice, bob):
        submission = course / "submitted" / login / ASSIGNMENT
        assert nbformat.read(submission / NOTEBOOK, as_version=4).cells[0].source == f"answer = {login!r}"
        assert {"timestamp.txt", "submission_secret.txt"} <= {p.name for p in submission.iterdir()}

    # Feedback pages for alice and for carol, whose notebook came from an LMS archive (no secret).
    for student in (alice, "carol"):
        page = course / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>feedback for {student}</p>")
        page.chmod(0o600)  # as `course feedback` writes it, under umask 077: released readable all the same
    (course / "submitted" / "carol" / ASSIGNMENT).mkdir(parents=True)
    report = io.StringIO()
    assert release_feedback_to_exchange(assignment, out=report) == 1
    assert f"for 1 student(s): {alice}" in report.getvalue()
    assert "not released for 1" in report.getvalue() and "carol" in report.getvalue()

    for done in act_as_students(accounts.python, course, [nbgrader_as(login, "fetch_feedback", ASSIGNMENT)
                                                          for login in (alice, bob)]):
        assert done.status == 0, done.log
    homes = {login: Path(os.path.expanduser(f"~{login}")) for login in (alice, bob)}
    pages = list((homes[alice] / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert [p.read_text() for p in pages] == [f"<p>feedback for {alice}</p>"]
    assert not (homes[bob] / ASSIGNMENT / "feedback").exists()


@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_feedback_names_every_check_by_its_exercise_or_question(assignment):
    """Every graded cell of the course gets a label from the heading above it, "Exercise N · name"
    or "Question N · name" (the checks of understanding), or its section's title; never a bare
    grade id or a number the notebook does not show."""
    from course_tools.grading.feedback import exercises

    labels = {grade_id: label for grade_id, (label, _) in exercises(assignment.source).items()}
    unnamed = {g: label for g, label in labels.items()
               if not re.match(r"(Exercise|Question) \d+ · \S", label) and label != "Mask-leak tests"}
    assert not unnamed, unnamed
    assert len(set(labels.values())) == len(labels), f"two checks share a name: {labels}"
    questions = [label for g, label in labels.items() if g.startswith("q")]
    if assignment.id <= "06":
        assert len(questions) >= 2 and all(label.startswith("Question ") for label in questions), labels
