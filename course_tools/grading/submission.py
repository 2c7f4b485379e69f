"""What gets graded: the source notebook's cells, with only the student's answers taken from the submission.

Every locked and test cell comes from ``solutions/`` (so a deleted, edited, retagged, retyped or
renamed test cell changes nothing), the student's notebook contributes the *code* of each answer cell
and nothing else (no metadata, no extra cells, no other files). A submission that cannot be read
as a notebook is refused with a reason, never graded as a zero.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course_lib.pyparse import parse

from course_tools.notebooks import defined_names, nbgrader_meta, read_notebook
from course_tools.untrusted import Missing, Unreadable, read_bytes, safe_data

MAX_NOTEBOOK_BYTES = 20 << 20
MAX_ANSWER_CHARS = 200_000


# Unreadable (from .untrusted): the submission cannot be graded at all; the message says why.


@dataclass(frozen=True)
class Cell:
    kind: str  # "solution" (the student's answer), "test" (a graded test cell) or "other"
    grade_id: str | None
    source: str
    names: tuple[str, ...] = ()  # graded names a solution cell defines in the source notebook
    points: float = 0.0

    def as_plan(self) -> dict:
        plan = {
            "kind": self.kind, "grade_id": self.grade_id, "source": self.source, "names": list(self.names)
        }
        if self.kind == "test":
            plan["segments"] = split_test_cell(self.source)
        return plan


HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def split_test_cell(source: str) -> list[tuple[str, str]]:
    """A test cell as its visible and hidden parts, in order, each runnable on its own; the whole
    cell as one hidden part when a hidden block does not stand at the top level."""
    segments: list[tuple[str, list[str]]] = [("visible", [])]
    for line in source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            segments.append(("hidden", []))
        elif line.strip() == HIDDEN_END:
            segments.append(("visible", []))
        else:
            segments[-1][1].append(line)
    parts = [(kind, "\n".join(lines)) for kind, lines in segments if "".join(lines).strip()]
    try:
        for _, code in parts:
            compile(code, "<test>", "exec")
    except SyntaxError:
        return [("hidden", source)]
    return parts


@dataclass
class Answers:
    """The student's answer code per solution grade_id, and what the instructor should know about it."""

    code: dict[str, str]
    notes: list[str] = field(default_factory=list)  # shown to the student too
    flags: list[str] = field(default_factory=list)  # need the instructor's attention


def source_cells(path: Path) -> list[Cell]:
    """The source notebook's code cells up to its last graded cell (nothing after it can change a grade)."""
    notebook = read_notebook(path)
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            cells.append(Cell("solution", meta["grade_id"], cell.source, tuple(defined_names(cell.source))))
        elif meta.get("grade"):
            cells.append(Cell("test", meta["grade_id"], cell.source, points=float(meta["points"])))
        else:
            cells.append(Cell("other", meta.get("grade_id"), cell.source))
    last = max((i for i, c in enumerate(cells) if c.kind == "test"), default=-1)
    return cells[:last + 1]


def cell_ids(path: Path) -> dict[str, str]:
    """Solution grade_id -> notebook cell id in the source (the release keeps the same ids)."""
    notebook = read_notebook(path)
    return {
        nbgrader_meta(c)["grade_id"]: c.get("id", "")
        for c in notebook.cells if nbgrader_meta(c).get("solution")
    }


def read_submission(path: Path, root: Path | None = None) -> dict:
    """The student's notebook as raw JSON (format 4; format 3 is converted), or Unreadable with the reason.

    Read with :func:`.untrusted.read_bytes` below ``root`` (the submission folder; by default the
    notebook's own): a link (to ``solutions/``) is refused, never followed, as are a FIFO and a file
    over ``MAX_NOTEBOOK_BYTES`` (known before reading it). Lone surrogates, which JSON escapes allow
    and no UTF-8 writer accepts, are replaced in every string of the notebook.
    """
    try:
        data = read_bytes(path, MAX_NOTEBOOK_BYTES, root=root)
    except Missing:
        others = sorted(p.name for p in path.parent.glob("*.ipynb")) if path.parent.is_dir() else []
        raise Unreadable(f"no {path.name} in the submission" +
                         (f" (it holds {', '.join(others)})" if others else "")) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"{path.name} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        raw = safe_data(json.loads(text), strip_controls=False)
    except (json.JSONDecodeError, RecursionError) as error:
        raise Unreadable(
            f"{path.name} is not valid JSON ({getattr(error, 'msg', 'nested too deep')})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nbformat"), int):
        raise Unreadable(f"{path.name} is not a Jupyter notebook")
    if raw["nbformat"] == 3:
        try:
            raw = json.loads(nbformat.writes(nbformat.reads(json.dumps(raw), as_version=4)))
            raw["converted_from"] = 3
        except Exception as error:  # nbformat raises many kinds on malformed v3 input
            raise Unreadable(
                f"{path.name} is in notebook format 3 and could not be converted ({error})") from None
    elif raw["nbformat"] != 4:
        raise Unreadable(f"{path.name} is in notebook format {raw['nbformat']}, not 4")
    if not isinstance(raw.get("cells"), list):
        raise Unreadable(f"{path.name} has no list of cells")
    return raw


def answers(raw: dict, cells: list[Cell], ids: dict[str, str]) -> Answers:
    """Find each answer cell by its grade_id, else by its cell id (a renamed grade_id); join duplicates."""
    wanted = {c.grade_id for c in cells if c.kind == "solution"}
    by_grade: dict[str, list[str]] = {}
    by_id: dict[str, str] = {}
    unknown = []
    for cell in raw["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) and all(
            isinstance(s, str) for s in source) else source
        if not isinstance(source, str):
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(cell.get("id"), str):
            by_id.setdefault(cell["id"], source)
        if grade_id in wanted:
            by_grade.setdefault(grade_id, []).append(source)
        elif isinstance(grade_id, str) and grade_id and isinstance(meta, dict) and meta.get("solution"):
            unknown.append(grade_id)
    found = Answers({})
    for grade_id in sorted(wanted):
        if grade_id in by_grade:
            found.code[grade_id] = "\n\n".join(by_grade[grade_id])
            if len(by_grade[grade_id]) > 1:
                found.notes.append(f"answer cell {grade_id} appears {len(by_grade[grade_id])} times: "
                                   "all copies were run, in order")
        elif ids.get(grade_id) in by_id:
            found.code[grade_id] = by_id[ids[grade_id]]
            found.notes.append(
                f"answer cell {grade_id} had its grade_id changed: it was found by its cell id")
        else:
            found.notes.append(
                f"answer cell {grade_id} is missing from the notebook: it counts as not answered")
            if unknown:
                found.flags.append(
                    f"answer cell {grade_id} is missing, and answer cells with unknown grade_ids "
                    f"({', '.join(sorted(unknown))}) exist")
    for grade_id, code in found.code.items():
        if len(code) > MAX_ANSWER_CHARS:
            found.code[grade_id] = "raise RuntimeError('this answer cell is too long to grade')"
            found.flags.append(f"answer cell {grade_id} is over {MAX_ANSWER_CHARS} characters")
    return found


def check_imports(cell: Cell) -> str:
    """The import statements at the top level of a test cell's visible parts: in Validate they run
    before the answers the test calls, so an answer may use what they import; the grader runs them
    too, in the test cell's place (and nothing else of a test cell)."""
    lines = []
    for kind, code in split_test_cell(cell.source):
        if kind == "visible":
            lines += [ast.unparse(node) for node in parse(code).body
                      if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "\n".join(lines)


def graded_plan(cells: list[Cell], found: Answers, stubs: dict[str, str]) -> list[Cell]:
    """The cells a student's sandbox runs: the source's cells up to its last answer cell, without its
    test cells (they never leave the grader) but their imports (:func:`check_imports`), each answer
    cell's code replaced by the student's (or the release's stub)."""
    last = max((i for i, c in enumerate(cells) if c.kind == "solution"), default=-1)
    plan = []
    for c in cells[:last + 1]:
        if c.kind == "solution":
            code = found.code.get(c.grade_id, stubs.get(c.grade_id, "raise NotImplementedError()"))
            plan.append(Cell(c.kind, c.grade_id, code, c.names, c.points))
        elif c.kind != "test":
            plan.append(c)
        elif imports := check_imports(c):
            plan.append(Cell("other", None, imports))
    return plan


def replay_after(cells: list[Cell], calls: list[dict], replay: list[int]) -> dict[str, int]:
    """Probe -> the step of the graded plan after which it replays: where its test cell stood in the
    notebook, so that what the student's code sees (a helper's global, a variable an instructor cell
    rebinds later) is what it would see when that test ran."""
    last = max((i for i, c in enumerate(cells) if c.kind == "solution"), default=-1)
    point, before = {}, 0
    for i, cell in enumerate(cells):
        if cell.kind == "test":
            before += i <= last and bool(check_imports(cell))  # its imports' step (graded_plan)
            point[cell.grade_id] = before - 1
        elif i <= last:
            before += 1
    return {str(k): point.get(calls[k]["cell"], before - 1) for k in replay}


def release_stubs(path: Path) -> dict[str, str]:
    """Answer cells as released (signature, docstring, ``raise NotImplementedError()``), for missing
    answers."""
    if not path.is_file():
        return {}
    notebook = read_notebook(path)
    return {
        nbgrader_meta(c)["grade_id"]: c.source
        for c in notebook.cells if nbgrader_meta(c).get("solution")
    }
