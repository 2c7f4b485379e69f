"""What the runner does to its own process before any of the student's code runs: drop to the slot's
user, set the limits a process can set on itself, put the released files in place, and, last,
load the filter that refuses every thread and program from then on.
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
from pathlib import Path

from .protocol import PLAN, Plan


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _limit(limits: dict) -> None:
    for name, value in (("RLIMIT_AS", limits["memory_bytes"]), ("RLIMIT_NPROC", limits["processes"]),
                        ("RLIMIT_FSIZE", limits["file_bytes"]), ("RLIMIT_CORE", 0)):
        resource.setrlimit(getattr(resource, name), (value, value))


def one_thread_and_no_programs(program: bytes) -> None:
    """Load ``program`` (``plan.students_filter``): from now on no thread starts and no program is
    executed in this process and every fork of it (see ``grading.seccomp``). Refusing is final: a
    filter can only be added to, never taken away."""
    import ctypes

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    instructions = ctypes.create_string_buffer(program, len(program))
    fprog = Program(len(program) // 8, ctypes.addressof(instructions))
    # PR_SET_NO_NEW_PRIVS (bubblewrap has set it already), then PR_SET_SECCOMP with SECCOMP_MODE_FILTER
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"the runner could not load its seccomp filter: {os.strerror(error)}")


def prepare(inbox: Path) -> Plan:
    """Before anything of the student's: the plan read, the process's own limits set, the released
    files in the working folder, and no module importable from it."""
    plan = Plan.loads((inbox / PLAN).read_text(encoding="utf-8"))
    _limit(plan.limits)
    for folder in ("tmp", "runs"):
        (Path(os.environ.get("HOME", ".")) / folder).mkdir(exist_ok=True)
    if (inbox / "files").is_dir():  # the files released beside the notebook (never the student's own)
        for path in (inbox / "files").iterdir():
            if path.is_dir():
                shutil.copytree(path, path.name)
            elif path.suffix != ".ipynb":
                shutil.copy(path, path.name)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]  # no torch.py from the cwd
    return plan
