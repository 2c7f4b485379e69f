"""Reading, checking, normalising and writing course notebooks.

Stored notebooks carry no outputs and only the metadata the course uses, so that regenerating the
release from the same sources is byte-identical and diffs show only what an author changed.
"""
from __future__ import annotations

import ast
import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .course import CourseError
from course_lib.pyparse import parse

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
# Cell metadata that means something to the course: nbgrader's, the slideshow's, tags, and the
# read-only flags nbgrader sets on locked cells. Everything else (scroll state, timings) goes.
CELL_METADATA_KEPT = ("deletable", "editable", "nbgrader", "slideshow", "tags")


def read_notebook(path: Path) -> NotebookNode:
    """Read a v4 notebook, or raise CourseError naming the file and what is wrong with it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CourseError(f"{path}: file not found") from None
    except UnicodeDecodeError as error:
        raise CourseError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise CourseError(
            f"{path}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    if not isinstance(raw, dict) or raw.get("nbformat") != 4:
        raise CourseError(f"{path}: not a Jupyter notebook in format 4")
    try:
        notebook = nbformat.reads(text, as_version=4)  # also joins sources stored as lists of lines
        nbformat.validate(notebook)
    except nbformat.ValidationError as error:
        raise CourseError(f"{path}: invalid notebook: {error.message}") from None
    return notebook


def normalised(notebook: NotebookNode) -> NotebookNode:
    """A copy without outputs or execution counts, with the fixed kernelspec and kept metadata only."""
    clean = nbformat.v4.new_notebook(metadata={"kernelspec": dict(KERNELSPEC)})
    clean.nbformat_minor = 5
    for cell in notebook.cells:
        metadata = {key: cell.metadata[key] for key in CELL_METADATA_KEPT if key in cell.metadata}
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(source, metadata=metadata)
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(source, metadata=metadata)
        else:
            new = nbformat.v4.new_raw_cell(source, metadata=metadata)
        new.id = cell.get("id") or new.id
        clean.cells.append(new)
    return clean


def dumps(notebook: NotebookNode) -> str:
    """The exact text the course stores for a notebook."""
    return nbformat.writes(notebook, version=4) + "\n"


def write_if_changed(path: Path, text: str) -> bool:
    """Atomically replace ``path`` with ``text`` unless it already holds exactly that; True if written."""
    path = Path(path)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True


def nbgrader_meta(cell: NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def graded_cells(notebook: NotebookNode) -> list[NotebookNode]:
    """The autograded test cells (code cells nbgrader scores)."""
    return [c for c in notebook.cells if c.cell_type == "code" and nbgrader_meta(c).get("grade")]


def solution_cells(notebook: NotebookNode) -> list[NotebookNode]:
    return [c for c in notebook.cells if c.cell_type == "code" and nbgrader_meta(c).get("solution")]


def defined_names(source: str) -> list[str]:
    """Top-level functions and classes a cell defines (the graded names of a solution cell)."""
    tree = parse(source)
    return [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


def check_source_notebook(path: Path, notebook: NotebookNode) -> None:
    """Problems nbgrader would only report halfway through a batch, caught before it starts."""
    ids = [nbgrader_meta(c).get("grade_id") for c in notebook.cells if nbgrader_meta(c)]
    if None in ids or "" in ids:
        raise CourseError(f"{path}: an nbgrader cell has no grade_id")
    duplicates = sorted(name for name, count in Counter(ids).items() if count > 1)
    if duplicates:
        raise CourseError(f"{path}: duplicated grade_id {', '.join(duplicates)}")
    for cell in graded_cells(notebook):
        meta = nbgrader_meta(cell)
        if not meta.get("locked") or not meta.get("points"):
            raise CourseError(f"{path}: graded cell {meta['grade_id']} must be locked and worth points")
    for cell in solution_cells(notebook):
        try:
            defined_names(cell.source)
        except SyntaxError as error:
            raise CourseError(
                f"{path}: solution cell {nbgrader_meta(cell)['grade_id']} does not parse: {error.msg}"
            ) from None
