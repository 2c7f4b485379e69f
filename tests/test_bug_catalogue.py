"""Every graded test catches plausible wrong code: each catalogued bug fails at least one graded cell.

The solution notebook runs once per assignment in a live kernel (smoke profile); then for each bug
the buggy definition is executed, the graded cells are rerun until one fails, and the solution
cell is executed again to restore the correct definition.
"""
from __future__ import annotations

import pytest

from course_lib.instructor.notebooks import defined_names, graded_cells, nbgrader_meta, read_notebook, solution_cells

from .bugs import catalogue
from .conftest import ASSIGNMENTS
from .kernel import LiveKernel

MIN_BUGS_PER_FUNCTION = 3


def _graded_names(assignment) -> dict[str, str]:
    """Graded function/class name -> source of the solution cell that defines it."""
    return {name: cell.source for cell in solution_cells(read_notebook(assignment.source))
            for name in defined_names(cell.source)}


_CASES = [pytest.param(a, bug, id=f"{a.id}:{bug.target}:{bug.description}",
                       marks=pytest.mark.xdist_group(a.id))
          for a in ASSIGNMENTS for bug in catalogue(a.id)]


@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_catalogue_covers_every_graded_function(assignment):
    bugs = catalogue(assignment.id)
    names = _graded_names(assignment)
    counts = {name: sum(bug.target == name for bug in bugs) for name in names}
    thin = {name: count for name, count in counts.items() if count < MIN_BUGS_PER_FUNCTION}
    assert not thin, f"tests/bugs/{assignment.id}.py needs ≥{MIN_BUGS_PER_FUNCTION} bugs for: {thin}"
    strangers = {bug.target for bug in bugs} - set(names)
    assert not strangers, f"bugs target names no solution cell defines: {strangers}"
    descriptions = [bug.description for bug in bugs]
    assert len(descriptions) == len(set(descriptions)), "two bugs share a description"


class _Session:
    """One executed solution notebook per assignment, shared by that assignment's bug cases."""

    def __init__(self, assignment):
        notebook = read_notebook(assignment.source)
        self.graded = [(nbgrader_meta(c)["grade_id"], c.source) for c in graded_cells(notebook)]
        self.definitions = _graded_names(assignment)
        self.kernel = LiveKernel(assignment.source.parent)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                self.kernel.run(cell.source)
        failing = self.first_failure()
        if failing:
            self.kernel.close()
            raise AssertionError(f"the solution itself fails {failing[0]}: {failing[1]}")

    def first_failure(self) -> tuple[str, str] | None:
        for grade_id, source in self.graded:
            result = self.kernel.run(source)
            if not result.ok:
                return grade_id, result.error
        return None


@pytest.fixture(scope="session")
def sessions():
    opened: dict[str, _Session] = {}
    yield opened
    for session in opened.values():
        session.kernel.close()


@pytest.mark.notebook
@pytest.mark.parametrize("assignment, bug", _CASES)
def test_bug_is_caught(sessions, assignment, bug):
    if assignment.id not in sessions:
        sessions[assignment.id] = _Session(assignment)
    session = sessions[assignment.id]
    defined = session.kernel.run(bug.code)
    assert defined.ok, f"the bug's code does not run: {defined.error}"
    try:
        caught = session.first_failure()
    finally:
        restored = session.kernel.run(session.definitions[bug.target])
        assert restored.ok, restored.error
    assert caught, f"bug in {bug.target} ({bug.description}) passes every graded test of {assignment.id}"
