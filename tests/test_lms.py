"""``course grades --format canvas|moodle``: the sheets Canvas and Moodle import, read back with csv.

A two-assignment course in a temporary folder with a gradebook written directly (no autograding):

========  ==============================  ==================
student   a1 (test_x 2 + test_y 3 points)  a2 (test_z 1 point)
========  ==============================  ==================
alice     graded 2 + 1                    graded 1
bob       needs manual review             graded 0
carl      failed to grade                 not submitted
eve       graded 2 + 3 (not in roster)    not submitted
dana      on the roster, never submitted
========  ==============================  ==================
"""
from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import nbformat
import pytest

from course_tools.grading import gradebook
from course_tools.cli import main
from course_tools.course import CourseError, assignments
from course_tools.classroom.grades import COLUMNS
from course_tools.classroom.lms import CANVAS_COLUMNS, CANVAS_POINTS, MOODLE_COLUMNS, export_lms
from course_tools.grading.records import FAILED, REVIEW, Check, Result, write_record

from .toy_course import ROOT, answer_notebook

TESTS = {"a1": {"test_x": 2.0, "test_y": 3.0}, "a2": {"test_z": 1.0}}
SCORES = {("alice", "a1"): {"test_x": 2.0, "test_y": 1.0}, ("alice", "a2"): {"test_z": 1.0},
          ("bob", "a2"): {"test_z": 0.0}, ("eve", "a1"): {"test_x": 2.0, "test_y": 3.0}}
ROSTER = """student_id,name,email,canvas_id,sis_user_id,sis_login_id,section,moodle_identifier
alice,"=HYPERLINK(""http://evil"")",alice@uni.example,1001,S1,alice.l,Lab A,Participant 11
bob,"Brown, Bob",bob@uni.example,1002,S2,bob.l,Lab A,Participant 12
carl,"Cole, Carl",carl@uni.example,1003,S3,carl.l,Lab B,
dana,"Dunn, Dana",dana@uni.example,1004,S4,dana.l,Lab B,Participant 14
"""


def _record(root: Path, student: str, assignment: str, status: str, reason: str,
            review: str | None = None) -> None:
    folder = root / "autograded" / student / assignment
    folder.mkdir(parents=True)
    points = TESTS[assignment]
    checks = [Check(review, points.get(review, 1.0), 0.0, "review", reason, False)] if review else []
    write_record(folder, Result(student, assignment, status, None, sum(points.values()), checks=checks,
                                reasons=[reason]))


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lms")
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    url = gradebook.db_url(root)
    for assignment, points in TESTS.items():
        source = root / "solutions" / assignment / f"{assignment}.ipynb"
        source.parent.mkdir(parents=True)
        nbformat.write(answer_notebook(points), source)
        gradebook.ensure_assignment(url, assignment, assignment, points,
                                    [f"answer_{g.removeprefix('test_')}" for g in points])
    for (student, assignment), scores in SCORES.items():
        (root / "submitted" / student / assignment).mkdir(parents=True)
        gradebook.save(url, assignment, assignment, student, scores, set(), None)
    (root / "submitted" / "bob" / "a1").mkdir(parents=True)
    _record(root, "bob", "a1", REVIEW, "test_y: uses a forbidden function", review="test_y")
    (root / "submitted" / "carl" / "a1").mkdir(parents=True)
    _record(root, "carl", "a1", FAILED, "a1.ipynb is not valid JSON")
    (root / "students.csv").write_text(ROSTER)
    return root


def _export(course: Path, fmt: str, out: Path, only: list[str] | None = None, **options) -> tuple[int, str]:
    err = io.StringIO()
    status = export_lms(course, assignments(course, only), fmt, out, stdout=io.StringIO(), stderr=err,
                        **options)
    return status, err.getvalue()


def _read(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.reader(stream))


def test_canvas_sheet_from_the_roster(course, tmp_path):
    status, err = _export(course, "canvas", tmp_path / "canvas.csv", roster=course / "students.csv")
    header, points, *rows = _read(tmp_path / "canvas.csv")
    assert tuple(header) == CANVAS_COLUMNS + ("a1", "a2")
    assert points == [CANVAS_POINTS, "", "", "", "", "5", "1"]
    by_login = {row[3]: row for row in rows}
    assert [row[3] for row in rows] == ["alice.l", "bob.l", "carl.l", "dana.l"]  # the roster's order
    assert by_login["alice.l"][:6] == ["'=HYPERLINK(\"http://evil\")", "1001", "S1", "alice.l", "Lab A", "3"]
    assert by_login["alice.l"][6] == "1"
    assert by_login["bob.l"][5:] == ["", "0"]  # needs review: empty, never 0
    assert by_login["carl.l"][5:] == ["", ""]
    assert by_login["dana.l"][5:] == ["", ""]
    assert status == 1
    assert "eve: in the gradebook but not in the roster" in err
    assert f"bob · a1: {REVIEW}" in err and f"carl · a1: {FAILED}" in err
    for missing in ("carl · a2", "dana · a1", "dana · a2"):
        assert f"{missing}: no submission" in err
    assert "alice" not in err


def test_canvas_per_exercise_columns(course, tmp_path):
    _export(course, "canvas", tmp_path / "canvas.csv", roster=course / "students.csv", per_exercise=True)
    header, points, *rows = _read(tmp_path / "canvas.csv")
    assert header[5:] == ["a1", "a1 test_x", "a1 test_y", "a2", "a2 test_z"]
    assert points[5:] == ["5", "2", "3", "1", "1"]
    alice, bob = rows[0], rows[1]
    assert alice[5:] == ["3", "2", "1", "1", "1"]
    assert bob[5:] == ["", "", "", "0", "0"]


def test_canvas_export_is_filled_in_place(course, tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(
        "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (201),A1 (202),Current Score\n"
        "    Points Possible,,,,,10,5,(read only)\n"
        "\"Zimmer, Zoe\",1009,S9,zoe,Lab A,7,,70\n"
        "\"Brown, Bob\",1002,S2,bob,Lab A,8,,80\n"
        "\"Liddell, Alice\",1001,S1,alice,Lab A,9,4,90\n")
    status, err = _export(course, "canvas", tmp_path / "canvas.csv", lms_file=export)
    header, points, *rows = _read(tmp_path / "canvas.csv")
    assert header == list(CANVAS_COLUMNS) + ["Quiz 1 (201)", "A1 (202)", "Current Score", "a2"]
    assert points == ["    Points Possible", "", "", "", "", "10", "5", "(read only)", "1"]
    assert [row[0] for row in rows] == ["Zimmer, Zoe", "Brown, Bob", "Liddell, Alice"]  # order kept
    assert rows[0][5:] == ["7", "", "70", ""]  # not ours: untouched
    assert rows[1][5:] == ["8", "", "80", "0"]
    assert rows[2][5:] == ["9", "3", "90", "1"]
    assert status == 1
    assert "has no column a2" in err
    assert "row 3 (Zimmer, Zoe) · a1: not in the gradebook" in err
    assert "carl: in the gradebook but has no row in export.csv" in err and "eve: in the gradebook" in err


def test_moodle_worksheets_one_per_assignment(course, tmp_path):
    status, err = _export(course, "moodle", tmp_path / "moodle", roster=course / "students.csv")
    assert sorted(p.name for p in (tmp_path / "moodle").iterdir()) == ["a1.csv", "a2.csv"]
    header, *rows = _read(tmp_path / "moodle" / "a1.csv")
    assert tuple(header) == MOODLE_COLUMNS
    column = {name: i for i, name in enumerate(header)}
    alice = rows[0]
    assert (alice[column["Identifier"]], alice[column["Email address"]], alice[column["Grade"]],
            alice[column["Maximum Grade"]], alice[column["Status"]]) == \
        ("Participant 11", "alice@uni.example", "3", "5", "Submitted for grading")
    assert alice[column["Last modified (grade)"]]  # Moodle skips a row whose grade looks newer than this
    assert [row[column["Grade"]] for row in rows] == ["3", "", "", ""]
    assert rows[3][column["Status"]] == "No submission"
    assert status == 1 and "carl: no moodle_identifier in the roster" in err


def test_moodle_worksheet_is_filled_in_place(course, tmp_path):
    export = tmp_path / "worksheet.csv"
    export.write_text(
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
        "Last modified (submission),Online text,Last modified (grade),Feedback comments\n"
        "Participant 12,Bob Brown,bob@uni.example,Submitted for grading,,5.00,Yes,-,,-,Well done\n"
        "Participant 11,Alice Liddell,alice@uni.example,Submitted for grading,,5.00,Yes,-,hi,-,\n"
        "Participant 19,Zoe Zimmer,zoe@uni.example,No submission,,5.00,Yes,-,,-,\n")
    status, err = _export(course, "moodle", tmp_path / "out", ["a1"], lms_file=export, per_exercise=True,
                          roster=course / "students.csv")
    header, *rows = _read(tmp_path / "out" / "a1.csv")
    assert header[:11] == _read(export)[0] and header[11:] == ["a1 test_x", "a1 test_y"]
    grade = header.index("Grade")
    assert [row[0] for row in rows] == ["Participant 12", "Participant 11", "Participant 19"]
    assert [row[grade] for row in rows] == ["", "3", ""]
    assert rows[0][10] == "Well done" and rows[1][8] == "hi"  # their columns are kept
    assert rows[0][7] == "'-"  # Moodle's "-" reads back as text, neutralised like every cell
    assert rows[1][11:] == ["2", "1"]
    assert status == 1
    assert "row 4 (Zoe Zimmer) · a1: not in the gradebook" in err and f"bob · a1: {REVIEW}" in err
    assert "eve: in the gradebook but not in the roster" in err
    assert "Moodle's maximum grade" not in err


def test_moodle_reports_a_different_maximum(course, tmp_path):
    export = tmp_path / "worksheet.csv"
    export.write_text(
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
        "Last modified (submission),Last modified (grade),Feedback comments\n"
        "Participant 11,Alice Liddell,alice@uni.example,Submitted for grading,,100.00,Yes,-,-,\n")
    _, err = _export(course, "moodle", tmp_path / "out", ["a1"], lms_file=export,
                     roster=course / "students.csv")
    assert "Moodle's maximum grade is 100.00, ours 5" in err


def test_a_moodle_worksheet_is_for_one_assignment(course, tmp_path):
    export = tmp_path / "worksheet.csv"
    export.write_text(",".join(MOODLE_COLUMNS) + "\n")
    with pytest.raises(CourseError, match="exactly one ASSIGNMENT"):
        _export(course, "moodle", tmp_path / "out", lms_file=export)
    (tmp_path / "not-moodle.csv").write_text("Name,Score\nx,1\n")
    with pytest.raises(CourseError, match="not a Moodle grading worksheet"):
        _export(course, "moodle", tmp_path / "out", ["a1"], lms_file=tmp_path / "not-moodle.csv")


def test_everyone_graded_and_listed_exits_zero(course, tmp_path):
    roster = tmp_path / "students.csv"
    roster.write_text("student_id,name\nalice,Alice\n")
    only_alice = tmp_path / "course"
    shutil.copytree(course, only_alice, ignore=shutil.ignore_patterns("bob", "carl", "eve"))
    from nbgrader.api import Gradebook

    with Gradebook(gradebook.db_url(only_alice)) as book:
        for student in ("bob", "eve"):
            book.remove_student(student)
    status, err = _export(only_alice, "canvas", tmp_path / "canvas.csv", roster=roster)
    assert (status, err) == (0, "")


def test_the_command_line(course, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(course)
    assert main(
        ["grades", "--format", "canvas", "--roster", "students.csv", "--out",
         str(tmp_path / "c.csv")]) == 1
    captured = capsys.readouterr()
    assert f"wrote {tmp_path / 'c.csv'}" in captured.out and "eve: in the gradebook" in captured.err
    assert main(["grades", "--format", "moodle", "a2", "--out", str(tmp_path / "moodle")]) == 1
    assert "eve: in the gradebook but not in the roster students.csv" in capsys.readouterr(
    ).err  # the default roster
    assert len(_read(tmp_path / "moodle" / "a2.csv")) == 5
    assert main(["grades", "--csv", str(tmp_path / "plain.csv")]) == 1  # the default format is unchanged
    assert tuple(_read(tmp_path / "plain.csv")[0]) == COLUMNS
    assert main(["grades", "--format", "canvas", "--roster", "missing.csv"]) == 2
    assert "missing.csv: cannot be read" in capsys.readouterr().err


# ------------------------------------------------------------------ identity: exact or nothing ----

MOODLE_HEADER = ("Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
                 "Last modified (submission),Last modified (grade),Feedback comments\n")


@pytest.mark.parametrize("ids_only", [False, True], ids=["the roster", "a roster of ids only"])
def test_a_moodle_email_whose_local_part_is_another_students_id_gets_nothing(
        course, tmp_path, monkeypatch, capsys, ids_only):
    """Zed has no submission; the part before the @ of Zed's address is alice's id. Zed's row stays
    as it was and alice's grade goes nowhere but alice's own row, found by her full address."""
    export = tmp_path / "worksheet.csv"
    export.write_text(MOODLE_HEADER +
                      "Participant 99,Zed Zorro,alice@elsewhere.example,No submission,,5.00,Yes,-,-,\n"
                      "Participant 11,Alice Liddell,alice@uni.example,Submitted for grading,,5.00,Yes,-,-,\n")
    roster = course / "students.csv"
    if ids_only:
        roster = tmp_path / "ids.csv"
        roster.write_text("student_id\nalice\nbob\ncarl\ndana\n")
    monkeypatch.chdir(course)
    assert main([
        "grades", "--format", "moodle", "a1", "--lms-file",
        str(export), "--out",
        str(tmp_path / "out"), "--roster",
        str(roster)
    ]) == 1
    header, zed, alice = _read(tmp_path / "out" / "a1.csv")
    grade = header.index("Grade")
    assert zed[grade] == ""
    assert alice[grade] == ("" if ids_only else "3")  # with ids alone, nothing says who alice@uni.example is
    err = capsys.readouterr().err
    assert "row 2 (Zed Zorro) · a1: not in the gradebook" in err


def test_rows_that_name_two_students_or_contradict_one_are_not_filled(course, tmp_path):
    """Canvas: a row whose ID is alice's and whose SIS Login ID is bob's; a row whose SIS Login ID is
    carl's student id (carl's own SIS login is carl.l); two rows for dana. Nothing is written to any
    of them."""
    export = tmp_path / "export.csv"
    export.write_text("Student,ID,SIS User ID,SIS Login ID,Section,a1\n"
                      "    Points Possible,,,,,5\n"
                      "Mallory,1001,,bob.l,Lab A,\n"
                      "Carl Impostor,1999,,carl,Lab B,\n"
                      "Dana,1004,,,Lab B,\n"
                      "Dana again,,S4,,Lab B,\n"
                      "Bob,1002,S2,bob.l,Lab A,\n")
    status, err = _export(course, "canvas", tmp_path / "canvas.csv", ["a1"], lms_file=export,
                          roster=course / "students.csv")
    _, _, mallory, impostor, dana, dana_again, bob = _read(tmp_path / "canvas.csv")
    assert [mallory[5], impostor[5], dana[5], dana_again[5]] == ["", "", "", ""]
    assert bob[5] == ""  # bob needs review: his own row, left empty for that reason
    assert status == 1
    assert ("row 3 (Mallory): names more than one student of the roster "
            "(alice by ID; bob by SIS Login ID)") in err
    # carl's id as a SIS Login ID, when carl has a SIS login of his own (carl.l): nobody
    assert "row 4 (Carl Impostor) · a1: not in the gradebook" in err
    assert "row 5 (Dana): rows 5, 6 all identify dana" in err and "row 6 (Dana again)" in err
    assert "row 7 (Bob)" not in err
    assert "alice · a1" not in err  # alice's grade written nowhere, and not reported as hers
