"""The gradebook as course_tools opens it is the gradebook nbgrader itself makes."""
from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

from course_tools.grading.gradebook import opened


def _schema(database: Path) -> tuple[list[tuple], list[str]]:
    with sqlite3.connect(database) as connection:
        version = connection.execute("SELECT version_num FROM alembic_version").fetchall()
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        tables = sorted(row[0] for row in rows)
    return version, tables


def test_a_new_gradebook_carries_the_schema_version_nbgrader_stamps(tmp_path, monkeypatch):
    """nbgrader's Gradebook stamps a new database with ``alembic heads`` run in a new process; ours
    reads the head in this one: same version, same tables, and nbgrader opens it as its own."""
    from nbgrader.api import Gradebook

    # nbgrader runs the `alembic` command of the environment
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    with Gradebook(f"sqlite:///{tmp_path / 'nbgrader.db'}"):
        pass
    with opened(f"sqlite:///{tmp_path / 'ours.db'}") as book:
        book.add_student("ada")
    assert _schema(tmp_path / "ours.db") == _schema(tmp_path / "nbgrader.db")
    with Gradebook(f"sqlite:///{tmp_path / 'ours.db'}") as book:
        assert [student.id for student in book.students] == ["ada"]
