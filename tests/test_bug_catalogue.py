"""Validate catches plausible wrong code: each catalogued bug fails the visible checks of its own exercise.

The solution notebook runs once per assignment in a live kernel (smoke profile). First every base
template of the catalogue (the correct code its bugs are derived from) is executed unmutated and
must pass every graded cell: otherwise a bug may be caught for a typo in its template, not for its
mistake. Then for each bug the buggy definition is executed, the *visible* checks of its own
exercise (the release's test cells: what the student's Validate runs; tests/catalogue_submissions)
are rerun and one of them must fail, and the solution cell is executed again to restore the correct
definition. tests/test_grading_the_course.py proves that ``course autograde`` takes points of that
same exercise for every bug, and the alternatives pass both (tests/test_alternatives.py and the
class's alternatives rounds): so Validate and the grade say the same of every fixture. A bug only
the hidden checks catch fails here: the student would learn of it from the grade, not from
Validate. ``python -m benchmarks agreement`` cross-checks the same verdicts with nbgrader's own
Validator on whole notebooks. One test per assignment keeps each kernel on one pytest worker and
reports every bug that got through at once.
"""
from __future__ import annotations

import pytest

from .bugs import catalogue, templates
from .catalogue_submissions import own_checks
from .conftest import ASSIGNMENTS
from .notebook_session import catalogue_gaps, session_group, solution_session

MIN_BUGS_PER_FUNCTION = 3


@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_catalogue_covers_every_graded_function(assignment):
    bugs = catalogue(assignment.id)
    thin, strangers = catalogue_gaps(assignment, [bug.target for bug in bugs], MIN_BUGS_PER_FUNCTION)
    assert not thin, f"tests/bugs/{assignment.id}.py needs ≥{MIN_BUGS_PER_FUNCTION} bugs for: {thin}"
    assert not strangers, f"bugs target names no solution cell defines: {strangers}"
    descriptions = [bug.description for bug in bugs]
    assert len(descriptions) == len(set(descriptions)), "two bugs share a description"
    bases = templates(assignment.id)
    targets = {bug.target for bug in bugs}
    assert not targets - set(
        bases), f"tests/bugs/{assignment.id}.py has no TEMPLATES entry for: {targets - set(bases)}"
    assert not set(
        bases) - targets, f"tests/bugs/{assignment.id}.py has templates without bugs: {set(bases) - targets}"
    unchanged = [f"{bug.target}: {bug.description}" for bug in bugs if bug.code == bases[bug.target]]
    assert not unchanged, f"bugs identical to their correct template: {unchanged}"


@pytest.mark.notebook
@pytest.mark.parametrize("assignment", [session_group(a) for a in ASSIGNMENTS if catalogue(a.id)])
def test_every_bug_is_caught(assignment):
    missed = []
    with solution_session(assignment) as session:
        typos = []
        for target, code in templates(assignment.id).items():
            defined = session.kernel.run(code)
            failure = session.first_failure() if defined.ok else ("(its definition)", defined.error)
            session.restore(target)
            if failure is not None:
                typos.append(f"the template of {target} fails graded cell {failure[0]}: {failure[1]}")
        assert not typos, ("unmutated templates fail graded cells, the catalogue is testing a typo:\n"
                           + "\n".join(typos))
        own = own_checks(assignment)
        for bug in catalogue(assignment.id):
            defined = session.kernel.run(bug.code)
            assert defined.ok, (f"the code of bug {bug.target}: {bug.description} does not run: "
                                f"{defined.error}")
            caught = session.validate(own[bug.target])
            session.restore(bug.target)
            if not caught:
                missed.append(f"{bug.target}: {bug.description}")
    assert not missed, (
        f"{len(missed)} bug(s) of {assignment.id} pass the visible checks of their own exercise "
        f"(Validate shows them green):\n" + "\n".join(missed))
