"""The system calls no sandboxed run may make: a seccomp filter that bubblewrap loads (``--seccomp FD``).

Whatever a run holds must either count against its limits or be impossible to hold. Some kernel
objects outlive every process of a run and are counted nowhere: SysV shared memory, message queues
and semaphores (a segment needs no process to exist, and a detached one is in nobody's resident
memory), POSIX message queues, keys in the kernel's keyrings, and memory files (``memfd_create``:
held by a descriptor, mapped by nobody). A new user or mount namespace would let a run mount a
tmpfs of its own, again memory outside every limit. None of it is needed by honest code (torch on
the CPU, NumPy, IPython, matplotlib), so the filter refuses these calls with ``EPERM``; ``clone3``,
whose flags a filter cannot read, says ``ENOSYS`` so that the C library falls back to ``clone``,
whose namespace flags it can. Calls of another architecture's numbering (i386 or x32 on x86-64, the
old ``ipc`` multiplexer among them) are refused whole.

A second filter (:func:`students_program`) is loaded by the runner itself once everything it
imports is loaded and before the first cell runs: from then on no thread can start and no program can
be executed. So every call of the student's code runs in the one thread whose guards ``forbid()``
set (a ``TorchFunctionMode`` is per thread), and no interpreter without them (a new ``python``) can
run; a fork is a copy of the guarded process and keeps its guards. Honest code needs neither: torch
runs with one thread, and tqdm goes without its monitor thread.

The programs are classic BPF (``struct sock_filter``), built here for x86-64 and AArch64; on any other
machine :func:`program` returns None and the sandbox runs without them.
"""
from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_BIT = 0x40000000  # x86-64's x32 calls: their numbers have this bit set
# name -> (x86-64, AArch64) numbers
REFUSED = {
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "mq_open": (240, 180), "add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219),
    "memfd_create": (319, 279), "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40),
    "umount2": (166, 39), "pivot_root": (155, 41), "ptrace": (101, 117), "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271), "bpf": (321, 280), "userfaultfd": (323, 282),
    "perf_event_open": (298, 241), "fsopen": (430, 430), "open_tree": (428, 428), "move_mount": (429, 429),
}
CLONE = (56, 220)
CLONE3 = (435, 435)
EXECVE, EXECVEAT = (59, 221), (322, 281)
CLONE_THREAD = 0x00010000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
NAMESPACES = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080
)

LD_W_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
# offsets in struct seccomp_data (the first argument's low 32 bits on little-endian)
NR, ARCH, ARG0 = 0, 4, 16


def _instruction(code: int, k: int = 0, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine (``platform.machine()``), or None where it is not known."""
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        return None
    column = 0 if machine == "x86_64" else 1
    refused = sorted({numbers[column] for numbers in REFUSED.values()})
    # Layout: arch check, number load, x32 check, one jump per refused call, clone, clone3, allow,
    # clone's flags check, then the three returns. Jumps count instructions after the current one.
    body = [_instruction(LD_W_ABS, ARCH)]
    head_length = 3 + len(refused) + 2 + (1 if machine == "x86_64" else 0)
    where = {
        "allow": head_length,
        "clone_flags": head_length + 1,
        "clone_allow": head_length + 3,
        "eperm": head_length + 4,
        "enosys": head_length + 5,
    }

    def jump_to(label: str, position: int) -> int:
        return where[label] - position - 1

    body.append(_instruction(JEQ, AUDIT_ARCH[machine], 0, jump_to("enosys", 1)))
    body.append(_instruction(LD_W_ABS, NR))
    if machine == "x86_64":
        body.append(_instruction(JGE, X32_BIT, jump_to("enosys", len(body)), 0))
    for number in refused:
        body.append(_instruction(JEQ, number, jump_to("eperm", len(body)), 0))
    body.append(_instruction(JEQ, CLONE[column], jump_to("clone_flags", len(body)), 0))
    body.append(_instruction(JEQ, CLONE3[column], jump_to("enosys", len(body)), 0))
    body.append(_instruction(RET, RET_ALLOW))  # allow
    body.append(_instruction(LD_W_ABS, ARG0))  # clone_flags
    body.append(
        _instruction(JSET, NAMESPACES, jump_to("eperm", len(body)), jump_to("clone_allow", len(body)))
    )
    body.append(_instruction(RET, RET_ALLOW))  # clone_allow
    body.append(_instruction(RET, RET_ERRNO | errno.EPERM))  # eperm
    body.append(_instruction(RET, RET_ERRNO | errno.ENOSYS))  # enosys
    return b"".join(body)


def students_program(machine: str | None = None) -> bytes | None:
    """The filter the runner loads before the first cell: a thread (``clone`` with ``CLONE_THREAD``)
    gets ``EAGAIN``, as when a process may start no more, ``clone3`` ``ENOSYS`` (the C library falls
    back to ``clone``), and ``execve``/``execveat`` ``EPERM``. None where :func:`program` is."""
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        return None
    column = 0 if machine == "x86_64" else 1
    return b"".join([
        _instruction(LD_W_ABS, ARCH),
        _instruction(JEQ, AUDIT_ARCH[machine], 0, 7),  # another architecture: the first filter refuses it
        _instruction(LD_W_ABS, NR),
        _instruction(JEQ, EXECVE[column], 7, 0),
        _instruction(JEQ, EXECVEAT[column], 6, 0),
        _instruction(JEQ, CLONE3[column], 6, 0),
        _instruction(JEQ, CLONE[column], 0, 2),
        _instruction(LD_W_ABS, ARG0),
        _instruction(JSET, CLONE_THREAD, 1, 0),
        _instruction(RET, RET_ALLOW),  # 9
        _instruction(RET, RET_ERRNO | errno.EAGAIN),
        _instruction(RET, RET_ERRNO | errno.EPERM),
        _instruction(RET, RET_ERRNO | errno.ENOSYS),
    ])
