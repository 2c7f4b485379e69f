"""``course sample``: the autograder on a sample class, to see that grading works before students submit.

For each assignment, a scratch copy of the course (``build/sample/``, replaced on every run) gets
two submissions: ``sample-solution`` (the instructor's solution notebook, which must get full marks)
and ``sample-release`` (the untouched student release, which must get none). ``course autograde``
grades both in its sandbox, then the table shows what each got against what it should get::

    course sample                    # every assignment
    course sample 02_attention --jobs 2

The course's own gradebook and ``submitted/`` folder are never touched.
"""
from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path
from typing import Iterable, TextIO

from course_tools.course import Assignment, CourseError

# student -> (which notebook it submits, the score it must get: "full" or "zero")
SAMPLE_CLASS = {"sample-solution": ("source", "full"), "sample-release": ("release", "zero")}


def scratch_course(root: Path, scratch: Path, selected: Iterable[Assignment]) -> None:
    """``scratch`` as a course of its own: the nbgrader config and the selected assignments, no students."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(root / "nbgrader_config.py", scratch / "nbgrader_config.py")
    for assignment in selected:
        for notebook in (assignment.source, assignment.release):
            relative = notebook.parent.relative_to(root)
            shutil.copytree(notebook.parent, scratch / relative)


def submit(course: Path, student: str, assignment: str, notebook: Path) -> Path:
    """Put ``notebook`` where ``course autograde`` looks for ``student``'s submission of ``assignment``."""
    target = Assignment(assignment, course)
    folder = target.submitted(student)
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(notebook, folder / target.release.name))


def sample(root: Path, selected: list[Assignment], scratch: Path, *, jobs: int = 1,
           out: TextIO | None = None) -> bool:
    """Grade the sample class of every selected assignment in ``scratch``; True when each got what it must."""
    from course_tools.grading.autograde import autograde
    from course_tools.untrusted import safe_text, text_table

    out = out or sys.stdout
    missing = [str(a.release) for a in selected if not a.release.is_file()]
    if missing:
        raise CourseError(f"no release to submit: {', '.join(missing)} (run `course release` first)")
    scratch_course(root, scratch, selected)
    rows, as_expected = [], True
    for assignment in selected:
        for student, (notebook, _) in SAMPLE_CLASS.items():
            copy = scratch / getattr(assignment, notebook).relative_to(root)
            submit(scratch, student, assignment.id, copy)
        log = io.StringIO()  # the per-student report; the table below says what matters
        for result in autograde(scratch, assignment.id, jobs=jobs, out=log, progress=False):
            expected = SAMPLE_CLASS[result.student][1]
            score = result.score if result.score is not None else float("nan")
            ok = score == (result.max_score if expected == "full" else 0)
            as_expected &= ok
            rows.append(
                (assignment.id, result.student, f"{score:g} / {result.max_score:g}", expected, result.status,
                 "ok" if ok else "WRONG: " + safe_text("; ".join(result.reasons), one_line=True)[:200]))
    for line in text_table([_HEADER, *[tuple(str(cell) for cell in row) for row in rows]]):
        print(line, file=out)
    print(f"sample class graded in {scratch}" + ("" if as_expected else ": some grades are WRONG"), file=out)
    return as_expected


_HEADER = ("assignment", "student", "score", "must get", "status", "")
