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

For a batch, each slot keeps a warm runner (:mod:`.sandboxed.zygote`) in a sandbox built the same way, whose
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

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from course_tools.grading.sandboxed.protocol import runner_arguments
from course_tools.untrusted import tree_bytes

from .channel import Served
from .isolation import (
    INBOX,
    OUTBOX,
    SCRATCH,
    bwrap_command,
    bwrap_or_refuse,
    environment,
    installed_course_lib,
    seccomp_fd,
)
from .limits import Ended, Limits, Stop
from .processes import Drain, Usage, Watched, ended, kill, tree_usage, watch_limits
from .spec import RunSpec
from .warm import ZYGOTE, Library, ZygoteHandle

SLOT_UID_BASE = 64000  # sandboxes of a root grader run as uid/gid 64000 + slot
RUNNER = "course_tools.grading.sandboxed.runner"
REAPER = "import shutil, sys\nsys.stdin.buffer.read()\nshutil.rmtree(sys.argv[1], ignore_errors=True)\n"


class Scratch:
    """The grader's working space: one folder that only its owner can enter (the warm runners'
    folders inside it are mounted into their sandboxes, whose view does not depend on the folders
    above), removed when the grader ends, however it ends: a small reaper process holds the read end
    of a pipe whose write end only the grader holds, and removes the folder when it closes, which
    the kernel does when the grader exits, even killed with SIGKILL."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="course-grader-"))  # mode 0700
        self.reaper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", REAPER, str(self.folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.reaper.stdin.close()
        self.reaper.wait()


class Sandbox:
    """Builds and runs sandboxed commands; ``isolated=False`` is the documented unsafe fallback."""

    def __init__(self, isolated: bool = True):
        self.isolated = isolated
        self.root = os.geteuid() == 0
        self.bwrap = bwrap_or_refuse(self.root) if isolated else None
        self.warning = (
            ""
            if isolated
            else (
                "unsafe: no sandbox, so submissions can read and write what you can, and processes they "
                "detach "
                "survive" + ("; as root, the process limit does not apply either" if self.root else "")
            )
        )
        self.zygotes: dict[int, ZygoteHandle] = {}  # slot -> its warm runner (see :mod:`.sandboxed.zygote`)
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

    def run(self, spec: RunSpec, watch: Callable[[float, float], Stop | None] = lambda cpu, wall: None,
            channel: Callable[[socket.socket], None] | None = None) -> Ended:
        """Run the runner on ``spec`` until it exits or breaks a limit: in the slot's zygote when
        ``spec.warm`` (:mod:`.sandboxed.zygote`, kept for the batch, its mounted course_lib updated to
        ``spec.course_lib``, forks it instead of a new Python importing everything again), else in a
        sandbox of its own. The runner's command line is built here, from the spec
        (:func:`.sandboxed.protocol.runner_arguments`). ``watch(cpu, wall)``: a limit of the caller's,
        given the run's CPU and wall-clock seconds so far. ``channel``: serves the parent's end of a
        socket whose other end the run gets as ``--channel-fd N`` (the probes' inputs and the checks'
        results: :class:`.channel.ProbeServer`). The run's time is charged to ``spec.budget``.
        """
        if spec.warm and self.isolated:
            zygote = self._zygote(spec.slot, spec.limits, spec.course_lib)
            if zygote is not None:
                return self._run_warm(zygote, spec, watch, channel)
        scratch = spec.outbox.parent / "scratch"
        if not self.isolated:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
        uid = SLOT_UID_BASE + spec.slot if self.isolated and self.root else None
        if uid is not None:
            _own(spec.outbox, uid)
        served = Served(channel)
        arguments = runner_arguments(INBOX if self.isolated else str(spec.inbox),
                                     OUTBOX if self.isolated else str(spec.outbox), uid, served.fd())
        argv = [sys.executable, "-I", "-m", RUNNER, *arguments]
        filter_fd = seccomp_fd() if self.isolated else None
        command = bwrap_command(self.bwrap, self.root, argv, spec.inbox, spec.outbox, spec.limits,
                                spec.course_lib, filter_fd=filter_fd) if self.isolated else argv
        env = environment(spec.limits, SCRATCH if self.isolated else str(scratch))
        started = time.monotonic()
        passed = tuple(fd for fd in (served.fd(), filter_fd) if fd is not None)
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                       cwd=scratch if not self.isolated else "/", pass_fds=passed)
        finally:
            served.handed_over()
            if filter_fd is not None:
                os.close(filter_fd)

        def finished(timeout: float) -> bool:
            try:
                process.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False

        watched = Watched(finished, started, Drain(process.stdout, spec.log, spec.limits.output_bytes),
                          lambda most: tree_bytes(spec.outbox, most), lambda: tree_usage(process.pid))
        try:
            stop, usage = watch_limits(watched, spec.limits, spec.budget, watch)
        except BaseException:  # a bug in a watch, or Ctrl-C: the sandbox must not outlive the grader's loop
            kill(process)
            served.close()
            raise
        if stop:
            kill(process)
        process.wait()
        watched.printed.join()
        served.close()
        return ended(watched, process.returncode if not stop else -signal.SIGKILL, stop, usage, spec.limits,
                     spec.budget)

    def _zygote(self, slot: int, limits: Limits, course_lib: Path | None) -> "ZygoteHandle | None":
        """The slot's warm runner, its course_lib folder holding ``course_lib`` (started, or replaced
        when it died or has imported a module that differs in ``course_lib``); None when none could
        start (the run then starts a new Python)."""
        source = Path(course_lib or installed_course_lib())
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
        library = Library(folder.with_name(folder.name + "-course_lib"), source)
        filter_fd = seccomp_fd()
        command = bwrap_command(
            self.bwrap,
            self.root,
            [sys.executable, "-I", "-m", ZYGOTE],
            folder / "in",
            folder / "out",
            limits,
            library.folder,
            shared=folder,
            filter_fd=filter_fd,
        )
        try:
            zygote = ZygoteHandle(key, command, environment(limits, SCRATCH), folder, library, filter_fd)
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        if not zygote.alive():
            zygote.close()
            return None
        self.zygotes[slot] = zygote
        return zygote

    def _run_warm(self, zygote: "ZygoteHandle", spec: RunSpec, watch: Callable[[float, float], Stop | None],
                  channel: Callable[[socket.socket], None] | None) -> Ended:
        """One run forked by ``zygote``: the inbox and outbox are moved into the one folder its sandbox
        sees for the run, and back after it."""
        uid = SLOT_UID_BASE + spec.slot if self.root else None
        if uid is not None:
            _own(spec.outbox, uid)
        started = time.monotonic()
        zygote.take(spec.inbox, spec.outbox)
        stop, returncode, watched, usage = None, None, None, Usage(0.0, 0)
        served = Served(channel)
        try:
            base = zygote.usage().cpu_s  # the zygote's own CPU time so far: not this run's
            reading, writing = os.pipe()
            try:
                zygote.send(INBOX, OUTBOX, uid, writing, served.fd())
            finally:
                os.close(writing)
                served.handed_over()
            watched = Watched(zygote.answered, started, Drain(os.fdopen(reading, "rb"), spec.log,
                                                              spec.limits.output_bytes),
                              zygote.written_bytes, zygote.usage, base)
            stop, usage = watch_limits(watched, spec.limits, spec.budget, watch)
            returncode = None if stop else zygote.returncode()
            if returncode is not None:
                usage = Usage(zygote.usage().cpu_s - base, usage.resident_bytes)
        finally:
            # a limit, Ctrl-C, or the zygote died: the whole sandbox goes, the zygote with it
            if returncode is None:
                zygote.stop()
            if watched is not None:
                watched.printed.join()
            served.close()
            zygote.give_back(spec.inbox, spec.outbox)
            if returncode is None:
                zygote.close()
                self.zygotes.pop(spec.slot, None)
        watched.written = lambda most: tree_bytes(spec.outbox, most)  # back where the grader put it
        return ended(watched, -signal.SIGKILL if returncode is None else returncode, stop, usage, spec.limits,
                     spec.budget)


def _own(outbox: Path, uid: int) -> None:
    """Give the outbox, and what the parent put there before the run (events.jsonl), to ``uid``."""
    os.chown(outbox, uid, uid)
    for entry in os.scandir(outbox):
        os.chown(entry.path, uid, uid, follow_symlinks=False)
