"""The warm runner (course_tools/grading/sandboxed/zygote.py): runs forked from one zygote share nothing.

One zygote per batch slot imports torch once and forks every student's run; what one run leaves
behind (a detached process, files in the scratch folder or /dev/shm, a folder it made unreadable,
extra files beside its outbox) must be gone before the next run starts, what would outlive every
process unseen (SysV IPC, files in the sandbox's own /, /etc or /dev) must be impossible, and the
zygote itself must be out of the run's reach.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import pytest

from course_tools.grading.sandboxed.protocol import Plan
from course_tools.grading.reference import plan_limits
from course_tools.grading.runs import run_plan
from course_tools.grading.limits import Limits
from course_tools.grading.sandbox import Sandbox
from course_tools.grading.spec import RunSpec

from .system import needs_bwrap

# Sandboxed runs, like tests/test_autograde.py's: `make test-fast` leaves them out with the notebooks.
pytestmark = [needs_bwrap, pytest.mark.notebook]

LIMITS = Limits(cell_s=60.0, student_s=120.0)

LEAVE_TRACES = '''
import ctypes, os, subprocess, sys
open("/sandbox/work/left-behind.txt", "w").write("the previous student's answer")
os.makedirs("/sandbox/work/locked/inside")
open("/sandbox/work/locked/inside/answer.txt", "w").write("the previous student's answer")
os.chmod("/sandbox/work/locked/inside", 0)
os.chmod("/sandbox/work/locked", 0)
written = []
for elsewhere in ("/dev/shm/left-behind", "/sandbox/left-behind.txt", "/left-behind.txt",
                  "/etc/left-behind.txt", "/dev/left-behind.txt"):
    try:
        open(elsewhere, "w").write("the previous student's answer")
        written.append(elsewhere)
    except OSError:
        pass
print("WRITTEN " + " ".join(written))
libc = ctypes.CDLL(None, use_errno=True)
print("SYSV", libc.shmget(0x7E57, 1 << 20, 0o1666), libc.msgget(0x7E57, 0o1666),
      libc.semget(0x7E57, 1, 0o1666))
subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)  # survivor"],
                 start_new_session=True)
print("traces left")
'''

HANG = '''
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.1)  # hung-run-{marker}"])
while True:
    {hang}
'''

LOOK_AROUND = '''
import json, os
seen = {"work": sorted(os.listdir("/sandbox/work")), "shm": sorted(os.listdir("/dev/shm")),
        "sandbox": sorted(os.listdir("/sandbox")), "root": sorted(os.listdir("/")), "processes": [],
        "sysv": [len(open(f"/proc/sysvipc/{kind}").readlines()) - 1 for kind in ("shm", "msg", "sem")]}
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            seen["processes"].append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
        except OSError:
            pass
zygote = next(pid for pid in os.listdir("/proc") if pid.isdigit()
              and b"course_tools.grading.sandboxed.zygote" in open(f"/proc/{pid}/cmdline", "rb").read())
try:
    os.listdir(f"/proc/{zygote}/fd")
    seen["zygote_fds"] = "readable"
except PermissionError:
    seen["zygote_fds"] = "refused"
print("SEEN " + json.dumps(seen))
'''


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "probes.json").write_text("[]")
    return {"probes.json": tmp_path / "probes.json"}


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().decode(errors="replace")
    except OSError:
        return ""


def _plan(code: str) -> Plan:
    return Plan(
        "grade", [{"kind": "other", "grade_id": None, "source": code, "names": []}], plan_limits(LIMITS)
    )


def test_without_a_zygote_a_run_is_a_sandbox_of_its_own(tmp_path, inputs):
    """The fallback when a slot's zygote cannot start (every run of a batch asks for one): a new Python
    in a new bubblewrap, confined as a fork of the zygote is."""
    with Sandbox() as sandbox:
        cold = run_plan(sandbox, RunSpec.of(_plan(LEAVE_TRACES), tmp_path / "cold", inputs, LIMITS,
                                           warm=False))
        assert not sandbox.zygotes, "a cold run started a zygote"
    assert cold.failure is None and cold.steps[0]["ok"], (cold.failure, cold.steps, cold.log)
    assert "WRITTEN /dev/shm/left-behind\n" in cold.log, "only /dev/shm and the scratch folder are writable"
    assert "SYSV -1 -1 -1" in cold.log, "SysV IPC is refused"


def test_the_next_run_finds_nothing_the_previous_one_left(tmp_path, inputs):
    with Sandbox() as sandbox:
        first = run_plan(sandbox, RunSpec.of(_plan(LEAVE_TRACES), tmp_path / "first", inputs, LIMITS))
        assert first.failure is None and first.steps[0]["ok"], (first.failure, first.steps, first.log)
        assert "traces left" in first.log
        zygote = sandbox.zygotes[0]
        second = run_plan(sandbox, RunSpec.of(_plan(LOOK_AROUND), tmp_path / "second", inputs, LIMITS))
        assert sandbox.zygotes[0] is zygote and zygote.alive(), "the second run did not reuse the warm zygote"
    assert second.failure is None and second.steps[0]["ok"], (second.failure, second.steps, second.log)
    seen = json.loads(second.log.split("SEEN ", 1)[1].splitlines()[0])
    assert set(seen["work"]) <= {".ipython", "runs", "tmp"} and seen["shm"] == [], (
        seen
    )  # the runner's own, afresh
    assert sorted(seen["sandbox"]) == ["in", "out", "work"] and "left-behind.txt" not in seen["root"], seen
    assert "WRITTEN /dev/shm/left-behind\n" in first.log, (
        "only /dev/shm (wiped) and the scratch folder are writable"
    )
    assert "SYSV -1 -1 -1" in first.log and seen["sysv"] == [0, 0, 0], "SysV IPC is refused"
    assert not [p for p in seen["processes"] if "survivor" in p], seen["processes"]
    assert seen["zygote_fds"] == "refused", "a run can reach the zygote's descriptors"
    assert not zygote.alive() and not zygote.folder.exists(), "closing the sandbox leaves the zygote behind"


@pytest.mark.parametrize(
    "hang, limit",
    [
        ("pass", "2 s CPU time limit of one step"),
        ("time.sleep(0.1)", "16 s wall-clock time limit of one step"),
    ],
    ids=["spins", "sleeps"],
)
def test_a_run_that_breaks_a_limit_takes_the_zygote_with_it(tmp_path, inputs, hang, limit):
    """A step that spins is stopped by its CPU time; one that sleeps, using none, by the wall-clock
    backstop (three times the CPU limit and 10 s)."""
    with Sandbox() as sandbox:
        marker = secrets.token_hex(4)  # this test's own: the other parametrisation may run at the same time
        hung = run_plan(sandbox, RunSpec.of(_plan(HANG.format(hang=hang, marker=marker)), tmp_path / "hung",
                                            inputs, Limits(cell_s=2.0, student_s=60.0)))
        assert hung.steps[0]["ok"] is False and limit in hung.steps[0]["error"], hung.steps
        assert hung.attempts == 2, "the run was not started again past the step that hung"
        assert not [
            pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid).count(f"hung-run-{marker}")
        ], "the process that hung outlived its run"
        assert sandbox.zygotes[0].alive()  # a new zygote: the one that ran the hung step was killed with it
        after = run_plan(sandbox, RunSpec.of(_plan("print('fresh')"), tmp_path / "after", inputs, LIMITS))
    assert after.steps[0]["ok"] and "fresh" in after.log, (after.steps, after.log)


def test_one_zygote_serves_course_libs_that_differ_only_where_it_imported_nothing(tmp_path, inputs):
    """A cascade run mounts a course_lib that keeps some references: the zygote's mounted copy is
    updated in place when only modules it never imported differ, and replaced otherwise."""
    import course_lib

    installed = Path(course_lib.__file__).parent
    copies = {}
    for name, module in (("main", None), ("cascade", "bleu.py"), ("machinery", "grading.py")):
        copy = shutil.copytree(
            installed, tmp_path / name / "course_lib", ignore=shutil.ignore_patterns("__pycache__")
        )
        if module:
            with open(copy / module, "a") as source:
                source.write(f"\nMARK = {name!r}\n")
        copies[name] = copy
    look = (
        "import course_lib.bleu, course_lib.grading\n"
        "print('MARK', getattr(course_lib.bleu, 'MARK', None), getattr(course_lib.grading, 'MARK', None))"
    )
    seen = {}
    with Sandbox() as sandbox:
        for name in ("main", "cascade", "main", "machinery"):
            run = run_plan(sandbox, RunSpec.of(_plan(look), tmp_path / f"run-{len(seen)}", inputs, LIMITS,
                                               course_lib=copies[name]))
            assert run.steps[0]["ok"], (run.steps, run.log)
            seen[len(seen)] = (name, run.log.split("MARK ", 1)[1].split()[:2], sandbox.zygotes[0])
    assert [marks for _, marks, _ in seen.values()] == [
        ["None", "None"],
        ["cascade", "None"],
        ["None", "None"],
        ["None", "machinery"],
    ], seen
    zygotes = [zygote for _, _, zygote in seen.values()]
    assert zygotes[0] is zygotes[1] is zygotes[2], (
        "a course_lib differing in a module it never imported restarted it"
    )
    assert zygotes[3] is not zygotes[0], "a zygote ran with a course_lib differing from the one it imported"
