"""``course report``: its counting on synthetic records with known outcomes (tests/report_class.py),
the page and CSV files it writes, their privacy and escaping, and the page in a real browser.

The catalogue class that ``course autograde`` really grades is reported in tests/test_autograde.py
(``test_the_report_counts_the_graded_catalogue``), on the batch the suite grades anyway.
"""
from __future__ import annotations

import csv
import os
import stat
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from course_tools.classroom import report
from course_tools.classroom.report import FAILED_HIDDEN, FAILED_VISIBLE, HELD, PASSED
from course_tools.cli import main
from course_tools.course import assignments
from course_tools.grading.records import FAILED, REVIEW

from .browser import SCREENSHOTS, chromium, console_errors, remote_requests
from .report_class import (ASSIGNMENT, FINDING, FORBIDS, HIDDEN_MESSAGE, POINTS, PROFILES, STUDENT_TEXT,
                           make_class, profile_of, record, student_id)
from .test_autograde import batch, batch_test  # noqa: F401 (a fixture)

CLASS_SIZE = 3 * len(PROFILES)  # each profile three times


class PageCounts(HTMLParser):
    """Every ``data-count`` cell of the page: (table class, exercise or "", count name) -> its text."""

    def __init__(self, page: str):
        super().__init__()
        self.counts: dict[tuple[str, str, str], str] = {}
        self.table = self.exercise = ""
        self.open: tuple[str, str, str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.table = attrs.get("class", "")
        elif tag == "tr":
            self.exercise = attrs.get("data-exercise", "")
        elif tag == "td" and "data-count" in attrs:
            self.open = (self.table, self.exercise, attrs["data-count"])

    def handle_data(self, data):
        if self.open:
            self.counts[self.open] = self.counts.get(self.open, "") + data

    def handle_endtag(self, tag):
        if tag == "td":
            self.open = None


def expected_exercises(students: int) -> dict[str, dict[str, int]]:
    """Per test cell, each count the report must give, from the profiles alone."""
    found: dict[str, Counter] = {g: Counter() for g in POINTS}
    for index in range(students):
        profile = profile_of(index)
        if profile.status == FAILED:
            continue
        for grade_id, counts in found.items():
            counts["submissions"] += 1
            message = profile.failed.get(grade_id)
            outcome = HELD if grade_id in profile.held else PASSED if message is None else \
                FAILED_HIDDEN if message.startswith("hidden") else FAILED_VISIBLE
            counts[outcome] += 1
            counts["saved_by_cascade"] += grade_id in profile.cascade and message is None
            counts["lost_through_cascade"] += profile.name in ("lost", "stopped") and grade_id == "test_b"
    return {g: {k: c[k] for k in ("submissions", PASSED, FAILED_HIDDEN, FAILED_VISIBLE, HELD,
                                  "saved_by_cascade", "lost_through_cascade")} for g, c in found.items()}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    root = make_class(tmp_path_factory.mktemp("report") / "course", CLASS_SIZE)
    status = report.report_command(root, assignments(root), root / "build" / "report",
                                   stdout=open(os.devnull, "w"))
    assert status == 1  # reviews pending, and submissions that failed to grade
    return root


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


def test_the_graders_words_never_carry_the_students():
    assert report.grader_words(HIDDEN_MESSAGE) == HIDDEN_MESSAGE
    visible = report.grader_words(record(2).checks[1].message)
    assert visible == "check 1 of 2 (b): return value: values differ: max abs error # at index (#,)"
    assert report.grader_words("check 1 of 1 (f): return value: expected 'x', got '=cmd|'") == \
        "check 1 of 1 (f): return value: expected 'x'"
    assert report.reason_kind(f"{FINDING}: a way around the grader, which no answer needs", set(POINTS)) == \
        "lint: imports subprocess"
    assert report.reason_kind("answer_a line 3: spells the path '/home/x/secret': a way around the grader",
                              set(POINTS)) == "lint: spells the path '…'"
    assert report.reason_kind("answer_a line 1: imports sqlite3: a way around the grader", set()) == \
        "lint: imports sqlite3"
    assert report.reason_kind("answer cells with unknown grade_ids (=cmd|) exist", set()) == \
        "answer cells with unknown grade_ids (…) exist"
    assert report.reason_kind(f"test_c: {FORBIDS}", set(POINTS)) == FORBIDS


def test_discrimination_on_known_values():
    assert report.correlation([0, 0, 1, 1], [1, 2, 3, 4]) == pytest.approx(0.8944, abs=1e-4)
    assert report.correlation([1, 1, 1], [1, 2, 3]) is None  # everyone passed: it separates nobody
    # 10 submissions: the upper and lower 27 % are 3 each; the cell is passed by the top 3 and one other
    assert report.upper_lower([0, 0, 0, 1, 0, 0, 0, 1, 1, 1], list(range(10))) == pytest.approx(1.0)
    assert report.upper_lower([1, 0, 1, 0, 1, 0], [5] * 6) is None


def test_each_cell_gets_the_outcome_of_its_profile():
    for index, profile in enumerate(PROFILES):
        result = record(index)
        cells = {c.grade_id: c for c in report.cell_outcomes(result, result.probes, {})}
        expected = expected_exercises(index + 1)
        before = expected_exercises(index)
        for grade_id, cell in cells.items():
            changed = [k for k in expected[grade_id] if expected[grade_id][k] != before[grade_id][k]]
            assert cell.outcome in changed, (profile.name, grade_id, cell)
            assert cell.saved_by_cascade == ("saved_by_cascade" in changed), (profile.name, grade_id)
            assert cell.lost_through_cascade == ("lost_through_cascade" in changed), (profile.name, grade_id)
    manual = report.cell_outcomes(record(0), record(0).probes, {"test_b": 0.5})
    assert [c.score for c in manual] == [1.0, 0.5, 1.0]  # a grader's score wins


def test_every_count_of_a_synthetic_class_on_the_page_and_in_the_csv(synthetic):
    out = synthetic / "build" / "report"
    expected = expected_exercises(CLASS_SIZE)
    rows = {r["exercise"]: r for r in _csv(out / "exercises.csv")}
    counts = PageCounts((out / "index.html").read_text(encoding="utf-8")).counts
    names = {PASSED: "passed", FAILED_HIDDEN: "failed_hidden_only", FAILED_VISIBLE: "failed_visible",
             HELD: "held"}
    for grade_id, want in expected.items():
        for key, value in want.items():
            column = names.get(key, key)
            assert rows[grade_id][column] == str(value), (grade_id, column)
            assert counts[("exercises", grade_id, column)] == str(value), (grade_id, column)
    assert counts[("hidden-only", "test_a", "failed_hidden_only")] == str(expected["test_a"][FAILED_HIDDEN])
    per_profile = Counter(profile_of(i).name for i in range(CLASS_SIZE))
    (assignment,) = _csv(out / "assignments.csv")
    want = {"students": CLASS_SIZE + 1, "submissions": CLASS_SIZE, "not_submitted": 1,
            "pending_review": sum(n for name, n in per_profile.items()
                                  if profile_named(name).status == REVIEW),
            "failed_to_grade": per_profile["unreadable"], "late": per_profile["late"],
            "graded": CLASS_SIZE - sum(n for name, n in per_profile.items()
                                       if profile_named(name).status in (REVIEW, FAILED))}
    for key, value in want.items():
        assert assignment[key] == str(value), key
        assert counts[("assignment", "", key)] == str(value), key
    assert assignment["penalty_points"] == "1.2"  # 10 % of 4 points, three times
    assert assignment["flagged_pairs"] == "" and counts[("assignment", "", "flagged_pairs")] == "not run"
    assert counts[("held-back", "", "held_back")] == str(per_profile["tamper"])


def profile_named(name: str):
    return next(p for p in PROFILES if p.name == name)


def test_the_page_holds_no_students_text_and_escapes_the_rest(tmp_path):
    root = make_class(tmp_path / "course", len(PROFILES))
    hostile = "test_<script>alert(1)</script>$x^$\ud800"
    result = record(1)
    result.checks[0].grade_id = hostile
    from course_tools.grading.records import write_record

    write_record(root / "autograded" / result.student / ASSIGNMENT, result)
    out = tmp_path / "report"
    report.report_command(root, assignments(root), out, stdout=open(os.devnull, "w"))
    page = (out / "index.html").read_text(encoding="utf-8")
    written = page + (out / "exercises.csv").read_text(encoding="utf-8")
    assert STUDENT_TEXT not in written and "\ud800" not in written
    assert "<script>" not in page  # the CSV is text, not HTML: a spreadsheet shows it as it is
    assert "test_&lt;script&gt;alert(1)&lt;/script&gt;$x^$\ufffd" in page
    assert student_id(1) not in page  # ids only where a person must look (the allow-list table)
    assert student_id(5) in page


def test_course_report_writes_a_private_page(tmp_path, monkeypatch, capsys):
    root = make_class(tmp_path / "course", len(PROFILES))
    monkeypatch.chdir(root)
    assert main(["report", ASSIGNMENT]) == 1
    out = capsys.readouterr().out
    assert f"{ASSIGNMENT}: 6 scored of {len(PROFILES)} submitted" in out
    assert "report: build/report/index.html" in out
    for name in ("index.html", "exercises.csv", "assignments.csv"):
        mode = stat.S_IMODE(os.stat(root / "build" / "report" / name).st_mode)
        assert not mode & 0o077, f"{name}: mode {mode:o}"
    assert not stat.S_IMODE(os.stat(root / "build").st_mode) & 0o044  # build/ cannot be listed by others


def test_similarity_flags_are_read_from_its_last_report(tmp_path):
    from course_tools.classroom.similarity import Pair, flagged_pairs, report_folder, write_report

    root = make_class(tmp_path / "course", 4)
    (assignment,) = assignments(root)
    folder = report_folder(root, ASSIGNMENT)
    assert flagged_pairs(folder) is None
    pairs = [Pair("s0000", "s0001", 0.9, 0.9, 80), Pair("s0001", "s0002", 0.8, 0.7, 60),
             Pair("s0002", "s0003", 0.1, 0.1, 3)]
    write_report(folder, assignment, {f"s{i:04d}": {} for i in range(4)}, pairs, 0.5, [])
    assert flagged_pairs(folder) == [("s0000", "s0001"), ("s0001", "s0002")]
    row = report.build(root, [assignment]).assignments[0]
    assert (row.flagged_pairs, row.flagged_students) == (2, 3)


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_the_report_in_chromium(synthetic):
    """The page opens offline in headless Chromium, every chart drawn; a screenshot stays for a person."""
    page = synthetic / "build" / "report" / "index.html"
    shots = SCREENSHOTS / "report"
    shots.mkdir(parents=True, exist_ok=True)
    with chromium(1280, 1000) as driver:
        driver.get(page.as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.className, i.complete && i.naturalWidth > 0])")
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(height + 400, 8000))
        driver.save_screenshot(str(shots / "report.png"))
        assert not console_errors(driver) and not remote_requests(driver)
    assert sorted(images) == [["exercises", True], ["histograms", True], ["scores", True]], images
    assert (shots / "report.png").stat().st_size > 10_000


# ------------------------------------------------------------------ the catalogue class, as graded ----

def _catalogue_course(batch, where: Path) -> tuple[Path, dict[str, str]]:
    """What the report reads of the graded catalogue (records, gradebook, source), copied so that its late
    policy, due date, two late submissions and two flagged pairs change nothing the other tests read."""
    import datetime as dt
    import shutil

    from course_tools.classroom.similarity import Pair, report_folder, write_report
    from course_tools.grading import gradebook

    from .submissions.toy import ASSIGNMENT as TOY
    from .test_autograde import CATALOGUE, canary_student, fixture_student

    number = {f.name: fixture_student(i, f) for i, f in enumerate(CATALOGUE)}
    root = where / "course"
    root.mkdir()
    for name in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy(batch.root / name, root / name)
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.LatePolicy.penalty_method = "per_day"\nc.LatePolicy.percent = 10\n')
    shutil.copytree(batch.root / "solutions", root / "solutions")
    shutil.copytree(batch.root / "autograded", root / "autograded", ignore=shutil.ignore_patterns("*.ipynb"))
    with gradebook.opened(gradebook.db_url(root)) as book:
        # due after every submission's time, but the two set later here
        book.update_or_create_assignment(TOY, duedate=dt.datetime(2026, 11, 22, 13, 0))
        for student, day in ((number["honest"], 23), (number["blank"], 25)):
            book.find_submission(TOY, student).timestamp = dt.datetime(2026, 11, day, 12, 0)
        book.db.commit()
    (assignment,) = assignments(root, [TOY])
    flagged = [(number["honest"], canary_student(0, CATALOGUE[0])), (number["blank"], number["hardcoded"])]
    folder = report_folder(root, TOY)
    write_report(folder, assignment, {s: {} for pair in flagged for s in pair},
                 [Pair(a, b, 0.9, 0.9, 99) for a, b in flagged], 0.5, [])
    return root, number


@batch_test
def test_the_report_counts_the_graded_catalogue(batch, tmp_path):
    """The toy catalogue that ``course autograde`` graded (tests/test_autograde.py's batch: honest, blank,
    catalogued bugs, hostile), two of its submissions made late and two pairs flagged: every count on the
    page and in the CSV files is what the catalogue's expected outcomes say."""
    from .submissions.catalogue import FAILED as CATALOGUE_FAILED
    from .submissions.catalogue import GRADED as CATALOGUE_GRADED
    from .submissions.catalogue import REVIEW as CATALOGUE_REVIEW
    from .test_autograde import ABSENT, CATALOGUE

    root, number = _catalogue_course(batch, tmp_path)
    out = root / "build" / "report"
    assert report.report_command(root, assignments(root), out, stdout=open(os.devnull, "w")) == 1
    expected = {name: f.expected for name, f in ((f.name, f) for f in CATALOGUE)}
    statuses = Counter(e.status for e in expected.values())
    (row,) = _csv(out / "assignments.csv")
    want = {"students": len(batch.results) + 1, "submissions": len(batch.results), "not_submitted": 1,
            "pending_review": statuses[CATALOGUE_REVIEW], "failed_to_grade": statuses[CATALOGUE_FAILED],
            "graded": len(batch.results) - statuses[CATALOGUE_REVIEW] - statuses[CATALOGUE_FAILED],
            "late": 2, "penalty_points": "0.9", "flagged_pairs": 2, "flagged_students": 4}
    counts = PageCounts((out / "index.html").read_text(encoding="utf-8")).counts
    for key, value in want.items():
        assert row[key] == str(value), key
        if key != "flagged_students":
            assert counts[("assignment", "", key)].split(" ")[0] == str(value), key
    assert statuses[CATALOGUE_GRADED] + len(CATALOGUE) + 1 == int(row["graded"])  # the canaries and REVIEWED
    assert ABSENT not in (out / "index.html").read_text(encoding="utf-8")
    # per test cell: from the catalogue's expected verdicts; hidden or visible from the grader's message
    graded = [r for r in batch.results.values() if r.checks]
    rows = {r["exercise"]: r for r in _csv(out / "exercises.csv")}
    for grade_id in {c.grade_id for r in graded for c in r.checks}:
        verdicts = [next(c for c in r.checks if c.grade_id == grade_id) for r in graded]
        failed = [v for v in verdicts if v.status == "failed"]
        hidden = sum(v.message.startswith("hidden check") for v in failed)
        fixture_verdicts = [
            "failed" if grade_id in e.failed else "review" if grade_id in e.review else "passed"
            for e in expected.values() if e.status != CATALOGUE_FAILED]
        canaries = len(graded) - len(fixture_verdicts)
        want = {"submissions": len(graded), "passed": fixture_verdicts.count("passed") + canaries,
                "held": fixture_verdicts.count("review"), "failed_hidden_only": hidden,
                "failed_visible": fixture_verdicts.count("failed") - hidden}
        for key, value in want.items():
            assert rows[grade_id][key] == str(value), (grade_id, key)
            assert counts[("exercises", grade_id, key)] == str(value), (grade_id, key)
    for name, grade_id in (("hardcoded", "test_double"), ("unstable_softmax", "test_softmax")):
        # right on the visible inputs, wrong on the hidden ones
        check = next(c for c in batch.results[number[name]].checks if c.grade_id == grade_id)
        assert check.message.startswith("hidden check") and int(rows[grade_id]["failed_hidden_only"]) >= 1
    # the cascade: only rnn_forward builds on another exercise; cpu_in_every_run's time ran out in the cascade
    assert {g: int(r["lost_through_cascade"]) for g, r in rows.items() if int(r["lost_through_cascade"])} == \
        {"test_rnn_forward": 1}
    assert {g for g, r in rows.items() if int(r["saved_by_cascade"])} == {"test_rnn_forward"}
    # honest code held back by the lint: the fixtures at full marks that a finding sent to a person
    held_back = report.build(root, assignments(root)).held_back
    assert {s for h in held_back for s in h.students} == {
        number[n] for n in ("write_gradebook", "events_fifo", "replay_links", "memory_outside")}
    assert {h.test_cells for h in held_back} == {("test_double",)}
