"""Every assignment: stored clean, release in sync, solution passes, release fails every graded cell."""
import pytest

from course_tools.publishing.execute import validate
from course_tools.notebooks import dumps, graded_cells, normalised, read_notebook
from course_tools.publishing.release import plan_release

from .conftest import ROOT, assignment_params

pytestmark = pytest.mark.parametrize("assignment", assignment_params())


def test_notebooks_are_stored_normalised(assignment):
    for path in (assignment.source, assignment.release):
        text = path.read_text(encoding="utf-8")
        assert text == dumps(normalised(
            read_notebook(path))), f"{path} has outputs or stray metadata: run `course release`"


def test_every_cell_has_slide_metadata(assignment):
    missing = [
        c.id for c in read_notebook(assignment.source).cells
        if "slide_type" not in c.metadata.get("slideshow", {})
    ]
    assert not missing, f"cells without slideshow metadata: {missing}"


def test_release_is_what_nbgrader_generates(assignment):
    stale = plan_release([assignment]).out_of_sync()
    assert not stale, f"notebooks/ differs from a fresh `course release` in {stale}"


@pytest.mark.notebook
def test_solution_passes_every_graded_cell(assignment):
    result = validate(ROOT, assignment.source)
    assert result.passed, "the solution has no graded cells"
    assert not result.failed, "\n\n".join(f"{gid}:\n{err}" for gid, err in result.failed.items())


@pytest.mark.notebook
def test_release_fails_every_graded_cell(assignment):
    result = validate(ROOT, assignment.release, invert=True)
    assert not result.passed, f"these graded cells pass on the untouched release: {result.passed}"
    assert len(result.failed) == len(graded_cells(read_notebook(assignment.release)))
