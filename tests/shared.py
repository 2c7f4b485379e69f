"""Fixtures built once per test run and shared by the pytest-xdist workers, and the tests that use
them kept on one worker (``--dist loadgroup``), so that the other worker goes on with other tests
instead of waiting for the build."""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest
from _pytest.nodeid import coerce_node_id

# fixture -> the xdist group of every test that uses it
GROUPS = {"batch": "batch", "toy_decks": "browser", "lecture_decks": "browser"}


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` made by ``build(folder)`` once per test run, shared by the xdist workers
    (they share the folder above their own base directory): a lock makes a second worker wait for
    the first one's build instead of repeating it, and a failed build is tried again."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    folder, done = shared / name, shared / f"{name}.built"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.write_text("")
    return folder


def group_by_shared_fixture(config, items) -> None:
    """Put every test that uses a fixture of ``GROUPS`` in that fixture's xdist group, and give each
    grouped test the ``@group`` suffix ``--dist loadgroup`` schedules by. pytest-xdist 3.8 writes the
    suffix into ``item._nodeid``, which pytest 9 no longer reads (a node's id is ``item._id``), so
    without this every group was split across the workers and each worker built the fixtures."""
    if not getattr(config.option, "loadgroup", False):  # xdist sets it on the workers, which collect
        return
    for item in items:
        for fixture, group in GROUPS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
        groups = {m.args[0] if m.args else m.kwargs.get("name", "default")
                  for m in item.iter_markers("xdist_group")}
        if groups and "@" not in item.nodeid:
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(sorted(groups))}")
