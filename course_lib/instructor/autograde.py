"""``course autograde``: grade every submission in its own sandbox; credit only what the grader re-checked.

Per assignment, once (cached under ``build/autograde/``): the solution runs in the sandbox and its
graded test cells' calls are recorded as probes (:mod:`.probes`), then replayed on the solution to
keep only the probes that reproduce exactly and do not depend on the random state.

Per student, each in a fresh sandbox (:mod:`.sandbox`), several at a time with ``--jobs``: the
source notebook runs with the student's answer code (:mod:`.submission`), then the probes replay on
the student's definitions. A test cell scores its points when it passed in the notebook *and* the
student's answers on the probes match the solution's, compared here, outside the student's reach.
A test cell that passed but whose answers differ, or that no probe re-checks while the answer code
does something only tampering needs (:mod:`.lint`), scores nothing and is flagged for a person.
"""
from __future__ import annotations

import dataclasses
import json
import queue
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

import nbformat
import torch

from . import gradebook
from .course import Assignment, CourseError, assignments
from .lint import Finding, bound_names, lint
from .notebooks import dumps, nbgrader_meta, read_notebook, write_if_changed
from .plain import compare
from .reference import Reference, build_reference, load_result, plan_limits
from .runs import Run, run_plan
from .sandbox import Limits, Sandbox
from .submission import (Answers, Cell, Unreadable, answers, cell_ids, graded_plan, read_submission,
                         release_stubs, source_cells)

GRADED, REVIEW, FAILED, NOT_SUBMITTED = "graded", "needs manual review", "failed to grade", "not submitted"
RECORD = "grading.json"


@dataclass
class Check:
    """One graded test cell of one student."""

    grade_id: str
    points: float
    score: float
    status: str  # "passed", "failed" or "review"
    message: str  # what the student sees: the check's failure message, or why a person must look
    verified: bool  # the grader compared the answers on its probes itself


@dataclass
class Result:
    student: str
    assignment: str
    status: str
    score: float | None
    max_score: float
    checks: list[Check] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why it needs a person, or why it failed
    notes: list[str] = field(default_factory=list)  # what the student should know about their submission
    findings: list[str] = field(default_factory=list)  # what the lint found in the answer cells
    seconds: float = 0.0


@dataclass
class Context:
    """Everything the graders of one batch share."""

    assignment: Assignment
    cells: list[Cell]
    reference: Reference
    sandbox: Sandbox
    limits: Limits
    files: dict[str, Path]
    stubs: dict[str, str]
    ids: dict[str, str]
    work: Path
    probe_inputs: Path  # the probes' inputs only (see stage_probe_inputs)

    def solution_of(self) -> dict[str, str]:
        return {name: c.grade_id for c in self.cells if c.kind == "solution" for name in c.names}

    def related(self, step: int) -> list[int]:
        """Steps not worth running once ``step`` broke the process: they would only repeat the failure."""
        calls, first = self.reference.calls, len(self.cells)
        replays = {k: first + i for i, k in enumerate(self.reference.replayed())}
        if step < first:
            return [s for k, s in replays.items() if calls[k]["cell"] == self.cells[step].grade_id]
        crashed = next((k for k, s in replays.items() if s == step), None)
        if crashed is None:
            return []
        return [s for k, s in replays.items() if calls[k]["target"] == calls[crashed]["target"]]


def grade_student(context: Context, student: str, slot: int = 0) -> Result:
    started = time.monotonic()
    cells, assignment = context.cells, context.assignment
    max_score = sum(c.points for c in cells if c.kind == "test")
    result = Result(student, assignment.id, GRADED, None, max_score)
    folder = assignment.root / "submitted" / student / assignment.id
    if not folder.is_dir():
        result.status = NOT_SUBMITTED
        return result
    notebook = folder / assignment.release.name
    ignored = sorted(p.name for p in folder.iterdir() if p.name not in (notebook.name, "timestamp.txt"))
    if ignored:
        result.notes.append(f"only {notebook.name} was graded; ignored: {', '.join(ignored)}")
    try:
        raw = read_submission(notebook)
    except Unreadable as error:
        result.status, result.reasons = FAILED, [str(error)]
        return result
    if raw.get("converted_from"):
        result.notes.append(f"the notebook was in format {raw['converted_from']}; it was converted to format 4")
    kernel = raw.get("metadata", {}).get("kernelspec", {}) if isinstance(raw.get("metadata"), dict) else {}
    if isinstance(kernel, dict) and kernel.get("name") not in (None, "python3"):
        result.notes.append(f"the notebook asks for kernel {kernel.get('name')!r}; it was graded with Python 3")
    found = answers(raw, cells, context.ids)
    result.notes += found.notes
    result.reasons += found.flags
    findings = _lint(context, found)
    result.findings = [str(f) for f in findings]
    plan = {"mode": "grade", "cells": [c.as_plan() for c in graded_plan(cells, found, context.stubs)],
            "limits": plan_limits(context.limits), "replay": context.reference.replayed()}
    workdir = context.work / student
    run = run_plan(context.sandbox, workdir, plan, {**context.files, "probes": context.probe_inputs,
                                                    "probes.json": context.reference.folder / "probes.json"},
                   context.limits, slot, related=context.related)
    result.seconds = time.monotonic() - started
    if run.failure:
        result.status, result.reasons = FAILED, result.reasons + [run.failure]
        return _with_log(result, run, workdir)
    result.checks = _verdicts(context, run, findings)
    graded_notebook(assignment.source, found, context.stubs, result.checks, workdir / assignment.release.name)
    if run.wall:
        result.reasons.append(f"the whole notebook exceeded its {context.limits.wall_s:g} s time limit")
    result.reasons += [f"{c.grade_id}: {c.message}" for c in result.checks if c.status == "review"]
    result.score = sum(c.score for c in result.checks)
    result.status = REVIEW if result.reasons else GRADED
    return _with_log(result, run, workdir)


def _with_log(result: Result, run: Run, workdir: Path) -> Result:
    (workdir / "log.tail").write_text(run.log, encoding="utf-8")
    return result


def graded_notebook(source: Path, found: Answers, stubs: dict[str, str], checks: list[Check], path: Path) -> None:
    """What was graded, for the instructor (formgrader opens it): the source notebook with the
    student's answer code, and each graded cell's verdict as its output."""
    notebook = read_notebook(source)
    verdicts = {c.grade_id: c for c in checks}
    for cell in notebook.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            cell.source = found.code.get(meta["grade_id"], stubs.get(meta["grade_id"], cell.source))
        elif meta.get("grade") and meta["grade_id"] in verdicts:
            check = verdicts[meta["grade_id"]]
            text = f"{check.status}: {check.score:g} / {check.points:g}\n{check.message}".rstrip() + "\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    write_if_changed(path, dumps(notebook))


def stage_probe_inputs(reference: Reference, work: Path) -> Path:
    """The probes' inputs without the solution's results: what each student's sandbox receives."""
    staged = work / "_probe_inputs"
    staged.mkdir(parents=True)
    for path in (reference.folder / "probes").glob("*.pkl"):
        shutil.copy(path, staged / path.name)
    return staged


def _lint(context: Context, found: Answers) -> list[Finding]:
    owner = context.solution_of()
    forbidden: dict[str, set[str]] = {}
    for call in context.reference.calls:
        forbidden.setdefault(owner.get(call["target"], ""), set()).update(call["forbid"])
    protected = {name for c in context.cells if c.kind == "other" for name in bound_names(c.source)}
    return [f for grade_id, code in found.code.items()
            for f in lint(grade_id, code, forbidden.get(grade_id, set()), protected)]


def _verdicts(context: Context, run: Run, findings: list[Finding]) -> list[Check]:
    owner = context.solution_of()
    tamper = any(f.kind == "tamper" for f in findings)
    reference_use = {f.cell for f in findings if f.kind == "reference"}
    hidden = hidden_lines(context.cells)
    first_replay = len(context.cells)
    replay_step = {k: first_replay + i for i, k in enumerate(context.reference.replayed())}
    checks = []
    for step, cell in enumerate(context.cells):
        if cell.kind != "test":
            continue
        event = run.steps.get(step, {"ok": False, "error": "not run: an earlier cell stopped the notebook"})
        probes = [k for k in context.reference.replayed() if context.reference.calls[k]["cell"] == cell.grade_id]
        if not event.get("ok"):
            message = scrub(str(event.get("error") or "failed"), hidden)
            checks.append(Check(cell.grade_id, cell.points, 0.0, "failed", message, bool(probes)))
            continue
        mismatch = None
        for k in probes:
            replayed = run.steps.get(replay_step[k], {})
            got = load_result(run.outbox / "replay" / f"{k}.pt") if replayed.get("ok") \
                else {"error": replayed.get("error", "not run")}
            expected = torch.load(context.reference.folder / "probes" / f"{k}.expected.pt", weights_only=True)
            mismatch = compare(expected, got)
            if mismatch:
                mismatch = f"{context.reference.calls[k]['target']}: {mismatch}"
                break
        called = {owner.get(context.reference.calls[k]["target"]) for k in probes}
        if mismatch:
            checks.append(Check(cell.grade_id, cell.points, 0.0, "review", "passed inside the notebook, but the "
                                f"grader's own re-check of your answers disagrees: {scrub(mismatch, hidden)}", True))
        elif not probes and tamper:
            checks.append(Check(cell.grade_id, cell.points, 0.0, "review", "passed inside the notebook, which the "
                                "grader cannot re-check, and your answer code does something only tampering needs",
                                False))
        elif called & reference_use:
            checks.append(Check(cell.grade_id, cell.points, cell.points, "review", "passed, but your answer "
                                "uses what this exercise forbids", True))
        else:
            checks.append(Check(cell.grade_id, cell.points, cell.points, "passed", "", bool(probes)))
    return checks


def hidden_lines(cells: list[Cell]) -> list[str]:
    lines = []
    for cell in cells:
        inside = False
        for line in cell.source.splitlines():
            if "### BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "### END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) >= 8:
                lines.append(line.strip())
    return lines


def scrub(message: str, hidden: list[str]) -> str:
    """Drop any line that quotes hidden test code (a student's code can put anything in a message)."""
    kept = ["[hidden test code removed]" if any(h in line for h in hidden) else line for line in message.splitlines()]
    return "\n".join(kept)[:2000]


def autograde(root: Path, assignment_id: str, students: list[str] | None = None, *, jobs: int = 1,
              limits: Limits | None = None, isolated: bool = True, out: TextIO | None = None,
              progress: bool = True) -> list[Result]:
    """Grade ``submitted/<student>/<assignment>/`` for every (or each named) student; write the gradebook."""
    from tqdm.auto import tqdm

    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    limits = limits or limits_for(root)
    sandbox = Sandbox(isolated)
    if sandbox.warning:
        print(f"course: {sandbox.warning}", file=sys.stderr)
    cells = source_cells(assignment.source)
    if not any(c.kind == "test" for c in cells):
        raise CourseError(f"{assignment.source}: no graded test cells")
    submitted = root / "submitted"
    names = students or sorted(p.parent.name for p in submitted.glob(f"*/{assignment.id}") if p.is_dir())
    files = {"files": assignment.release.parent} if assignment.release.parent.is_dir() else {}
    url = gradebook.db_url(root)
    saved = gradebook.backup(root, url)
    print(f"gradebook backed up to {saved.relative_to(root)}" if saved else "gradebook: none yet, nothing to back up",
          file=out)
    gradebook.ensure_assignment(url, assignment.id, assignment.release.stem,
                                {c.grade_id: c.points for c in cells if c.kind == "test"},
                                [c.grade_id for c in cells if c.kind == "solution"])
    results = []
    with tempfile.TemporaryDirectory(prefix=f"course-autograde-{assignment.id}-") as work:
        reference = build_reference(assignment, cells, sandbox, limits, files)
        context = Context(assignment, cells, reference, sandbox, limits, files, release_stubs(assignment.release),
                          cell_ids(assignment.source), Path(work), stage_probe_inputs(reference, Path(work)))
        slots: queue.Queue[int] = queue.Queue()
        for slot in range(jobs):
            slots.put(slot)

        def in_slot(student: str) -> Result:
            slot = slots.get()
            try:
                return grade_student(context, student, slot)
            except Exception as error:  # a grader bug must not stop the batch: this student fails, with the reason
                return Result(student, assignment.id, FAILED, None, 0.0, reasons=[f"grader error: {error!r}"])
            finally:
                slots.put(slot)

        with ThreadPoolExecutor(max_workers=jobs) as pool, \
                tqdm(total=len(names), unit="student", disable=not progress, file=sys.stderr) as bar:
            for future in as_completed([pool.submit(in_slot, name) for name in names]):
                result = future.result()
                try:
                    _save(root, url, assignment, result, Path(work))
                except Exception as error:  # e.g. a locked database: report it, keep grading the others
                    result.status, result.reasons = FAILED, result.reasons + [f"not saved to the gradebook: {error!r}"]
                results.append(result)
                bar.update()
    results.sort(key=lambda r: r.student)
    print(summary(results), file=out)
    return results


def limits_for(root: Path, cell_s: float | None = None, **overrides) -> Limits:
    """Default limits, the per-cell time from ``Execute.timeout`` in nbgrader_config.py unless given."""
    from .course import nbgrader_config

    if cell_s is None:
        cell_s = float(nbgrader_config(root).Execute.get("timeout", 120) or 120)
    return dataclasses.replace(Limits(), cell_s=cell_s, **overrides)


def _save(root: Path, url: str, assignment: Assignment, result: Result, work: Path) -> None:
    if result.status == NOT_SUBMITTED:
        return
    folder = root / "autograded" / result.student / assignment.id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RECORD).write_text(json.dumps(asdict(result), indent=1), encoding="utf-8")
    graded = work / result.student / assignment.release.name
    if graded.is_file():
        shutil.copy(graded, folder / graded.name)
    log = work / result.student / "log.tail"
    if log.is_file():
        shutil.copy(log, folder / "grading.log")
    timestamp = _timestamp(root / "submitted" / result.student / assignment.id / "timestamp.txt")
    review = {c.grade_id for c in result.checks if c.status == "review"}
    scores = {c.grade_id: (c.score if result.status != FAILED else None) for c in result.checks}
    if result.status == FAILED:
        scores = {c.grade_id: None for c in _test_cells(assignment)}
    gradebook.save(url, assignment.id, assignment.release.stem, result.student, scores, review, timestamp)
    shutil.rmtree(work / result.student, ignore_errors=True)


def _timestamp(path: Path) -> str | None:
    """nbgrader's submission time, when the file holds one (the student could have written anything)."""
    from nbgrader.utils import parse_utc

    try:
        text = path.read_text(encoding="utf-8").strip()[:64]
        parse_utc(text)
        return text
    except Exception:  # missing, unreadable or not a date: the submission is graded without a time
        return None


def _test_cells(assignment: Assignment) -> list[Cell]:
    return [c for c in source_cells(assignment.source) if c.kind == "test"]


def summary(results: list[Result]) -> str:
    rows = [("student", "score", "status", "seconds", "why")]
    for r in results:
        score = "-" if r.score is None else f"{r.score:g}/{r.max_score:g}"
        why = "; ".join(r.reasons)[:100] if r.reasons else ("; ".join(r.notes)[:100] if r.status == GRADED else "")
        rows.append((r.student, score, r.status, f"{r.seconds:.1f}", why))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4] for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    counts = {s: sum(r.status == s for r in results) for s in (GRADED, REVIEW, FAILED, NOT_SUBMITTED)}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no submissions")
    return "\n".join(line.rstrip() for line in lines)


def needs_attention(results: list[Result]) -> bool:
    return any(r.status in (REVIEW, FAILED) for r in results)
