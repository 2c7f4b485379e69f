"""Every assignment: stored clean, release in sync, every answer's contract written, solution passes,
release fails every graded cell."""
import pytest

from course_tools.publishing.execute import validate
from course_tools.notebooks import (defined_names, dumps, graded_cells, nbgrader_meta, normalised,
                                    read_notebook)
from course_tools.publishing.release import plan_release

from .conftest import ASSIGNMENTS, ROOT, assignment_params
from .notebook_session import session_group, solution_session, without_magics

every_assignment = pytest.mark.parametrize("assignment", assignment_params())


@every_assignment
def test_notebooks_are_stored_normalised(assignment):
    for path in (assignment.source, assignment.release):
        text = path.read_text(encoding="utf-8")
        assert text == dumps(normalised(
            read_notebook(path))), f"{path} has outputs or stray metadata: run `course release`"


@every_assignment
def test_every_cell_has_slide_metadata(assignment):
    missing = [
        c.id for c in read_notebook(assignment.source).cells
        if "slide_type" not in c.metadata.get("slideshow", {})
    ]
    assert not missing, f"cells without slideshow metadata: {missing}"


@every_assignment
def test_release_is_what_nbgrader_generates(assignment):
    stale = plan_release([assignment]).out_of_sync()
    assert not stale, f"notebooks/ differs from a fresh `course release` in {stale}"


# How an exercise's text states what every checker tests, and what none of them pins
CONTRACT = ("*Fixed:*", "*Free:*")


@every_assignment
def test_every_answer_cell_follows_the_text_of_its_contract(assignment):
    """The markdown just above each answer cell that defines a graded name states what is fixed and
    what is free: the visible checks, the hidden checks and the grader test exactly that."""
    cells = read_notebook(assignment.source).cells
    silent = []
    for index, cell in enumerate(cells):
        if not (nbgrader_meta(cell).get("solution") and cell.cell_type == "code"
                and defined_names(without_magics(cell.source))):
            continue
        above = index
        while above > 0 and cells[above - 1].cell_type == "markdown":
            above -= 1
        text = "\n".join(c.source for c in cells[above:index])
        if not all(mark in text for mark in CONTRACT):
            silent.append(nbgrader_meta(cell)["grade_id"])
    assert not silent, f"answer cells whose exercise text does not say {' and '.join(CONTRACT)}: {silent}"


@pytest.mark.notebook
@pytest.mark.parametrize("assignment", [session_group(a) for a in ASSIGNMENTS])
def test_solution_passes_every_graded_cell(assignment):
    """Executed top to bottom in the smoke profile, as Validate runs it, in the live kernel the
    catalogues share (executing the notebook once for all of them); every graded cell, hidden checks
    included, run again. nbgrader's own Validator runs every release (below) and the toy course."""
    with solution_session(assignment) as session:
        assert session.graded, "the solution has no graded cells"
        failed = session.failures()
    assert not failed, "\n\n".join(f"{gid}:\n{err}" for gid, err in failed.items())


@pytest.mark.notebook
@every_assignment
def test_release_fails_every_graded_cell(assignment):
    result = validate(ROOT, assignment.release, invert=True)
    assert not result.passed, f"these graded cells pass on the untouched release: {result.passed}"
    assert len(result.failed) == len(graded_cells(read_notebook(assignment.release)))
