"""A warm runner inside the sandbox: ``python -I -m course_tools.grading.sandboxed.zygote FD``.

Every sandboxed run used to start a new Python that imported torch, IPython and matplotlib before
the first cell of the student, and the imports cost more than the grading (the times are in
``python -m benchmarks autograde``). The zygote imports them once
per batch slot and forks a child for every run; the child runs :func:`.runner.main` exactly as a new
process would (it drops to the slot's user id, sets its limits, executes the plan).

What keeps one student from reaching the next through the shared process:

- the zygote never runs student code, only forks; every run starts from the same untouched state;
- it imports nothing of the course but the redacted copy the sandbox mounts (third-party modules
  and course_lib's grading machinery hold no answers), and reads no submission itself; it tells
  the parent which course_lib files it imported, and the parent changes the mounted copy between
  runs (for a cascade run, which keeps some references) only where the zygote imported nothing;
- after each run it kills every other process of the sandbox (survivors of the student included)
  before it answers, and empties the scratch folder and ``/dev/shm`` (the only places in the
  sandbox the run could write besides its outbox, which the parent takes away), so the next child
  finds nothing a previous one left; a folder it cannot empty counts as a run it could not clear;
- it is not dumpable, so a child with its user id can neither trace it nor open its descriptors;
- the trusted parent (:class:`.sandbox.Sandbox`) moves each run's inbox and outbox in and out of the
  one folder the sandbox sees, measures the limits as before, and kills the whole sandbox (the
  zygote with it) whenever a run breaks one; the next run then starts a fresh zygote.

The protocol, on a ``SOCK_SEQPACKET`` socket: the zygote says ``{"ready": pid}``; the parent sends
``{"inbox": ..., "outbox": ..., "drop_to": uid or null}`` with the write end of the run's output pipe
attached, and the run's end of its channel to the grader when it has one; the zygote writes the
runner's command line from them (:func:`.protocol.runner_arguments`) and answers
``{"returncode": n, "clean": bool}`` once the run and the sweep are over (negative: killed by that
signal).
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import shutil
import signal
import socket
import sys
import time

from .protocol import runner_arguments

# What every notebook's first cell and the runner import; none of it holds an answer. torch._dynamo
# is what the first optimizer a process builds imports (1.1 s: every notebook that trains builds one).
PRELOAD = ("torch", "torch._dynamo", "numpy", "matplotlib", "matplotlib.pyplot",
           "matplotlib_inline.backend_inline", "IPython.core.interactiveshell", "sacrebleu",
           "course_lib.grading", "course_tools.grading.sandboxed.probes",
           "course_tools.grading.sandboxed.replay", "course_tools.grading.sandboxed.runner")
SCRATCHES = ("/sandbox/work", "/dev/shm")
PR_SET_DUMPABLE = 4
SWEEPS = 50  # rounds of killing: a fork bomb under RLIMIT_NPROC runs out well before


def _not_dumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _others() -> list[int]:
    """Every live process of the sandbox's PID namespace but its init (1) and the zygote (a killed
    orphan stays a zombie until init reaps it: it runs nothing)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found.append(int(name))
    return found


def _sweep() -> bool:
    """Kill every other process; True once none is left."""
    for _ in range(SWEEPS):
        others = _others()
        if not others:
            return True
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:  # reap our own children; orphans are reaped by the namespace's init
            try:
                if os.waitpid(-1, os.WNOHANG) == (0, 0):
                    break
            except ChildProcessError:
                break
        time.sleep(0.01)  # SIGKILL is delivered asynchronously
    return not _others()


def _wipe() -> bool:
    """Empty the scratch folders; True when they are empty. A folder the run made unreadable (mode
    000) is opened up first: the zygote is its owner when bwrap runs unprivileged, root otherwise."""
    for folder in SCRATCHES:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                for inside, subfolders, _ in os.walk(entry.path):
                    for name in subfolders:
                        try:
                            os.chmod(os.path.join(inside, name), 0o700, follow_symlinks=False)
                        except OSError:
                            pass
                try:
                    os.chmod(entry.path, 0o700, follow_symlinks=False)
                except OSError:
                    pass
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
    try:
        return not any(os.listdir(folder) for folder in SCRATCHES)
    except OSError:
        return False


def _child(args: list[str], output: int, control: socket.socket) -> None:
    """In the forked child: the run's output on stdout and stderr, nothing of the zygote's, then the
    runner."""
    try:
        control.close()
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.chdir(SCRATCHES[0])
        from course_tools.grading.sandboxed import runner

        runner.main(args)  # ends with os._exit(0)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def main(argv: list[str]) -> int:
    control = socket.socket(fileno=int(argv[0]))
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional module (sacrebleu in a course without 06): imported when used
            pass
    _not_dumpable()
    package = os.path.dirname(importlib.import_module("course_lib").__file__)
    imported = sorted(os.path.relpath(module.__file__, package) for module in list(sys.modules.values())
                      if (getattr(module, "__file__", None) or "").startswith(package + os.sep))
    control.send(json.dumps({"ready": os.getpid(), "imported": imported}).encode())
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
        if not message:  # the grader closed its end: the batch is over
            return 0
        request = json.loads(message)
        args = runner_arguments(request["inbox"], request["outbox"], request["drop_to"],
                                fds[1] if len(fds) > 1 else None)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(args, fds[0], control)
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        clean = _sweep()
        clean = _wipe() and clean
        control.send(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "clean": clean}).encode())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
