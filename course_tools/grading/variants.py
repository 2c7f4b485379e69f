"""Which variant of an assignment's hidden inputs each student gets.

The number of variants is configured once, in ``nbgrader_config.py``::

    c.HiddenVariants.count = 4   # 1 (the default): everyone's hidden checks use the notebook's own inputs

A submission's variant is a keyed hash of the assignment, the student's id (the folder under
``submitted/``, which the collectors name from what the exchange or the LMS vouches for) and the
digest of the submission itself: the same submission gets the same variant on every run and
regrade, and a changed one draws again, so hidden inputs a student may have learnt from one grading
are worth nothing to the next submission. The key (:data:`KEY_FILE`, made once, the instructor's
alone like everything in the course folder) keeps a student from computing which variant an edit
would draw, and so from choosing one.

Variant 0 is the notebook as written; variant ``v > 0`` draws the hidden checks' inputs from other
seeds (:mod:`.sandboxed.hidden_parts`), its expected values recorded from the solution
like variant 0's, in the same record run (:func:`.reference.build_references`, cached per variant:
:func:`variant_probes`). The visible checks are the same calls in every variant.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from traitlets import Int, TraitError
from traitlets.config import Configurable

from course_tools.course import CourseError, nbgrader_config


class HiddenVariants(Configurable):
    """The number of variants of every assignment's hidden inputs."""

    count = Int(1, min=1, max=1000,
                help="how many variants of the hidden checks' inputs each assignment has: a student's "
                     "is chosen by a hash of their id (1: the notebook's own inputs for everyone)",
                ).tag(config=True)


def variant_count(root: Path) -> int:
    """``c.HiddenVariants.count`` of the course's ``nbgrader_config.py`` (1 when it says nothing)."""
    try:
        return HiddenVariants(config=nbgrader_config(root)).count
    except TraitError as error:
        raise CourseError(f"nbgrader_config.py: c.HiddenVariants.count must be a whole number from 1 to 1000 "
                          f"({error})") from None


KEY_FILE = "hidden-variants.key"


def variant_key(root: Path) -> bytes:
    """The course's key of the variants (``KEY_FILE``), made the first time it is needed."""
    path = root / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        key = bytes.fromhex(path.read_text(encoding="ascii").strip())
        if len(key) < 16:
            raise CourseError(f"{path}: not a key of the hidden variants; delete it to make a new one "
                              "(every submission then draws its variant again)") from None
        return key
    with os.fdopen(fd, "w", encoding="ascii") as stream:
        stream.write(secrets.token_hex(32) + "\n")
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def variant_of(assignment_id: str, student: str, submission: str | None, count: int, key: bytes) -> int:
    """The variant of ``assignment_id`` that ``student``'s submission (its digest, None for none)
    gets, of ``count``: HMAC-SHA-256 of all three under the course's ``key`` (Python's ``hash()`` of a
    string changes with every process)."""
    message = f"{assignment_id}\0{student}\0{submission or ''}".encode("utf-8", "surrogateescape")
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % count


def variant_probes(calls: list[dict], variant: int) -> list[int]:
    """The probes of a record of several variants (``calls``) that make ``variant``'s reference, in
    order: every visible one, the hidden ones of ``variant``, and any call that built the object of a
    method among them. A record from before variants names no variant: all of it is variant 0's."""
    chosen = {k for k, call in enumerate(calls)
              if call.get("segment") != "hidden" or (call.get("variant") or 0) == variant}
    todo = list(chosen)
    while todo:
        builder = calls[todo.pop()].get("instance")
        if builder is not None and builder not in chosen:
            chosen.add(builder)
            todo.append(builder)
    return sorted(chosen)
