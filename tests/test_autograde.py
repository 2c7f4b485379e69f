"""``course autograde``, ``grades`` and ``feedback`` on the toy assignment.

One batch grades every submission of the catalogue (tests/submissions/catalogue.py), each followed
by a canary (the honest solution) and with two students graded at once, the way an instructor runs
it. Each fixture's outcome is then checked on its own: score or status and why, canaries at full
marks, a grader's manual scores and the gradebook untouched, no process left behind.
"""
from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from dataclasses import asdict
from types import SimpleNamespace

import pytest

from course_tools.grading import gradebook
from course_tools.grading.autograde import autograde, needs_attention
from course_tools.grading.records import FAILED, GRADED, RECORD, REVIEW, Check, Result
from course_tools.course import CourseError
from course_tools.grading.lint import bound_names, lint
from course_tools.grading.compare import compare
from course_tools.grading.sandboxed.plain import plain
from course_tools.grading.limits import Limits
from course_tools.grading.sandbox import Sandbox
from course_tools.grading.submission import source_cells

from .shared import built_once
from .system import needs_bwrap, require_bwrap
from .submissions.catalogue import (CANARY, CATALOGUE, FOLDER, MARKER, MEMORY_LIMIT, STEP_CPU_S,
                                    STUDENT_CPU_S, Fifo, Link, Sparse)
from .submissions.toy import ANSWERS, ASSIGNMENT, HIDDEN_EXPECTED, HIDDEN_INPUT, POINTS, make_course

ROOT = Path(__file__).resolve().parents[1]


def batch_test(test):
    """A test of the one big batch (graded once per run: see the ``batch`` fixture)."""
    return needs_bwrap(pytest.mark.notebook(test))


# Small enough that the resource fixtures cost seconds and stay safe on a shared 2-core machine.
LIMITS = Limits(cell_s=STEP_CPU_S, student_s=STUDENT_CPU_S, memory_bytes=MEMORY_LIMIT, processes=64,
                file_bytes=16 << 20, output_bytes=4 << 20, scratch_bytes=256 << 20, outbox_bytes=64 << 20)
REVIEWED, ABSENT = "zz_reviewed", "zz_absent"


def fixture_student(index: int, fixture) -> str:
    return f"{index:02d}_{fixture.name}"


def canary_student(index: int, fixture) -> str:
    return f"{index:02d}_{fixture.name}~canary"  # "~" sorts after the fixture's own name: graded after it


def _submit(root: Path, student: str, fixture) -> None:
    """The fixture's files in ``submitted/<student>/<assignment>/``: bytes, or a Link, a Fifo or a
    Sparse file (catalogue.py); a Link named FOLDER is the submission folder itself."""
    folder = root / "submitted" / student / ASSIGNMENT
    built = fixture.build(root)
    if FOLDER in built:
        folder.parent.mkdir(parents=True)
        folder.symlink_to(root / built[FOLDER].target)
        return
    folder.mkdir(parents=True)
    for name, data in built.items():
        path = folder / name
        if isinstance(data, Link):
            path.symlink_to(root / data.target)
        elif isinstance(data, Fifo):
            os.mkfifo(path)
        elif isinstance(data, Sparse):
            with open(path, "wb") as stream:
                stream.truncate(data.size)
        else:
            path.write_bytes(data)
    if not (folder / "timestamp.txt").exists():
        (folder / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")


def _ordinary_files(folder: str, names: list[str]) -> list[str]:
    """copytree's ``ignore``: the hostile fixtures' links, FIFOs and sparse giants stay behind."""
    left = []
    for name in names:
        path = os.path.join(folder, name)
        if os.path.islink(path) or not (os.path.isdir(path) or os.path.isfile(path)) or \
                (os.path.isfile(path) and os.path.getsize(path) > 64 << 20):
            left.append(name)
    return left


def _grades(url: str, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(url) as book:
        submission = book.find_submission(ASSIGNMENT, student)
        return {g.name: (g.auto_score, g.manual_score) for n in submission.notebooks for g in n.grades}


def _grade_the_catalogue(root: Path) -> dict:
    shutil.rmtree(root, ignore_errors=True)  # what an interrupted earlier attempt left
    root.mkdir(parents=True)
    make_course(root)
    for index, fixture in enumerate(CATALOGUE):
        _submit(root, fixture_student(index, fixture), fixture)
        _submit(root, canary_student(index, fixture), CANARY)
    _submit(root, REVIEWED, CANARY)
    # Before the batch: a student a grader already reviewed, and one on the roster who never submitted.
    url = gradebook.db_url(root)
    cells = source_cells(root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    gradebook.ensure_assignment(url, ASSIGNMENT, ASSIGNMENT,
                                {c.grade_id: c.points
                                 for c in cells if c.kind == "test"},
                                [c.grade_id for c in cells if c.kind == "solution"])
    gradebook.save(url, ASSIGNMENT, ASSIGNMENT, REVIEWED,
                   {c.grade_id: 0.0
                    for c in cells if c.kind == "test"}, set(), None)
    from nbgrader.api import Gradebook

    with Gradebook(url) as book:
        book.update_or_create_student(ABSENT)
        book.find_grade("test_softmax", ASSIGNMENT, ASSIGNMENT, REVIEWED).manual_score = 0.5
        book.db.commit()
    out = io.StringIO()
    started = time.monotonic()
    results = autograde(root, ASSIGNMENT, jobs=2, limits=LIMITS, out=out, progress=False)
    return {
        "results": [asdict(r) for r in results], "table": out.getvalue(),
        "seconds": time.monotonic() - started
    }


@pytest.fixture(scope="session")
def batch(tmp_path_factory):
    """The catalogue graded once per test run, whichever xdist worker asks first (the other waits)."""
    require_bwrap()

    def grade(folder: Path) -> None:
        graded = _grade_the_catalogue(folder / "course")
        (folder / "results.json").write_text(json.dumps(graded), encoding="utf-8")

    folder = built_once(tmp_path_factory, "autograde-catalogue", grade)
    graded = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    results = {}
    for record in graded["results"]:
        checks = [Check(**check) for check in record.pop("checks")]
        results[record["student"]] = Result(**record, checks=checks)
    root = folder / "course"
    return SimpleNamespace(root=root, url=gradebook.db_url(root), results=results, table=graded["table"],
                           seconds=graded["seconds"])


def test_the_catalogue_is_big_enough():
    assert len(CATALOGUE) >= 30
    assert len({f.name for f in CATALOGUE}) == len(CATALOGUE)


def test_every_fixture_that_loses_marks_says_why():
    """A fixture below full marks names the text the grader must give as its reason (test_fixture_outcome
    finds it in the reasons or the failed checks' messages): losing marks for another reason fails."""
    silent = [f.name for f in CATALOGUE
              if not f.expected.why and (f.expected.status != GRADED or f.expected.score != POINTS
                                         or f.expected.failed or f.expected.review)]
    assert not silent, f"fixtures below full marks without a why: {silent}"


@batch_test
@pytest.mark.parametrize("index, fixture", list(enumerate(CATALOGUE)), ids=[f.name for f in CATALOGUE])
def test_fixture_outcome(batch, index, fixture):
    result = batch.results[fixture_student(index, fixture)]
    expected = fixture.expected
    described = f"{fixture.description}: {result}"
    assert result.status == expected.status, described
    assert result.score == expected.score, described
    assert {c.grade_id for c in result.checks if c.status == "failed"} == set(expected.failed), described
    assert {c.grade_id for c in result.checks if c.status == "review"} == set(expected.review), described
    assert all(c.score == 0 for c in result.checks if c.status == "failed"), described
    said = " ".join(result.reasons + [c.message for c in result.checks if c.status != "passed"])
    assert expected.why in said, described
    assert expected.note in " ".join(result.notes), described


@batch_test
def test_every_canary_keeps_full_marks(batch):
    for index, fixture in enumerate(CATALOGUE):
        canary = batch.results[canary_student(index, fixture)]
        assert (canary.status, canary.score) == (GRADED, POINTS), f"canary after {fixture.name}: {canary}"


@batch_test
def test_the_batch_completes_with_a_summary(batch):
    assert len(batch.results) == 2 * len(CATALOGUE) + 1
    for student in batch.results:
        assert student in batch.table
    assert "failed to grade" in batch.table and "needs manual review" in batch.table
    assert needs_attention(list(batch.results.values()))
    print(f"\n{len(batch.results)} students in {batch.seconds:.0f} s with --jobs 2 "
          f"({batch.seconds / len(batch.results):.1f} s per student)")


@batch_test
def test_manual_scores_and_the_gradebook_survive(batch):
    reviewed = _grades(batch.url, REVIEWED)
    assert reviewed["test_softmax"] == (2.0, 0.5)  # regraded, and the grader's 0.5 still wins
    assert reviewed["test_double"] == (1.0, None)
    for student in batch.results:
        if batch.results[student].status != "not submitted":
            for auto, manual in _grades(batch.url, student).values():
                assert auto != 100 and manual in (None, 0.5)
    backups = list((batch.root / gradebook.BACKUPS).glob("gradebook-*.db"))
    assert backups, "the gradebook is backed up before the run"


@batch_test
def test_no_process_outlives_its_sandbox(batch):
    survivors = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                command = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            except OSError:
                continue
            if MARKER.encode() in command:
                survivors.append(entry.name)
    assert not survivors


@batch_test
def test_grades_keep_every_status_apart(batch, tmp_path):
    from course_tools.course import assignments
    from course_tools.classroom.grades import export

    path = tmp_path / "grades.csv"
    assert export(batch.root, assignments(batch.root, [ASSIGNMENT]), str(path), out=io.StringIO()) == 1
    rows = {row["student"]: row for row in csv.DictReader(path.open())}
    number = {f.name: fixture_student(i, f) for i, f in enumerate(CATALOGUE)}
    assert (rows[number["honest"]]["status"], rows[number["honest"]]["score"]) == (GRADED, "9")
    assert (rows[number["blank"]]["status"], rows[number["blank"]]["score"]) == (GRADED, "0")
    assert rows[number["invalid_json"]]["status"].startswith(f"{FAILED} (") and rows[
        number["invalid_json"]]["score"] == ""
    assert "not valid JSON" in rows[number["invalid_json"]]["status"]
    assert rows[number["pasted_reference"]]["status"].startswith(f"{REVIEW} (")
    assert rows[ABSENT]["status"] == "not submitted" and rows[ABSENT]["score"] == ""
    assert rows[REVIEWED]["score"] == "7.5"  # 9 with the grader's 0.5 instead of 2 for softmax
    # Every student has a complete row, however hostile the text in their record.
    assert set(rows) == set(batch.results) | {ABSENT}
    for row in rows.values():
        assert None not in row and all(value is not None for value in row.values()), row
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@")) and "\ud800" not in value, row
    hostile = rows[number["hostile_text"]]
    assert hostile["status"].startswith(f"{REVIEW} (") and "\ufffd" in hostile["status"]
    assert "=cmd|" in hostile["why"] and not hostile["why"].startswith("=")
    assert "is a symbolic link" in rows[number["folder_link"]]["why"]


@batch_test
def test_feedback_shows_messages_but_no_hidden_tests(batch):
    from course_tools.classroom.late import late_notes
    from course_tools.grading.feedback import write_feedback

    late = late_notes(batch.root, ASSIGNMENT)
    assert write_feedback(batch.root, ASSIGNMENT, out=io.StringIO(), late=late) == 0
    number = {f.name: fixture_student(i, f) for i, f in enumerate(CATALOGUE)}
    pages = {name: (batch.root / "feedback" / number[name] / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
             for name in ("honest", "unstable_softmax", "invalid_json", "rebound_checks", "hostile_text",
                          "leak_inbox")}
    assert "9 / 9" in pages["honest"]
    assert "NaN" in pages["unstable_softmax"] and "_softmax_case((2, 3), 1.0, -1, 0)" in pages[
        "unstable_softmax"]
    # each check under its exercise's name, with the student's own answer beside its outcome
    assert "Exercise 2 · softmax" in pages["unstable_softmax"] and "Exercise 7 · dropout" in pages["honest"]
    assert "e = x.exp()  # overflows for large scores" in pages["unstable_softmax"]
    assert "could not be graded" in pages["invalid_json"]
    for html in pages.values():
        assert "HIDDEN" not in html and "100.0, -1, 1" not in html and "_dropout_case(0.5, 3)" not in html
        assert "_rnn_case(3, 5, 2, 1)" not in html and "_attention_case(2, 5, 7, 8, 3, 1)" not in html
        assert "<script" not in html and "http://" not in html and "https://" not in html


@batch_test
def test_explain_shows_the_instructor_every_call_with_its_hidden_values(batch, monkeypatch, capsys, tmp_path):
    """`course explain`: from the record alone, each replayed call's inputs, expected and returned
    values and difference, hidden ones included; the student's own page shows none of them."""
    from course_tools.cli import main

    monkeypatch.chdir(batch.root)
    student = next(fixture_student(i, f) for i, f in enumerate(CATALOGUE) if f.name == "hardcoded")
    assert main(["explain", student, ASSIGNMENT, "--html", str(tmp_path / "explain.html")]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith(f"{student} · {ASSIGNMENT}: graded, 8 / 9")
    failed = lines.index(next(line for line in lines if line.startswith("test_double: failed, 0 / 1")))
    calls = [line.strip() for line in lines[failed + 1:] if line.startswith("  call ")][:5]
    assert calls[0].startswith("call 1 visible double: passed") and calls[2].startswith(
        "call 3 hidden double: failed")
    assert calls[4].startswith("call 5 hidden double: failed (after the cell's first failure: not counted)")
    # the planted hidden input, the solution's result and the student's 2.5 × it
    assert "inputs: " in text and "0.481729" in text
    assert "expected: 0.963458" in text and "returned: 1.20432" in text
    assert "the submission's run" in text
    page = (tmp_path / "explain.html").read_text()
    assert "0.481729" in page and "For the instructor only" in page and "<script" not in page
    feedback = batch.root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"
    if feedback.is_file():  # written by the feedback test when it ran first in this worker
        assert "0.481729" not in feedback.read_text()


@batch_test
def test_cli_exit_status_says_whether_anything_needs_attention(batch, monkeypatch, capsys, tmp_path):
    from course_tools.cli import main

    # Regrading here must not disturb the other tests; the hostile fixtures' special files stay behind.
    root = shutil.copytree(batch.root, tmp_path / "course", ignore=_ordinary_files)
    monkeypatch.chdir(root)
    number = {f.name: fixture_student(i, f) for i, f in enumerate(CATALOGUE)}
    assert main(["autograde", ASSIGNMENT, "--student", number["honest"], "--cell-timeout", "15"]) == 0
    assert main(["autograde", ASSIGNMENT, "--student", number["invalid_json"]]) == 1
    out = capsys.readouterr().out
    assert "backed up" in out and number["honest"] in out and "not valid JSON" in out


def _planted_hidden_values() -> list[str]:
    """The toy's hidden values as a page would show them: double's planted input and result, and the
    first values drawn from seed 1, which only hidden checks use (every visible one draws from seed
    0): double's hidden input, twice it, softmax's hidden scores (100 times it)."""
    import torch

    from course_lib import seed_everything

    seed_everything(1)
    drawn = torch.randn(5).tolist()
    values = [HIDDEN_INPUT, HIDDEN_EXPECTED] + drawn + [2 * v for v in drawn] + [100 * v for v in drawn]
    return sorted({f"{v:.5g}" for v in values} | {f"{v:.4f}" for v in values if abs(v) < 10})


@batch_test
def test_no_hidden_value_reaches_a_page_or_a_record(batch):
    """Distinctive hidden inputs and expected values (tests/submissions/toy.py) never appear on any
    student's feedback page or in any grading record, whatever the student's code printed, raised or
    kept: a hidden check names the kind of difference, a visible one's error text is scrubbed."""
    from course_tools.classroom.late import late_notes
    from course_tools.grading.feedback import write_feedback

    late = late_notes(batch.root, ASSIGNMENT)
    assert write_feedback(batch.root, ASSIGNMENT, out=io.StringIO(), late=late) == 0
    texts = {
        path: path.read_text(encoding="utf-8")
        for path in (batch.root / "feedback").glob(f"*/{ASSIGNMENT}/*.html")
    }
    for path in (batch.root / "autograded").glob(f"*/{ASSIGNMENT}/{RECORD}"):
        record = json.loads(path.read_text(encoding="utf-8"))
        record.pop("seconds")  # a timing, whose digits may be anything
        texts[path] = json.dumps(record, ensure_ascii=False)
    assert len(texts) > 2 * len(CATALOGUE)
    planted = _planted_hidden_values()
    found = [
        (str(path.relative_to(batch.root)), value)
        for path, text in texts.items()
        for value in planted
        if value in text
    ]
    assert not found, found[:10]
    number = {f.name: fixture_student(i, f) for i, f in enumerate(CATALOGUE)}
    stash = json.loads((batch.root / "autograded" / number["stash_hidden"] / ASSIGNMENT / RECORD).read_text())
    message = next(c["message"] for c in stash["checks"] if c["grade_id"] == "test_softmax")
    # shown: double kept only the visible checks' inputs, since no hidden one is in the sandbox before
    # every visible outcome is sealed (what a hidden input would have been, the scrubber would cut)
    assert "ValueError: HIDDEN" in message and "…" not in message, message


@needs_bwrap
@pytest.mark.notebook
def test_no_hidden_input_enters_the_sandbox_before_the_visible_outcomes_are_sealed(batch):
    """From the probe server's own account of the runs: every visible check's input is handed over
    before the seal, every hidden one after it; the read-ahead attack's early requests are refused
    and said, and it gets the hidden inputs only after the seal, like everyone."""
    from course_tools.course import assignments
    from course_tools.grading.autograde import batch as open_batch
    from course_tools.grading.limits import Budget
    from course_tools.grading.sandboxed.protocol import SEAL
    from course_tools.grading.student import STAGES, Grading, run_in_the_sandbox

    number = {f.name: fixture_student(i, f) for i, f in enumerate(CATALOGUE)}
    assignment = assignments(batch.root, [ASSIGNMENT])[0]
    with open_batch(assignment, source_cells(assignment.source), LIMITS, jobs=1) as contexts:
        context = contexts[0]
        runs = {}
        for name in ("honest", "read_ahead"):
            g = Grading(context, number[name], Result(number[name], ASSIGNMENT, GRADED, None, POINTS),
                        Budget(LIMITS.student_s))
            for stage in STAGES[:STAGES.index(run_in_the_sandbox) + 1]:
                stage(g)
            runs[name] = g.run
    calls = context.reference.calls
    for name, run in runs.items():
        order = [what for what, _ in run.handed]
        assert order.count("seal") == 1, (name, run.handed)
        sealed = order.index("seal")
        for position, (what, k) in enumerate(run.handed):
            if what == "hand":
                hidden = calls[k].get("segment") == "hidden"
                assert (position > sealed) == hidden, (name, position, k, run.handed)
        assert {k for what, k in run.handed if what == "hand"} == set(context.reference.replayed())
        assert run.handed[sealed] == ("seal", SEAL)
    assert runs["honest"].premature == []
    assert runs["read_ahead"].premature and all("before its visible checks had ended" in text
                                                for text in runs["read_ahead"].premature)


# ---------------------------------------------------------------- the grader as an ordinary user ----


def grade_in_order(root: str, students: list[str]) -> list[dict]:
    """Grade ``students`` one after the other in the one sandbox slot of one batch (one warm runner
    serves them all, the cascade runs of each before the next student's first run): their results."""
    from course_tools.grading.autograde import batch as open_batch
    from course_tools.grading.student import grade_student
    from course_tools.course import assignments

    assignment = assignments(Path(root), [ASSIGNMENT])[0]
    with open_batch(assignment, source_cells(assignment.source), LIMITS, jobs=1) as contexts:
        return [asdict(grade_student(contexts[0], student)) for student in students]


@pytest.fixture(scope="module")
def grader_account(tmp_path_factory):
    """A real unprivileged account to run the grader as (bwrap then makes a user namespace of its
    own), and a Python it can run that imports this environment's packages."""
    require_bwrap()
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root (to make an account)")
    from .test_hub import student_python

    name = f"grader{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    folder = Path(tempfile.mkdtemp(prefix="course-grader-python-"))
    folder.chmod(0o755)
    try:
        python = student_python(folder / "python")
        # nbgrader's gradebook runs the `alembic` command: one this account can run, beside its Python
        alembic = python.parent / "alembic"
        alembic.write_text(f"#!{python}\nimport sys\nfrom alembic.config import main\nsys.exit(main())\n")
        alembic.chmod(0o755)
        # The checkout is a course folder, private to its owner once a `course` command has run in
        # it (access.py): the account imports this test module from a copy of its own.
        checkout = folder / "checkout"
        shutil.copytree(ROOT / "tests", checkout / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "nbgrader_config.py", checkout / "nbgrader_config.py")
        for path in [checkout, *checkout.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield SimpleNamespace(name=name, python=python, checkout=checkout)
    finally:
        subprocess.run(["userdel", name], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _course_for(owner: str | None, graded: Path | None = None) -> Path:
    """A toy course in a folder of its own, belonging to ``owner`` (None: the current user), with the
    solution's probes that ``graded`` (a course graded before) recorded, when given."""
    root = Path(tempfile.mkdtemp(prefix="course-toy-"))
    make_course(root)
    if graded is not None:  # the same source and course_lib: its reference is this course's too
        shutil.copytree(graded / "build" / "autograde", root / "build" / "autograde")
    if owner:
        root.chmod(0o755)
        shutil.chown(root, owner, owner)
        for path in root.rglob("*"):
            shutil.chown(path, owner, owner)
    return root


def _as(account, *command: str, root: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("runuser"), "-u", account.name, "--", str(account.python), *command],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={
            "PATH": f"{account.python.parent}:/usr/bin:/bin",
            "HOME": str(root),
            "COURSE_PROFILE": "smoke",
            "OMP_NUM_THREADS": "1",
            "LANG": "C.UTF-8",
        },
    )


CHANNEL = ("channel_writer", "channel_reader")


@needs_bwrap
@pytest.mark.notebook
@pytest.mark.parametrize("grader", ["root", "ordinary user"])
def test_no_channel_between_two_students_of_one_slot(grader, request, batch):
    """The writer's cascade regrade keeps course_lib's rnn_cell_step and leaves a table of its results
    in SysV shared memory and in files all over the sandbox; the reader, graded next in the same slot
    of the same batch, answers rnn_step from that table only. It must find nothing, whether the
    grader runs as root (runs drop to a slot user) or as an ordinary user (bwrap unprivileged)."""
    account = request.getfixturevalue("grader_account") if grader != "root" else None
    root = _course_for(account.name if account else None, graded=batch.root)
    fixtures = {f.name: f for f in CATALOGUE}
    try:
        for name in CHANNEL:
            _submit(root, name, fixtures[name])
        if account:
            shutil.chown(root / "submitted", account.name, account.name)
            for path in (root / "submitted").rglob("*"):
                shutil.chown(path, account.name, account.name)
            done = _as(
                account,
                "-c",
                "import json, sys\nsys.path.insert(0, sys.argv[1])\n"
                "from tests.test_autograde import grade_in_order\n"
                "print('RESULTS ' + json.dumps(grade_in_order(sys.argv[2], sys.argv[3:])))",
                str(account.checkout),
                str(root),
                *CHANNEL,
                root=root,
                timeout=600,
            )
            assert "RESULTS " in done.stdout, done.stderr[-3000:]
            results = json.loads(done.stdout.split("RESULTS ", 1)[1])
        else:
            results = grade_in_order(str(root), list(CHANNEL))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, result in zip(CHANNEL, results):
        expected = fixtures[name].expected
        failed = {c["grade_id"] for c in result["checks"] if c["status"] == "failed"}
        assert (result["status"], result["score"], failed) == (
            expected.status,
            expected.score,
            set(expected.failed),
        ), f"{name}: {result}"


# The catalogue's attacks that need no limit but those `course autograde` sets on its command line
UNPRIVILEGED = (
    "honest",
    "blank",
    "hardcoded",
    "os_exit",
    "segfault",
    "fork_bomb",
    "detached_process",
    "read_solutions",
    "leak_inbox",
    "events_fifo",
    "replay_links",
    "forged_results",
    "lookup_table",
    "kernel_name",
    "kernel_ops",
    "kernel_captured",
    "channel_writer",
    "channel_reader",
    "memory_outside",
    "stash_hidden",
    "raise_probes",
    "cpu_in_every_run",
    "read_ahead",
    "thread_kernel",
    "fresh_import",
)


@needs_bwrap
@pytest.mark.notebook
def test_the_catalogue_as_graded_by_an_ordinary_user(grader_account):
    """``course autograde`` run by an ordinary account (bwrap unprivileged, with a user namespace of
    its own): the sandbox's /, /etc and /dev are read-only, /dev/shm is small and wiped, SysV IPC
    and new namespaces are refused, and every attack gets the outcome it gets under a root grader."""
    root = _course_for(grader_account.name)
    fixtures = {f.name: f for f in CATALOGUE}
    try:
        for name in UNPRIVILEGED:
            _submit(root, name, fixtures[name])
        for path in [root / "submitted", *(root / "submitted").rglob("*")]:
            shutil.chown(path, grader_account.name, grader_account.name)
        done = _as(
            grader_account,
            "-m",
            "course_tools.cli",
            "autograde",
            ASSIGNMENT,
            "--jobs",
            "2",
            "--cell-timeout",
            str(LIMITS.cell_s),
            "--timeout",
            str(LIMITS.student_s),
            "--memory",
            str(LIMITS.memory_bytes / 2**30),
            root=root,
            timeout=900,
        )
        assert done.returncode in (0, 1), done.stderr[-3000:]
        records = {
            name: json.loads((root / "autograded" / name / ASSIGNMENT / RECORD).read_text())
            for name in UNPRIVILEGED
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    wrong = []
    for name, record in records.items():
        expected = fixtures[name].expected
        failed = {c["grade_id"] for c in record["checks"] if c["status"] == "failed"}
        said = " ".join(
            record["reasons"] + [c["message"] for c in record["checks"] if c["status"] != "passed"]
        )
        if (record["status"], record["score"], failed) != (
            expected.status,
            expected.score,
            set(expected.failed),
        ) or expected.why not in said:
            wrong.append(f"{name}: {record['status']} {record['score']} {sorted(failed)}: {said[:300]}")
    assert not wrong, "\n".join(wrong)


@pytest.fixture(scope="module")
def student_account():
    """A real student account, with no right to anything of the course's."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root to make an account")
    name = f"student{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


# Run by the student account: everything it can list or read under the given folders, for a while.
POLL = """import json, os, sys, time
readable, listed = set(), set()
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    for top in sys.argv[2:]:
        for folder, subfolders, files in os.walk(top):
            listed.add(folder)
            for name in files:
                try:
                    with open(os.path.join(folder, name), "rb") as stream:
                        stream.read(1)
                    readable.add(os.path.join(folder, name))
                except OSError:
                    pass
    time.sleep(0.05)
print(json.dumps({"readable": sorted(readable), "listed": sorted(listed)}))
"""


def _reaped_folder(grader: int) -> Path | None:
    """The working folder of the grader process ``grader``: the argument of its reaper child."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                parent = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
                argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
            if parent == grader and b"shutil.rmtree" in b" ".join(argv):
                return Path(argv[-2].decode())
    return None


@needs_bwrap
@pytest.mark.notebook
def test_the_graders_scratch_is_private_and_goes_with_a_killed_grader(student_account, batch):
    """A student polling the grader's working folder during a batch (run plans with classmates'
    answers, the warm runner's folder) reads nothing; after ``kill -9`` of ``course autograde`` the
    folder is gone, without waiting for another run."""
    root = _course_for(None, graded=batch.root)
    for i in range(8):
        _submit(root, f"s{i}", CATALOGUE[0])
    grader = subprocess.Popen(
        [str(Path(sys.executable).parent / "course"), "autograde", ASSIGNMENT, "--cell-timeout", "15"],
        cwd=root,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline, folder = time.monotonic() + 300, None
        while time.monotonic() < deadline and grader.poll() is None:
            folder = folder or _reaped_folder(grader.pid)
            if folder and any(folder.glob("slot*/out")):  # a warm runner serves a student's run
                break
            time.sleep(0.1)
        assert folder and grader.poll() is None, "the batch ended before a student's run could be watched"
        inside = sorted(str(p) for p in folder.rglob("*"))
        polled = subprocess.run(
            [
                "runuser",
                "-u",
                student_account,
                "--",
                "/usr/bin/python3",
                "-c",
                POLL,
                "3",
                str(folder),
                *inside[:50],
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        seen = json.loads(polled.stdout)
        assert seen == {"readable": [], "listed": []}, seen
    finally:
        os.kill(grader.pid, signal.SIGKILL)  # the grader only, as `kill -9 PID` does
        grader.wait()
    deadline = time.monotonic() + 30
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    shutil.rmtree(root)
    assert not folder.exists(), f"{folder} outlived the grader"


# ---------------------------------------------------------------- load ----

# infinite_loop: a step's CPU limit decides it; one student's budget for all runs (cpu_in_every_run)
# is the same CPU accounting, tested without the load in the batch
# The time limit (the one grade a load could move, were limits wall time) and full marks beside it; every
# fixture is graded at normal load in the batch, and beside CPU hogs by `python -m benchmarks.autograde_batch
# --load 2`.
LOADED = ("honest", "infinite_loop")


@needs_bwrap
@pytest.mark.notebook
def test_grades_do_not_depend_on_load(batch):
    """--jobs 2 beside two CPU-bound processes: every outcome is the one the catalogue expects, those
    decided by a time limit included (limits are CPU seconds; the wall clock is only a backstop)."""
    root = _course_for(None, graded=batch.root)
    fixtures = {f.name: f for f in CATALOGUE}
    for name in LOADED:
        _submit(root, name, fixtures[name])
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    try:
        results = {
            r.student: r
            for r in autograde(root, ASSIGNMENT, jobs=2, limits=LIMITS, out=io.StringIO(), progress=False)
        }
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        shutil.rmtree(root)
    for name in LOADED:
        result, expected = results[name], fixtures[name].expected
        said = " ".join(result.reasons + [c.message for c in result.checks if c.status != "passed"])
        assert (result.status, result.score) == (expected.status, expected.score) and expected.why in said, (
            f"{name}: {result}"
        )


# ---------------------------------------------------------------- without a sandbox run ----


def test_missing_bubblewrap_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CourseError, match="apt-get install bubblewrap"):
        Sandbox(isolated=True)


@pytest.mark.parametrize("mode, refused", [(0o600, True), (0o644, False)])
def test_an_installation_the_slot_user_cannot_read_is_refused(tmp_path, monkeypatch, bwrap, mode, refused):
    """A checkout or virtual environment made under umask 077: a root grader's runs drop to a slot
    user who can read none of it, so every run would fail; the grader refuses at once, naming the file."""
    from course_tools.grading import isolation

    library = tmp_path / "course_lib"
    library.mkdir(mode=0o755)
    (library / "grading.py").write_text("")
    (library / "grading.py").chmod(mode)
    monkeypatch.setattr(isolation, "_python_paths", lambda: [str(library)])
    monkeypatch.setattr(isolation, "installed_course_lib", lambda: str(library))
    if refused:
        with pytest.raises(CourseError, match=r"cannot read .*course_lib/grading.py \(mode 600\).*umask 077"):
            isolation.bwrap_or_refuse(root=True)
    else:
        assert isolation.bwrap_or_refuse(root=True)
    assert isolation.bwrap_or_refuse(root=False)  # an ordinary grader's runs keep its own account


@pytest.mark.notebook
def test_the_unsandboxed_fallback_grades_trusted_notebooks(tmp_path):
    """--unsafe-no-sandbox: limits, rebuilt notebook and probes still apply; only isolation is missing."""
    root = make_course(tmp_path)
    honest = next(f for f in CATALOGUE if f.name == "honest")
    wrong = next(f for f in CATALOGUE if f.name == "rebound_checks")
    _submit(root, "honest", honest)
    _submit(root, "wrong", wrong)
    results = {
        r.student: r
        for r in autograde(root, ASSIGNMENT, limits=LIMITS, isolated=False, out=io.StringIO(), progress=False)
    }
    assert (results["honest"].status, results["honest"].score) == (GRADED, POINTS)
    assert (results["wrong"].status, results["wrong"].score) == (GRADED, wrong.expected.score)


def _honest_and_wrong_class(folder: Path, size: int) -> tuple[Path, dict]:
    """A toy course whose students alternate between the honest answers and a wrong one: (root, student ->
    fixture)."""
    root = make_course(folder)
    honest, wrong = (next(f for f in CATALOGUE if f.name == name) for name in ("honest", "rebound_checks"))
    fixtures = {f"s{i}": (honest, wrong)[i % 2] for i in range(size)}
    for student, fixture in fixtures.items():
        _submit(root, student, fixture)
    return root, fixtures


@needs_bwrap
@pytest.mark.notebook
def test_a_killed_batch_resumes_without_losing_or_duplicating_a_grade(tmp_path):
    """`course autograde` killed (SIGKILL, the whole process group) after its first saved student;
    the rerun keeps the saved grades, grades the others, and every student ends with one record
    and one gradebook entry. Then a changed submission is the only one graded again."""
    root, fixtures = _honest_and_wrong_class(tmp_path, 4)
    honest, wrong = fixtures["s0"], fixtures["s1"]
    records = lambda: {p.parent.parent.name for p in (root / "autograded").glob(f"*/{ASSIGNMENT}/{RECORD}")}
    batch = subprocess.Popen(
        [str(Path(sys.executable).parent / "course"), "autograde", ASSIGNMENT, "--cell-timeout", "15"],
        cwd=root,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 240
    while not records() and batch.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):  # gone already: the assertion below says so
        os.killpg(batch.pid, signal.SIGKILL)
    batch.wait()
    saved = records()
    assert 1 <= len(saved) < len(fixtures), f"the batch was not stopped midway: {saved}"

    results = {
        r.student: r for r in autograde(root, ASSIGNMENT, limits=LIMITS, out=io.StringIO(), progress=False)
    }
    assert {s for s, r in results.items() if r.kept} == saved
    expected = {s: f.expected.score for s, f in fixtures.items()}
    assert {s: r.score for s, r in results.items()} == expected
    url = gradebook.db_url(root)
    assert {s: g.score for s, g in gradebook.scores(url, ASSIGNMENT).items()} == expected
    assert records() == set(fixtures)

    changed = sorted(saved)[0]
    shutil.rmtree(root / "submitted" / changed)
    _submit(root, changed, wrong if fixtures[changed] is honest else honest)
    again = {
        r.student: r for r in autograde(root, ASSIGNMENT, limits=LIMITS, out=io.StringIO(), progress=False)
    }
    assert {s for s, r in again.items() if not r.kept} == {changed}
    assert again[changed].score != expected[changed]
    assert gradebook.scores(url, ASSIGNMENT)[changed].score == again[changed].score


@needs_bwrap
@pytest.mark.notebook
@pytest.mark.parametrize("jobs", [1, 2])
def test_jobs_bounds_the_sandboxes_and_comparing_overlaps_them(tmp_path, monkeypatch, jobs):
    """--jobs N: never more than N sandboxes at once, each on a slot of its own; while they run, the
    grader compares another student's results (a comparison is slowed down here so that the two
    must meet), and every grade is still the one that student earns."""
    import threading

    from course_tools.grading import student as grader

    root, fixtures = _honest_and_wrong_class(tmp_path, 5)
    lock = threading.Lock()
    running: list[int] = []  # slots of the sandboxes running now
    seen = {"most": 0, "slots": set(), "compared_while_running": 0}
    run_plan, mismatch = grader.run_plan, grader._mismatch

    def watched_run_plan(sandbox, spec):
        with lock:
            assert spec.slot not in running, f"slot {spec.slot} runs two sandboxes at once"
            running.append(spec.slot)
            seen["most"] = max(seen["most"], len(running))
            seen["slots"].add(spec.slot)
        try:
            return run_plan(sandbox, spec)
        finally:
            with lock:
                running.remove(spec.slot)

    def slow_mismatch(context, k, got):
        time.sleep(0.02)
        with lock:
            seen["compared_while_running"] += bool(running)
        return mismatch(context, k, got)

    monkeypatch.setattr(grader, "run_plan", watched_run_plan)
    monkeypatch.setattr(grader, "_mismatch", slow_mismatch)
    results = {
        r.student: r
        for r in autograde(root, ASSIGNMENT, jobs=jobs, limits=LIMITS, out=io.StringIO(), progress=False)
    }
    assert {s: (r.status, r.score) for s, r in results.items()} == {
        s: (GRADED, f.expected.score) for s, f in fixtures.items()
    }
    assert seen["most"] == jobs and seen["slots"] == set(range(jobs))
    assert seen["compared_while_running"] > 0


def test_parses_in_threads_never_fail():
    """The grader parses answers in several threads. With plain ast.parse on CPython 3.11, a parse
    while another thread's garbage collection runs Python finalisers fails with "SystemError: AST
    constructor recursion depth mismatch" (seen in the whole-course benchmark); pyparse.parse takes
    turns. The race is provoked here: four threads parse while making garbage with finalisers."""
    import threading

    from course_lib.pyparse import parse

    source = "\n".join(
        f"def f{i}(x):\n    return [[(x + {i}) * k for k in range(3)] for _ in range(2)]\n"
        for i in range(200)
    )
    errors = []

    class Finalised:
        def __del__(self):
            sum(range(50))  # Python code, so the interpreter may switch threads here

    def work():
        for _ in range(30):
            for _ in range(200):
                cycle = Finalised()
                cycle.me = cycle  # freed by the collector, perhaps while another thread parses
            try:
                parse(source)
            except SystemError as error:
                errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:1]


def test_grading_runs_draw_figures_but_never_render_them():
    """A cell that shows a figure runs as in Jupyter (``%matplotlib inline``, plt.show()), but the
    grader's shell renders no PNG nobody would see (a quarter of notebook 01's grading time)."""
    script = """
import IPython.core.pylabtools as tools
from course_tools.grading.sandboxed.runner import _shell
rendered = []
tools.print_figure = lambda *a, **k: rendered.append(a) or b""
shell = _shell()
result = shell.run_cell("%matplotlib inline\\nimport matplotlib.pyplot as plt\\n"
                        "plt.plot([1, 2, 3])\\nplt.show()")
assert result.success, result.error_in_exec
result = shell.run_cell("figure = plt.figure(); figure.gca().plot([3, 2]); figure")
assert result.success and not rendered, rendered
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_honest_answers_of_the_course_raise_no_lint_finding():
    for notebook in [*sorted((ROOT / "solutions").glob("*/*.ipynb")), None]:
        cells = source_cells(notebook) if notebook else []
        protected = {name for c in cells if c.kind == "other" for name in bound_names(c.source)}
        for cell in cells:
            if cell.kind == "solution":
                assert lint(cell.grade_id, cell.source, set(), protected) == [], (notebook, cell.grade_id)
    for name, answer in ANSWERS.items():
        assert lint(name, answer, {"torch.nn.functional.scaled_dot_product_attention"}) == []
    methods = {
        "course_lib.rnn.Seq2SeqRNN.forward",
        "course_lib.rnn.Seq2SeqRNN.encode",
        "course_lib.rnn.Seq2SeqRNN.decode",
    }
    own = (
        "class Seq2SeqRNN(nn.Module):\n    def forward(self, src, tgt):\n        return self.decode(tgt, "
        "self.encode(src))"
    )
    assert lint("answer", own, methods) == []
    assert "uses .Seq2SeqRNN" in str(
        lint("answer", "def f(cfg):\n    return course_lib.rnn.Seq2SeqRNN(cfg)", methods)
    )


@pytest.mark.parametrize(
    "code, found",
    [
        ("import os", "imports os"),
        ("torch.allclose = lambda *a, **k: True", "changes torch.allclose"),
        ("check_close = print", "rebinds check_close"),
        ("class A(float):\n    def __eq__(self, other):\n        return True", "defines __eq__"),
        ("get_ipython().events.register('post_run_cell', print)", "uses get_ipython"),
        ("def f(x):\n    torch.manual_seed(0)\n    return x", "uses .manual_seed"),
        (
            "from torch.nn.functional import scaled_dot_product_attention as sdpa",
            "imports scaled_dot_product_attention",
        ),
        ("def f(x):\n    return x.softmax(-1)", "uses .softmax"),
        ("def f(x):\n    return getattr(torch, 'soft' + 'max')(x)", "uses getattr"),
        ("Yes = type('Yes', (float,), {'__eq__': lambda self, other: True})", "spells __eq__"),
        ("torch.library.impl('aten::allclose', 'CPU')", "uses .library"),
        # the kernels behind a forbidden name, and ways around the guards
        ("def f(x):\n    return x.log_softmax(-1).exp()", "uses .log_softmax, a kernel of torch.softmax"),
        ("from torch import _softmax", "imports _softmax, a kernel of torch.softmax"),
        ("def f(x):\n    return torch._VF.softmax(x, -1)", "uses ._VF"),
        ("def f(x):\n    return torch.ops.aten._softmax(x, -1, False)", "uses .ops"),
        ("_files = torch.os.listdir('/sandbox/in')", "uses .os"),
        ("_files = open('/sand' + 'box/in/probes.json').read()", "spells the path '/sand'"),
        ("import gc\n_all = gc.get_objects()", "imports gc"),
        ("_table = torch.load('table.pt')", "uses .load"),
        # issue 40: computed names, modules reached through listed ones, modules as values
        ("import operator\n_os = operator.attrgetter('_o' + 's')(torch)", "operator.attrgetter"),
        ("from operator import methodcaller", "operator.methodcaller"),
        ("import typing\n_f = typing.get_type_hints", "typing.get_type_hints"),
        ("import string\n_get = string.Formatter().get_field", "string.Formatter"),
        ("_ext = torch.utils.cpp_extension.load_inline", "reaches module torch.utils"),
        ("import numpy\n_c = numpy.ctypeslib", "reaches module numpy.ctypeslib"),
        ("import torch.utils.data", "imports torch.utils.data"),
        ("import operator\n_m = operator", "uses the module operator as a value"),
        ("from torch import _C", "a private name of torch"),
        ("def f():\n    global check_close\n    check_close = None", "declares check_close global"),
        ("import threading", "imports threading"),
        ("import course_lib.grading", "imports course_lib.grading"),
    ],
)
def test_lint_finds_what_only_tampering_needs(code, found):
    findings = lint(
        "answer", code, {"torch.softmax", "torch.nn.functional.scaled_dot_product_attention"}, {"check_close"}
    )
    assert any(found in str(f) for f in findings), findings


@pytest.mark.parametrize("code", [
    "from fractions import Fraction\n\ndef f(x):\n    return x * Fraction(1, 2)",
    "import datetime\nimport codecs\n\ndef f(x):\n"
    "    return codecs.decode(x, 'utf-8'), datetime.date(2026, 1, 1)",
    "import operator, functools\n\ndef f(xs):\n    return functools.reduce(operator.mul, xs, 1)",
    "def f(n):\n    memo = {}\n\n    def fib(k):\n        if k not in memo:\n"
    "            memo[k] = k if k < 2 else fib(k - 1) + fib(k - 2)\n"
    "        return memo[k]\n    return fib(n)",
    "_TABLE = {}\n\ndef f(x):\n    _TABLE[x] = 2 * x\n    return _TABLE[x]",
    "_COUNT = 0\n\ndef f(x):\n    global _COUNT\n    _COUNT += 1\n    return x",
    "from torch import nn\nimport torch.nn.functional as F\n\nclass M(nn.Module):\n"
    "    def forward(self, x):\n        return F.relu(torch.nn.init.zeros_(x))",
    "import numpy as np\n\ndef f(n):\n    return np.random.default_rng(0).normal(size=n)",
])
def test_the_allowlist_gives_what_honest_answers_use(code):
    assert [f for f in lint("answer", code) if f.kind == "tamper"] == []


def test_the_allowlist_is_one_table_that_the_guide_prints():
    from course_lib.allowlist import ALLOWLIST, guide_table

    table = guide_table()
    assert all(f"`{entry.module}`" in table for entry in ALLOWLIST)
    assert "attrgetter" in table  # what operator does not give is said


def test_compare_reads_plain_results_only():
    import torch

    same = {"return": plain(torch.tensor([1.0, 2.0])), "args_after": plain([[], {}])}
    assert compare(same, same) is None
    other = {"return": plain(torch.tensor([1.0, 2.5])), "args_after": plain([[], {}])}
    assert "max abs error 0.5" in compare(same, other)
    assert "raised" in compare(same, {"error": "ValueError: no"})
    assert compare(same, None) and compare(same, {"return": plain(object())})


EDGES = (0.0, -0.0, 1.0, 1.0 + 1e-6, 1.0 + 1e-4, -3.0, 1e300, math.inf, -math.inf, math.nan)


def _accepted(want: float, have: float, atol: float, rtol: float) -> bool:
    """The rule of the grader's elementwise comparison, written out for one pair of numbers."""
    if math.isnan(have):
        return math.isnan(want)
    if math.isinf(want) and want == have:
        return True
    error = abs(have - want)
    allowed = atol + rtol * (abs(want) if math.isfinite(want) else 0.0)  # inf * 0: nothing exceeds it
    return not (math.inf if math.isnan(error) else error) > allowed


@pytest.mark.parametrize("tolerance", [(1e-5, 1e-5), (0.0, 0.0), (math.inf, math.inf)])
def test_numbers_and_tensors_are_accepted_by_one_rule(tolerance):
    """A Python number is judged without building a tensor, and a tensor equal to the solution's by
    one operation: the verdicts stay those of the elementwise rule, in every dtype."""
    import torch

    atol, rtol = tolerance
    for want, have in itertools.product(EDGES, repeat=2):
        verdict = _accepted(want, have, 2 * atol, 2 * rtol)  # a return value gets twice the tolerance
        assert (compare({"return": want}, {"return": have}, tolerance) is None) == verdict, (want, have)
        for dtype in (torch.float32, torch.float64):
            pair = [plain(torch.tensor([value, 2.0], dtype=dtype)) for value in (want, have)]
            rounded = [float(torch.tensor(value, dtype=dtype)) for value in (want, have)]
            verdict = _accepted(*rounded, 2 * atol, 2 * rtol)
            assert (compare({"return": pair[0]}, {"return": pair[1]}, tolerance) is None) == verdict, (
                want, have, dtype)


# ------------------------------------------------------------------- what a grade depends on ----
def _copy_of_the_sources(folder: Path) -> Path:
    """A folder holding copies of course_lib/ and course_tools/, as the grader's key reads them."""
    from course_tools.grading.reference import SOURCES, TEACHING, TOOLING

    for package in (TEACHING, TOOLING):
        shutil.copytree(SOURCES / package, folder / package, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.fixture(scope="module")
def toy_cells(tmp_path_factory) -> list:
    import nbformat

    from .submissions.toy import toy_notebook

    source = tmp_path_factory.mktemp("toy") / f"{ASSIGNMENT}.ipynb"
    nbformat.write(toy_notebook(), source)
    return source_cells(source)


def _edit(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")


@pytest.mark.parametrize(
    "module, changes_grades",
    [
        *(
            (f"course_tools/publishing/{name}.py", False)
            for name in ("slides", "slide_layout", "slide_heights", "release", "a_new_tool")
        ),
        *(
            (f"course_tools/classroom/{name}.py", False)
            for name in ("lms", "lms_sheets", "similarity", "hub", "exchange", "grades", "canonical/loops")
        ),
        ("course_tools/grading/feedback.py", False),
        ("course_tools/cli.py", False),
        *(
            (f"course_tools/grading/{name}.py", True)
            for name in (
                "autograde",
                "student",
                "compare",
                "sandbox",
                "warm",
                "isolation",
                "limits",
                "processes",
                "scrub",
            )
        ),
        *(
            (f"course_tools/grading/sandboxed/{name}.py", True)
            for name in ("plain", "runner", "zygote", "probes", "replay")
        ),
        *((f"course_lib/{name}.py", True) for name in ("grading", "attention", "gpt")),
    ],
)
def test_the_grader_key_changes_with_what_grades_and_nothing_else(
    tmp_path, toy_cells, module, changes_grades
):
    """Editing the publishing or class tooling keeps the key (so a rerun keeps every saved grade);
    editing a graded reference, a check or the grading code changes it."""
    from course_tools.grading.reference import grader_key

    package = _copy_of_the_sources(tmp_path)
    cells = toy_cells
    before = grader_key(cells, package)
    if (package / module).exists():
        _edit(package / module)
    else:
        (package / module).write_text("import json\n", encoding="utf-8")
    assert (grader_key(cells, package) != before) == changes_grades


def test_a_module_the_grader_starts_to_import_counts_at_once(tmp_path, toy_cells):
    from course_tools.grading.reference import grader_key

    package = _copy_of_the_sources(tmp_path)
    cells = toy_cells
    (package / "course_tools" / "grading" / "helper_of_the_grader.py").write_text("X = 1\n", encoding="utf-8")
    before = grader_key(cells, package)
    autograde_py = package / "course_tools" / "grading" / "autograde.py"
    autograde_py.write_text(
        autograde_py.read_text(encoding="utf-8") + "\nfrom . import helper_of_the_grader\n", encoding="utf-8"
    )
    with_import = grader_key(cells, package)
    _edit(package / "course_tools" / "grading" / "helper_of_the_grader.py")
    assert len({before, with_import, grader_key(cells, package)}) == 3


@needs_bwrap
@pytest.mark.notebook
def test_a_rerun_after_editing_the_class_tooling_keeps_every_grade_and_feedback_shows_the_graded_code(
    tmp_path, monkeypatch, batch
):
    """`course autograde`, then the LMS export and the slides edited: the rerun keeps every student.
    Then a student resubmits before `course feedback`: the page's "your answer" is the code that was
    graded, never the new one (the graded copy under autograded/ is what counts)."""
    from course_tools.classroom.late import late_notes
    from course_tools.grading import reference
    from course_tools.grading.feedback import write_feedback

    from .submissions.catalogue import submission

    root = _course_for(None, graded=batch.root)  # the batch's reference: the same source and course_lib
    graded_marker, later_marker = "# the code that was graded", "# a later submission"
    _submit(root, "s0", SimpleNamespace(build=submission(double=f"{ANSWERS['double']}\n{graded_marker}")))
    _submit(root, "s1", next(f for f in CATALOGUE if f.name == "rebound_checks"))
    try:
        first = autograde(root, ASSIGNMENT, limits=LIMITS, out=io.StringIO(), progress=False)
        assert not any(r.kept for r in first)
        package = _copy_of_the_sources(tmp_path)
        monkeypatch.setattr(reference, "SOURCES", package)
        _edit(package / "course_tools" / "classroom" / "lms.py")
        _edit(package / "course_tools" / "publishing" / "slides.py")
        again = autograde(root, ASSIGNMENT, limits=LIMITS, out=io.StringIO(), progress=False)
        assert sorted(r.student for r in again if r.kept) == ["s0", "s1"]
        assert {r.student: r.score for r in again} == {r.student: r.score for r in first}

        shutil.rmtree(root / "submitted" / "s0")
        _submit(root, "s0", SimpleNamespace(build=submission(double=f"{ANSWERS['double']}\n{later_marker}")))
        assert write_feedback(root, ASSIGNMENT, out=io.StringIO(), late=late_notes(root, ASSIGNMENT)) == 0
        page = (root / "feedback" / "s0" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text(encoding="utf-8")
        assert graded_marker in page and later_marker not in page
    finally:
        shutil.rmtree(root, ignore_errors=True)
