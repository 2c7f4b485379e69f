"""What a student's runs may use (:class:`Limits`, :class:`Budget`), and how a run ended, in words.

Times are CPU seconds of all the sandbox's processes together, so that a busy machine changes the
time a run takes, never its grade; wall-clock time is only a generous backstop (:func:`backstop`).
"""
from __future__ import annotations

import signal
from dataclasses import dataclass

# Wall-clock time is only a backstop for code that sleeps or waits: a limit of C CPU seconds stops
# after WALL_FACTOR * C + WALL_GRACE_S seconds of wall-clock time. A run gets at least half a core
# on a machine as busy as two CPU-bound processes beside a --jobs 2 batch on two cores.
WALL_FACTOR = 3.0
WALL_GRACE_S = 10.0


def backstop(cpu_s: float) -> float:
    """The wall-clock seconds after which a limit of ``cpu_s`` CPU seconds stops a run that sleeps."""
    return WALL_FACTOR * cpu_s + WALL_GRACE_S


@dataclass(frozen=True)
class Limits:
    """What one student's runs may use. Defaults suit the smoke profile of a real notebook. Times are
    CPU seconds of all the sandbox's processes together (see :func:`backstop` for the wall clock)."""

    cell_s: float = 120.0  # one step (a cell, or one replayed call), like nbgrader's Execute.timeout
    student_s: float = 900.0  # all of one student's runs together: the main run and every cascade run
    memory_bytes: int = 6 << 30  # address space per process, and resident memory of all processes
    processes: int = 64  # processes and threads of the student's user id
    file_bytes: int = 64 << 20  # largest file the student's code may write
    output_bytes: int = 16 << 20  # printed output (stdout and stderr) of one run
    scratch_bytes: int = 1 << 30  # the writable working folder (a tmpfs, so it also counts as memory)
    shm_bytes: int = 64 << 20  # /dev/shm (a tmpfs too)
    # everything the run writes outside its tmpfs (results; probes when recording)
    outbox_bytes: int = 256 << 20
    threads: int = 1  # torch/OpenMP threads


@dataclass
class Budget:
    """The time all of one student's runs may take together, and what they have taken so far."""

    cpu_s: float
    cpu_used: float = 0.0
    wall_used: float = 0.0

    @property
    def wall_s(self) -> float:
        return backstop(self.cpu_s)

    def spent(self) -> bool:
        return self.cpu_used >= self.cpu_s or self.wall_used >= self.wall_s


@dataclass(frozen=True)
class Stop:
    """A limit a run broke, and what was measured when it did."""

    why: str  # "step", "step-wall", "budget", "budget-wall", "output", "memory" or "outbox"
    measured: str = ""


@dataclass
class Ended:
    """How a sandboxed run ended: ``why`` is empty when the process exited by itself."""

    returncode: int
    why: str
    seconds: float
    cpu_seconds: float = 0.0
    measured: str = ""  # what was measured when a limit stopped the run

    @property
    def signal(self) -> int | None:
        if self.returncode < 0:
            return -self.returncode
        return self.returncode - 128 if self.returncode > 128 else None


def measured(cpu_s: float, wall_s: float) -> str:
    return f"{cpu_s:.1f} s of CPU in {wall_s:.1f} s"


def describe_end(ended: Ended, limits: Limits) -> str:
    """A sentence for the instructor and the student: what stopped the run, and what was measured."""
    said = f" ({ended.measured})" if ended.measured else ""
    if ended.why == "step":
        return f"exceeded the {limits.cell_s:g} s CPU time limit of one step{said}"
    if ended.why == "step-wall":
        return f"exceeded the {backstop(limits.cell_s):g} s wall-clock time limit of one step{said}"
    if ended.why == "budget":
        return (f"exceeded this student's {limits.student_s:g} s CPU time limit for all of their runs "
                f"together{said}")
    if ended.why == "budget-wall":
        return (
            f"exceeded this student's {backstop(limits.student_s):g} s wall-clock time limit for all of "
            "their "
            f"runs together{said}")
    if ended.why == "output":
        return f"printed more than {limits.output_bytes / 2**20:.3g} MiB of output"
    if ended.why == "memory":
        return f"used more than {limits.memory_bytes / 2**30:.3g} GiB of memory"
    if ended.why == "outbox":
        return f"wrote more than {limits.outbox_bytes / 2**20:.3g} MiB of results"
    return describe_exit(ended.returncode, limits)


def describe_exit(returncode: int, limits: Limits) -> str:
    """What an exit status (negative: the signal) says about how the process ended."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else None
    if number == signal.SIGXFSZ:
        return f"wrote a file over the {limits.file_bytes / 2**20:.3g} MiB limit"
    if number == signal.SIGSEGV:
        return "crashed the Python process (segmentation fault)"
    if number is not None:
        try:
            return f"killed the Python process ({signal.Signals(number).name})"
        except ValueError:
            return f"killed the Python process (signal {number})"
    return f"ended the Python process (exit status {returncode})"
