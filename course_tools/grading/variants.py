"""Which variant of an assignment's hidden inputs each student gets.

The number of variants is configured once, in ``nbgrader_config.py``::

    c.HiddenVariants.count = 4   # 1 (the default): everyone's hidden checks use the notebook's own inputs

A student's variant is a stable hash of the assignment and the student's id (the folder under
``submitted/``, which the collectors name from what the exchange or the LMS vouches for, never
from the student's files), so it is the same on every machine, run and regrade, and no submission
can choose it. Variant 0 is the notebook as written; variant ``v > 0`` draws the hidden checks'
inputs from other seeds (:mod:`.sandboxed.variants`), its expected values recorded from the solution
like variant 0's, in the same record run (:func:`.reference.build_references`, cached per variant:
:func:`variant_probes`). The visible checks are the same calls in every variant.
"""
from __future__ import annotations

import hashlib
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


def variant_of(assignment_id: str, student: str, count: int) -> int:
    """The variant of ``assignment_id`` that ``student`` gets, of ``count``: SHA-256 of both (Python's
    ``hash()`` of a string changes with every process)."""
    digest = hashlib.sha256(f"{assignment_id}\0{student}".encode("utf-8", "surrogateescape")).digest()
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
