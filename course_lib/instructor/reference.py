"""The solution's probes for one assignment: recorded once, kept when they replay exactly.

The solution runs in the sandbox twice: once recording every call its graded test cells make
(:class:`.probes.Recorder`), once replaying those calls on the solution itself, each a second time
from another random state. A probe is used for grading only when its replay reproduces the
recorded result and does not depend on the random state; the others are listed with the reason.
Results are cached under ``build/autograde/<assignment>/`` per source notebook and course_lib.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from .course import Assignment, CourseError
from .plain import compare
from .runs import Run, run_plan
from .sandbox import Limits, Sandbox
from .submission import Cell


@dataclass
class Reference:
    folder: Path  # probes/<k>.pkl (inputs), probes/<k>.expected.pt (results), probes.json
    calls: list[dict]
    usable: dict[int, str]  # probe -> "" when the grader replays it, else why it cannot

    def replayed(self) -> list[int]:
        return [k for k, why in self.usable.items() if not why]


def _key(cells: list[Cell]) -> str:
    import course_lib

    digest = hashlib.sha256(json.dumps([c.as_plan() for c in cells]).encode())
    for path in sorted(Path(course_lib.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    digest.update(torch.__version__.encode())
    return digest.hexdigest()[:16]


def build_reference(assignment: Assignment, cells: list[Cell], sandbox: Sandbox, limits: Limits,
                    files: dict[str, Path]) -> Reference:
    """Record the solution's probes and keep those that replay exactly (cached per source and course_lib)."""
    folder = assignment.root / "build" / "autograde" / assignment.id / f"reference-{_key(cells)}"
    if (folder / "usable.json").is_file():
        usable = {int(k): v for k, v in json.loads((folder / "usable.json").read_text()).items()}
        return Reference(folder, json.loads((folder / "probes.json").read_text()), usable)
    plan = {"mode": "record", "cells": [c.as_plan() for c in cells], "limits": plan_limits(limits)}
    with tempfile.TemporaryDirectory(prefix="course-reference-") as scratch:
        record = run_plan(sandbox, Path(scratch) / "record", plan, files, limits)
        _solution_must_pass(assignment, cells, record)
        calls = json.loads((record.outbox / "probes.json").read_text())
        replayable = [k for k, call in enumerate(calls) if not call["unreplayable"]]
        check = run_plan(sandbox, Path(scratch) / "check", {**plan, "mode": "check", "replay": replayable},
                         {**files, "probes": record.outbox / "probes", "probes.json": record.outbox / "probes.json"},
                         limits)
        _solution_must_pass(assignment, cells, check)
        usable = {}
        for k, call in enumerate(calls):
            expected = torch.load(record.outbox / "probes" / f"{k}.expected.pt", weights_only=True)
            if call["unreplayable"]:
                usable[k] = call["unreplayable"]
            elif compare(expected, load_result(check.outbox / "replay" / f"{k}.pt")):
                usable[k] = "replaying the solution did not reproduce its result"
            elif compare(expected, load_result(check.outbox / "replay" / f"{k}.perturbed.pt")):
                usable[k] = "its result depends on the random state"
            else:
                usable[k] = ""
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent))
        shutil.copytree(record.outbox / "probes", staging / "probes")
        shutil.copy(record.outbox / "probes.json", staging / "probes.json")
        (staging / "usable.json").write_text(json.dumps(usable, indent=1))
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    return Reference(folder, calls, usable)


def _solution_must_pass(assignment: Assignment, cells: list[Cell], run: Run) -> None:
    if run.failure:
        raise CourseError(f"{assignment.source}: the solution could not run in the sandbox: {run.failure}\n"
                          f"{run.log[-2000:]}")
    for step, cell in enumerate(cells):
        event = run.steps.get(step, {"ok": False, "error": "not run"})
        if not event["ok"]:
            raise CourseError(f"{assignment.source}: the solution fails in the sandbox, cell "
                              f"{cell.grade_id or step}: {event.get('error')}\n{run.log[-2000:]}")


def plan_limits(limits: Limits) -> dict:
    return {"memory_bytes": limits.memory_bytes, "processes": limits.processes, "file_bytes": limits.file_bytes}


def load_result(path: Path):
    """A replayed result, read without running any code; None when missing or unreadable."""
    try:
        if path.stat().st_size > 256 << 20:
            return None
        return torch.load(path, weights_only=True)
    except Exception:  # missing, truncated, or not what the runner writes: all mean "no answer"
        return None
