"""Submission notebooks made from the catalogues (tests/bugs, tests/alternatives), and what each must get.

Shared by everything that grades the catalogues as students would hand them in: the autograde of a
class of every assignment (tests/test_grading_the_course.py) and the cross-check of Validate
against the grade (benchmarks/validate_agreement.py). An answer is the release (or the solution)
with each answer cell's code followed by the definitions that replace its graded names.
"""
from __future__ import annotations

from typing import Callable

import nbformat

from course_tools.grading.feedback import exercises
from course_tools.notebooks import graded_cells, nbgrader_meta, read_notebook
from course_tools.grading.submission import source_cells

Answer = Callable[[str, str], str]  # (grade_id, the release's code of that answer cell) -> the code handed in


def answers(assignment) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """Solution grade_id -> the graded names its cell defines, and -> its source."""
    cells = [c for c in source_cells(assignment.source) if c.kind == "solution"]
    return {c.grade_id: c.names for c in cells}, {c.grade_id: c.source for c in cells}


def notebook_with(assignment, answer: Answer) -> nbformat.NotebookNode:
    """The release with each answer cell's code replaced by ``answer(grade_id, release_code)``."""
    notebook = nbformat.read(assignment.release, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = answer(grade_id, cell.source)
    return notebook


def defining(definitions: dict[str, str], names: dict[str, tuple[str, ...]], base: dict[str, str]) -> Answer:
    """An answer: each cell's ``base`` code (the release's where ``base`` has none) followed by the
    definitions of its names."""
    def answer(grade_id: str, release_code: str) -> str:
        extra = [definitions[n] for n in names.get(grade_id, ()) if n in definitions]
        return "\n\n".join([base.get(grade_id, release_code), *extra])
    return answer


def own_checks(assignment) -> dict[str, set[str]]:
    """Graded name -> the test cells of its own exercise (those that check an answer cell defining it)."""
    names, _ = answers(assignment)
    checks: dict[str, set[str]] = {}
    for test, (_, answered) in exercises(assignment.source).items():
        for grade_id in answered:
            for name in names.get(grade_id, ()):
                checks.setdefault(name, set()).add(test)
    return checks


def visible_checks(assignment) -> dict[str, str]:
    """Test cell grade_id -> its code in the release: the visible checks only, what Validate runs."""
    return {nbgrader_meta(c)["grade_id"]: c.source for c in graded_cells(read_notebook(assignment.release))}
