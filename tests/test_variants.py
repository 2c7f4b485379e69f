"""Per-submission hidden inputs: two variants of the toy assignment, graded through `course autograde`.

Submissions that hash to different variants get different hidden inputs (their grading records
and `course explain` say which variant and show them) and the same visible ones; honest answers
score full marks in both; a regrade and a resumed batch keep each submission's variant; a submission
that claims another variant (in its metadata, in files beside it) gets the one the course's keyed
hash gives; a changed submission draws its variant again.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from course_tools.course import CourseError, assignments
from course_tools.grading.records import GRADED, read_explanation, read_record
from course_tools.grading.sandboxed.hidden_parts import SEED_BITS, variant_seed
from course_tools.grading.autograde import submission_digest
from course_tools.grading.variants import KEY_FILE, variant_count, variant_key, variant_of

from .submissions.catalogue import answered
from .submissions.toy import ASSIGNMENT, make_course
from .system import needs_bwrap

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = 2


KEY = bytes(range(32))


def test_a_submissions_variant_is_a_keyed_hash_of_the_assignment_the_id_and_the_submission():
    # the same in every process: Python's hash() of a string changes with PYTHONHASHSEED
    code = ("from course_tools.grading.variants import variant_of; print([variant_of(a, s, 'd', 7, "
            f"{KEY!r}) for a in ('toy', '01_rnn_baselines') for s in ('alice', 'bob', 'carol')])")
    printed = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert printed == {str([variant_of(a, s, "d", 7, KEY) for a in ("toy", "01_rnn_baselines")
                            for s in ("alice", "bob", "carol")]) + "\n"}
    spread = Counter(variant_of("toy", f"student{i:03d}", "d", 4, KEY) for i in range(400))
    assert set(spread) == {0, 1, 2, 3} and min(spread.values()) > 70  # every variant used, about evenly
    assert {variant_of("toy", f"student{i:03d}", "d", 1, KEY) for i in range(50)} == {0}
    # one student's successive submissions draw again, about evenly; the same one always the same
    drawn = Counter(variant_of("toy", "alice", f"{i:064x}", 4, KEY) for i in range(400))
    assert set(drawn) == {0, 1, 2, 3} and min(drawn.values()) > 70
    assert variant_of("toy", "alice", "d", 4, KEY) == variant_of("toy", "alice", "d", 4, KEY)
    # without the course's key, nobody can tell which variant an edit draws
    other = bytes(32)
    assert [variant_of("toy", "alice", f"{i}", 4, KEY) for i in range(40)] != \
        [variant_of("toy", "alice", f"{i}", 4, other) for i in range(40)]


def test_the_key_is_made_once_and_the_instructors_alone(tmp_path):
    key = variant_key(tmp_path)
    assert len(key) == 32 and variant_key(tmp_path) == key
    assert (tmp_path / KEY_FILE).stat().st_mode & 0o077 == 0
    (tmp_path / KEY_FILE).write_text("not hex")
    with pytest.raises((CourseError, ValueError)):
        variant_key(tmp_path)


def test_variant_seeds():
    assert variant_seed(21, 0) == 21 and variant_seed(None, 3) is None and variant_seed(True, 3) is True
    seeds = {variant_seed(seed, variant) for seed in range(50) for variant in (1, 2, 3)}
    assert len(seeds) == 150 and all(0 <= s < 2 ** SEED_BITS for s in seeds)
    assert variant_seed(21, 1) == variant_seed(21, 1) != variant_seed(21, 2)


def test_the_count_is_configured_once_in_nbgrader_config(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    assert variant_count(tmp_path) == 1
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.HiddenVariants.count = 3\n")
    assert variant_count(tmp_path) == 3
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\nc.HiddenVariants.count = 0\n")
    with pytest.raises(CourseError, match="HiddenVariants.count"):
        variant_count(tmp_path)


def _students(root: Path) -> dict[str, str]:
    """role -> id: an honest student of each variant, and one of variant 1 whose files claim variant
    0 and the first student's id (submitted here; the other candidates' folders are removed)."""
    assignment = assignments(root, [ASSIGNMENT])[0]
    key = variant_key(root)

    def variant(student: str) -> int:
        return variant_of(ASSIGNMENT, student, submission_digest(root, assignment, student), VARIANTS, key)

    honest = [f"student_{letter}" for letter in "abcdefghijklmnop"]
    for student in honest:
        _submit(root, student)
    first = next(s for s in honest if variant(s) == 0)
    second = next(s for s in honest if variant(s) == 1)
    claimants = [f"claimant_{letter}" for letter in "abcdefghijklmnop"]
    for student in claimants:
        _submit(root, student, claim=first)
    claimant = next(s for s in claimants if variant(s) == 1)
    roles = {"first": first, "second": second, "claimant": claimant}
    for student in honest + claimants:
        if student not in roles.values():
            shutil.rmtree(root / "submitted" / student)
    return roles


def _submit(root: Path, student: str, claim: str = "") -> None:
    folder = root / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True)
    notebook = answered(root)
    if claim:  # everything a student's files could say about who they are or which variant is theirs
        claimed = {"variant": 0, "student": claim}
        notebook.metadata.update({**claimed, "nbgrader": claimed})
        for name in ("variant", "variant.txt", "grading.json"):
            (folder / name).write_text('{"variant": 0, "student": "%s"}' % claim)
    nbformat.write(notebook, folder / f"{ASSIGNMENT}.ipynb")
    (folder / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")


def _inputs(root: Path, student: str, hidden: bool) -> dict[tuple[str, int], str]:
    """Each hidden (or visible) call's arguments, as `course explain` shows them; without the random
    generators' state at the call, which differs from one record run to the next (Python seeds its
    own from the OS) and which a deterministic answer never reads."""
    assignment = assignments(root, [ASSIGNMENT])[0]
    return {(p.grade_id, p.number): p.inputs.split(", rng: ")[0]
            for p in read_explanation(assignment, student) if p.hidden == hidden}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The toy course with two variants, its three students graded by `course autograde`."""
    from course_tools.cli import main

    root = make_course(tmp_path_factory.mktemp("variants"))
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(f"\nc.HiddenVariants.count = {VARIANTS}\n")
    students = _students(root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        assert main(["autograde", ASSIGNMENT, "--cell-timeout", "30"]) == 0
    finally:
        os.chdir(cwd)
    return root, students


@needs_bwrap
@pytest.mark.notebook
def test_each_variant_has_its_own_hidden_inputs_and_honest_answers_pass_both(graded, capsys, monkeypatch):
    from course_tools.cli import main

    root, students = graded
    assignment = assignments(root, [ASSIGNMENT])[0]
    records = {role: read_record(assignment, student) for role, student in students.items()}
    assert {role: r.variant for role, r in records.items()} == {"first": 0, "second": 1, "claimant": 1}
    for record in records.values():
        assert (record.status, record.score) == (GRADED, record.max_score), record
    assert records["first"].grader != records["second"].grader == records["claimant"].grader
    # each variant's reference is cached apart, under a key that names it
    folders = sorted(p.name for p in (root / "build" / "autograde" / ASSIGNMENT).glob("reference-*"))
    assert len(folders) == VARIANTS and {r.grader for r in records.values()} == set(folders)

    hidden = {role: _inputs(root, student, hidden=True) for role, student in students.items()}
    assert hidden["first"].keys() == hidden["second"].keys() and len(hidden["first"]) >= 10
    differ = [key for key in hidden["first"] if hidden["first"][key] != hidden["second"][key]]
    seeded = {"test_double", "test_softmax", "test_attention", "test_rnn_step", "test_rnn_forward",
              "test_affine"}  # every test cell whose hidden part draws inputs at random
    assert seeded <= {grade_id for grade_id, _ in differ}, differ  # every check that draws its inputs
    assert hidden["claimant"] == hidden["second"]  # the keyed hash decides, not what the files claim
    visible = {role: _inputs(root, student, hidden=False) for role, student in students.items()}
    assert visible["first"] == visible["second"] == visible["claimant"] and visible["first"]
    # built together, the variants share one record run: their visible checks are the very same
    # calls, the generators' state included
    whole = {role: [(p.grade_id, p.number, p.inputs) for p in read_explanation(assignment, student)
                    if not p.hidden] for role, student in students.items()}
    assert whole["first"] == whole["second"] == whole["claimant"]

    monkeypatch.chdir(root)
    capsys.readouterr()
    assert main(["explain", students["second"], ASSIGNMENT]) == 0
    text = capsys.readouterr().out
    assert f"hidden inputs: variant 1 of {VARIANTS}" in text
    key = differ[0]
    assert hidden["second"][key] in text and hidden["first"][key] not in text


@needs_bwrap
@pytest.mark.notebook
def test_a_regrade_and_a_resumed_batch_keep_each_students_variant(graded, capsys, monkeypatch):
    from course_tools.cli import main

    root, students = graded
    assignment = assignments(root, [ASSIGNMENT])[0]
    def variant_and_hidden_inputs(student: str) -> tuple:  # the generators' state included: the same run
        return (read_record(assignment, student).variant,
                [p.inputs for p in read_explanation(assignment, student) if p.hidden])

    before = {s: variant_and_hidden_inputs(s) for s in students.values()}
    monkeypatch.chdir(root)
    assert main(["autograde", ASSIGNMENT]) == 0  # resumed: nothing changed, every grade kept
    assert f"{len(students)} unchanged since their last grading" in capsys.readouterr().out
    assert main(["autograde", ASSIGNMENT, "--regrade"]) == 0
    assert "unchanged since" not in capsys.readouterr().out
    after = {s: variant_and_hidden_inputs(s) for s in students.values()}
    assert after == before
    for student in students.values():
        assert read_record(assignment, student).score == read_record(assignment, student).max_score
