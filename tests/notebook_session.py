"""A solution notebook executed once in a live kernel, with its graded cells ready to rerun.

Shared by the catalogues that redefine graded names in a running notebook: the bug catalogue
(tests/test_bug_catalogue.py), the alternative correct implementations (tests/test_alternatives.py)
and the one-bug-costs-one-exercise check (tests/test_cascade.py). The three run on one executed
notebook per assignment (:func:`solution_session`), kept on one pytest worker by their xdist group
(:func:`session_group`): executing every notebook once instead of three times.
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator

import pytest

from course_tools.notebooks import defined_names, graded_cells, nbgrader_meta, read_notebook, solution_cells

from .catalogue_submissions import visible_checks
from .kernel import LiveKernel


def graded_names(assignment) -> dict[str, str]:
    """Graded function/class name -> source of the solution cell that defines it."""
    return {name: cell.source for cell in solution_cells(read_notebook(assignment.source))
            for name in defined_names(cell.source)}


def catalogue_gaps(assignment, targets: list[str], minimum: int) -> tuple[dict[str, int], set[str]]:
    """A catalogue's coverage of the graded names: those with fewer than ``minimum`` entries (name ->
    count), and the targets no solution cell defines."""
    names = graded_names(assignment)
    counts = {name: targets.count(name) for name in names}
    return {n: c for n, c in counts.items() if c < minimum}, set(targets) - set(names)


class NotebookSession:
    """The solution notebook of ``assignment`` run top to bottom in a live kernel (smoke profile)."""

    def __init__(self, assignment):
        notebook = read_notebook(assignment.source)
        self.assignment = assignment
        self.graded = [(nbgrader_meta(c)["grade_id"], c.source) for c in graded_cells(notebook)]
        # every function and class the notebook defines, with the source of its cell
        self.defined = [(name, c.source) for c in notebook.cells if c.cell_type == "code"
                        for name in defined_names(without_magics(c.source))]
        self.visible = visible_checks(assignment)
        self.definitions = graded_names(assignment)
        self.kernel = LiveKernel(assignment.source.parent)
        try:
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    self.kernel.run(cell.source)
            failing = self.failures()
            if failing:
                raise AssertionError(f"the solution itself fails {failing}")
        except BaseException:
            self.kernel.close()
            raise

    def run(self, code: str):
        return self.kernel.run(code)

    def first_failure(self) -> tuple[str, str] | None:
        """(grade_id, error) of the first graded cell that fails, or None when all pass."""
        for grade_id, source in self.graded:
            result = self.kernel.run(source)
            if not result.ok:
                return grade_id, result.error
        return None

    def affected_by(self, name: str) -> set[str]:
        """grade_ids of the graded cells a new definition of ``name`` can change: those that mention it
        or a function or class of the notebook whose cell mentions it, or mentions one that does, ..."""
        names = {name}
        while grown := {n for n, source in self.defined if n not in names and _mentions(source, names)}:
            names |= grown
        return {grade_id for grade_id, source in self.graded if _mentions(source, names)}

    def failures(self, grade_ids: set[str] | None = None) -> dict[str, str]:
        """grade_id -> error of every graded cell (of ``grade_ids``, else all) that fails, rerun."""
        failed = {}
        for grade_id, source in self.graded:
            if grade_ids is not None and grade_id not in grade_ids:
                continue
            result = self.kernel.run(source)
            if not result.ok:
                failed[grade_id] = result.error
        return failed

    def validate(self, grade_ids: set[str] | None = None) -> dict[str, str]:
        """What *Validate* shows: grade_id -> error of every test cell (of ``grade_ids``, else all) whose
        visible checks, the release's code of the cell, fail. The hidden checks do not run."""
        failed = {}
        for grade_id, _ in self.graded:
            if grade_ids is None or grade_id in grade_ids:
                result = self.kernel.run(self.visible[grade_id])
                if not result.ok:
                    failed[grade_id] = result.error
        return failed

    def restore(self, name: str) -> None:
        """Execute the solution cell that defines ``name`` again."""
        restored = self.kernel.run(self.definitions[name])
        assert restored.ok, f"restoring the solution of {name} failed: {restored.error}"

    def close(self) -> None:
        self.kernel.close()

    def __enter__(self) -> "NotebookSession":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def without_magics(source: str) -> str:
    """A cell's Python: its IPython magic and shell lines (``%matplotlib inline``, ``!ls``) blanked."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _mentions(source: str, names: set[str]) -> bool:
    return re.search(r"\b(" + "|".join(map(re.escape, names)) + r")\b", source) is not None


_SESSIONS: dict[str, NotebookSession] = {}


def session_group(assignment):
    """The tests of one assignment's shared session as pytest params: one xdist group, one worker."""
    return pytest.param(assignment, id=assignment.id,
                        marks=pytest.mark.xdist_group(f"notebook-{assignment.id}"))


@contextlib.contextmanager
def solution_session(assignment) -> Iterator[NotebookSession]:
    """This worker's executed solution notebook of ``assignment``, for a test that redefines graded
    names and restores each. It goes back for the next test only if every graded cell passes again
    afterwards; a test that fails or leaves a definition changed closes it, and the next test
    executes the notebook afresh."""
    session = _SESSIONS.pop(assignment.id, None) or NotebookSession(assignment)
    try:
        yield session
        left = session.first_failure()
        assert left is None, f"the solution no longer passes after the redefinitions were undone: {left}"
    except BaseException:
        session.close()
        raise
    _SESSIONS[assignment.id] = session


def close_sessions() -> None:
    """Close the kernels of every shared session (at the end of the test run)."""
    while _SESSIONS:
        _SESSIONS.popitem()[1].close()
