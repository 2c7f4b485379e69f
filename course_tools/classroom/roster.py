"""The class roster, ``students.csv`` in the course folder: who may log in to the course hub.

Its columns and reader are the LMS export's (:data:`.lms.ROSTER_COLUMNS`, :func:`.lms.read_roster`):
``student_id`` (required), ``name``, ``email``, ``canvas_id``, ``sis_user_id``, ``sis_login_id``,
``section``, ``moodle_identifier``. On the hub, ``student_id`` is also the student's Unix login, so
it must be one.
"""
from __future__ import annotations

import re
from pathlib import Path

from course_tools.course import CourseError

from .lms_sheets import read_roster

ROSTER = "students.csv"
# useradd's portable names; nbgrader's exchange also splits its file names on "+", so nothing else is safe
LOGIN_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


def hub_logins(path: Path) -> list[str]:
    """Every ``student_id`` of the roster, each checked to be a Unix login name."""
    logins = [entry["student_id"] for entry in read_roster(path)]
    wrong = [login for login in logins if not LOGIN_NAME.fullmatch(login)]
    if wrong:
        raise CourseError(f"{path}: student_id {', '.join(map(repr, wrong))} cannot be a login on the hub "
                          "(lower-case letters, digits, _ and -, starting with a letter or _, at most 32)")
    return logins
