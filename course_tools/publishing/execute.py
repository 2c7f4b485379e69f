"""Running notebooks: nbgrader's Validator (what a student's *Validate* button does) and plain execution."""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from nbclient import NotebookClient
from nbformat import NotebookNode

from course_tools.course import CourseError, nbgrader_config
from course_tools.notebooks import graded_cells, nbgrader_meta, read_notebook


@dataclass
class Validation:
    """Which graded cells of a notebook passed and which failed, by grade_id."""

    passed: list[str]
    failed: dict[str, str]  # grade_id -> the error it raised ("" when the Validator gives none)
    seconds: float


def validate(root: Path, notebook_path: Path, *, invert: bool = False) -> Validation:
    """Validate a notebook with nbgrader's ``Validator`` under the course's config.

    ``nbgrader validate`` on the command line exits 0 even when tests fail, so the course reads the
    Validator's result. ``invert=True`` asks it to list the cells that *pass* (used on releases,
    where every graded cell must fail). The Validator sets ``NBGRADER_EXECUTION``, so the notebook
    runs in the smoke profile.
    """
    from nbgrader.validator import Validator

    notebook = read_notebook(notebook_path)
    grade_ids = {cell.source.strip(): nbgrader_meta(cell)["grade_id"] for cell in graded_cells(notebook)}
    validator = Validator(config=nbgrader_config(root), invert=invert)
    started = time.perf_counter()
    results = validator.validate(str(notebook_path))
    seconds = time.perf_counter() - started
    if "changed" in results or "type_changed" in results:
        raise CourseError(
            f"{notebook_path}: locked cells were edited or changed type; regenerate or restore them")
    if invert:
        passed = [grade_ids.get(r["source"], r["source"][:60]) for r in results.get("passed", [])]
        failed = {g: "" for g in grade_ids.values() if g not in passed}
    else:
        failed = {
            grade_ids.get(r["source"], r["source"][:60]): r["raw_error"]
            for r in results.get("failed", [])
        }
        passed = [g for g in grade_ids.values() if g not in failed]
    return Validation(passed=passed, failed=failed, seconds=seconds)


@contextlib.contextmanager
def profile_environment(profile: str, runs_dir: Path | None = None) -> Iterator[None]:
    """Environment for running a notebook the way a student's Jupyter would, in ``profile``."""
    saved = dict(os.environ)
    os.environ.pop("NBGRADER_EXECUTION", None)
    os.environ.pop("NBGRADER_VALIDATING", None)
    os.environ["COURSE_PROFILE"] = profile
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    if runs_dir is not None:
        os.environ["COURSE_RUNS_DIR"] = str(runs_dir)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclass
class Execution:
    notebook: NotebookNode
    seconds: float
    graded_failures: dict[str, str]  # grade_id -> error name and message
    other_errors: list[str]  # errors outside graded cells, first line each
    stopped: str = ""  # why execution stopped before the last cell ("timed out in cell N after S s"), else ""
    # "failed in cell N: error" for the first cell outside the graded ones that raised
    first_failure: str = ""


def execute(notebook_path: Path, *, profile: str, runs_dir: Path | None = None,
            cell_timeout: float = 900) -> Execution:
    """Execute a notebook top to bottom in ``profile``, continuing past errors to report them all.

    A cell that runs longer than ``cell_timeout`` seconds, or a kernel that dies, stops the notebook
    (``Execution.stopped`` says where) instead of raising: the caller goes on with the next one.
    Cells are numbered from 1 in notebook order, markdown included, as in the notebook's file.
    """
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    notebook = read_notebook(notebook_path)
    client = NotebookClient(notebook, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(notebook_path.parent)}})
    current = {"index": 0}
    client.on_cell_start = lambda cell, cell_index, **_: current.update(index=cell_index)
    started = time.perf_counter()
    stopped = ""
    with profile_environment(profile, runs_dir):
        try:
            client.execute()
        except CellTimeoutError:
            stopped = f"timed out in cell {current['index'] + 1} after {cell_timeout:g} s"
        except DeadKernelError as e:
            why = _first_line(str(e)) or "DeadKernelError"
            stopped = f"failed in cell {current['index'] + 1}: the kernel died ({why})"
    seconds = time.perf_counter() - started
    graded_failures, other_errors, first_failure = {}, [], ""
    for index, cell in enumerate(notebook.cells):
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            continue
        message = f"{errors[0]['ename']}: {errors[0]['evalue']}".strip()
        if nbgrader_meta(cell).get("grade"):
            graded_failures[nbgrader_meta(cell)["grade_id"]] = message
        else:
            other_errors.append(_first_line(message) or "error")
            first_failure = first_failure or f"failed in cell {index + 1}: {other_errors[-1]}"
    return Execution(notebook, seconds, graded_failures, other_errors, stopped, first_failure)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
