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


# What the made bugs below call, defined once in the kernel before them (HELPERS): the bugs' own cells
# keep to the course's allowlist (course_lib.allowlist), as a student's answer must, so that Validate
# judges them by the contract they break and not by the tools that build them.
HELPERS = '''
import functools as _functools
import inspect as _inspect

import torch as _torch


def _in_place_change(value):
    """Change ``value`` (or the first thing it holds that can change) in place; True when it could."""
    if isinstance(value, _torch.Tensor):
        if value.numel() == 0:
            return False
        try:
            with _torch.no_grad():
                value.logical_not_() if value.dtype == _torch.bool else value.add_(1)
        except RuntimeError:  # an expanded view: no student could write into it either
            return False
        return True
    if isinstance(value, list):
        value.append(value[-1] if value else 0)
        return True
    if isinstance(value, dict):
        value[object()] = 0
        return True
    if isinstance(value, tuple):
        return any(_in_place_change(v) for v in value)
    return False


def _in_place_after(correct, parameter, args, kwargs):
    """After a call of ``correct``: change its argument ``parameter`` in place, noting whether it could."""
    given = _inspect.signature(correct).bind(*args, **kwargs).arguments
    if parameter in given and _in_place_change(given[parameter]):
        _in_place_changed.append(True)


def _named_as(made, correct):
    """``made`` under the name (and, for a function, the signature) of ``correct``."""
    if isinstance(correct, type):
        made.__name__ = made.__qualname__ = correct.__name__
    else:
        _functools.update_wrapper(made, correct)
    return made
'''

# The in-place bug: the correct definition, changing one argument in place after it has computed its
# result. Executed where the correct ``TARGET`` is defined (a solution session, or after the solution
# cell), so it wraps that; ``_in_place_changed`` records whether a call had anything to change there.
_IN_PLACE = '''
_in_place_changed = []
_in_place_correct = TARGET

if isinstance(_in_place_correct, type):
    class TARGET(_in_place_correct):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            _in_place_after(_in_place_correct.forward, "PARAMETER", (self, *args), kwargs)
            return out
else:
    def TARGET(*args, **kwargs):
        out = _in_place_correct(*args, **kwargs)
        _in_place_after(_in_place_correct, "PARAMETER", args, kwargs)
        return out
_named_as(TARGET, _in_place_correct)
'''


def in_place(target: str, parameter: str) -> str:
    """The code of a bug every exercise's contract rules out: ``target``, correct, except that it changes
    its argument ``parameter`` in place once it has its result (a tensor by one, a list or dict by one
    more item: ``x /= t``, ``masked_fill_``, ``tokens.append``). Whether any call passed something that
    could change there is in the kernel's ``_in_place_changed``. Run :data:`HELPERS` in the kernel first."""
    return _IN_PLACE.replace("TARGET", target).replace("PARAMETER", parameter)


# The extra-parameter bug: the correct module with one more learnable parameter, which it never uses.
# Every module's contract fixes its parameters (the grader copies the reference's into the student's
# module at each call, and cannot pair one it does not have: course_lib.roles).
_EXTRA_PARAMETER = '''
import torch as _torch

_extra_parameter_correct = TARGET


class TARGET(_extra_parameter_correct):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra_scale = _torch.nn.Parameter(_torch.ones(()))


_named_as(TARGET, _extra_parameter_correct)
'''


def with_extra_parameter(target: str) -> str:
    """The code of a bug every module's contract rules out: the module ``target``, correct, with one
    more learnable parameter (``extra_scale``, unused). Run :data:`HELPERS` in the kernel first."""
    return _EXTRA_PARAMETER.replace("TARGET", target)
