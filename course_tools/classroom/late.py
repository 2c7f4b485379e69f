"""Due dates, extensions and the late policy, kept in nbgrader's own model.

* The due date is the gradebook's ``Assignment.duedate`` (``course due ASSIGNMENT WHEN``), an
  extension the gradebook's ``SubmittedAssignment.extension`` (``course extend STUDENT ASSIGNMENT
  DURATION``), as nbgrader's formgrader shows them. Both are stored in UTC.
* The submission time is the gradebook's ``SubmittedAssignment.timestamp``, which ``course autograde``
  takes from the ``timestamp.txt`` the collector wrote (:mod:`course_tools.classroom.exchange`: the time the
  exchange's file
  system recorded, which no student can set). A student's own file of that name is never copied.
  LMS archives (:mod:`course_tools.classroom.zip_collect`) carry no time the LMS vouches for: their
  submissions are never
  late here, and the LMS applies its own policy.
* The policy is configured once, in ``nbgrader_config.py``, through nbgrader's late-submission plugin
  interface (its ``AssignLatePenalties.plugin_class``; :class:`LatePolicy` by default)::

      c.LatePolicy.penalty_method = "per_day"  # none, zero, per_hour or per_day
      c.LatePolicy.percent = 10                # per_hour/per_day: % of the score per started hour/day
      c.LatePolicy.cap = 50                    # the most a penalty takes, in % of the score

The penalty is worked out whenever grades are reported, from the score as it stands (a grader's
manual scores included) and the due date as it stands: an extension granted after grading changes
the grade at once, with no regrade.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from traitlets import Enum, Float

from nbgrader.plugins import LateSubmissionPlugin

from course_tools.course import CourseError, nbgrader_config
from course_tools.grading.feedback import LateNote, LateNotes
from course_tools.grading.gradebook import db_url, opened

PERIOD_SECONDS = {"per_hour": 3600, "per_day": 86400}


class LatePolicy(LateSubmissionPlugin):
    """nbgrader's plugin with two more methods: a percentage of the score per started hour or day."""

    penalty_method = Enum(
        ("none", "zero", "per_hour", "per_day"), default_value="none",
        help="none: no penalty; zero: the whole score; per_hour, per_day: `percent` % of the "
        "score for each hour or day begun after the due date, at most `cap` %").tag(config=True)
    percent = Float(10.0, help="per_hour/per_day: percent of the score per started period").tag(config=True)
    cap = Float(100.0, help="the largest penalty, in percent of the score").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float,
                                total_seconds_late: float) -> float | None:
        if total_seconds_late <= 0 or self.penalty_method == "none":
            return None
        if self.penalty_method == "zero":
            return score
        periods = math.ceil(total_seconds_late / PERIOD_SECONDS[self.penalty_method])
        return score * min(self.cap, self.percent * periods) / 100



def policy(root: Path) -> LateSubmissionPlugin:
    """The configured plugin (the course's own config is trusted: it may name another class)."""
    from traitlets.utils.importstring import import_item

    config = nbgrader_config(root)
    name = config.AssignLatePenalties.get("plugin_class", None)
    plugin = import_item(name) if isinstance(name, str) else (name or LatePolicy)
    return plugin(config=config)


def describe(plugin: LateSubmissionPlugin) -> str:
    """The policy in words, for the instructor's output and the students' pages."""
    method = getattr(plugin, "penalty_method", "none")
    if method in PERIOD_SECONDS:
        unit = method.removeprefix("per_")
        return f"{plugin.percent:g} % of the score per {unit} begun late, at most {plugin.cap:g} %"
    known = {"none": "no penalty", "zero": "a late submission scores zero"}
    return known.get(method, f"{type(plugin).__name__} ({method})")


@dataclass(frozen=True)
class Deadline:
    """What the gradebook holds about one student's deadline for one assignment (naive UTC times)."""

    due: dt.datetime | None  # the assignment's due date, None when it has none
    extension: dt.timedelta | None
    submitted: dt.datetime | None  # the collector's time, None when it is not known

    @property
    def effective(self) -> dt.datetime | None:
        return None if self.due is None else self.due + (self.extension or dt.timedelta())

    @property
    def seconds_late(self) -> float:
        if self.effective is None or self.submitted is None:
            return 0.0
        return max(0.0, (self.submitted - self.effective).total_seconds())


@dataclass(frozen=True)
class Lateness:
    """A late submission's delay and what it cost."""

    seconds: float
    penalty: float  # points taken off the score
    due: dt.datetime  # the due date with the extension

    def describe(self) -> str:
        return f"submitted {duration_text(self.seconds)} after {shown(self.due)}: −{self.penalty:g} points"


def lateness(plugin: LateSubmissionPlugin, student: str, deadline: Deadline | None, score: float | None
             ) -> Lateness | None:
    """None for a submission on time (or without a due date or a known time)."""
    if deadline is None or deadline.seconds_late <= 0:
        return None
    penalty = plugin.late_submission_penalty(student, score or 0.0, deadline.seconds_late) or 0.0
    return Lateness(deadline.seconds_late, round(min(max(penalty, 0.0), score or 0.0), 4), deadline.effective)


def late_notes(root: Path, assignment: str) -> LateNotes:
    """What ``course feedback`` says of each student's lateness in ``assignment``: the gradebook's due
    dates and extensions and the course's late policy as they stand now."""
    plugin, found = policy(root), deadlines(db_url(root), assignment)
    words = describe(plugin)

    def note(student: str, score: float | None) -> LateNote | None:
        late = lateness(plugin, student, found.get(student), score)
        return None if late is None else LateNote(late.penalty, late.describe(), words)

    return note


def duration_text(seconds: float) -> str:
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""]
    return " ".join(p for p in parts if p) or "0 min"


def shown(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def parse_when(text: str) -> dt.datetime:
    """An ISO 8601 date and time (``2026-12-01 17:00``, ``2026-12-01T17:00+01:00``) as naive UTC; a
    time without a zone is UTC, said in the command's output."""
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise CourseError(
            f"{text!r} is not a date and time like 2026-12-01 17:00 or 2026-12-01T17:00+01:00") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return moment


DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|min|m)\b")


def parse_duration(text: str) -> dt.timedelta:
    """``2d``, ``36h``, ``1d 12h``, ``90min``: a positive extension."""
    units = {"d": 86400, "h": 3600, "min": 60, "m": 60}
    found = DURATION.findall(text)
    if not found or DURATION.sub("", text).strip():
        raise CourseError(f"{text!r} is not a duration like 2d, 36h, 1d 12h or 90min")
    seconds = sum(float(value) * units[unit] for value, unit in found)
    if seconds <= 0:
        raise CourseError(f"an extension must be longer than zero, not {text!r}")
    return dt.timedelta(seconds=seconds)


def set_due(url: str, assignment: str, when: dt.datetime | None) -> None:
    with opened(url) as gradebook:
        gradebook.update_or_create_assignment(assignment, duedate=when)


def extend(url: str, assignment: str, student: str, extension: dt.timedelta | None) -> None:
    """The student's extension; their submission's gradebook entry is made for it when there is none yet
    (with no scores: :func:`course_tools.grading.gradebook.scores` lists only what was graded)."""
    import warnings

    with opened(url) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nbgrader's own SQLAlchemy warnings while it creates the submission
        gradebook.update_or_create_student(student)
        gradebook.update_or_create_submission(assignment, student, extension=extension)


def deadlines(url: str, assignment: str) -> dict[str, Deadline]:
    """Per student with a gradebook entry for ``assignment``: due date, extension and submission time."""
    from nbgrader.api import MissingEntry

    with opened(url) as gradebook:
        try:
            entry = gradebook.find_assignment(assignment)
        except MissingEntry:
            return {}
        return {s.student.id: Deadline(entry.duedate, s.extension, s.timestamp) for s in entry.submissions}


def effective_due_dates(root: Path, assignment: str) -> tuple[dt.datetime | None, dict[str, dt.datetime]]:
    """The assignment's due date, and each student's with their extension where the gradebook holds
    one (naive UTC); none before there is a gradebook (none is made here)."""
    url = db_url(root)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        return None, {}
    due = _due(url, assignment)
    return due, {student: d.effective for student, d in deadlines(url, assignment).items()
                 if d.effective is not None}


def add_parsers(steps: argparse._SubParsersAction) -> None:
    due = steps.add_parser("due", help="set (or show) an assignment's due date in the gradebook")
    due.add_argument("assignment", metavar="ASSIGNMENT")
    due.add_argument(
        "when", nargs="?", metavar="WHEN",
        help="ISO 8601, e.g. '2026-12-01 17:00' (UTC) or '2026-12-01T17:00+01:00'; 'none' clears it")
    extension = steps.add_parser("extend", help="grant a student an extension of an assignment's due date")
    extension.add_argument("student", metavar="STUDENT")
    extension.add_argument("assignment", metavar="ASSIGNMENT")
    extension.add_argument("duration", metavar="DURATION",
                           help="e.g. 2d, 36h, 1d 12h, 90min; 'none' withdraws it")


def run_step(arguments: argparse.Namespace, root: Path, out: TextIO | None = None) -> int:
    from course_tools.course import assignments
    from course_tools.grading import gradebook
    from course_tools.grading.submission import source_cells

    out = out or sys.stdout
    assignment = assignments(root, [arguments.assignment])[0]
    url = gradebook.db_url(root)
    if arguments.step == "due":
        if arguments.when is not None:
            when = None if arguments.when.strip().lower() == "none" else parse_when(arguments.when)
            gradebook.ensure_cells(url, assignment, source_cells(assignment.source))
            set_due(url, assignment.id, when)
        due = _due(url, assignment.id)
        print(f"{assignment.id}: {'due ' + shown(due) if due else 'no due date'}; late policy: "
              f"{describe(policy(root))}", file=out)
        return 0
    withdrawn = arguments.duration.strip().lower() == "none"
    extension = None if withdrawn else parse_duration(arguments.duration)
    if not withdrawn and _due(url, assignment.id) is None:
        raise CourseError(
            f"{assignment.id} has no due date to extend: set one with `course due {assignment.id} WHEN`")
    gradebook.ensure_cells(url, assignment, source_cells(assignment.source))
    extend(url, assignment.id, arguments.student, extension)
    deadline = deadlines(url, assignment.id)[arguments.student]
    print(
        f"{arguments.student} · {assignment.id}: " +
        (f"extension withdrawn; due {shown(deadline.due)}" if withdrawn else
         f"extended by {duration_text(extension.total_seconds())}: due {shown(deadline.effective)}"),
        file=out)
    return 0


def _due(url: str, assignment: str) -> dt.datetime | None:
    from nbgrader.api import MissingEntry

    with opened(url) as gradebook:
        try:
            return gradebook.find_assignment(assignment).duedate
        except MissingEntry:
            return None
