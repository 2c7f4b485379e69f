"""A class that tries more than its grade, through the real ``course collect --zip`` and ``course
collect`` run as root, with real Unix accounts for the exchange (tests/accounts.py).

- Every case of tests/class_inputs/catalogue.py gets its outcome: who is placed with whose
  notebook, whose upload or inbox entry is refused and why, what is reported, the exit status.
  Whatever the case, the honest students are placed, every file placed is a regular file with no
  setuid, setgid or exec bit, and a second collect collects nothing new.
- A zip bomb is refused in bounded memory: the collector's peak resident memory, read from the
  kernel's accounting of that process alone (``os.wait4``), is measured against an honest download's.
- Fifty students submitting at once with nbgrader's own submit are each collected exactly once,
  with their own notebook, by a collect that runs while they submit and one after.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from course_tools.cli import main

from .accounts import Step, accounts, act_as_students, finish_students, start_students  # noqa: F401 (a fixture)
from .class_inputs.catalogue import (
    DOWNLOADS,
    HONEST,
    INBOXES,
    ROSTER,
    SECRET_OF_THE_SOLUTION,
    honest_entries,
    notebook,
    zeros,
)
from .conftest import ROOT
from .toy_course import toy_notebook

COURSE = [str(Path(sys.executable).parent / "course")]


def scratch_course(assignments: list[str], logins: list[str] = ()) -> Path:
    """A course students can reach (in /tmp, not under a private pytest folder): the course's
    nbgrader configuration and students' Jupyter configuration, a roster (the catalogue's, and
    ``logins``), and one small assignment per name, its solution holding :data:`SECRET_OF_THE_SOLUTION`."""
    course = Path(tempfile.mkdtemp(prefix="course-class-"))
    course.chmod(0o711)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "deploy" / "jupyter" / "student", course / "deploy" / "jupyter" / "student")
    (course / "students.csv").write_text(
        ROSTER + "".join(f"{login},,,,\n" for login in logins), encoding="utf-8"
    )
    for name in assignments:
        release = toy_notebook()
        (course / "notebooks" / name).mkdir(parents=True)
        nbformat.write(
            release, course / "notebooks" / name / f"{name}.ipynb"
        )  # `course release` makes the same
        release.cells[2].source = release.cells[2].source.replace(
            "return 2 * x", f"return 2 * x  # {SECRET_OF_THE_SOLUTION}"
        )
        (course / "solutions" / name).mkdir(parents=True)
        nbformat.write(release, course / "solutions" / name / f"{name}.ipynb")
    return course


def run_course(course: Path, *arguments: str) -> tuple[int, str]:
    """``course ARGUMENTS`` in ``course``, in this process (the command's own code, umask and
    access rules included): its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(course)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(arguments))
    finally:
        os.chdir(here)
    return status, out.getvalue() + err.getvalue()


def collected_marker(course: Path, student: str, assignment: str) -> str:
    path = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    info = os.lstat(path)
    assert stat.S_ISREG(info.st_mode), f"{path} is not a regular file"
    assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID | 0o111), f"{path}: mode {info.st_mode:o}"
    text = path.read_bytes().decode("utf-8", "replace")
    assert SECRET_OF_THE_SOLUTION not in text
    try:
        return nbformat.reads(text, as_version=4).cells[0].source.split("= ", 1)[1].strip("'")
    except Exception:  # not a notebook: placed as data all the same
        return text[-3:]


# ------------------------------------------------------------------------------ LMS downloads ----


def assignment_of(case) -> str:
    return f"z_{case.name}"


@pytest.fixture(scope="module")
def downloads():
    """Every download case collected in one scratch course: case name -> (status, report)."""
    course = scratch_course([assignment_of(case) for case in DOWNLOADS])
    try:
        outcomes = {}
        for case in DOWNLOADS:
            assignment = assignment_of(case)
            download = course.parent / f"{course.name}-{case.name}.zip"
            name = f"{assignment}.ipynb"
            with zipfile.ZipFile(download, "w", zipfile.ZIP_DEFLATED) as handle:
                for entry, data in {
                    **honest_entries(name),
                    **case.entries(name),
                }.items():  # a zip is not compressed again
                    handle.writestr(
                        entry, data, zipfile.ZIP_STORED if entry.endswith(".zip") else zipfile.ZIP_DEFLATED
                    )
            outcomes[case.name] = run_course(course, "collect", "--zip", str(download), assignment)
            download.unlink()
        yield course, outcomes
    finally:
        shutil.rmtree(course, ignore_errors=True)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in DOWNLOADS])
def test_each_hostile_download_costs_only_its_sender(downloads, case):
    course, outcomes = downloads
    status, report = outcomes[case.name]
    assignment = assignment_of(case)
    assert status == case.status, report
    for student in HONEST:
        assert collected_marker(course, student, assignment) == student, report
    for student, marker in case.placed.items():
        assert collected_marker(course, student, assignment) == marker, report
    for student, why in case.refused.items():
        assert not (course / "submitted" / student / assignment).exists(), report
        line = next((line for line in report.splitlines() if line.startswith(f"  {student} (")), "")
        assert why in line, report
    for why in case.unplaced:
        assert why in report.split("could not place", 1)[-1], report
    unexpected = (
        {p.name for p in (course / "submitted").iterdir() if (p / assignment).exists()}
        - set(HONEST)
        - set(case.placed)
    )
    assert not unexpected, f"placed: {unexpected}\n{report}"
    assert not list((course / "submitted").glob(f"*/.{assignment}.*")), "a staging folder was left behind"


@pytest.mark.slow  # two `course` processes and a 256 MiB archive to build
def test_a_zip_bomb_is_refused_in_bounded_memory(tmp_path):
    """256 MiB of zeros in bob's nested zip (256 KiB): the collector's peak resident memory stays
    within 64 MiB of an honest download's (nbgrader's extractor took 2.11 GiB for 1 GiB)."""
    course = scratch_course(["bomb"])
    try:
        bomb = tmp_path / "bomb.zip"
        with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as handle:
            for entry, data in honest_entries("bomb.ipynb").items():
                handle.writestr(entry, data)
            inner = tmp_path / "inner.zip"
            with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as nested:
                with nested.open("bomb.ipynb", "w") as member:
                    for _ in range(256):
                        member.write(zeros(1 << 20))
            handle.write(inner, "dupontbob_1002_777002_work.zip")
        honest = tmp_path / "honest.zip"
        with zipfile.ZipFile(honest, "w") as handle:
            for entry, data in honest_entries("bomb.ipynb").items():
                handle.writestr(entry, data)

        def peak(download: Path) -> tuple[int, str]:
            process = subprocess.Popen(
                COURSE + ["collect", "--zip", str(download), "bomb"],
                cwd=course,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            report = process.stdout.read()
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_maxrss << 10, report

        baseline, _ = peak(honest)
        measured, report = peak(bomb)
        assert (
            "refused the upload of 1 student(s)" in report
            and "bob (dupontbob_1002_777002_work.zip): " in report
        ), report
        assert (course / "submitted" / "alice" / "bomb" / "bomb.ipynb").is_file()
        assert measured < baseline + (64 << 20), f"peak {measured >> 20} MiB, honest {baseline >> 20} MiB"
        print(f"peak resident memory: {measured >> 20} MiB with the bomb, {baseline >> 20} MiB honest")
    finally:
        shutil.rmtree(course, ignore_errors=True)


# ---------------------------------------------------------------------------------- the inbox ----


def inbox_assignment(case) -> str:
    return f"x_{case.name}"


@pytest.fixture(scope="module")
def inboxes(accounts):
    """Every inbox case acted by real accounts (a and b on the roster, c not) in one scratch course,
    then collected twice:
    case name -> (logins by role, (status, report) of the first collect, report of the second)."""
    a, b, c = accounts.make("x", 3)
    logins = {"a": a, "b": b, "c": c}
    course = scratch_course([inbox_assignment(case) for case in INBOXES], [a, b])  # c is not on the roster
    try:
        status, out = run_course(course, "release", "--exchange", *[inbox_assignment(c) for c in INBOXES])
        assert status == 0, out
        steps = []
        for case in INBOXES:
            assignment = inbox_assignment(case)
            for act in case.acts(logins, assignment):
                steps.append(
                    Step(logins[act.who], assignment, notebook(act.marker) if act.marker else "", act.code)
                )
        for done in act_as_students(accounts.python, course, steps):
            assert done.status == 0, done.log
        outcomes = {}
        for case in INBOXES:
            first = run_course(course, "collect", inbox_assignment(case))
            outcomes[case.name] = (first, run_course(course, "collect", inbox_assignment(case))[1])
        yield course, logins, outcomes
    finally:
        shutil.rmtree(course, ignore_errors=True)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in INBOXES])
def test_each_hostile_inbox_entry_costs_only_its_maker(inboxes, case):
    course, logins, outcomes = inboxes
    (status, report), second = outcomes[case.name]
    assignment = inbox_assignment(case)
    assert status == case.status, report
    for role, marker in case.collected.items():
        assert collected_marker(course, logins[role], assignment) == marker, report
        # the time in timestamp.txt is the collector's: neither the name's 2000, 2024 or 2099 nor the
        # student's own timestamp.txt (which decides whether the submission was late)
        assert (
            "2025" < (course / "submitted" / logins[role] / assignment / "timestamp.txt").read_text() < "2099"
        ), report
    others = {p.name for p in (course / "submitted").iterdir() if (p / assignment).exists()} - {
        logins[role] for role in case.collected
    }
    assert not others, f"collected: {others}\n{report}"
    for why in case.refused:
        assert why.format(**logins) in report.split("refused", 1)[-1], report
    for note in case.notes:
        assert note in report, report
    assert "collected 0 new submission(s)" in second, second


def written(login: str) -> str:
    """A notebook that names ``login``, with a megabyte of work in it: copying it takes long enough
    that a collect running meanwhile meets entries nbgrader's submit is still writing."""
    work = nbformat.reads(notebook(login), as_version=4)
    work.cells.append(nbformat.v4.new_markdown_cell("notes " * (1 << 18)))
    return nbformat.writes(work)


@pytest.mark.slow  # fifty accounts, fifty submissions, collects all along
def test_fifty_students_submitting_at_once_are_each_collected_once(accounts, tmp_path):
    """Fifty accounts run nbgrader's submit at the same moment; ``course collect`` runs again and
    again while they submit, and once after. Together the collects take every student exactly
    once, each with the notebook that student wrote: never an entry nbgrader's submit is still
    writing (which would never be collected again, its time being the same)."""
    logins = accounts.make("l", 50)
    course = scratch_course(["load"], logins)
    try:
        assert run_course(course, "release", "--exchange", "load")[0] == 0
        run_course(course, "collect", "load")  # nbgrader imported before the students start
        released = tmp_path / "released"
        students = start_students(
            accounts.python,
            course,
            [Step(login, "load", written(login)) for login in logins],
            together=True,
            released=released,
        )
        while not released.exists() and students.poll() is None:
            time.sleep(0.01)
        reports = []
        while students.poll() is None:
            status, report = run_course(course, "collect", "load")
            assert status == 0, report
            reports.append(report)
        failed = [done.log for done in finish_students(students) if done.status]
        assert not failed, failed[0]
        reports.append(run_course(course, "collect", "load")[1])

        def named(report: str) -> list[str]:
            listed = report.split("into submitted/: ", 1)[1].splitlines()[0]
            return [] if listed == "none" else listed.split(", ")

        collected = [login for report in reports for login in named(report)]
        print(
            f"{len(reports) - 1} collects while they submitted took "
            f"{len(collected) - len(named(reports[-1]))}"
        )
        assert sorted(collected) == sorted(logins), reports  # each once, nobody twice
        for login in logins:
            assert collected_marker(course, login, "load") == login
            assert (course / "submitted" / login / "load" / "submission_secret.txt").stat().st_size == 128
    finally:
        shutil.rmtree(course, ignore_errors=True)
