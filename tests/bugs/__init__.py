"""Catalogues of plausible wrong implementations, one module per assignment.

Each module ``tests/bugs/<assignment_id>.py`` defines ``BUGS``: for every graded function or class,
at least three redefinitions that contain one mistake a student could plausibly make. The harness
(tests/test_bug_catalogue.py) proves that each of them fails at least one graded test cell.
"""
from __future__ import annotations

import importlib
from typing import NamedTuple


class Bug(NamedTuple):
    target: str  # the graded function or class the bug replaces
    description: str  # the mistake, in a few words
    code: str  # a complete redefinition of ``target`` containing the mistake


def catalogue(assignment_id: str) -> list[Bug]:
    """The bugs of one assignment (an empty list when it has no catalogue yet)."""
    try:
        module = importlib.import_module(f"tests.bugs.{assignment_id}")
    except ModuleNotFoundError as error:
        if error.name == f"tests.bugs.{assignment_id}":
            return []
        raise
    return list(module.BUGS)
