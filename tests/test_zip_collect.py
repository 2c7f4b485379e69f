"""``course collect --zip``: Canvas and Moodle submission downloads placed by the roster's LMS ids,
every other file reported (course_tools.classroom.zip_collect). Hostile downloads:
tests/class_inputs/catalogue.py, run by tests/test_hostile_class.py."""
import io
import shutil
import zipfile

import nbformat
import pytest

from course_tools.course import CourseError
from course_tools.classroom.zip_collect import collect_zip

from .conftest import ROOT

ASSIGNMENT = "01_rnn_baselines"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
ROSTER = """student_id,name,email,canvas_id,moodle_identifier
alice,Alice Martin,alice@example.org,1001,
bob,Bob Dupont,bob@example.org,,5002
chloe,Chloé Lefèvre,,,Participant 5003
"""


def notebook(marker: str) -> str:
    return nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"answer = {marker!r}")]))


@pytest.fixture
def course(tmp_path):
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    for folder in ("solutions", "notebooks"):
        (tmp_path / folder / ASSIGNMENT).mkdir(parents=True)
        (tmp_path / folder / ASSIGNMENT / NOTEBOOK).write_text(notebook(folder))
    (tmp_path / "students.csv").write_text(ROSTER, encoding="utf-8")
    return tmp_path


def archive(path, files: dict[str, str]):
    with zipfile.ZipFile(path, "w") as handle:
        for name, text in files.items():
            handle.writestr(name, text)
    return path


def submitted(course, student):
    return nbformat.read(course / "submitted" / student / ASSIGNMENT / NOTEBOOK, as_version=4).cells[0].source


def test_canvas_names_are_placed_by_canvas_id_never_by_name_and_the_rest_is_reported(course, tmp_path):
    download = archive(
        tmp_path / "submissions.zip",
        {
            f"martinalice_1001_777001_{NOTEBOOK}": notebook("alice"),  # by canvas_id
            "martinalice_LATE_1001_777005_01_rnn_baselines-1.ipynb": notebook(
                "alice again"),  # late, re-uploaded
            "dupontbob_2002_777002_01_rnn_baselines.ipynb": notebook(
                "bob"),  # bob's name, but no canvas_id: not guessed
            "martinalice_1001_777003_notes.pdf": "not a notebook",
            f"unknownstudent_9999_777004_{NOTEBOOK}": notebook("stranger"),
            "README.txt": "an instructor's note inside the archive",
        })
    report = io.StringIO()
    assert collect_zip(course, ASSIGNMENT, download, report) == 1
    assert submitted(course, "alice") == "answer = 'alice'"  # the first of two: the re-upload is named
    assert not (course / "submitted" / "bob").exists()
    text = report.getvalue()
    assert "placed 1 submission(s)" in text and ": alice\n" in text
    assert "could not place 5 file(s)" in text
    assert (
        "martinalice_1001_777003_notes.pdf: alice's file 'notes.pdf' is not the assignment's notebook" in text
    )
    assert (
        "martinalice_LATE_1001_777005_01_rnn_baselines-1.ipynb: a second 01_rnn_baselines.ipynb of alice"
        in text
    )
    assert (
        "dupontbob_2002_777002_01_rnn_baselines.ipynb: no student of the roster has canvas_id 2002 (the name "
        "'dupontbob' is bob's, who has no canvas_id: add 2002 to their row of the roster if that is them)"
    ) in text
    assert (
        "unknownstudent_9999_777004_01_rnn_baselines.ipynb: no student of the roster has canvas_id 9999\n"
        in text
    )
    assert "README.txt: its name is in neither Canvas's nor Moodle's download pattern" in text


def test_moodle_flat_and_folder_downloads_are_placed(course, tmp_path):
    download = archive(
        tmp_path / "moodle.zip",
        {
            f"Chloé Lefèvre_5003_assignsubmission_file_{NOTEBOOK}": notebook(
                "chloe"
            ),  # the worksheet's "Participant 5003"
            f"Bob Dupont_5002_assignsubmission_file_/{NOTEBOOK}": notebook("bob"),  # folder layout
            "Bob Dupont_5002_assignsubmission_onlinetext_/onlinetext.html": "<p>typed text</p>",
        },
    )
    report = io.StringIO()
    assert collect_zip(course, ASSIGNMENT, download, report) == 1
    assert submitted(course, "chloe") == "answer = 'chloe'"
    assert submitted(course, "bob") == "answer = 'bob'"
    assert "onlinetext.html: Moodle's onlinetext submission, not an uploaded file" in report.getvalue()


def test_an_archive_that_places_everything_returns_zero_and_replaces_an_earlier_submission(course, tmp_path):
    earlier = course / "submitted" / "alice" / ASSIGNMENT
    earlier.mkdir(parents=True)
    (earlier / NOTEBOOK).write_text(notebook("earlier"))
    download = archive(tmp_path / "again.zip", {f"martinalice_1001_1_{NOTEBOOK}": notebook("again")})
    assert collect_zip(course, ASSIGNMENT, download, io.StringIO()) == 0
    assert submitted(course, "alice") == "answer = 'again'"


def test_two_students_with_one_lms_id_are_not_guessed(course, tmp_path):
    (course / "students.csv").write_text(ROSTER + "bob2,Bob Dupont,,,5002\n", encoding="utf-8")
    download = archive(
        tmp_path / "twins.zip", {f"Bob Dupont_5002_assignsubmission_file_{NOTEBOOK}": notebook("?")}
    )
    report = io.StringIO()
    assert collect_zip(course, ASSIGNMENT, download, report) == 1
    assert not (course / "submitted").exists()
    assert "2 students of the roster have moodle_identifier 5002 (bob, bob2)" in report.getvalue()


def test_a_roster_without_student_ids_is_refused(course, tmp_path):
    (course / "students.csv").write_text("name\nAlice Martin\n", encoding="utf-8")
    with pytest.raises(CourseError, match="no student_id column"):
        collect_zip(course, ASSIGNMENT, archive(tmp_path / "a.zip", {}), io.StringIO())
