"""nbgrader's exchange, the shared folder through which a hub's students fetch, submit and read
feedback: ``course release --exchange``, ``course collect`` and ``course feedback --release``.

The exchange is ``Exchange.root`` of the course's nbgrader_config.py (``build/exchange/``), laid
out and permissioned by nbgrader itself: the root
world-writable, ``<course>/outbound/`` readable by all, ``<course>/inbound/`` writable but not
listable by students (0733), ``<course>/feedback/`` traversable only (0711), a student's feedback
file named by a hash of a secret only their submission holds.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import TextIO

from .course import Assignment, CourseError, nbgrader_config

# nbgrader writes this secret into each submission; its feedback is released under a hash of it
SECRET = "submission_secret.txt"
TIMESTAMP = "timestamp.txt"


def _api(root: Path, **overrides: dict):
    from nbgrader.apps import NbGraderAPI

    return NbGraderAPI(config=nbgrader_config(root, **overrides))


def _checked(result: dict, what: str) -> str:
    """nbgrader's captured log, or a CourseError with the error nbgrader logged."""
    log = result.get("log", "")
    if not result["success"]:
        errors = [line for line in log.splitlines() if line.startswith("[ERROR]")]
        reason = errors[-1][len("[ERROR] "):] if errors else (result.get("error") or "").strip().splitlines()[-1:]
        raise CourseError(f"{what}: {reason or 'nbgrader gave no reason'}")
    return log


def exchange_root(root: Path) -> Path:
    return Path(nbgrader_config(root).Exchange.root)


def release_to_exchange(assignment: Assignment, out: TextIO | None = None) -> None:
    """Publish ``notebooks/<id>/`` to the exchange; an earlier release of it is replaced (students who
    fetched it keep their copy)."""
    out = out or sys.stdout
    # force: the release is regenerated from solutions/, so a newer one always replaces the older
    api = _api(assignment.root, ExchangeReleaseAssignment={"force": True})
    _checked(api.release_assignment(assignment.id), f"{assignment.id}: nbgrader could not release it to the exchange")
    print(f"released {assignment.id} to the exchange ({api.coursedir.course_id} in {exchange_root(assignment.root)})",
          file=out)


def collect_from_exchange(assignment: Assignment, out: TextIO | None = None) -> list[str]:
    """Each student's latest submission into ``submitted/<student>/<id>/``; the students collected."""
    out = out or sys.stdout
    log = _checked(_api(assignment.root).collect(assignment.id, update=True),
                   f"{assignment.id}: nbgrader could not collect it from the exchange")
    collected = sorted(re.findall(r"(?:Collecting|Updating) submission: (\S+) ", log))
    print(f"collected {len(collected)} new submission(s) of {assignment.id} into submitted/: "
          f"{', '.join(collected) or 'none'}", file=out)
    return collected


def release_feedback_to_exchange(assignment: Assignment, students: list[str] | None = None,
                                 out: TextIO | None = None) -> int:
    """Put each ``feedback/<student>/<id>/*.html`` into the exchange for the student's Assignments tab.

    A page can be released only for a submission that came through the exchange: its hash comes
    from the secret nbgrader wrote into that submission. Returns 1 when some page could not be.
    """
    out = out or sys.stdout
    root = assignment.root
    api = _api(root)
    released, missing = [], []
    for folder in sorted((root / "feedback").glob(f"*/{assignment.id}")):
        student = folder.parent.name
        if students and student not in students or not any(folder.glob("*.html")):
            continue
        submission = root / "submitted" / student / assignment.id
        if not (submission / SECRET).is_file():
            missing.append(student)
            continue
        for name in (SECRET, TIMESTAMP):  # nbgrader reads them beside the page, as its generate_feedback leaves them
            shutil.copy(submission / name, folder / name)
        _checked(api.release_feedback(assignment.id, student),
                 f"{assignment.id}: nbgrader could not release {student}'s feedback")
        released.append(student)
    print(f"released feedback on {assignment.id} to the exchange for {len(released)} student(s): "
          f"{', '.join(released) or 'none'}", file=out)
    if missing:
        print(f"not released for {len(missing)}: their submission did not come through the exchange "
              f"(no {SECRET}), give them feedback/<student>/{assignment.id}/ another way: {', '.join(missing)}",
              file=out)
    return 1 if missing else 0
