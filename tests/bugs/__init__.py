"""Catalogues of plausible wrong implementations, one module per assignment.

Each module ``tests/bugs/<assignment_id>.py`` defines ``TEMPLATES``, graded function or class ->
its correct code (the base template), and ``BUGS``: for every graded function or class, at least
three redefinitions that contain one mistake a student could plausibly make. Every bug is its
target's template with one mistake substituted in (``variant``), so it differs from correct code by
exactly the mistake its description names. The harness (tests/test_bug_catalogue.py) first proves
that each template, unmutated, passes every graded cell, then that each bug fails at least one.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import NamedTuple


class Bug(NamedTuple):
    target: str  # the graded function or class the bug replaces
    description: str  # the mistake, in a few words
    code: str  # a complete redefinition of ``target`` containing the mistake


def variant(base: str, old: str, new: str) -> str:
    """``base`` with ``old`` replaced by ``new``; ``old`` must occur exactly once (a typo in a bug must
    fail here, not produce a bug that is silently the correct code or a different mistake)."""
    count = base.count(old)
    assert count == 1, f"a bug's template must contain {old!r} exactly once, it contains it {count} times"
    assert old != new, f"a bug that replaces {old!r} by itself changes nothing"
    return base.replace(old, new)


def _module(assignment_id: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"tests.bugs.{assignment_id}")
    except ModuleNotFoundError as error:
        if error.name == f"tests.bugs.{assignment_id}":
            return None
        raise


def catalogue(assignment_id: str) -> list[Bug]:
    """The bugs of one assignment (an empty list when it has no catalogue yet)."""
    module = _module(assignment_id)
    return [] if module is None else list(module.BUGS)


def templates(assignment_id: str) -> dict[str, str]:
    """Target -> the correct base code its bugs are derived from (empty when there is no catalogue)."""
    module = _module(assignment_id)
    return {} if module is None else dict(module.TEMPLATES)
