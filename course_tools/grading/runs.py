"""One sandboxed run of a plan of cells, resumed past every cell that crashes or hangs.

The runner reports each step's start and end in ``events.jsonl``; the parent times the running step
from it, in CPU seconds of the sandbox (a wall-clock backstop aside: :func:`.sandbox.backstop`).
The parent creates that file itself before each run and reads it through the descriptor it
keeps, so whatever the student's code later puts at its path (a FIFO, a link) changes nothing it
reads; everything else read back from the outbox goes through :mod:`.untrusted`. When a step
breaks a limit or kills the process, the plan runs again from the start with that step skipped and
its reason recorded, so one bad function costs only the tests that call it.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from course_tools.grading.sandboxed.protocol import EVENTS, PLAN, PROBES, RESULT
from course_tools.untrusted import Unreadable, read_fd, read_range, safe_data

from .channel import ProbeServer
from .limits import Ended, Limits, Stop, backstop, describe_end, describe_exit, measured
from .sandbox import Sandbox
from .spec import RunSpec

MAX_ATTEMPTS = 8
MAX_EVENTS_BYTES = 8 << 20
LOG_TAIL_BYTES = 20_000


@dataclass
class Run:
    outbox: Path
    steps: dict[int, dict] = field(default_factory=dict)  # step -> its end event (ok, error, skipped)
    failure: str | None = None  # the run could not even start: nothing was graded
    spent: str = ""  # the student's time limit for all their runs cut it short: what it said
    skipped: dict[int, str] = field(default_factory=dict)  # step -> why the grader did not run it
    seconds: float = 0.0
    attempts: int = 0
    log: str = ""
    premature: list[str] = field(default_factory=list)  # what the run asked of the probe server too early
    handed: list[tuple[str, int]] = field(default_factory=list)  # the probe server's log (ProbeServer.log)
    results: dict[tuple[int, int], bytes] = field(default_factory=dict)  # ProbeServer.results
    refused: dict[int, str] = field(default_factory=dict)  # probe -> why the server kept no result

    def result(self, probe: int, what: int = RESULT):
        """The only reader of a replayed check's result (``what``: RESULT, or PERTURBED in check mode)
        as the runner sent it: unpickled with ``weights_only=True``, so no code runs, and its strings
        made safe (lone surrogates replaced); None when there is none or it is not what the runner
        sends."""
        import io

        import torch

        data = self.results.get((probe, what))
        try:
            return None if data is None else safe_data(torch.load(io.BytesIO(data), weights_only=True),
                                                        strip_controls=False)
        except Exception:  # truncated, or not what the runner sends: "no answer"
            return None

    def outcomes(self, first_step: int, replay: list[int], limits: Limits) -> dict[int, dict | None]:
        """Each probe of ``replay`` (the plan's steps from ``first_step`` on, in order): its result, or
        why it has none (``error``; ``by_grader``: the grader's own words, not the student's code's)."""
        outcomes: dict[int, dict | None] = {}
        for step, k in enumerate(replay, first_step):
            event = self.steps.get(step, {})
            if step in self.skipped:  # a limit the step broke, or the notebook stopped
                outcomes[k] = {"error": self.skipped[step], "by_grader": True}
            elif isinstance(event.get("exit"), int):  # the check's own process ended (a crash, os._exit)
                outcomes[k] = {"error": f"not run: {describe_exit(event['exit'], limits)}", "by_grader": True}
            elif k in self.refused:
                outcomes[k] = {"error": f"not kept: {self.refused[k]}", "by_grader": True}
            elif event.get("ok"):
                outcomes[k] = self.result(k)
            elif event:
                outcomes[k] = {"error": str(event.get("error") or "an exception")[:500]}
            else:
                outcomes[k] = {"error": "not run: the notebook stopped before it", "by_grader": True}
        return outcomes

    @property
    def tampering(self) -> list[str]:
        """What the run asked of the probe server before its time, which no grading run does: reasons
        for a person."""
        return [f"{what}: a way around the grader, which no answer needs: a person should look at it"
                for what in dict.fromkeys(self.premature)]


class StepWatch:
    """Reads new events as they come and stops the running step once it is over its time: its CPU
    seconds (the limit), or its wall-clock seconds (a backstop for code that sleeps).

    It creates ``path`` (which must not exist yet: the outbox is fresh) before the sandbox starts
    and keeps it open: the runner appends to that file, and the parent reads that file through its
    own descriptor even if the student's code renames it or puts a FIFO or a link at its path. At
    most ``MAX_EVENTS_BYTES`` are read. :meth:`finish` reads the rest and closes it.
    """

    def __init__(self, path: Path, limit_s: float, after_seal: set[int] = frozenset()):
        self.path, self.limit_s, self.after_seal = path, limit_s, after_seal
        self.lock = threading.Lock()  # the probe server seals from its own thread
        self.sealed_at: int | None = None
        self.fd: int | None = os.open(path,
                                      os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                      0o644)
        self.offset, self.buffer = 0, b""
        self.events: list[dict] = []
        self.running: int | None = None
        self.since = (0.0, 0.0)  # the run's (CPU, wall-clock) seconds when the running step started
        self.now = (0.0, 0.0)

    def seal(self) -> None:
        """From now on, only the events of the steps in ``after_seal`` (the hidden checks) count."""
        with self.lock:
            try:
                self._read()
            except Unreadable:
                pass
            self.sealed_at = len(self.events)

    def _read(self) -> None:
        while self.fd is not None and self.offset < MAX_EVENTS_BYTES:
            chunk = read_fd(self.fd, self.offset, min(1 << 20, MAX_EVENTS_BYTES - self.offset), shown=EVENTS)
            if not chunk:
                return
            self.offset += len(chunk)
            lines = (self.buffer + chunk).split(b"\n")
            self.buffer = lines.pop()[-4096:]
            self._add(_parse(lines))

    def _add(self, events: list[dict]) -> None:
        for event in events:
            self.events.append(event)
            if event.get("start"):
                self.running, self.since = event.get("step"), self.now
            elif "ok" in event and event.get("step") == self.running:
                self.running = None

    def __call__(self, cpu: float, wall: float) -> Stop | None:
        self.now = (cpu, wall)
        with self.lock:
            try:
                self._read()
            except Unreadable:  # a read over its deadline: try again at the next poll
                pass
        if self.running is None:
            return None
        step_cpu, step_wall = cpu - self.since[0], wall - self.since[1]
        if step_cpu > self.limit_s:
            return Stop("step", measured(step_cpu, step_wall))
        if step_wall > backstop(self.limit_s):
            return Stop("step-wall", measured(step_cpu, step_wall))
        return None

    def finish(self) -> list[dict]:
        """Every event of the run (call it once the sandbox has ended); after a seal, only the hidden
        checks' and the end of the run."""
        with self.lock:
            try:
                self._read()
            except Unreadable:
                pass
            if self.fd is not None:
                self._add(_parse([self.buffer]))
                os.close(self.fd)
                self.fd, self.buffer = None, b""
        if self.sealed_at is None:
            return self.events
        return self.events[:self.sealed_at] + [e for e in self.events[self.sealed_at:]
                                               if e.get("done") is True or e.get("step") in self.after_seal]


def _parse(lines: list[bytes]) -> list[dict]:
    """The events among ``lines`` (the student's word: lone surrogates in their text are replaced)."""
    events = []
    for line in lines:
        try:
            event = safe_data(json.loads(line), strip_controls=False)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and (event.get("done") is True or isinstance(event.get("step"), int)):
            events.append(event)
    return events


def run_plan(sandbox: Sandbox, spec: RunSpec) -> Run:
    """Run ``spec`` (its plan: see :mod:`.sandboxed.runner`), again from the start with each step skipped that
    broke a limit or the process (and the steps ``spec.related`` names with it), at most
    ``MAX_ATTEMPTS`` times. The probes' inputs (``spec.probe_inputs``) never go in the inbox: the
    run gets them one check at a time over its channel (:class:`ProbeServer`)."""
    _fill_the_inbox(sandbox, spec)
    plan, limits = spec.plan, spec.limits
    calls = [] if spec.probe_inputs is None else json.loads((spec.inbox / PROBES).read_text(encoding="utf-8"))
    steps = len(plan.cells) + len(plan.replay)
    skip: dict[int, str] = {}
    started = time.monotonic()
    run = Run(spec.outbox)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        this = dataclasses.replace(spec, plan=dataclasses.replace(plan, skip=dict(skip)))
        ended, events = _attempt(sandbox, this, calls, run)
        run.attempts, run.log, run.skipped = attempt, _tail(spec.log), dict(skip)
        run.steps = {e["step"]: e for e in events if "ok" in e and 0 <= e.get("step", -1) < steps}
        started_steps = [e["step"] for e in events if e.get("start") and 0 <= e.get("step", -1) < steps]
        culprit = started_steps[-1] if started_steps and started_steps[-1] not in run.steps else None
        finished = len(run.steps) == steps
        if ended.why == "outbox" and culprit is None:  # filled up between two measurements, then exited
            run.failure = f"the grading process {describe_end(ended, limits)}"
            break
        if finished and (culprit is None):
            break
        if culprit is None:
            run.failure = f"the grading process stopped before its first cell: {describe_end(ended, limits)}"
            break
        skip[culprit] = f"not run: {describe_end(ended, limits)}"
        for step in spec.related(culprit):
            skip.setdefault(step, f"not run: step {culprit} {describe_end(ended, limits)}")
        if ended.why in ("budget", "budget-wall"):
            run.steps[culprit] = {"step": culprit, "ok": False, "error": skip[culprit], "skipped": True}
            run.skipped, run.spent = dict(skip), describe_end(ended, limits)
            break
    run.seconds = time.monotonic() - started
    return run


def _fill_the_inbox(sandbox: Sandbox, spec: RunSpec) -> None:
    spec.inbox.mkdir(parents=True, exist_ok=True)
    # Hard links instead of copies where the run cannot write to them: a read-only inbox, or a root
    # grader whose runs drop to a slot user.
    copy = link_or_copy if sandbox.isolated and (sandbox.root or not spec.warm) else shutil.copy2
    for name, path in spec.inputs.items():
        if path.is_dir():
            shutil.copytree(path, spec.inbox / name, dirs_exist_ok=True, copy_function=copy)
        else:
            shutil.copy(path, spec.inbox / name)
    _readable_by_the_sandbox(spec.inbox)


def _attempt(sandbox: Sandbox, spec: RunSpec, calls: list[dict], run: Run) -> tuple[Ended, list[dict]]:
    """One attempt at ``spec`` (its plan with this attempt's skips), in a fresh outbox: how it ended,
    and its events; what the probe server heard goes into ``run``."""
    shutil.rmtree(spec.outbox, ignore_errors=True)
    spec.outbox.mkdir()
    (spec.inbox / PLAN).write_text(spec.plan.dumps(), encoding="utf-8")
    os.chmod(spec.inbox / PLAN, 0o644)
    first = len(spec.plan.cells)
    hidden = {first + i for i, k in enumerate(spec.plan.replay) 
              if calls and calls[k].get("segment") == "hidden"}
    watch = StepWatch(spec.outbox / EVENTS, spec.limits.cell_s, hidden)
    server = ProbeServer(spec.probe_inputs, calls, spec.plan, spec.limits.outbox_bytes, watch.seal) \
        if spec.probe_inputs is not None else None
    try:
        ended = sandbox.run(spec, watch, server)
    finally:
        events = watch.finish()
        if server is not None:
            run.premature, run.handed = server.premature, server.log
            run.results, run.refused = server.results, server.refused
    return ended, events


def _readable_by_the_sandbox(inbox: Path) -> None:
    """Every folder of the inbox 0755 and every file 0644, whatever the umask: a root grader's runs
    drop to a slot user who owns none of it, and `course` runs with umask 077 (access.py). The inbox
    lies inside the course's private build/ folder, which that user reaches only through the
    sandbox's bind mount."""
    for folder, _, names in os.walk(inbox):
        os.chmod(folder, 0o755)
        for name in names:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode) and stat.S_IMODE(mode) != 0o644:
                os.chmod(path, 0o644)


def link_or_copy(source: str, target: str) -> str:
    """A hard link to ``source`` when only its owner may write it and it is on the same file system,
    else a copy."""
    try:
        if not os.stat(source).st_mode & 0o022:
            os.link(source, target)
            return target
    except OSError:
        pass
    return shutil.copy2(source, target)


def _tail(path: Path) -> str:
    try:
        return read_range(path, -LOG_TAIL_BYTES, LOG_TAIL_BYTES).decode("utf-8", errors="replace")
    except (Unreadable, OSError):
        return ""
