"""Running a student's code where it can reach nothing but itself.

The sandbox is bubblewrap (``bwrap``, Debian/Ubuntu package ``bubblewrap``): new PID, network, IPC
and mount namespaces, so a forgotten background process dies with the sandbox, nothing is reachable
over the network, and the only files in sight are the Python installation (read-only), the
``inbox`` the grader prepared (read-only), an ``outbox`` for results and a small scratch tmpfs that
is the working folder. The course folder, other students' submissions and the gradebook are not
mounted at all. When the grader runs as root, the runner drops to a per-slot user id, so that the
process limit counts only that student's processes; as an ordinary user, bwrap makes a user
namespace of its own, in which the run can make no further one.

Nothing a run can write outlives it unseen: the sandbox's own root and ``/dev`` are read-only,
``/dev/shm`` is a tmpfs of ``shm_bytes`` (wiped after each run like the scratch folder), and a
seccomp filter (:mod:`.seccomp`) refuses the kernel objects that would outlive every process of
the run or hold memory no limit counts (SysV IPC, memory files, keyrings, new namespaces).

For a batch, each slot keeps a warm runner (:mod:`.zygote`) in a sandbox built the same way, whose
one shared folder receives each run's inbox and outbox in turn; every run is a fork of it, and
what a run leaves behind is killed and wiped before the next (see that module for the guarantees).

Limits per process are set by the runner itself before any student code (address space, processes,
file size, no core dumps). The trusted parent adds what a process cannot limit for itself: CPU time
per step and for all of one student's runs together (measured from ``/proc``, so that a busy
machine changes the time a run takes, never its grade; wall-clock time is only a generous
backstop, for code that sleeps), the resident memory of all the sandbox's processes together, and
the size of everything the run writes outside its tmpfs (many files, each under the per-file
limit, would fill the grader's disk), measured without following links (:func:`.untrusted.tree_bytes`).

The grader's own working space (:class:`Scratch`: run plans with students' answers, the warm
runners' folders) is one folder only its owner can enter, removed when the grader ends, even by
``kill -9``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import seccomp
from course_tools.course import CourseError
from course_tools.untrusted import ENTRY_BYTES, tree_bytes

INBOX, OUTBOX, SCRATCH = "/sandbox/in", "/sandbox/out", "/sandbox/work"
SHM = "/dev/shm"
SLOT_UID_BASE = 64000  # sandboxes of a root grader run as uid/gid 64000 + slot
POLL_S = 0.1
USAGE_EVERY = 2  # polls between two measurements of the sandbox's processes (CPU time, memory)
OUTBOX_EVERY = 2  # polls between two measurements of what the run wrote
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
RUNNER = "course_tools.grading.sandboxed.runner"
ZYGOTE = "course_tools.grading.sandboxed.zygote"
ZYGOTE_START_S = 300.0  # a zygote that is not ready by then is given up; the run starts a new Python
# Wall-clock time is only a backstop for code that sleeps or waits: a limit of C CPU seconds stops
# after WALL_FACTOR * C + WALL_GRACE_S seconds of wall-clock time. A run gets at least half a core
# on a machine as busy as two CPU-bound processes beside a --jobs 2 batch on two cores.
WALL_FACTOR = 3.0
WALL_GRACE_S = 10.0
REAPER = "import shutil, sys\nsys.stdin.buffer.read()\nshutil.rmtree(sys.argv[1], ignore_errors=True)\n"


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
    outbox_bytes: int = 256 << 20  # everything the run writes outside its tmpfs (results; probes when recording)
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
        return f"exceeded this student's {limits.student_s:g} s CPU time limit for all of their runs together{said}"
    if ended.why == "budget-wall":
        return (f"exceeded this student's {backstop(limits.student_s):g} s wall-clock time limit for all of their "
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


class Scratch:
    """The grader's working space: one folder that only its owner can enter (the warm runners'
    folders inside it are mounted into their sandboxes, whose view does not depend on the folders
    above), removed when the grader ends, however it ends: a small reaper process holds the read end
    of a pipe whose write end only the grader holds, and removes the folder when it closes, which
    the kernel does when the grader exits, even killed with SIGKILL."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="course-grader-"))  # mode 0700
        self.reaper = subprocess.Popen([sys.executable, "-I", "-S", "-c", REAPER, str(self.folder)],
                                       stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.reaper.stdin.close()
        self.reaper.wait()


class Sandbox:
    """Builds and runs sandboxed commands; ``isolated=False`` is the documented unsafe fallback."""

    def __init__(self, isolated: bool = True):
        self.bwrap = shutil.which("bwrap") if isolated else None
        if isolated and not self.bwrap:
            raise CourseError(
                "bubblewrap (bwrap) is needed to grade untrusted submissions in isolation: install it "
                "(apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap), or pass "
                "--unsafe-no-sandbox to grade trusted notebooks with resource limits but no isolation")
        self.isolated = isolated
        self.root = os.geteuid() == 0
        self.warning = "" if isolated else (
            "unsafe: no sandbox, so submissions can read and write what you can, and processes they detach survive"
            + ("; as root, the process limit does not apply either" if self.root else ""))
        self.zygotes: dict[int, _Zygote] = {}  # slot -> its warm runner (see :mod:`.zygote`)
        self._scratch: Scratch | None = None
        self._lock = threading.Lock()

    @property
    def scratch(self) -> Path:
        """The grader's working folder (see :class:`Scratch`), made on first use."""
        with self._lock:
            if self._scratch is None:
                self._scratch = Scratch()
            return self._scratch.folder

    def close(self) -> None:
        """Stop the warm runners and remove the working folder (the end of a batch)."""
        for zygote in self.zygotes.values():
            zygote.close()
        self.zygotes.clear()
        if self._scratch is not None:
            self._scratch.close()
            self._scratch = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def run(self, argv: list[str], *, inbox: Path, outbox: Path, log: Path, limits: Limits, slot: int = 0,
            watch: Callable[[float, float], Stop | None] = lambda cpu, wall: None, course_lib: Path | None = None,
            warm: bool = False, budget: Budget | None = None,
            channel: Callable[[socket.socket], None] | None = None) -> Ended:
        """Run ``argv`` (whose paths use INBOX/OUTBOX/SCRATCH) until it exits or breaks a limit.

        ``course_lib``: a folder mounted over the installed course_lib package inside the sandbox
        (:mod:`.redacted`); the unsafe fallback cannot hide the installed one. ``warm``: ``argv`` runs
        :mod:`.runner`, and the slot's zygote (:mod:`.zygote`, kept for the batch, its mounted
        course_lib updated to ``course_lib``) forks it instead of a new Python importing everything again.
        ``watch(cpu, wall)``: a limit of the caller's, given the run's CPU and wall-clock seconds so
        far. ``budget``: the student's time for all their runs, charged with this one's.
        ``channel``: serves the parent's end of a socket whose other end the run gets as
        ``--channel-fd N`` (the probes' inputs, handed over one at a time: :class:`.runs.ProbeServer`).
        """
        budget = budget or Budget(limits.student_s)
        if warm and self.isolated and argv[2:4] == ["-m", RUNNER]:
            zygote = self._zygote(slot, limits, course_lib)
            if zygote is not None:
                return self._run_warm(zygote, argv[4:], inbox, outbox, log, limits, slot, watch, budget, channel)
        scratch = outbox.parent / "scratch"
        if not self.isolated:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            mapping = {INBOX: str(inbox), OUTBOX: str(outbox), SCRATCH: str(scratch)}
            argv = [_remap(a, mapping) for a in argv]
        uid = SLOT_UID_BASE + slot if self.isolated and self.root else None
        if uid is not None:
            _own(outbox, uid)
            argv = argv + ["--drop-to", str(uid)]
        served = _Served(channel)
        if served.theirs is not None:
            argv = argv + ["--channel-fd", str(served.theirs.fileno())]
        filter_fd = _filter_fd() if self.isolated else None
        command = self._wrap(argv, inbox, outbox, limits, course_lib, filter_fd=filter_fd) if self.isolated else argv
        env = _environment(limits, mapping[SCRATCH] if not self.isolated else SCRATCH)
        started = time.monotonic()
        passed = tuple(fd for fd in (served.fd(), filter_fd) if fd is not None)
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, env=env, cwd=scratch if not self.isolated else "/",
                                       start_new_session=True, pass_fds=passed)
        finally:
            served.handed_over()
            if filter_fd is not None:
                os.close(filter_fd)
        printed = _Drain(process.stdout, log, limits.output_bytes)

        def finished(timeout: float) -> bool:
            try:
                process.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False

        try:
            stop, usage = _watch_limits(finished, started, printed, lambda most: tree_bytes(outbox, most), limits,
                                        watch, lambda: _usage(process.pid), budget, 0.0)
        except BaseException:  # a bug in a watch, or Ctrl-C: the sandbox must not outlive the grader's loop
            _kill(process)
            served.close()
            raise
        if stop:
            _kill(process)
        process.wait()
        printed.join()
        served.close()
        return _ended(process.returncode if not stop else -signal.SIGKILL, stop, started, usage,
                      lambda most: tree_bytes(outbox, most), limits, budget)

    def _zygote(self, slot: int, limits: Limits, course_lib: Path | None) -> "_Zygote | None":
        """The slot's warm runner, its course_lib folder holding ``course_lib`` (started, or replaced
        when it died or has imported a module that differs in ``course_lib``); None when none could
        start (the run then starts a new Python)."""
        source = Path(course_lib or _installed_course_lib())
        key = (limits.scratch_bytes, limits.shm_bytes, limits.threads)
        zygote = self.zygotes.get(slot)
        if zygote is not None and zygote.key == key and zygote.alive() and zygote.serve(source):
            return zygote
        if zygote is not None:
            zygote.close()
            del self.zygotes[slot]
        # Inside the owner-only scratch folder: the slot's folder itself must be open to the slot's
        # user inside the sandbox, which sees it mounted at /sandbox without the folders above it.
        folder = Path(tempfile.mkdtemp(prefix=f"slot{slot}-", dir=self.scratch))
        os.chmod(folder, 0o755)
        library = _Library(folder.with_name(folder.name + "-course_lib"), source)
        filter_fd = _filter_fd()
        command = self._wrap([sys.executable, "-I", "-m", ZYGOTE], folder / "in",
                             folder / "out", limits, library.folder, shared=folder, filter_fd=filter_fd)
        try:
            zygote = _Zygote(key, command, _environment(limits, SCRATCH), folder, library, filter_fd)
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        if not zygote.alive():
            zygote.close()
            return None
        self.zygotes[slot] = zygote
        return zygote

    def _run_warm(self, zygote: "_Zygote", args: list[str], inbox: Path, outbox: Path, log: Path, limits: Limits,
                  slot: int, watch: Callable[[float, float], Stop | None], budget: Budget,
                  channel: Callable[[socket.socket], None] | None) -> Ended:
        """One run forked by ``zygote``: the inbox and outbox are moved into the one folder its sandbox
        sees for the run, and back after it."""
        uid = SLOT_UID_BASE + slot if self.root else None
        if uid is not None:
            _own(outbox, uid)
            args = args + ["--drop-to", str(uid)]
        started = time.monotonic()
        zygote.take(inbox, outbox)
        stop, returncode, printed, usage = None, None, None, _Usage(0.0, 0)
        served = _Served(channel)
        try:
            base = zygote.usage().cpu_s  # the zygote's own CPU time so far: not this run's
            reading, writing = os.pipe()
            try:
                zygote.send(args, writing, served.fd())
            finally:
                os.close(writing)
                served.handed_over()
            printed = _Drain(os.fdopen(reading, "rb"), log, limits.output_bytes)
            stop, usage = _watch_limits(zygote.answered, started, printed, zygote.written_bytes, limits, watch,
                                        zygote.usage, budget, base)
            returncode = None if stop else zygote.returncode()
            if returncode is not None:
                usage = _Usage(zygote.usage().cpu_s - base, usage.resident_bytes)
        finally:
            if returncode is None:  # a limit, Ctrl-C, or the zygote died: the whole sandbox goes, the zygote with it
                zygote.stop()
            if printed is not None:
                printed.join()
            served.close()
            zygote.give_back(inbox, outbox)
            if returncode is None:
                zygote.close()
                self.zygotes.pop(slot, None)
        return _ended(-signal.SIGKILL if returncode is None else returncode, stop, started, usage,
                      lambda most: tree_bytes(outbox, most), limits, budget)

    def _wrap(self, argv: list[str], inbox: Path, outbox: Path, limits: Limits, course_lib: Path | None = None,
              shared: Path | None = None, filter_fd: int | None = None) -> list[str]:
        """The bwrap command line; ``shared``: a zygote's folder, mounted as the parent of INBOX and
        OUTBOX (each run's own are moved into it) instead of one run's inbox and outbox;
        ``filter_fd``: the seccomp filter (:mod:`.seccomp`) to load."""
        command = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
                   "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
        if not self.root:
            command += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                command += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                command += ["--ro-bind", top, top]
        command += ["--ro-bind", "/usr", "/usr"]
        for name in ("passwd", "group", "nsswitch.conf", "hosts", "localtime", "ld.so.cache", "ld.so.conf",
                     "ld.so.conf.d", "alternatives", "fonts", "ssl/certs"):
            command += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        made = {"/", "/usr", "/etc"}
        for path in _python_paths():
            command += _dirs(path, made) + ["--ro-bind", path, path]
        if course_lib is not None:  # bound after the Python paths, so it hides the real package
            command += ["--ro-bind", str(course_lib), _installed_course_lib()]
        if shared is not None:
            (shared / Path(SCRATCH).name).mkdir(exist_ok=True)  # the tmpfs's mount point
            command += _dirs(INBOX, made) + ["--bind", str(shared), str(Path(INBOX).parent)]
        command += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(limits.shm_bytes),
                    "--tmpfs", SHM, "--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
        if shared is None:
            command += _dirs(INBOX, made) + ["--ro-bind", str(inbox), INBOX, "--bind", str(outbox), OUTBOX]
        # Read-only from here: the sandbox's own root and /dev (both tmpfs of bwrap's, writable by the
        # sandbox's user when bwrap runs unprivileged); only the mounts above stay writable.
        command += ["--remount-ro", "/dev", "--remount-ro", "/"]
        if filter_fd is not None:
            command += ["--seccomp", str(filter_fd)]
        return command + ["--chdir", SCRATCH, "--"] + argv


def _filter_fd() -> int | None:
    """A pipe's read end holding the seccomp filter, for bwrap's ``--seccomp`` (None where there is none)."""
    program = seccomp.program()
    if program is None:
        return None
    reading, writing = os.pipe()
    try:
        os.write(writing, program)  # a few hundred bytes: the pipe holds them until bwrap reads
    finally:
        os.close(writing)
    return reading


class _Served:
    """The parent's end of a run's channel (a socket pair), served by ``channel`` in a thread."""

    def __init__(self, channel: Callable[[socket.socket], None] | None):
        self.ours = self.theirs = self.thread = None
        if channel is not None:
            self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            self.thread = threading.Thread(target=self._serve, args=(channel,), daemon=True)
            self.thread.start()

    def _serve(self, channel: Callable[[socket.socket], None]) -> None:
        try:
            channel(self.ours)
        except OSError:  # the run ended, or closed its end: nothing more to serve
            pass

    def fd(self) -> int | None:
        return None if self.theirs is None else self.theirs.fileno()

    def handed_over(self) -> None:
        """The run has its end (passed to the process): the parent's copy of it goes."""
        if self.theirs is not None:
            self.theirs.close()
            self.theirs = None

    def close(self) -> None:
        self.handed_over()
        if self.ours is not None:
            try:
                self.ours.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.thread.join(5.0)
            self.ours.close()
            self.ours = None


@dataclass
class _Usage:
    cpu_s: float  # CPU seconds (since a baseline, where one is given)
    resident_bytes: int


def _watch_limits(finished: Callable[[float], bool], started: float, printed: "_Drain", written: Callable[[int], int],
                  limits: Limits, watch: Callable[[float, float], Stop | None], usage: Callable[[], "_Usage"],
                  budget: Budget, base: float) -> tuple[Stop | None, "_Usage"]:
    """Wait for ``finished`` (given how long it may wait) while the run keeps within ``limits`` and
    ``budget``: the limit it broke (None when it finished first), and its usage as last measured
    (CPU seconds since ``base``)."""
    polls, last = 0, _Usage(0.0, 0)
    while not finished(POLL_S):
        polls += 1
        wall = time.monotonic() - started
        if polls % USAGE_EVERY == 0:
            now = usage()
            last = _Usage(now.cpu_s - base, now.resident_bytes)
        cpu_used, wall_used = budget.cpu_used + last.cpu_s, budget.wall_used + wall
        if cpu_used > budget.cpu_s:
            return Stop("budget", measured(cpu_used, wall_used)), last
        if wall_used > budget.wall_s:
            return Stop("budget-wall", measured(cpu_used, wall_used)), last
        if printed.total > limits.output_bytes:
            return Stop("output"), last
        if last.resident_bytes > limits.memory_bytes:
            return Stop("memory"), last
        if polls % OUTBOX_EVERY == 0 and written(limits.outbox_bytes) > limits.outbox_bytes:
            return Stop("outbox"), last
        stop = watch(last.cpu_s, wall)
        if stop:
            return stop, last
    return None, last


def _ended(returncode: int, stop: Stop | None, started: float, usage: "_Usage", written: Callable[[int], int],
           limits: Limits, budget: Budget) -> Ended:
    wall = time.monotonic() - started
    budget.cpu_used += usage.cpu_s
    budget.wall_used += wall
    if not stop and written(limits.outbox_bytes) > limits.outbox_bytes:
        stop = Stop("outbox")  # filled between two measurements and exited: over the quota all the same
    return Ended(returncode, stop.why if stop else "", wall, usage.cpu_s, stop.measured if stop else "")


def _own(outbox: Path, uid: int) -> None:
    """Give the outbox, and what the parent put there before the run (events.jsonl), to ``uid``."""
    os.chown(outbox, uid, uid)
    for entry in os.scandir(outbox):
        os.chown(entry.path, uid, uid, follow_symlinks=False)


class _Library:
    """The folder a zygote's sandbox mounts (read-only) as course_lib, and the copy it holds now.

    The main runs of a batch use the assignment's redacted course_lib and its cascade runs other
    copies (with the references of some dependencies kept); they differ in a few modules the
    zygote never imported. Between two runs, the files that differ are replaced in place, so one
    zygote serves them all; a copy that differs in a module the zygote imported needs a new one.
    """

    def __init__(self, folder: Path, source: Path):
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(folder, 0o755)
        self.folder, self.source = folder, source

    def differences(self, source: Path) -> set[str]:
        """The files (relative paths) in which ``source`` differs from the copy held now."""
        mine, theirs = _digests(self.source), _digests(source)
        return {path for path in mine.keys() | theirs.keys() if mine.get(path) != theirs.get(path)}

    def hold(self, source: Path, changed: set[str]) -> None:
        for relative in changed:
            target, new = self.folder / relative, source / relative
            if new.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                staged = target.with_name(target.name + ".new")
                shutil.copyfile(new, staged)
                os.chmod(staged, 0o644)
                os.replace(staged, target)
            else:
                target.unlink(missing_ok=True)
        self.source = source


@functools.lru_cache(maxsize=64)  # a redacted copy never changes once built (it is named by its content)
def _digests(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*.py")) if "__pycache__" not in path.parts}


class _Zygote:
    """The parent's end of one warm runner (:mod:`.zygote`): its bwrap process, the control socket,
    ``folder``, the one host folder its sandbox sees (as the parent of INBOX and OUTBOX), and the
    ``library`` it mounts as course_lib."""

    def __init__(self, key: tuple, command: list[str], env: dict[str, str], folder: Path, library: _Library,
                 filter_fd: int | None):
        self.key, self.folder, self.library = key, folder, library
        self.imported: set[str] = set()  # course_lib files the zygote imported: they must not change
        self.inbox_bytes = 0  # what the run's inbox held when it was moved in
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = open(folder.with_suffix(".log"), "wb")  # the zygote's own output (an import error)
        passed = (theirs.fileno(),) + ((filter_fd,) if filter_fd is not None else ())
        self.process = subprocess.Popen(command + [str(theirs.fileno())], pass_fds=passed,
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                        env=env, cwd="/", start_new_session=True)
        theirs.close()
        self.reply: dict | None = None
        self.host_pid: int | None = None
        if self.answered(ZYGOTE_START_S) and isinstance(self.reply.get("ready"), int):
            self.host_pid = _host_pid(self.process.pid, self.reply["ready"])
            self.imported = set(self.reply.get("imported", []))
        self.reply = None

    def serve(self, source: Path) -> bool:
        """Hold ``source`` as course_lib for the next run; False when a module the zygote imported differs."""
        if source == self.library.source:
            return True
        changed = self.library.differences(source)
        if changed & self.imported:
            return False
        self.library.hold(source, changed)
        return True

    def alive(self) -> bool:
        return self.host_pid is not None and self.process.poll() is None

    def answered(self, timeout: float) -> bool:
        """Whether the zygote has answered (or died), waiting up to ``timeout`` seconds."""
        if self.reply is None:
            if select.select([self.control], [], [], timeout)[0]:
                message = self.control.recv(1 << 16)
                self.reply = json.loads(message) if message else {}
            elif self.process.poll() is not None:
                self.reply = {}
        return self.reply is not None

    def send(self, args: list[str], output: int, channel: int | None) -> None:
        self.reply = None
        socket.send_fds(self.control, [json.dumps({"args": args}).encode()],
                        [output] + ([channel] if channel is not None else []))

    def returncode(self) -> int | None:
        """The run's exit status; None when the zygote died or could not clear the sandbox after it."""
        code = (self.reply or {}).get("returncode")
        return code if isinstance(code, int) and self.reply.get("clean") is True else None

    def usage(self) -> "_Usage":
        """CPU seconds of the whole sandbox so far (a run's own: the difference from its start), and the
        resident memory of the run's processes: the sandbox's, less the zygote's own."""
        return _usage(self.process.pid, skip=self.host_pid)

    def written_bytes(self, stop_above: int) -> int:
        """What the run has written in the folder: its outbox, and anything beside it where the
        sandbox's user may write (unprivileged, the folder and the inbox are its own), less what the
        inbox held when the run started; the scratch tmpfs's mount point aside."""
        total, most = 0, stop_above + self.inbox_bytes
        try:
            for entry in os.scandir(self.folder):
                if entry.name == Path(SCRATCH).name or total > most:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    total += ENTRY_BYTES + tree_bytes(Path(entry.path), most - total)
                else:
                    info = entry.stat(follow_symlinks=False)
                    total += ENTRY_BYTES + max(info.st_size, info.st_blocks * 512)
        except OSError:  # the folder went with a zygote that died: nothing more was written
            pass
        return total - self.inbox_bytes

    def take(self, inbox: Path, outbox: Path) -> None:
        self.inbox_bytes = ENTRY_BYTES + tree_bytes(inbox)
        os.rename(inbox, self.folder / Path(INBOX).name)
        os.rename(outbox, self.folder / Path(OUTBOX).name)

    def give_back(self, inbox: Path, outbox: Path) -> None:
        """The run's inbox and outbox back where they were; whatever else the run left in the folder
        goes. An outbox the run replaced (by a link, a file) comes back as an empty folder."""
        for name, target in ((Path(INBOX).name, inbox), (Path(OUTBOX).name, outbox)):
            moved = self.folder / name
            if moved.is_dir() and not moved.is_symlink():
                os.rename(moved, target)
            else:
                target.mkdir(exist_ok=True)
        for entry in os.scandir(self.folder):
            if entry.name != Path(SCRATCH).name:
                _remove(Path(entry.path))

    def stop(self) -> None:
        """Kill the sandbox: the zygote, the run and everything it started."""
        _kill(self.process)
        self.process.wait()

    def close(self) -> None:
        self.stop()
        self.control.close()
        self.log.close()
        _remove(self.folder)
        self.folder.with_suffix(".log").unlink(missing_ok=True)
        _remove(self.library.folder)


def _remove(path: Path) -> None:
    """Remove a file or a tree the run may have made unreadable to its owner (a folder of mode 000)."""
    if path.is_dir() and not path.is_symlink():
        for folder, subfolders, _ in os.walk(path):
            for name in subfolders:
                try:
                    os.chmod(os.path.join(folder, name), 0o700, follow_symlinks=False)
                except OSError:
                    pass
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _host_pid(root: int, inside: int) -> int | None:
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


def _scan() -> dict[int, tuple[int, float, int]]:
    """Every process: pid -> (its parent, its CPU seconds with those of the children it reaped, its
    resident bytes), from one read of each ``/proc/<pid>/stat``."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                # after the name: state, ppid, ... utime (12), stime, cutime, cstime ... rss (22)
                found[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / TICK,
                                          int(fields[21]) * PAGE)
            except (OSError, ValueError, IndexError):
                continue
    return found


def _processes(pid: int, scanned: dict | None = None) -> list[int]:
    """``pid`` and every process under it. In a PID namespace orphans are re-parented to its init,
    which is under bwrap, so a daemonised process stays in this tree."""
    scanned = scanned if scanned is not None else _scan()
    children: dict[int, list[int]] = {}
    for member, (parent, _, _) in scanned.items():
        children.setdefault(parent, []).append(member)
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children.get(current, [])
    return found


def _usage(pid: int, skip: int | None = None) -> _Usage:
    """The CPU seconds of the sandbox's process tree (each process's own and its reaped children's:
    the tree reaps every process of the sandbox, so the sum only grows), and the resident memory
    of its processes together (pages they share count in each of them), but ``skip``'s own."""
    scanned = _scan()
    cpu, resident = 0.0, 0
    for member in _processes(pid, scanned):
        if member in scanned:
            cpu += scanned[member][1]
            resident += scanned[member][2] if member != skip else 0
    return _Usage(cpu, resident)


class _Drain(threading.Thread):
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


def _remap(argument: str, mapping: dict[str, str]) -> str:
    for inside, outside in mapping.items():
        if argument == inside or argument.startswith(inside + "/"):
            return outside + argument[len(inside):]
    return argument


def _environment(limits: Limits, scratch: str) -> dict[str, str]:
    """A clean environment: nothing of the instructor's leaks in; smoke profile as under nbgrader."""
    threads = str(limits.threads)
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch, "TMPDIR": f"{scratch}/tmp", "MPLCONFIGDIR": f"{scratch}/.matplotlib",
        "COURSE_RUNS_DIR": f"{scratch}/runs", "NBGRADER_EXECUTION": "autograde", "COURSE_PROFILE": "smoke",
        "MPLBACKEND": "Agg", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads, "MALLOC_ARENA_MAX": "2", "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "TERM": "dumb",
    }


def _python_paths() -> list[str]:
    """The interpreter, its standard library, its site-packages (and the site folders their ``.pth``
    files add, as a virtual environment of the system's Python built on another one has), course_lib
    and of course_tools only what runs in the sandbox (:mod:`course_tools.grading.sandboxed` and the
    ``__init__.py`` of its parents): nothing of the course folder, nothing of the trusted grader."""
    import site

    import course_lib

    wanted = {sys.base_prefix, sys.prefix, str(Path(course_lib.__file__).resolve().parent),
              *_sandboxed_tooling(), str(Path(os.path.realpath(sys.executable)).parent), *site.getsitepackages(),
              *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))}
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted} | wanted):
        if _under(path, "/usr") or any(_under(path, k) for k in kept) or not os.path.exists(path):
            continue
        kept.append(path)
    return kept


def _sandboxed_tooling() -> list[str]:
    """The runner's package folder and the ``__init__.py`` files of the packages above it."""
    from . import sandboxed

    folder = Path(sandboxed.__file__).resolve().parent
    return [str(folder), *(str(package / "__init__.py") for package in folder.parents[:2])]


def _installed_course_lib() -> str:
    import course_lib

    return str(Path(course_lib.__file__).resolve().parent)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _dirs(path: str, made: set[str]) -> list[str]:
    """bwrap creates missing parents with mode 0700; create them world-readable ourselves."""
    out = []
    for parent in reversed(Path(path).parents):
        if str(parent) not in made:
            made.add(str(parent))
            out += ["--perms", "0755", "--dir", str(parent)]
    return out


def _kill(process: subprocess.Popen) -> None:
    """Kill the whole sandbox: bwrap's session, and with it (die-with-parent) its PID namespace."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
