"""Running a student's code where it can reach nothing but itself.

The sandbox is bubblewrap (``bwrap``, Debian/Ubuntu package ``bubblewrap``): new PID, network, IPC
and mount namespaces, so a forgotten background process dies with the sandbox, nothing is reachable
over the network, and the only files in sight are the Python installation (read-only), the
``inbox`` the grader prepared (read-only), an ``outbox`` for results and a small scratch tmpfs that
is the working folder. The course folder, other students' submissions and the gradebook are not
mounted at all. When the grader runs as root, the runner drops to a per-slot user id, so that the
process limit counts only that student's processes.

For a batch, each slot keeps a warm runner (:mod:`.zygote`) in a sandbox built the same way, whose
one shared folder receives each run's inbox and outbox in turn; every run is a fork of it, and
what a run leaves behind is killed and wiped before the next (see that module for the guarantees).

Limits per process are set by the runner itself before any student code (address space, processes,
file size, no core dumps). The trusted parent adds what a process cannot limit for itself: wall
time per step and for the whole run, the resident memory of all the sandbox's processes together,
and the size of the outbox (many files, each under the per-file limit, would fill the grader's disk),
measured without following links (:func:`.untrusted.tree_bytes`).
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

from .course import CourseError
from .untrusted import tree_bytes

INBOX, OUTBOX, SCRATCH = "/sandbox/in", "/sandbox/out", "/sandbox/work"
SLOT_UID_BASE = 64000  # sandboxes of a root grader run as uid/gid 64000 + slot
POLL_S = 0.1
MEMORY_EVERY = 3  # polls between two memory measurements
OUTBOX_EVERY = 2  # polls between two measurements of the outbox
PAGE = os.sysconf("SC_PAGE_SIZE")
RUNNER = "course_lib.instructor.runner"
ZYGOTE_START_S = 300.0  # a zygote that is not ready by then is given up; the run starts a new Python


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
        self.zygotes: dict[int, _Zygote] = {}  # slot -> its warm runner (see :mod:`.zygote`)

    def close(self) -> None:
        """Stop the warm runners (the end of a batch)."""
        for zygote in self.zygotes.values():
            zygote.close()
        self.zygotes.clear()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def run(self, argv: list[str], *, inbox: Path, outbox: Path, log: Path, limits: Limits, slot: int = 0,
            watch: Callable[[], str | None] = lambda: None, course_lib: Path | None = None,
            warm: bool = False) -> Ended:
        """Run ``argv`` (whose paths use INBOX/OUTBOX/SCRATCH) until it exits or breaks a limit.

        ``course_lib``: a folder mounted over the installed course_lib package inside the sandbox
        (:mod:`.redacted`); the unsafe fallback cannot hide the installed one. ``warm``: ``argv`` runs
        :mod:`.runner`, and the slot's zygote (:mod:`.zygote`, kept for the batch, its mounted
        course_lib updated to ``course_lib``) forks it instead of a new Python importing everything again.
        """
        if warm and self.isolated and argv[2:4] == ["-m", RUNNER]:
            zygote = self._zygote(slot, limits, course_lib)
            if zygote is not None:
                return self._run_warm(zygote, argv[4:], inbox, outbox, log, limits, slot, watch)
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
        command = self._wrap(argv, inbox, outbox, limits, course_lib) if self.isolated else argv
        env = _environment(limits, mapping[SCRATCH] if not self.isolated else SCRATCH)
        started = time.monotonic()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=env, cwd=scratch if not self.isolated else "/", start_new_session=True)
        printed = _Drain(process.stdout, log, limits.output_bytes)

        def finished(timeout: float) -> bool:
            try:
                process.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False

        try:
            why = _watch_limits(finished, started, printed, outbox, limits, watch,
                                lambda: _resident_bytes(process.pid))
        except BaseException:  # a bug in a watch, or Ctrl-C: the sandbox must not outlive the grader's loop
            _kill(process)
            raise
        if why:
            _kill(process)
        process.wait()
        printed.join()
        return _ended(process.returncode if not why else -signal.SIGKILL, why, started, outbox, limits)

    def _zygote(self, slot: int, limits: Limits, course_lib: Path | None) -> "_Zygote | None":
        """The slot's warm runner, its course_lib folder holding ``course_lib`` (started, or replaced
        when it died or has imported a module that differs in ``course_lib``); None when none could
        start (the run then starts a new Python)."""
        source = Path(course_lib or _installed_course_lib())
        key = (limits.scratch_bytes, limits.threads)
        zygote = self.zygotes.get(slot)
        if zygote is not None and zygote.key == key and zygote.alive() and zygote.serve(source):
            return zygote
        if zygote is not None:
            zygote.close()
            del self.zygotes[slot]
        folder = Path(tempfile.mkdtemp(prefix=f"course-sandbox-slot{slot}-"))
        os.chmod(folder, 0o755)
        library = _Library(folder.with_name(folder.name + "-course_lib"), source)
        command = self._wrap([sys.executable, "-I", "-m", "course_lib.instructor.zygote"], folder / "in",
                             folder / "out", limits, library.folder, shared=folder)
        zygote = _Zygote(key, command, _environment(limits, SCRATCH), folder, library)
        if not zygote.alive():
            zygote.close()
            return None
        self.zygotes[slot] = zygote
        return zygote

    def _run_warm(self, zygote: "_Zygote", args: list[str], inbox: Path, outbox: Path, log: Path, limits: Limits,
                  slot: int, watch: Callable[[], str | None]) -> Ended:
        """One run forked by ``zygote``: the inbox and outbox are moved into the one folder its sandbox
        sees for the run, and back after it."""
        uid = SLOT_UID_BASE + slot if self.root else None
        if uid is not None:
            _own(outbox, uid)
            args = args + ["--drop-to", str(uid)]
        started = time.monotonic()
        zygote.take(inbox, outbox)
        why, returncode, printed = "", None, None
        try:
            reading, writing = os.pipe()
            try:
                zygote.send(args, writing)
            finally:
                os.close(writing)
            printed = _Drain(os.fdopen(reading, "rb"), log, limits.output_bytes)
            why = _watch_limits(zygote.answered, started, printed, zygote.folder / Path(OUTBOX).name, limits,
                                watch, zygote.resident_bytes)
            returncode = None if why else zygote.returncode()
        finally:
            if returncode is None:  # a limit, Ctrl-C, or the zygote died: the whole sandbox goes, the zygote with it
                zygote.stop()
            if printed is not None:
                printed.join()
            zygote.give_back(inbox, outbox)
            if returncode is None:
                zygote.close()
                self.zygotes.pop(slot, None)
        return _ended(-signal.SIGKILL if returncode is None else returncode, why, started, outbox, limits)

    def _wrap(self, argv: list[str], inbox: Path, outbox: Path, limits: Limits,
              course_lib: Path | None = None, shared: Path | None = None) -> list[str]:
        """The bwrap command line; ``shared``: a zygote's folder, mounted as the parent of INBOX and
        OUTBOX (each run's own are moved into it) instead of one run's inbox and outbox."""
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
        if shared is not None:
            (shared / Path(SCRATCH).name).mkdir(exist_ok=True)  # the tmpfs's mount point
            command += _dirs(INBOX, made) + ["--bind", str(shared), str(Path(INBOX).parent)]
        command += ["--proc", "/proc", "--dev", "/dev",
                    "--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
        if shared is None:
            command += _dirs(INBOX, made) + ["--ro-bind", str(inbox), INBOX, "--bind", str(outbox), OUTBOX]
        return command + ["--chdir", SCRATCH, "--"] + argv


def _watch_limits(finished: Callable[[float], bool], started: float, printed: "_Drain", outbox: Path,
                  limits: Limits, watch: Callable[[], str | None], resident: Callable[[], int]) -> str:
    """Wait for ``finished`` (given how long it may wait) while the run keeps within ``limits``; the
    limit it broke, or "" when it finished first."""
    polls = 0
    while not finished(POLL_S):
        polls += 1
        if time.monotonic() - started > limits.wall_s:
            return "wall"
        if printed.total > limits.output_bytes:
            return "output"
        if polls % MEMORY_EVERY == 0 and resident() > limits.memory_bytes:
            return "memory"
        if polls % OUTBOX_EVERY == 0 and tree_bytes(outbox, limits.outbox_bytes) > limits.outbox_bytes:
            return "outbox"
        why = watch()
        if why:
            return why
    return ""


def _ended(returncode: int, why: str, started: float, outbox: Path, limits: Limits) -> Ended:
    if not why and tree_bytes(outbox, limits.outbox_bytes) > limits.outbox_bytes:
        why = "outbox"  # filled between two measurements and exited: over the quota all the same
    return Ended(returncode, why, time.monotonic() - started)


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

    def __init__(self, key: tuple, command: list[str], env: dict[str, str], folder: Path, library: _Library):
        self.key, self.folder, self.library = key, folder, library
        self.imported: set[str] = set()  # course_lib files the zygote imported: they must not change
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = open(folder.with_suffix(".log"), "wb")  # the zygote's own output (an import error)
        self.process = subprocess.Popen(command + [str(theirs.fileno())], pass_fds=(theirs.fileno(),),
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

    def send(self, args: list[str], output: int) -> None:
        self.reply = None
        socket.send_fds(self.control, [json.dumps({"args": args}).encode()], [output])

    def returncode(self) -> int | None:
        """The run's exit status; None when the zygote died or could not clear the sandbox after it."""
        code = (self.reply or {}).get("returncode")
        return code if isinstance(code, int) and self.reply.get("clean") is True else None

    def resident_bytes(self) -> int:
        """Resident memory of the run's processes: the sandbox's, less the zygote's own."""
        return _resident_bytes(self.process.pid, skip=self.host_pid)

    def take(self, inbox: Path, outbox: Path) -> None:
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
                shutil.rmtree(entry.path, ignore_errors=True) if entry.is_dir(follow_symlinks=False) \
                    else os.unlink(entry.path)

    def stop(self) -> None:
        """Kill the sandbox: the zygote, the run and everything it started."""
        _kill(self.process)
        self.process.wait()

    def close(self) -> None:
        self.stop()
        self.control.close()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.with_suffix(".log").unlink(missing_ok=True)
        shutil.rmtree(self.library.folder, ignore_errors=True)


def _host_pid(root: int, inside: int) -> int | None:
    """The host's process id of the process under ``root`` whose id in its namespace is ``inside``."""
    for pid in _descendants(root):
        try:
            with open(f"/proc/{pid}/status") as status:
                ids = next(line for line in status if line.startswith("NSpid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        if len(ids) > 1 and int(ids[-1]) == inside:
            return pid
    return None


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


def _resident_bytes(pid: int, skip: int | None = None) -> int:
    """Resident memory of the sandbox's processes together (pages they share count in each of them),
    but ``skip``'s own."""
    total = 0
    for member in _descendants(pid):
        if member == skip:
            continue
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
