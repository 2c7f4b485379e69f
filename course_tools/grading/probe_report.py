"""What the grading record keeps of each replayed call, for the instructor alone (``course explain``).

A student's feedback page says of a hidden check only the kind of difference; a dispute needs more:
the call's inputs, what the solution returned, what the student's code returned, the full
difference and the run it came from. :func:`probe_reports` writes that into the record
(:class:`.records.Probe`) as short text, so that ``course explain`` reads it back without the
reference, the sandbox or torch. The record lives under ``autograded/``, which no student reads.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import torch

from .records import Probe
from .scrub import probe_input

MAX_TEXT = 300  # characters of one summary: enough to see a value, small enough for ~1,000 probes


@dataclass(frozen=True)
class ProbeTexts:
    """What does not depend on the student: probe -> short text, worked out once per reference and
    kept beside it (:func:`probe_texts`, :meth:`save`, :meth:`load`)."""

    inputs: dict[int, str]
    expected: dict[int, str]

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"inputs": self.inputs, "expected": self.expected}), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> "ProbeTexts":
        texts = json.loads(path.read_text(encoding="utf-8"))
        return cls({int(k): v for k, v in texts["inputs"].items()},
                   {int(k): v for k, v in texts["expected"].items()})


def probe_texts(folder: Path, probes: Iterable[int]) -> ProbeTexts:
    """Each of ``probes``' inputs (``<k>.pkl`` in ``folder``) and the solution's result
    (``<k>.expected.pt``) as short text."""
    texts = ProbeTexts({}, {})
    for k in probes:
        texts.inputs[k] = call_inputs(folder, k)
        texts.expected[k] = returned(torch.load(folder / f"{k}.expected.pt", weights_only=True))
    return texts


def brief(value: Any, depth: int = 0) -> str:
    """A short description of a value, raw (an input) or as the grader records it (:func:`.plain.plain`)."""
    text = _brief(value, depth)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _brief(value: Any, depth: int) -> str:
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, dict) and depth < 4:
        if "tensor" in value and isinstance(value["tensor"], torch.Tensor):
            return _tensor(value["tensor"])
        if "seq" in value:
            return "[" + ", ".join(_brief(v, depth + 1) for v in value["seq"][:6]) + (", …" if value.get(
                "len", 0) > 6 else "") + "]"
        if "map" in value:
            return "{" + ", ".join(f"{_brief(k, depth + 1)}: {_brief(v, depth + 1)}"
                                   for k, v in value["map"][:6]) + "}"
        if "module" in value:
            return f"a {value['module']} module"
        if "object" in value:
            return f"a {value['object']}" + (
                f" {_brief(value['value'], depth + 1)}" if "value" in value else "")
        return "{" + ", ".join(f"{k}: {_brief(v, depth + 1)}" for k, v in list(value.items())[:6]) + "}"
    if isinstance(value, (list, tuple)) and depth < 4:
        inner = ", ".join(_brief(v, depth + 1) for v in value[:6]) + (", …" if len(value) > 6 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, float):
        return f"{value:.6g}"
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)[:80]
    return f"a {type(value).__name__}"


def _tensor(tensor: torch.Tensor) -> str:
    t = tensor.detach().cpu()
    head = f"tensor {tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
    if t.numel() == 0:
        return head
    flat = t.flatten()
    shown = ", ".join(f"{v:.4g}" if t.is_floating_point() else str(int(v)) for v in flat[:4].tolist())
    stats = ""
    if t.is_floating_point() and t.numel() > 4:
        finite = flat[torch.isfinite(flat)].double()
        if finite.numel():
            stats = f"; mean {finite.mean():.4g}, min {finite.min():.4g}, max {finite.max():.4g}"
    return f"{head}: [{shown}{', …' if t.numel() > 4 else ''}]{stats}"


def call_inputs(folder: Path, k: int) -> str:
    """Probe ``k``'s arguments as the grader stored them (``<k>.pkl``), or why they cannot be shown."""
    found = probe_input(folder, k)
    return brief(found[0]) if found else "(not readable by the grader's safe unpickler)"


def returned(record: Any) -> str:
    """What a replayed call's record says the call did: its return value, or the error it raised."""
    if not isinstance(record, dict):
        return "no result"
    if "error" in record:
        return f"raised {str(record['error'])[:200]}"
    if "samples" in record:
        return f"{len(record['samples'])} sampled results"
    return brief(record.get("return"))


def probe_reports(cells: list, probes_of, calls: list[dict], texts: ProbeTexts, outcomes: dict[int, Any],
                  mismatches: dict[int, Any], runs: dict[int, str]) -> list[Probe]:
    """One :class:`Probe` per replayed call of each test cell, in the cell's order."""
    reports = []
    for cell in (c for c in cells if c.kind == "test"):
        failed = False
        for number, k in enumerate(probes_of(cell), 1):
            call = calls[k]
            mismatch = mismatches.get(k)
            outcome = "not compared" if k not in mismatches else "failed" if mismatch else "passed"
            reports.append(
                Probe(
                    grade_id=cell.grade_id, number=number, target=call["target"] +
                    (f".{call['method']}" if call.get("method") and call["kind"] == "method" else ""),
                    hidden=call.get("segment") == "hidden", run=runs.get(
                        k, "the submission's run"), outcome=outcome, counted=not failed, difference=str(
                            mismatch or ""), inputs=texts.inputs.get(k, ""), expected=texts.expected.get(
                                k, ""), returned=returned(outcomes.get(k))))
            failed = failed or bool(mismatch)
    return reports
