"""One sandboxed run as the grader asks for it: :class:`RunSpec`, the only way into the sandbox.

A run's settings are put together here once, by whoever asks for the run (a student's grading, the
reference build), and travel unchanged: :func:`.runs.run_plan` prepares the inbox from it and resumes
the run past crashes, :meth:`.sandbox.Sandbox.run` builds the runner's command line from it
(:func:`.sandboxed.protocol.runner_arguments`) and starts it, cold or in the slot's zygote.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from course_tools.grading.sandboxed.protocol import Plan

from .limits import Budget, Limits


def _nothing_related(step: int) -> list[int]:
    return []


@dataclass(frozen=True)
class RunSpec:
    """What one run is: its plan and everything it reads, its limits and the account it is charged
    to, and where it runs."""

    plan: Plan  # the cells and the probes (sandboxed.runner); each attempt's has its own skips
    workdir: Path  # the run's folder: in/ (the inbox), out/ (the outbox), log.txt
    inputs: Mapping[str, Path]  # name in the inbox -> file or folder
    limits: Limits
    budget: Budget  # the student's time for all their runs, charged with this one's
    slot: int = 0  # the batch's sandbox slot (a root grader's runs drop to its user)
    # in the slot's zygote (a fork of a runner that has imported torch); False: a new Python, the fallback
    # when no zygote starts
    warm: bool = True
    course_lib: Path | None = None  # a redacted copy mounted over the installed package
    probe_inputs: Path | None = None  # the probes' pickled inputs, handed over by the channel
    # the steps to skip along with one that broke the process (a crashed test cell's other replays)
    related: Callable[[int], list[int]] = field(default=_nothing_related, compare=False)

    @property
    def inbox(self) -> Path:
        return self.workdir / "in"

    @property
    def outbox(self) -> Path:
        return self.workdir / "out"

    @property
    def log(self) -> Path:
        return self.workdir / "log.txt"

    @classmethod
    def of(cls, plan: Plan, workdir: Path, inputs: Mapping[str, Path], limits: Limits,
           budget: Budget | None = None, **where) -> RunSpec:
        """A run charged to ``budget`` (by default an account of its own, of ``limits.student_s``);
        ``where``: the other fields."""
        return cls(plan, workdir, dict(inputs), limits, budget or Budget(limits.student_s), **where)
