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

One kind of bug is made for every graded name rather than written by hand: the correct code that
changes one of its arguments in place (tests/bugs.in_place). The contract of every exercise leaves
the arguments as they were given unless its text says otherwise, and the grader compares what each
call leaves in its arguments; so Validate must catch each of these with the message that names
that contract, for every argument that can change. A training step's model and optimizer and a KV
cache, which their exercises say the call changes, are objects the in-place bug does not touch.
"""
from __future__ import annotations

import pytest

import ast

from .bugs import catalogue, in_place, templates
from .catalogue_submissions import own_checks
from .conftest import ASSIGNMENTS
from .notebook_session import catalogue_gaps, graded_names, session_group, solution_session, without_magics

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


UNCHANGED_MESSAGE = "changed its argument"  # what course_lib.grading.unchanged says when a check fails


def parameters(source: str, name: str) -> list[str]:
    """The parameters a call of graded ``name`` takes, as ``source`` defines it: a function's, or a
    module's ``forward`` (without ``self``)."""
    for node in ast.parse(without_magics(source)).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            node = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "forward"),
                        None)
        elif not (isinstance(node, ast.FunctionDef) and node.name == name):
            continue
        if node is None:
            return []
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        return [a.arg for a in arguments if a.arg != "self"]
    return []


@pytest.mark.notebook
@pytest.mark.parametrize("assignment", [session_group(a) for a in ASSIGNMENTS])
def test_a_change_to_any_argument_fails_validate_naming_the_contract(assignment):
    """For every graded name and each of its arguments that the visible checks pass something
    changeable (a tensor, list, dict, or a tuple holding one), the in-place bug fails its own
    exercise's visible checks with unchanged()'s message."""
    own = own_checks(assignment)
    missed, checked = [], 0
    with solution_session(assignment) as session:
        for name, source in graded_names(assignment).items():
            for parameter in parameters(source, name):
                defined = session.run(in_place(name, parameter))
                assert defined.ok, f"the in-place bug of {name}({parameter}) does not run: {defined.error}"
                failed = session.validate(own[name])
                changed = session.run("assert _in_place_changed").ok
                session.restore(name)
                if not changed:
                    continue  # no visible call passes anything changeable there (a number, a config)
                checked += 1
                if not any(UNCHANGED_MESSAGE in error for error in failed.values()):
                    said = next(iter(failed.values()), "")[:160]
                    missed.append(f"{name}({parameter}): "
                                  + (f"Validate says {said}" if said else "Validate passes"))
    assert checked, f"no graded name of {assignment.id} takes an argument that can change in place"
    assert not missed, (
        f"{len(missed)} argument(s) of {assignment.id} can be changed in place without Validate naming the "
        f"contract (wrap the call in course_lib.grading.unchanged):\n" + "\n".join(missed))
