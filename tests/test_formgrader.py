"""nbgrader's formgrader *Manual Grading* with our grades, in headless Chromium.

`course autograde` grades the toy assignment: an honest student, and one whose softmax passes every
check but keeps torch's softmax (which the exercise forbids) in a branch the checks never take, so
the grader flags that cell for a person. A TA opens formgrader's Manual Grading (the notebook's
submissions, then the flagged student's), sees the cell marked as needing a grade beside our
automatic scores, and types a manual score and a comment. That score is then in `course grades`
(the student's status turns from "needs manual review" to graded) and in the Canvas and Moodle
sheets, and it survives a later `course autograde`, as does the comment, which `course grades` lists
and the student's feedback page shows beside the check. Screenshots: ``formgrader/`` beside the
other browser tests' (1 the Manual Grading list, 2 the flagged cell, 3 the manual score saved).
A cheaper test writes comments through nbgrader's own gradebook API, as formgrader does.
"""
from __future__ import annotations

import csv
import json
import shutil
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course_tools.cli import main
from course_tools.grading import gradebook

from . import browser
from .browser import wait_for
from .submissions.catalogue import answered
from .submissions.toy import ASSIGNMENT, POINTS, make_course
from .system import needs_bwrap
from .test_jupyterlab import jupyter_lab
from .toy_course import ROOT, answer_notebook, graded_submission

FLAGGED = "test_softmax"  # the test cell a person scores
COMMENTED = "answer_softmax"  # the answer cell the person comments on
FORBIDDEN_SOFTMAX = '''def softmax(x, dim=-1):
    """Numerically stable softmax along dim. x: (..., n) -> the same shape."""
    if x.dim() > 64:  # never true in the checks: the grader's lint still sees what the exercise forbids
        return torch.softmax(x, dim=dim)
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)'''
STUDENTS = {"honest": answered, "reviewed": lambda root: answered(root, softmax=FORBIDDEN_SOFTMAX)}
MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js"  # formgrade's template asks for it
MANUAL, COMMENT = 1.5, "torch.softmax kept in a branch: 1.5 of 2"


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


def _grades(root: Path) -> dict[str, dict[str, str]]:
    assert main(["grades", ASSIGNMENT, "--csv", str(root / "grades.csv")]) in (0, 1)
    return {row["student"]: row for row in _read(root / "grades.csv")}


def _manual(root: Path) -> tuple:
    from nbgrader.api import Gradebook

    with Gradebook(gradebook.db_url(root)) as book:
        notebook = book.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "reviewed")
        return (book.find_grade(FLAGGED, ASSIGNMENT, ASSIGNMENT, "reviewed").manual_score,
                next(c.manual_comment for c in notebook.comments if c.name == COMMENTED))


@needs_bwrap
@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("jupyterlab")
def test_a_ta_scores_a_flagged_cell_in_formgrader_and_the_grade_reaches_the_lms(tmp_path, monkeypatch,
                                                                                capsys):
    browser.require_browser()
    (tmp_path / "course").mkdir()
    root, home = make_course(tmp_path / "course"), tmp_path / "home"
    home.mkdir()
    for student, notebook in STUDENTS.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook(root), folder / f"{ASSIGNMENT}.ipynb")
    monkeypatch.chdir(root)
    assert main(["autograde", ASSIGNMENT]) == 1  # a student needs a person
    before = _grades(root)
    assert (before["honest"]["status"], before["honest"]["score"]) == ("graded", f"{POINTS:g}")
    assert before["reviewed"]["status"].startswith("needs manual review")
    assert FLAGGED in before["reviewed"]["why"] and "forbids" in before["reviewed"]["why"]
    screenshots = browser.SCREENSHOTS / "formgrader"  # for a person: outside the course, replaced each run
    shutil.rmtree(screenshots, ignore_errors=True)
    screenshots.mkdir(parents=True)

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with jupyter_lab(root, home) as (base, token), browser.chromium(1400, 1000) as driver:
        listed = json.load(urllib.request.urlopen(
            f"{base}/formgrader/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}?token={token}", timeout=60))
        flags = {s["student"]: (s["needs_manual_grade"], s["score"]) for s in listed}
        assert flags == {"honest": (False, POINTS), "reviewed": (True, POINTS)}  # our automatic scores
        # Manual Grading: the assignment's notebook, every submission with its score and flags
        # The TA logs in with the server's token (formgrader's pages ask the API with the login cookie)
        driver.get(f"{base}/login?next=/formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}")
        driver.find_element(By.ID, "password_input").send_keys(token, Keys.ENTER)
        wait_for(driver, "return document.querySelectorAll('td.needs-manual-grade').length === 2", 60)
        driver.find_element(By.ID, "toggle_names").click()  # "Show All Names"
        wait_for(driver, "return [...document.querySelectorAll('a.name-shown')].every(a => a.offsetParent)")
        rows = driver.execute_script(
            "return Array.from(document.querySelectorAll('#main-table tr')).map(r => ["
            "r.querySelector('a.name-shown').textContent, r.querySelector('td.score').textContent,"
            " r.querySelector('td.needs-manual-grade').dataset.search])")
        assert sorted(rows) == [["honest", f"{POINTS:g} / {POINTS:g}", ""],
                                ["reviewed", f"{POINTS:g} / {POINTS:g}", "needs manual grade"]], rows
        driver.save_screenshot(str(screenshots / "1-manual-grading.png"))
        driver.find_element(By.LINK_TEXT, "reviewed").click()

        # The submission: the flagged cell's score box asks for a grade, our automatic score as its hint
        score = f"input.score#{FLAGGED}"
        wait_for(driver, f"return document.querySelector('{score}.needs_manual_grade') !== null", 60)
        box = driver.find_element(By.CSS_SELECTOR, score)
        assert box.get_attribute("placeholder") == "2" and box.get_attribute("value") == ""
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
        driver.save_screenshot(str(screenshots / "2-flagged-cell.png"))
        box.click()
        box.send_keys(f"{MANUAL:g}", Keys.TAB)
        comment = driver.find_element(By.CSS_SELECTOR, f"textarea#{COMMENTED}-comment")
        comment.click()
        comment.send_keys(COMMENT, Keys.TAB)
        for _ in range(60):
            if _manual(root) == (MANUAL, COMMENT):
                break
            time.sleep(0.5)
        assert _manual(root) == (MANUAL, COMMENT)
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
        driver.save_screenshot(str(screenshots / "3-manual-score-saved.png"))
        # nothing but nbgrader's own template's MathJax from a CDN (blocked here: the page works without it)
        assert {url.split("?")[0] for url in browser.remote_requests(driver)} <= {MATHJAX}

    total = POINTS - 2 + MANUAL
    after = _grades(root)
    assert (after["reviewed"]["status"], after["reviewed"]["score"]) == ("graded", f"{total:g}")
    assert (after["honest"]["status"], after["honest"]["score"]) == ("graded", f"{POINTS:g}")
    (root / "students.csv").write_text("student_id,email,canvas_id,moodle_identifier\n"
                                       "honest,honest@uni.example,101,Participant 1\n"
                                       "reviewed,reviewed@uni.example,102,Participant 2\n")
    main(["grades", ASSIGNMENT, "--format", "canvas", "--out", str(root / "canvas.csv")])
    canvas = {r["ID"]: r[ASSIGNMENT] for r in _read(root / "canvas.csv") if r["ID"]}
    assert canvas == {"101": f"{POINTS:g}", "102": f"{total:g}"}
    main(["grades", ASSIGNMENT, "--format", "moodle", "--out", str(root / "moodle")])
    moodle = {r["Identifier"]: r["Grade"] for r in _read(root / "moodle" / f"{ASSIGNMENT}.csv")}
    assert moodle == {"Participant 1": f"{POINTS:g}", "Participant 2": f"{total:g}"}

    # A later `course autograde` (a resumed batch, then a regrade) leaves the TA's score alone.
    capsys.readouterr()
    main(["autograde", ASSIGNMENT])
    main(["autograde", ASSIGNMENT, "--regrade"])
    assert _manual(root) == (MANUAL, COMMENT)
    assert _grades(root)["reviewed"]["score"] == f"{total:g}"
    # the comment: in `course grades` and on the student's feedback page, once, beside its check
    assert _grades(root)["reviewed"]["comments"] == f"{COMMENTED}: {COMMENT}"
    assert main(["feedback", ASSIGNMENT]) == 0
    page = (root / "feedback" / "reviewed" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert page.count(COMMENT) == 1 and _row_of(page, FLAGGED).count(COMMENT) == 1
    assert COMMENT not in (root / "feedback" / "honest" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()


def _row_of(page: str, grade_id: str) -> str:
    """The row of the feedback page's table that shows the check ``grade_id``."""
    rows = [row for row in page.split("<tr>") if f"<small>{grade_id}</small>" in row]
    assert len(rows) == 1, rows
    return rows[0]


POINTS_A1 = {"test_x": 2.0, "test_y": 3.0}  # answer_x, answer_y and their checks: tests/toy_course.py
HOSTILE_COMMENT = "x() misses the edge case n = 0 <script>alert(1)</script>\nsee lecture 3"


def test_a_graders_comment_reaches_grades_and_feedback_and_survives_a_regrade(tmp_path, monkeypatch,
                                                                               capsys):
    """Comments written as formgrader writes them (nbgrader's Gradebook API): `course grades` lists
    them, the Moodle worksheet carries them in its feedback column, the feedback page shows each
    beside the check of the answer it is about, escaped, and a later grading (autograde writes the
    scores again) neither loses nor repeats them."""
    from nbgrader.api import Gradebook

    root = tmp_path / "course"
    (root / "solutions" / "a1").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    nbformat.write(answer_notebook(POINTS_A1), root / "solutions" / "a1" / "a1.ipynb")
    monkeypatch.chdir(root)
    for student in ("commented", "quiet"):
        graded_submission(root, "a1", student, POINTS_A1)
    with Gradebook(gradebook.db_url(root)) as book:
        book.find_comment("answer_x", "a1", "a1", "commented").manual_comment = HOSTILE_COMMENT
        book.find_comment("answer_y", "a1", "a1", "commented").manual_comment = "  "  # a box left blank
        book.db.commit()
    roster = root / "students.csv"
    roster.write_text("student_id,email,moodle_identifier\n" + "".join(
        f"{s},{s}@uni.example,Participant {i}\n" for i, s in enumerate(("commented", "quiet"), 1)))

    for regraded in (False, True):
        if regraded:
            graded_submission(root, "a1", "commented", POINTS_A1)
        capsys.readouterr()
        assert main(["grades", "a1", "--csv", str(root / "grades.csv")]) == 0
        table = capsys.readouterr().out
        shown = [line for line in table.splitlines() if "edge case" in line]
        assert shown == ["  commented · a1 · answer_x: x() misses the edge case n = 0 "
                         "<script>alert(1)</script> see lecture 3"], table
        rows = {row["student"]: row for row in _read(root / "grades.csv")}
        assert rows["commented"]["comments"] == f"answer_x: {HOSTILE_COMMENT.replace(chr(10), ' ')}"
        assert rows["quiet"]["comments"] == ""
        # the Moodle worksheet's feedback column: the comment, as the student reads it in Moodle
        assert main(["grades", "a1", "--format", "moodle", "--roster", str(roster), "--out",
                     str(root / "moodle")]) == 0
        feedback = {row["Email address"]: row["Feedback comments"]
                    for row in _read(root / "moodle" / "a1.csv")}
        assert feedback == {"commented@uni.example": rows["commented"]["comments"],
                            "quiet@uni.example": ""}, feedback
        assert main(["feedback", "a1"]) == 0
        page = (root / "feedback" / "commented" / "a1" / "a1.html").read_text()
        assert page.count("edge case") == 1 and "<script>" not in page
        assert "edge case" in _row_of(page, "test_x") and "comment" not in _row_of(page, "test_y")
        assert "edge case" not in (root / "feedback" / "quiet" / "a1" / "a1.html").read_text()
