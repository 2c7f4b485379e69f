"""Every correct implementation that honours the written contract passes every graded test.

The mirror of tests/test_bug_catalogue.py: tests/alternatives/<assignment>.py holds, for every
graded function or class, at least two correct redefinitions in other styles. The solution notebook
runs once per assignment in a live kernel; each alternative is executed, every graded cell it can
change (that mentions its name, or a function or class of the notebook that does, transitively) is
rerun and must pass, then the solution definition is restored. (The class's alternatives rounds in
tests/test_grading_the_course.py grade every cell through the grader.) A failure means a check tests more than
the exercise's text fixes (or the text is vague): fix the contract or the check in solutions/.
"""
from __future__ import annotations

import ast

import pytest

from .alternatives import catalogue
from .conftest import ASSIGNMENTS
from .notebook_session import catalogue_gaps, graded_names, session_group, solution_session

MIN_ALTERNATIVES_PER_NAME = 2


def _definition(source: str, name: str) -> str | None:
    """ast.dump of the top-level definition of ``name`` (None when the source does not define it)."""
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return ast.dump(node)
    return None


@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_catalogue_covers_every_graded_name(assignment):
    alternatives = catalogue(assignment.id)
    thin, strangers = catalogue_gaps(assignment, [alt.target for alt in alternatives],
                                     MIN_ALTERNATIVES_PER_NAME)
    assert not thin, (f"tests/alternatives/{assignment.id}.py needs ≥{MIN_ALTERNATIVES_PER_NAME} "
                      "alternatives "
                      f"for: {thin}")
    assert not strangers, f"alternatives target names no solution cell defines: {strangers}"
    names = graded_names(assignment)
    descriptions = [(alt.target, alt.description) for alt in alternatives]
    assert len(descriptions) == len(set(descriptions)), "two alternatives of one name share a description"
    for alt in alternatives:
        mine = _definition(alt.code, alt.target)
        assert mine is not None, (f"the alternative {alt.target}: {alt.description} does not define "
                                  f"{alt.target}")
        solution = names[alt.target]
        assert alt.code.strip() != solution.strip(
        ), f"{alt.target}: {alt.description} is the solution cell itself"
        assert mine != _definition(solution, alt.target), \
            f"{alt.target}: {alt.description} is the solution's definition (up to layout and comments)"


@pytest.mark.notebook
@pytest.mark.parametrize("assignment", [session_group(a) for a in ASSIGNMENTS if catalogue(a.id)])
def test_every_alternative_passes_every_graded_cell(assignment):
    rejected = []
    with solution_session(assignment) as session:
        for alt in catalogue(assignment.id):
            defined = session.run(alt.code)
            failures = ({"(definition)": defined.error} if not defined.ok
                        else session.failures(session.affected_by(alt.target)))
            session.restore(alt.target)
            if failures:
                rejected.append(f"{alt.target}: {alt.description}\n" +
                                "\n".join(f"    {cell}: {error}" for cell, error in failures.items()))
    assert not rejected, (f"{len(rejected)} correct alternative(s) fail graded cells of {assignment.id}:\n"
                          + "\n".join(rejected))
