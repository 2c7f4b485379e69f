"""The errors a graded check raises, in a module of their own.

:mod:`course_lib.grading` (the checks), :mod:`course_lib.guards` (``forbid()``) and
:mod:`course_lib.allowlist` (what Validate shows of the grader's lint) all raise them, and grading
imports the other two: here, below all three, none of them imports another to raise. The notebooks
import them from :mod:`course_lib.grading`, and that is the name they show in a traceback.
"""
from __future__ import annotations


class GradingError(AssertionError):
    """A graded check failed; the message names the exercise and the difference."""

    __module__ = "course_lib.grading"


class ForbiddenCallError(GradingError):
    """The exercise called a function it is meant to implement itself."""

    __module__ = "course_lib.grading"


class ThreadRefusedError(ForbiddenCallError, RuntimeError):
    """The checked code started a thread: a RuntimeError too, as when a process may start no more, which
    libraries that start a helper thread (tqdm's monitor, matplotlib's timer) already handle."""

    __module__ = "course_lib.grading"
