"""A tiny course in a temporary folder, for testing the tooling without the real notebooks' cost."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def cell(kind: str, source: str, cell_id: str, nbgrader: dict | None = None, slide: str = "-"):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    cell = make(source, metadata={"slideshow": {"slide_type": slide}})
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "task": False, **nbgrader}
    cell.id = cell_id
    return cell




def answer_notebook(grade_ids: dict[str, float]) -> nbformat.NotebookNode:
    """A source notebook of one answer cell (``answer_<name>``, returning 1) and one test cell per
    grade id (``test_<name>``, worth its points): enough for the gradebook and the grade reports."""
    notebook = nbformat.v4.new_notebook()
    for grade_id, points in grade_ids.items():
        name = grade_id.removeprefix("test_")
        notebook.cells += [
            cell("code", f"def {name}():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
                 f"answer-{name}",
                 {"grade": False, "solution": True, "locked": False, "grade_id": f"answer_{name}"}),
            cell("code", f"assert {name}() == 1", grade_id.replace("_", "-"),
                 {"grade": True, "solution": False, "locked": True, "points": points, "grade_id": grade_id})
        ]
    return notebook


def graded_submission(root: Path, assignment: str, student: str, points: dict[str, float],
                      submitted: str | None = None) -> None:
    """What `course autograde` leaves (and leaves again on a regrade) for a full-marks submission of
    an :func:`answer_notebook` assignment of ``points`` collected at ``submitted`` (nbgrader's
    format): the assignment, the student's scores in the gradebook, the grading record."""
    from course_tools.grading import gradebook
    from course_tools.grading.records import GRADED, Check, Result, write_record

    url = gradebook.db_url(root)
    answers = [f"answer_{grade_id.removeprefix('test_')}" for grade_id in points]
    gradebook.ensure_assignment(url, assignment, assignment, points, answers)
    (root / "submitted" / student / assignment).mkdir(parents=True, exist_ok=True)
    gradebook.save(url, assignment, assignment, student, dict(points), set(), submitted)
    folder = root / "autograded" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    total = sum(points.values())
    write_record(folder, Result(student, assignment, GRADED, total, total,
                                checks=[Check(g, p, p, "passed", "", True) for g, p in points.items()]))


def toy_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}})
    notebook.cells = [
        cell("markdown", "# Toy assignment", "intro", slide="slide"),
        cell("code", "import course_lib\nfrom course_lib.grading import check_close", "imports",
             {"grade": False, "solution": False, "locked": True, "grade_id": "imports"}),
        cell(
            "code",
            'def double(x):\n    """Twice x."""\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END '
            'SOLUTION',
            "solution", {"grade": False, "solution": True, "locked": False, "grade_id": "double"}),
        cell(
            "code", 'check_close("double", double(3.0), 6.0)\n### BEGIN HIDDEN TESTS\n'
            'check_close("double", double(-1.5), -3.0)\n### END HIDDEN TESTS', "test",
            {"grade": True, "solution": False, "locked": True, "points": 1, "grade_id": "test_double"},
            slide="skip"),
        cell(
            "code", "from course_lib.checkpoints import record_results\n"
            'record_results("toy", {"headline": {"name": "score", "value": 42.0}})', "results", slide="skip"),
    ]
    return notebook


def make_toy_course(folder: Path) -> Path:
    """``folder`` with the course's nbgrader_config.py and one assignment, ``toy``."""
    shutil.copy(ROOT / "nbgrader_config.py", folder / "nbgrader_config.py")
    source = folder / "solutions" / "toy" / "toy.ipynb"
    source.parent.mkdir(parents=True)
    nbformat.write(toy_notebook(), source)
    return folder
