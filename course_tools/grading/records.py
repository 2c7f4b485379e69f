"""The grading record: what one student's submission of one assignment came to, read and written here only.

``autograded/<student>/<assignment>/grading.json`` holds a :class:`Result`. ``course autograde``
writes it (:func:`write_record`) and reads it back to keep an unchanged submission's grades;
``course grades``, ``course feedback`` and the LMS export read it (:func:`read_record`), each through
the same validation. Beside it, ``explanation.json`` holds every replayed call with its values,
hidden ones included (:class:`Probe`), which only ``course explain`` reads (:func:`read_explanation`):
the record holds no hidden value. Torch-free, so that none of them imports the grader.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from course_tools.course import Assignment
from course_tools.untrusted import Missing, Unreadable, read_bytes, safe_data

GRADED, REVIEW, FAILED, NOT_SUBMITTED = "graded", "needs manual review", "failed to grade", "not submitted"
STATUSES = (GRADED, REVIEW, FAILED, NOT_SUBMITTED)
RECORD = "grading.json"
EXPLANATION = "explanation.json"  # the probes, hidden values included: `course explain` alone reads it
MAX_RECORD_BYTES = 16 << 20


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
class Probe:
    """One call a test cell makes, as the grader replayed it: for the instructor alone (`course explain`)."""

    grade_id: str  # the test cell
    number: int  # its place among the cell's calls (the student's message says "check N of M")
    target: str  # the function or Class.method called
    hidden: bool
    run: str  # "the submission's run", or a cascade run with the exercises it builds on corrected
    outcome: str  # "passed", "failed" or "not compared" (its run failed)
    counted: bool  # False after the cell's first failed call: the verdict was already decided
    difference: str  # the whole difference, values included ("" when it passed)
    inputs: str  # short text of the arguments (:mod:`.probe_report`)
    expected: str  # short text of what the solution returned
    returned: str  # short text of what the student's code returned, or the error it raised


@dataclass
class Result:
    student: str
    assignment: str
    status: str  # one of STATUSES
    score: float | None
    max_score: float
    checks: list[Check] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why it needs a person, or why it failed
    notes: list[str] = field(default_factory=list)  # what the student should know about their submission
    findings: list[str] = field(default_factory=list)  # what the lint found in the answer cells
    seconds: float = 0.0
    submission: str = ""  # digest of what was graded (submission_digest): a rerun keeps an unchanged one
    grader: str = ""  # the reference it was graded against (its cache key: tests, solution and course_lib)
    kept: bool = False  # not graded in this run: the submission and the grader are those of the record
    variant: int = 0  # the variant of the hidden inputs it was graded on (grading.variants), of ...
    variants: int = 1  # ... the number the course had
    probes: list[Probe] = field(default_factory=list)  # every replayed call: saved apart (EXPLANATION)


class BadRecord(ValueError):
    """A grading record that cannot be read or is not one this version writes; the text says which."""


def write_record(folder: Path, result: Result) -> None:
    """``result`` as ``folder/grading.json``, whole or not at all (a record says its grades are saved),
    its probes apart in ``folder/explanation.json``: the record itself holds no hidden value."""
    for name, content in ((EXPLANATION, [asdict(probe)
                                         for probe in result.probes]), (RECORD, record_data(result))):
        partial = folder / f".{name}.partial"
        partial.write_text(json.dumps(safe_data(content), indent=1), encoding="utf-8")
        os.replace(partial, folder / name)


def record_data(result: Result) -> dict:
    """What ``grading.json`` holds of ``result``: everything but its probes."""
    return {name: value for name, value in asdict(result).items() if name != "probes"}


def recorded_students(assignment: Assignment) -> list[str]:
    """The students whose grading folder of ``assignment`` holds a record (read or not), by folder name."""
    return [student for student in assignment.autograded_students()
            if os.path.lexists(assignment.autograded(student) / RECORD)]


def read_record(assignment: Assignment, student: str) -> Result | None:
    """The record of ``student``'s ``assignment``; None when there is none, :class:`BadRecord` when
    there is one that cannot be read (a link, a FIFO, too big, not JSON, not a record)."""
    data = _read_json(assignment, student, RECORD)
    return None if data is None else _result(data)


def read_explanation(assignment: Assignment, student: str) -> list[Probe]:
    """The probes saved beside ``student``'s record (:data:`EXPLANATION`); [] when there are none,
    :class:`BadRecord` when the file cannot be read."""
    data = _read_json(assignment, student, EXPLANATION)
    return [] if data is None else _probes(data)


def _read_json(assignment: Assignment, student: str, name: str) -> object | None:
    try:
        return safe_data(json.loads(read_bytes(assignment.autograded(student) / name, MAX_RECORD_BYTES,
                                               root=assignment.autograded_root).decode("utf-8", "replace")))
    except Missing:
        return None
    except Unreadable as error:
        raise BadRecord(str(error)) from None
    except (ValueError, RecursionError) as error:
        raise BadRecord(f"{name} is not JSON ({type(error).__name__})") from None


def _probes(data: object) -> list[Probe]:
    if not isinstance(data, list) or not all(isinstance(p, dict) and set(p) == {f.name for f in fields(Probe)}
                                             for p in data):
        raise BadRecord(f"{EXPLANATION}: not this version's")
    probes = [Probe(**p) for p in data]
    if not all(
            isinstance(getattr(p, f.name), {"str": str, "bool": bool, "int": int}[f.type]) and
            not (f.type == "int" and isinstance(p.number, bool)) for p in probes for f in fields(Probe)):
        raise BadRecord(f"{EXPLANATION}: a field of the wrong type")
    return probes


# Fields a record written before they existed lacks; it was graded as their defaults say (before
# variants, every student had the hidden inputs of variant 0 of 1), so it reads with them.
ADDED_SINCE = {"variant": 0, "variants": 1}


def _result(data: object) -> Result:
    expected = {f.name for f in fields(Result)} - {"probes"}
    if isinstance(data, dict) and set(data) | set(ADDED_SINCE) == expected:
        data = {**ADDED_SINCE, **data}
    if not isinstance(data, dict) or set(data) != expected:
        raise BadRecord(f"{RECORD} is not a grading record of this version")
    checks = data["checks"]
    if not isinstance(checks, list) or not all(isinstance(c, dict) and set(c) == {f.name
                                                                                  for f in fields(Check)}
                                               for c in checks):
        raise BadRecord(f"{RECORD}: its checks are not this version's")
    result = Result(**{**data, "checks": [Check(**check) for check in checks]})
    numbers = [result.max_score, result.seconds] + [n for c in result.checks for n in (c.points, c.score)]
    texts = [
        result.student, result.assignment, result.submission, result.grader, *result.reasons, *result.notes,
        *result.findings
    ] + [t for c in result.checks for t in (c.grade_id, c.status, c.message)]
    if (
        result.status not in STATUSES
        or not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers)
        or not (result.score is None or isinstance(result.score, (int, float)))
        or not all(isinstance(t, str) for t in texts)
        or not all(isinstance(x, list) for x in (result.reasons, result.notes, result.findings))
        or not all(isinstance(b, bool) for b in [result.kept] + [c.verified for c in result.checks])
        or not all(type(n) is int for n in (result.variant, result.variants))
        or not 0 <= result.variant < result.variants
    ):
        raise BadRecord(f"{RECORD}: a field of the wrong type")
    return result
