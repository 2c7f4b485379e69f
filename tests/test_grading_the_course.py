"""``course autograde`` on every real assignment: the grades an instructor signs.

Per assignment, one batch in a scratch course (the course's own gradebook is never touched) grades:
- the instructor's solution: full marks, nothing flagged;
- the untouched release: nothing;
- the alternatives catalogue (tests/alternatives), one submission per round (round i answers every
  exercise with its i-th alternative): full marks, nothing flagged;
- one bug in a function others build on (tests/test_cascade.py's first case): exactly that
  function's cells score nothing, every other cell full marks (one bug costs one exercise);
- every catalogued bug (tests/bugs), in rounds (round i gives every graded name that has an i-th
  bug that bug, and the solution to the others): every bugged name loses the points of its own
  exercise's check. (Giving a name that has run out of bugs its last one again would grade it
  again, cascade runs included, and test nothing new.) The bug catalogue proves each bug fails
  the notebook's own checks; this proves the grader's comparison outside the sandbox is as strict.
  It was not, before: RMSNorm's weight initialised to zeros, a load_from_torch that copies the
  wrong blocks, a KV cache never appended to and a training step that keeps stale gradients all
  earned full marks.
"""
from __future__ import annotations

import io
from pathlib import Path

import nbformat
import pytest

from course_tools.grading.autograde import autograde
from course_tools.grading.records import GRADED
from course_tools.publishing.sample import scratch_course, submit

from .alternatives import catalogue as alternatives
from .bugs import catalogue as bugs
from .catalogue_submissions import answers, defining, notebook_with, own_checks
from .conftest import ASSIGNMENTS
from .system import needs_bwrap
from .test_cascade import CASCADES

ROOT = Path(__file__).resolve().parents[1]


def _class(assignment) -> dict[str, tuple[nbformat.NotebookNode, str]]:
    """student -> (notebook, what it must get: "full", "zero", a set of grade_ids that must fail, or
    graded name -> its exercise's checks, of which each name must fail at least one)."""
    names, solution = answers(assignment)
    by_name: dict[str, list[str]] = {}
    for alternative in alternatives(assignment.id):
        by_name.setdefault(alternative.target, []).append(alternative.code)
    rounds = max((len(codes) for codes in by_name.values()), default=0)
    students = {"solution": (nbformat.read(assignment.source, as_version=4), "full"),
                "release": (nbformat.read(assignment.release, as_version=4), "zero")}
    for i in range(rounds):
        chosen = {name: codes[i % len(codes)] for name, codes in by_name.items()}
        students[f"alternatives-{i + 1}"] = (notebook_with(assignment, defining(chosen, names, {})), "full")
    if assignment.id in CASCADES:
        target, description, own = CASCADES[assignment.id][0]
        bug = next(b for b in bugs(assignment.id) if b.target == target and b.description == description)
        students["cascade"] = (notebook_with(assignment, defining({target: bug.code}, names, solution)), own)
    bugs_of: dict[str, list[str]] = {}
    for bug in bugs(assignment.id):
        bugs_of.setdefault(bug.target, []).append(bug.code)
    checks = own_checks(assignment)
    checks_of = {name: checks.get(name, set()) for name in bugs_of}
    for i in range(max((len(codes) for codes in bugs_of.values()), default=0)):
        chosen = {name: codes[i] for name, codes in bugs_of.items() if i < len(codes)}
        students[f"bugs-{i + 1}"] = (notebook_with(assignment, defining(chosen, names, solution)),
                                     {name: checks_of[name] for name in chosen})
    return students


@pytest.mark.notebook
@needs_bwrap
@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_grades_of_a_class(assignment, tmp_path):
    course = tmp_path / "course"
    scratch_course(ROOT, course, [assignment])
    students = _class(assignment)
    for student, (notebook, _) in students.items():
        folder = submit(course, student, assignment.id, assignment.release)
        nbformat.write(notebook, folder)
    results = {
        r.student: r
        for r in autograde(course, assignment.id, jobs=2, out=io.StringIO(), progress=False)
    }
    wrong = []
    for student, (_, must) in students.items():
        result = results[student]
        scores = {c.grade_id: c.score for c in result.checks}
        failing = {c.grade_id for c in result.checks if c.score < c.points}
        problem = None
        if result.status != GRADED and must != "zero":
            problem = f"status {result.status}: {'; '.join(result.reasons)[:400]}"
        elif must == "full" and failing:
            problem = "lost points: " + "; ".join(f"{c.grade_id}: {c.message[:300]}" for c in result.checks
                                                  if c.grade_id in failing)
        elif must == "zero" and any(scores.values()):
            problem = f"earned points: {[g for g, s in scores.items() if s]}"
        elif isinstance(must, dict) and (passed := [n for n, own in must.items() if not own & failing]):
            problem = (f"the bugs of {passed} lost none of the points of their exercises "
                       f"{[must[n] for n in passed]}")
        elif isinstance(must, set) and failing != must:
            problem = f"expected exactly {sorted(must)} to fail, got {sorted(failing)}: " + "; ".join(
                f"{c.grade_id}: {c.message[:200]}" for c in result.checks if c.grade_id in failing ^ must)
        if problem:
            wrong.append(f"{student}: {problem}")
    assert not wrong, f"{assignment.id}:\n" + "\n".join(wrong)
