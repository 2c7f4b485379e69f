"""Catalogues of alternative *correct* implementations, one module per assignment.

The mirror of tests/bugs: each module ``tests/alternatives/<assignment_id>.py`` defines
``ALTERNATIVES``: for every graded function or class, at least two redefinitions that honour the
exercise's written contract in a different style (einsum instead of matmul, loops instead of
vectorised code, float64 inside, submodules created in another order, helpers in the answer cell,
extra keyword arguments with defaults, ...). The harness (tests/test_alternatives.py) proves that
each of them passes every graded test cell: a check that fails one of them tests more than the
contract says.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Alternative:
    target: str  # the graded function or class it replaces
    description: str  # the style, in a few words
    code: str  # a complete, correct redefinition of ``target`` (helpers allowed)


def catalogue(assignment_id: str) -> list[Alternative]:
    """The alternatives of one assignment (an empty list when it has no catalogue yet)."""
    try:
        module = importlib.import_module(f"tests.alternatives.{assignment_id}")
    except ModuleNotFoundError as error:
        if error.name == f"tests.alternatives.{assignment_id}":
            return []
        raise
    return list(module.ALTERNATIVES)
