"""nbgrader end to end in a temporary course: generate, submit, autograde through the API, read grades.

Three submissions of the first assignment: the solution (full marks), the untouched release (zero),
and the solution with a ``course_lib.py`` and a ``torch.py`` beside it that would crash on import —
autograde must use the installed packages, so that student still gets full marks.
"""
import shutil

import pytest

from course_tools.course import nbgrader_config

from .conftest import ASSIGNMENTS

pytestmark = pytest.mark.notebook


@pytest.mark.skipif(not ASSIGNMENTS, reason="the course has no assignment yet")
def test_generate_submit_autograde_and_read_the_gradebook(tmp_path):
    from nbgrader.apps import NbGraderAPI

    assignment = ASSIGNMENTS[0]
    shutil.copy(assignment.root / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    shutil.copytree(assignment.source.parent, tmp_path / "solutions" / assignment.id)
    config = nbgrader_config(tmp_path)
    api = NbGraderAPI(config=config)
    assert api.generate_assignment(assignment.id, force=True, create=True)["success"]

    released = tmp_path / "notebooks" / assignment.id / assignment.release.name
    submissions = {"honest": assignment.source, "blank": released, "shadowed": assignment.source}
    for student, notebook in submissions.items():
        folder = tmp_path / "submitted" / student / assignment.id
        folder.mkdir(parents=True)
        shutil.copy(notebook, folder / assignment.release.name)
        (folder / "timestamp.txt").write_text("2026-11-22 12:00:00.000000 UTC")
    for module in ("course_lib.py", "torch.py"):
        (tmp_path / "submitted" / "shadowed" / assignment.id /
         module).write_text("raise SystemExit('shadowed')\n")

    for student in submissions:
        result = api.autograde(assignment.id, student, force=True, create=True)
        assert result["success"], result.get("error") or result.get("log")

    with api.gradebook as gradebook:
        max_score = gradebook.find_assignment(assignment.id).max_score
        scores = {s: gradebook.find_submission(assignment.id, s).score for s in submissions}
    assert max_score > 0
    assert scores == {"honest": max_score, "blank": 0, "shadowed": max_score}
