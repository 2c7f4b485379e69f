"""Every graded test catches plausible wrong code: each catalogued bug fails at least one graded cell.

The solution notebook runs once per assignment in a live kernel (smoke profile); then for each bug
the buggy definition is executed, the graded cells are rerun until one fails, and the solution
cell is executed again to restore the correct definition. One test per assignment keeps each
kernel on one pytest worker and reports every bug that got through at once.
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
    """The solution notebook executed once in a live kernel, with its graded cells ready to rerun."""

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


@pytest.mark.notebook
@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS if catalogue(a.id)])
def test_every_bug_is_caught(assignment):
    session = _Session(assignment)
    missed = []
    try:
        for bug in catalogue(assignment.id):
            defined = session.kernel.run(bug.code)
            assert defined.ok, f"the code of bug {bug.target}: {bug.description} does not run: {defined.error}"
            caught = session.first_failure()
            restored = session.kernel.run(session.definitions[bug.target])
            assert restored.ok, restored.error
            if not caught:
                missed.append(f"{bug.target}: {bug.description}")
        assert session.first_failure() is None, "the solution no longer passes after the bugs were undone"
    finally:
        session.kernel.close()
    assert not missed, f"{len(missed)} bug(s) pass every graded test of {assignment.id}:\n" + "\n".join(missed)
