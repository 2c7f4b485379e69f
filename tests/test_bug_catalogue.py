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

Two kinds of bug are made for every graded name rather than written by hand. The correct code that
changes one of its arguments in place (tests/bugs.in_place): the contract of every exercise leaves
the arguments as they were given unless its text says otherwise, and the grader compares what each
call leaves in its arguments; so Validate must catch each of these with the message that names
that contract, for every argument that can change. A training step's model and optimizer and a KV
cache, which their exercises say the call changes, are objects the in-place bug does not touch. And
the correct module with one more parameter (tests/bugs.with_extra_parameter): the grader copies the
reference's parameters into the student's module for every call it replays and cannot pair one
the reference lacks (course_lib.roles), so every module's contract fixes its parameters, and
Validate must say so.
"""
from __future__ import annotations

import pytest

import ast

from course_lib.roles import RULE

from .bugs import HELPERS, catalogue, in_place, templates, with_extra_parameter
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
# what a check says of a module's parameters: course_lib.roles' rule, or a check that lists them by name
PARAMETERS_MESSAGES = (RULE, "unexpected ['extra_scale']", "one parameter")


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
def test_what_every_contract_rules_out_fails_validate_naming_the_contract(assignment):
    """Two bugs made for every graded name, each of which must fail its own exercise's visible checks
    with the message that names the contract it breaks:
    - for each argument that the visible checks pass something changeable (a tensor, list, dict, or a
      tuple holding one), the in-place bug, with unchanged()'s message;
    - for every graded module, the extra-parameter bug, with the message of the rule by which the
      grader pairs a module's parameters with the reference's (or of a check that lists them).
    One kernel serves both: a second run of the solution notebook would cost the suite minutes."""
    own = own_checks(assignment)
    missed, checked = [], 0
    with solution_session(assignment) as session:
        assert session.run(HELPERS).ok
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
                    missed.append(f"{name}({parameter}) changed in place: {_verdict(failed)}")
            if session.run(f"assert isinstance({name}, type) and issubclass({name}, torch.nn.Module)").ok:
                defined = session.run(with_extra_parameter(name))
                assert defined.ok, f"the extra-parameter bug of {name} does not run: {defined.error}"
                failed = session.validate(own[name])
                session.restore(name)
                if not any(message in error for error in failed.values() for message in PARAMETERS_MESSAGES):
                    missed.append(f"{name} with an extra parameter: {_verdict(failed)}")
    assert checked, f"no graded name of {assignment.id} takes an argument that can change in place"
    assert not missed, (
        f"{len(missed)} bug(s) every contract of {assignment.id} rules out pass Validate or fail it without "
        f"naming the contract (wrap the call in course_lib.grading.unchanged; check a module with "
        f"course_lib.roles.check_parameter_roles):\n" + "\n".join(missed))


def _verdict(failed: dict[str, str]) -> str:
    said = next(iter(failed.values()), "")[:160]
    return f"Validate says {said}" if said else "Validate passes"
