"""A class of synthetic grading records with known outcomes, for `course report`'s counting and its benchmark.

No notebook runs: each student gets a record (and the probes beside it) as ``course autograde``
writes them, and the gradebook its scores and the collector's time, all in one gradebook session.
Student ``i`` has profile ``PROFILES[i % len(PROFILES)]``; the source notebook is
:func:`tests.toy_course.answer_notebook` of :data:`POINTS`.
"""
from __future__ import annotations

import datetime as dt
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import nbformat

from course_tools.grading import gradebook
from course_tools.grading.records import FAILED, GRADED, REVIEW, Check, Probe, Result, write_record

from .toy_course import ROOT, answer_notebook

ASSIGNMENT = "a1"
POINTS = {"test_a": 1.0, "test_b": 2.0, "test_c": 1.0}
DUE = dt.datetime(2026, 12, 1, 16, 0)
POLICY = '\nc.LatePolicy.penalty_method = "per_day"\nc.LatePolicy.percent = 10\nc.LatePolicy.cap = 50\n'
STUDENT_TEXT = "SECRET-of-the-student =cmd|"  # in a visible check's error line: never on the page
HIDDEN_MESSAGE = "hidden check 2 of 2 (a): return value: values differ"
VISIBLE_MESSAGE = ("check 1 of 2 (b): return value: values differ: max abs error 0.5 at index (0,) "
                   f"(expected 1, got 1.5); allowed atol=1e-05, rtol=1e-05\nValueError: {STUDENT_TEXT}")
FORBIDS = "passed, but your answer uses what this exercise forbids"
FINDING = "answer_a line 2: imports subprocess"
SPENT = ("test_b: not graded again with the exercises they build on corrected: this student's time limit for "
         "all of their runs was spent")
SPENT_IN_CASCADE = "the grading exceeded this student's 12 s CPU time limit for all of their runs together"
CASCADE = "cascade run 1 (the exercises it builds on bound to the references)"


@dataclass(frozen=True)
class Profile:
    name: str
    status: str
    failed: dict[str, str]  # test cell -> its message
    held: tuple[str, ...] = ()  # test cells held for a person (FORBIDS)
    findings: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    cascade: tuple[str, ...] = ()  # test cells whose probes come from a cascade run
    late_hours: float = 0.0  # submitted this long after DUE (the policy takes 10 % per day begun)


PROFILES = (
    Profile("honest", GRADED, {}),
    Profile("hidden", GRADED, {"test_a": HIDDEN_MESSAGE}),
    Profile("visible", GRADED, {"test_b": VISIBLE_MESSAGE}),
    Profile("blank", GRADED, {g: f"check 1 of 2 ({g[5:]}): it raised NotImplementedError" for g in POINTS}),
    Profile("held", REVIEW, {}, held=("test_c",), reasons=(f"test_c: {FORBIDS}",)),
    Profile("tamper", REVIEW, {}, findings=(FINDING,),
            reasons=(f"{FINDING}: a way around the grader, which no answer needs: a person should look at "
                     "it",)),
    Profile("saved", GRADED, {}, cascade=("test_b",)),
    Profile("lost", REVIEW, {"test_b": VISIBLE_MESSAGE}, reasons=(SPENT,)),
    Profile("stopped", REVIEW, {"test_b": "check 1 of 2 (b): not run: the notebook stopped before it"},
            reasons=(SPENT_IN_CASCADE,), cascade=("test_b",)),
    Profile("late", GRADED, {}, late_hours=3),
    Profile("unreadable", FAILED, {}, reasons=("a1.ipynb is not valid JSON",)),
)


def profile_of(index: int) -> Profile:
    return PROFILES[index % len(PROFILES)]


def student_id(index: int) -> str:
    return f"s{index:04d}"


def _probes(profile: Profile) -> list[Probe]:
    probes = []
    for grade_id in POINTS:
        message = profile.failed.get(grade_id, "")
        for number, hidden in ((1, False), (2, True)):
            failed = bool(message) and (hidden if message.startswith("hidden") else number == 1)
            run = CASCADE if grade_id in profile.cascade else "the submission's run"
            probes.append(Probe(grade_id, number, grade_id[5:], hidden, run, "failed" if failed else "passed",
                                True, "", "", "", ""))
    return probes


def record(index: int) -> Result:
    profile, student = profile_of(index), student_id(index)
    total = sum(POINTS.values())
    if profile.status == FAILED:
        return Result(student, ASSIGNMENT, FAILED, None, total, reasons=list(profile.reasons))
    checks = [Check(g, p, 0.0, "failed", profile.failed[g], True) if g in profile.failed
              else Check(g, p, p, "review" if g in profile.held else "passed",
                         FORBIDS if g in profile.held else "", True)
              for g, p in POINTS.items()]
    return Result(student, ASSIGNMENT, profile.status, sum(c.score for c in checks), total, checks,
                  list(profile.reasons), [], list(profile.findings), probes=_probes(profile))


def make_class(root: Path, students: int) -> Path:
    """A course at ``root`` with ``students`` graded records of :data:`ASSIGNMENT`, due at :data:`DUE`
    under the late :data:`POLICY`; one more student on the roster, ``absent``, never submitted."""
    (root / "solutions" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(POLICY)
    nbformat.write(answer_notebook(POINTS), root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    url = gradebook.db_url(root)
    gradebook.ensure_assignment(url, ASSIGNMENT, ASSIGNMENT, POINTS,
                                [f"answer_{g.removeprefix('test_')}" for g in POINTS])
    with gradebook.opened(url) as book, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        book.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
        book.update_or_create_student("absent")
        for index in range(students):
            result = record(index)
            folder = root / "autograded" / result.student / ASSIGNMENT
            folder.mkdir(parents=True)
            (root / "submitted" / result.student / ASSIGNMENT).mkdir(parents=True)
            write_record(folder, result)
            if result.status == FAILED:
                continue
            book.update_or_create_student(result.student)
            book.update_or_create_submission(
                ASSIGNMENT, result.student,
                timestamp=DUE + dt.timedelta(hours=profile_of(index).late_hours or -1))
            for check in result.checks:
                grade = book.find_grade(check.grade_id, ASSIGNMENT, ASSIGNMENT, result.student)
                grade.auto_score = check.score
                grade.needs_manual_grade = check.status == "review"
        book.db.commit()
    return root
