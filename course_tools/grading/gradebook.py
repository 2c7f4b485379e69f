"""The nbgrader gradebook: backed up before every autograde run, written only by the trusted grader.

Autograde writes ``auto_score`` and ``needs_manual_grade`` and nothing else: a grader's
``manual_score``, ``extra_credit`` and comments (formgrader's *Manual Grading*) are never touched;
:func:`scores` reads them back for ``course grades`` and the feedback pages. SQLite (the default)
is copied with SQLite's online backup; any other ``db_url`` (PostgreSQL shared by several graders)
is dumped table by table to JSON, which restores with any SQL client.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import sqlite3
import warnings
from dataclasses import dataclass
from pathlib import Path

from course_tools.course import Assignment, nbgrader_config

BACKUPS = "gradebook-backups"


def db_url(root: Path) -> str:
    return nbgrader_config(root).CourseDirectory.db_url


def opened(url: str):
    """nbgrader's ``Gradebook`` on ``url``. On a database it has not made yet, its constructor runs
    ``alembic heads`` in a new process for the schema version to stamp (about 2 s of CPU per new
    gradebook); the same version is stamped here first, read from alembic's API in this process."""
    from nbgrader.api import Gradebook
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    try:
        if not inspect(engine).get_table_names():
            with engine.begin() as connection:
                connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
                connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head)"),
                                   {"head": schema_head()})
    finally:
        engine.dispose()
    return Gradebook(url)


@functools.cache
def schema_head() -> str:
    """The newest revision of nbgrader's gradebook schema (its alembic migrations' head)."""
    import nbgrader
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
    return ScriptDirectory.from_config(config).get_current_head()


def backup(root: Path, url: str) -> Path | None:
    """A timestamped copy of the gradebook under ``gradebook-backups/``; None when there is none yet."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    folder = root / BACKUPS
    if url.startswith("sqlite:///"):
        database = Path(url[len("sqlite:///"):])
        if not database.is_file():
            return None
        folder.mkdir(exist_ok=True)
        target = folder / f"{database.stem}-{stamp}{database.suffix}"
        with sqlite3.connect(database) as source, sqlite3.connect(target) as copy:
            source.backup(copy)
        return target
    from sqlalchemy import MetaData, create_engine

    engine = create_engine(url)
    metadata = MetaData()
    metadata.reflect(engine)
    with engine.connect() as connection:
        tables = {name: [dict(row._mapping) for row in connection.execute(table.select())]
                  for name, table in metadata.tables.items()}
    folder.mkdir(exist_ok=True)
    target = folder / f"gradebook-{stamp}.json"
    target.write_text(json.dumps(tables, default=str, indent=1), encoding="utf-8")
    return target


def ensure_assignment(url: str, assignment: str, notebook: str, points: dict[str, float],
                      answers: list[str]) -> None:
    """The assignment, its notebook, grade cells and answer cells, as nbgrader's generate_assignment records
    them."""
    from nbgrader.api import MissingEntry

    with opened(url) as gradebook:
        gradebook.update_or_create_assignment(assignment)
        try:
            gradebook.find_notebook(notebook, assignment)
        except MissingEntry:
            gradebook.add_notebook(notebook, assignment)
        for grade_id, maximum in points.items():
            gradebook.update_or_create_grade_cell(
                grade_id, notebook, assignment, max_score=maximum, cell_type="code")
        for grade_id in answers:
            gradebook.update_or_create_solution_cell(grade_id, notebook, assignment)


def ensure_cells(url: str, assignment: Assignment, cells: list) -> None:
    """:func:`ensure_assignment` with the test and answer cells of the source notebook (``source_cells``)."""
    ensure_assignment(url, assignment.id, assignment.release.stem,
                      {c.grade_id: c.points for c in cells if c.kind == "test"},
                      [c.grade_id for c in cells if c.kind == "solution"])


def save(url: str, assignment: str, notebook: str, student: str, scores: dict[str, float | None],
         review: set[str], timestamp: str | None) -> None:
    """Write one student's automatic scores; ``review`` names the cells a person must look at."""
    with opened(url) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings while it creates the submission
        gradebook.update_or_create_student(student)
        extra = {"timestamp": timestamp} if timestamp else {}
        gradebook.update_or_create_submission(assignment, student, **extra)
        for grade_id, score in scores.items():
            grade = gradebook.find_grade(grade_id, notebook, assignment, student)
            grade.auto_score = score
            grade.needs_manual_grade = grade.manual_score is not None or score is None or grade_id in review
        gradebook.db.commit()


@dataclass
class Scores:
    """A student's graded submission of one assignment, as the gradebook holds it."""

    score: float  # the total, a grader's manual score winning over the automatic one
    max_score: float
    manual: dict[str, float]  # grade cell -> the score a grader gave it by hand
    comments: dict[str, str]  # cell (an answer or a task cell) -> the comment a grader wrote on it


def scores(url: str, assignment: str) -> dict[str, Scores]:
    """Per student with a graded submission: the total, the maximum, the manual scores and the
    comments of a grader."""
    from nbgrader.api import MissingEntry

    found = {}
    with opened(url) as gradebook:
        try:
            submissions = gradebook.find_assignment(assignment).submissions
        except MissingEntry:
            return {}
        for submission in submissions:
            grades = [g for n in submission.notebooks for g in n.grades]
            if all(g.auto_score is None and g.manual_score is None for g in grades):
                continue  # an entry made for an extension, or a submission that failed to grade: no score
            comments = {c.name: c.manual_comment.strip() for n in submission.notebooks for c in n.comments
                        if c.manual_comment and c.manual_comment.strip()}
            found[submission.student.id] = Scores(
                sum(g.score for g in grades), submission.max_score,
                {g.name: g.manual_score for g in grades if g.manual_score is not None}, comments)
    return found


def students(url: str) -> list[str]:
    with opened(url) as gradebook:
        return [s.id for s in gradebook.students]
