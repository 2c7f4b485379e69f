"""course_tools.grading.processes: what a run's process tree uses, as the limits read it.

The tree is walked down the kernel's lists of each thread's children, or, on a kernel without them,
found by scanning every process; both must see a grandchild's memory and CPU time."""
from __future__ import annotations

import secrets
import subprocess
import sys
import time

import pytest

from course_tools.grading import processes

MB = 1 << 20
# a child that starts a grandchild holding 300 MB, and another that spins for a second and is reaped
TREE = """
import subprocess, sys, time
hold = "import time; block = bytearray(300 << 20); print('held', flush=True); time.sleep(60)  # {marker}"
holder = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE)
holder.stdout.readline()
subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 1.0\\n"
                "while time.process_time() < end: pass"])
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("listed", [True, False], ids=["children-lists", "scan"])
def test_a_grandchilds_memory_and_a_reaped_childs_cpu_count(listed, monkeypatch):
    if listed and not processes.CHILDREN_LISTED:
        pytest.skip("this kernel does not list a thread's children in /proc")
    monkeypatch.setattr(processes, "CHILDREN_LISTED", listed)
    marker = secrets.token_hex(4)  # this test's grandchild only: the other parametrisation may run beside it
    tree = TREE.replace("{marker}", marker)
    root = subprocess.Popen(["bash", "-c", f"{sys.executable} -c \"$0\"; sleep 60", tree],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout.readline().strip() == "ready"
        usage = processes.tree_usage(root.pid)
        assert usage.resident_bytes > 300 * MB, usage
        assert usage.cpu_s >= 0.9, usage  # the spinning child's second, reaped into its parent's
        started = time.monotonic()
        while processes.tree_usage(root.pid).resident_bytes > 300 * MB and time.monotonic() - started < 5:
            subprocess.run(["pkill", "-f", marker])  # the grandchild gone: its memory too
            time.sleep(0.1)
        assert processes.tree_usage(root.pid).resident_bytes < 300 * MB
    finally:
        subprocess.run(["pkill", "-f", marker])
        subprocess.run(["pkill", "-P", str(root.pid)])
        root.kill()
        root.wait()
