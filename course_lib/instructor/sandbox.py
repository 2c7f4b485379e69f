"""Running a student's code where it can reach nothing but itself.

The sandbox is bubblewrap (``bwrap``, Debian/Ubuntu package ``bubblewrap``): new PID, network, IPC
and mount namespaces, so a forgotten background process dies with the sandbox, nothing is reachable
over the network, and the only files in sight are the Python installation (read-only), the
``inbox`` the grader prepared (read-only), an ``outbox`` for results and a small scratch tmpfs that
is the working folder. The course folder, other students' submissions and the gradebook are not
mounted at all. When the grader runs as root, the runner drops to a per-slot user id, so that the
process limit counts only that student's processes.

Limits per process are set by the runner itself before any student code (address space, processes,
file size, no core dumps). The trusted parent adds what a process cannot limit for itself: wall
time per step and for the whole run, the resident memory of all the sandbox's processes together,
and the size of the outbox (many files, each under the per-file limit, would fill the grader's disk),
measured without following links (:func:`.untrusted.tree_bytes`).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .course import CourseError
from .untrusted import tree_bytes

INBOX, OUTBOX, SCRATCH = "/sandbox/in", "/sandbox/out", "/sandbox/work"
SLOT_UID_BASE = 64000  # sandboxes of a root grader run as uid/gid 64000 + slot
POLL_S = 0.1
MEMORY_EVERY = 3  # polls between two memory measurements
OUTBOX_EVERY = 2  # polls between two measurements of the outbox
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Limits:
    """What one student's run may use. Defaults suit the smoke profile of a real notebook."""

    cell_s: float = 120.0  # one cell (or one replayed call), like nbgrader's Execute.timeout
    wall_s: float = 900.0  # all of one student's runs together
    memory_bytes: int = 6 << 30  # address space per process, and resident memory of all processes
    processes: int = 64  # processes and threads of the student's user id
    file_bytes: int = 64 << 20  # largest file the student's code may write
    output_bytes: int = 16 << 20  # printed output (stdout and stderr) of one run
    scratch_bytes: int = 1 << 30  # the writable working folder (a tmpfs, so it also counts as memory)
    outbox_bytes: int = 256 << 20  # everything in the outbox together (the results; probes when recording)
    threads: int = 1  # torch/OpenMP threads


@dataclass
class Ended:
    """How a sandboxed run ended: ``why`` is empty when the process exited by itself."""

    returncode: int
    why: str
    seconds: float

    @property
    def signal(self) -> int | None:
        if self.returncode < 0:
            return -self.returncode
        return self.returncode - 128 if self.returncode > 128 else None


def describe_end(ended: Ended, limits: Limits) -> str:
    """A sentence for the instructor and the student: what stopped the run."""
    if ended.why == "step":
        return f"exceeded the {limits.cell_s:g} s time limit"
    if ended.why == "wall":
        return f"the whole notebook exceeded its {limits.wall_s:g} s time limit"
    if ended.why == "output":
        return f"printed more than {limits.output_bytes / 2**20:.3g} MiB of output"
    if ended.why == "memory":
        return f"used more than {limits.memory_bytes / 2**30:.3g} GiB of memory"
    if ended.why == "outbox":
        return f"wrote more than {limits.outbox_bytes / 2**20:.3g} MiB of results"
    number = ended.signal
    if number == signal.SIGXFSZ:
        return f"wrote a file over the {limits.file_bytes / 2**20:.3g} MiB limit"
    if number == signal.SIGSEGV:
        return "crashed the Python process (segmentation fault)"
    if number is not None:
        try:
            return f"killed the Python process ({signal.Signals(number).name})"
        except ValueError:
            return f"killed the Python process (signal {number})"
    return f"ended the Python process (exit status {ended.returncode})"


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

    def run(self, argv: list[str], *, inbox: Path, outbox: Path, log: Path, limits: Limits, slot: int = 0,
            watch: Callable[[], str | None] = lambda: None, course_lib: Path | None = None) -> Ended:
        """Run ``argv`` (whose paths use INBOX/OUTBOX/SCRATCH) until it exits or breaks a limit.

        ``course_lib``: a folder mounted over the installed course_lib package inside the sandbox
        (:mod:`.redacted`); the unsafe fallback cannot hide the installed one.
        """
        scratch = outbox.parent / "scratch"
        if not self.isolated:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            mapping = {INBOX: str(inbox), OUTBOX: str(outbox), SCRATCH: str(scratch)}
            argv = [_remap(a, mapping) for a in argv]
        uid = SLOT_UID_BASE + slot if self.isolated and self.root else None
        if uid is not None:
            os.chown(outbox, uid, uid)
            for entry in os.scandir(outbox):  # what the parent put there before the run (events.jsonl)
                os.chown(entry.path, uid, uid, follow_symlinks=False)
            argv = argv + ["--drop-to", str(uid)]
        command = self._wrap(argv, inbox, outbox, limits, course_lib) if self.isolated else argv
        env = _environment(limits, mapping[SCRATCH] if not self.isolated else SCRATCH)
        started = time.monotonic()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=env, cwd=scratch if not self.isolated else "/", start_new_session=True)
        printed = _Drain(process.stdout, log, limits.output_bytes)
        why, polls = "", 0
        try:
            while process.poll() is None:
                time.sleep(POLL_S)
                polls += 1
                if time.monotonic() - started > limits.wall_s:
                    why = "wall"
                elif printed.total > limits.output_bytes:
                    why = "output"
                elif polls % MEMORY_EVERY == 0 and _resident_bytes(process.pid) > limits.memory_bytes:
                    why = "memory"
                elif polls % OUTBOX_EVERY == 0 and tree_bytes(outbox, limits.outbox_bytes) > limits.outbox_bytes:
                    why = "outbox"
                else:
                    why = watch() or ""
                if why:
                    _kill(process)
                    break
        except BaseException:  # a bug in a watch, or Ctrl-C: the sandbox must not outlive the grader's loop
            _kill(process)
            raise
        process.wait()
        printed.join()
        returncode = process.returncode if not why else -signal.SIGKILL
        if not why and tree_bytes(outbox, limits.outbox_bytes) > limits.outbox_bytes:
            why = "outbox"  # filled between two measurements and exited: over the quota all the same
        return Ended(returncode, why, time.monotonic() - started)

    def _wrap(self, argv: list[str], inbox: Path, outbox: Path, limits: Limits,
              course_lib: Path | None = None) -> list[str]:
        command = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
                   "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
        if not self.root:
            command += ["--unshare-user", "--cap-drop", "ALL"]
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
        command += ["--proc", "/proc", "--dev", "/dev",
                    "--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
        command += _dirs(INBOX, made) + ["--ro-bind", str(inbox), INBOX, "--bind", str(outbox), OUTBOX]
        return command + ["--chdir", SCRATCH, "--"] + argv


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process under it. In a PID namespace orphans are re-parented to its init,
    which is under bwrap, so a daemonised process stays in this tree."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children.get(current, [])
    return found


def _resident_bytes(pid: int) -> int:
    """Resident memory of the sandbox's processes together (pages they share count in each of them)."""
    total = 0
    for member in _descendants(pid):
        try:
            with open(f"/proc/{member}/statm") as statm:
                total += int(statm.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total


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
    """The interpreter, its standard library, its site-packages and course_lib: nothing of the course folder."""
    import site

    import course_lib

    wanted = {sys.base_prefix, sys.prefix, str(Path(course_lib.__file__).resolve().parent),
              str(Path(os.path.realpath(sys.executable)).parent), *site.getsitepackages()}
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted} | wanted):
        if _under(path, "/usr") or any(_under(path, k) for k in kept) or not os.path.isdir(path):
            continue
        kept.append(path)
    return kept


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
