"""A sandbox's processes seen from the trusted parent: their CPU time and memory read from ``/proc``,
the limits enforced while a run goes on (:func:`watch_limits`), its output drained to a capped log,
and the whole tree killed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .limits import Budget, Ended, Limits, Stop, measured

POLL_S = 0.1
USAGE_EVERY = 2  # polls between two measurements of the sandbox's processes (CPU time, memory)
OUTBOX_EVERY = 2  # polls between two measurements of what the run wrote
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Usage:
    cpu_s: float  # CPU seconds (since a baseline, where one is given)
    resident_bytes: int


@dataclass
class Watched:
    """A run as the parent sees it while it goes on."""

    finished: Callable[[float], bool]  # whether it has ended, waiting at most the seconds given
    started: float  # time.monotonic() when it started
    printed: "Drain"  # its output
    written: Callable[[int], int]  # the bytes it has written (the count may stop above the number given)
    usage: Callable[[], "Usage"]  # CPU seconds and resident memory of its processes
    base: float = 0.0  # CPU seconds before the run (a warm zygote's own): not the run's


def watch_limits(run: Watched, limits: Limits, budget: Budget,
                 watch: Callable[[float, float], Stop | None]) -> tuple[Stop | None, "Usage"]:
    """Wait for ``run`` to finish while it keeps within ``limits``, ``budget`` and ``watch`` (a limit
    of the caller's, given the run's CPU and wall-clock seconds so far): the limit it broke (None
    when it finished first), and its usage as last measured."""
    polls, last = 0, Usage(0.0, 0)
    while not run.finished(POLL_S):
        polls += 1
        wall = time.monotonic() - run.started
        if polls % USAGE_EVERY == 0:
            now = run.usage()
            last = Usage(now.cpu_s - run.base, now.resident_bytes)
        cpu_used, wall_used = budget.cpu_used + last.cpu_s, budget.wall_used + wall
        if cpu_used > budget.cpu_s:
            return Stop("budget", measured(cpu_used, wall_used)), last
        if wall_used > budget.wall_s:
            return Stop("budget-wall", measured(cpu_used, wall_used)), last
        if run.printed.total > limits.output_bytes:
            return Stop("output"), last
        if last.resident_bytes > limits.memory_bytes:
            return Stop("memory"), last
        if polls % OUTBOX_EVERY == 0 and run.written(limits.outbox_bytes) > limits.outbox_bytes:
            return Stop("outbox"), last
        stop = watch(last.cpu_s, wall)
        if stop:
            return stop, last
    return None, last


def ended(run: Watched, returncode: int, stop: Stop | None, usage: "Usage", limits: Limits,
          budget: Budget) -> Ended:
    """How ``run`` ended, its time charged to ``budget``."""
    wall = time.monotonic() - run.started
    budget.cpu_used += usage.cpu_s
    budget.wall_used += wall
    if not stop and run.written(limits.outbox_bytes) > limits.outbox_bytes:
        stop = Stop("outbox")  # filled between two measurements and exited: over the quota all the same
    return Ended(returncode, stop.why if stop else "", wall, usage.cpu_s, stop.measured if stop else "")


def host_pid(root: int, inside: int) -> int | None:
    """The host's process id of the process under ``root`` whose id in its namespace is ``inside``."""
    for pid in _processes(root):
        try:
            with open(f"/proc/{pid}/status") as status:
                ids = next(line for line in status if line.startswith("NSpid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        if len(ids) > 1 and int(ids[-1]) == inside:
            return pid
    return None


def _stat(pid: int) -> tuple[int, float, int]:
    """Process ``pid``'s parent, its CPU seconds with those of the children it reaped, and its resident
    bytes, from one read of ``/proc/<pid>/stat`` (OSError: it has ended)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # after the name: state, ppid, ... utime (12), stime, cutime, cstime ... rss (22)
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / TICK, int(fields[21]) * PAGE


def _scan() -> dict[int, tuple[int, float, int]]:
    """Every process of the machine: pid -> :func:`_stat`."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = _stat(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


# Each thread's children are listed in /proc/<pid>/task/<tid>/children where the kernel has
# CONFIG_PROC_CHILDREN: walking down from the sandbox reads a few files, where scanning reads one per
# process of the machine (a watched run measures its tree five times a second).
CHILDREN_LISTED = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _processes(pid: int) -> list[int]:
    """``pid`` and every process under it. In a PID namespace orphans are re-parented to its init,
    which is under bwrap, so a daemonised process stays in this tree."""
    children_of = _children
    if not CHILDREN_LISTED:
        scanned: dict[int, list[int]] = {}
        for member, (parent, _, _) in _scan().items():
            scanned.setdefault(parent, []).append(member)

        def children_of(parent: int) -> list[int]:
            return scanned.get(parent, [])
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children_of(current)
    return found


def _children(pid: int) -> list[int]:
    try:
        tasks = [task.name for task in os.scandir(f"/proc/{pid}/task")]
    except OSError:  # it has ended
        return []
    found = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
        except OSError:  # this thread has ended
            continue
    return found


def tree_usage(pid: int, skip: int | None = None) -> Usage:
    """The CPU seconds of the sandbox's process tree (each process's own and its reaped children's:
    the tree reaps every process of the sandbox, so the sum only grows), and the resident memory
    of its processes together (pages they share count in each of them), but ``skip``'s own."""
    cpu, resident = 0.0, 0
    for member in _processes(pid):
        try:
            _, seconds, size = _stat(member)
        except (OSError, ValueError, IndexError):
            continue
        cpu += seconds
        resident += size if member != skip else 0
    return Usage(cpu, resident)


class Drain(threading.Thread):
    """Copies the sandbox's output to ``log`` up to ``limit`` bytes, counting (and dropping) the rest."""

    def __init__(self, stream, log: Path, limit: int):
        super().__init__(daemon=True)
        self.stream, self.log, self.limit, self.total = stream, log, limit, 0
        self.start()

    def run(self) -> None:
        with open(self.log, "wb") as out:
            for chunk in iter(lambda: self.stream.read1(1 << 16), b""):
                if self.total < self.limit:
                    out.write(chunk[:self.limit - self.total])
                self.total += len(chunk)

    def join(self, timeout: float | None = 5.0) -> None:
        super().join(timeout)


def kill(process: subprocess.Popen) -> None:
    """Kill the whole sandbox: bwrap's session, and with it (die-with-parent) its PID namespace."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
