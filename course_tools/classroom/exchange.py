"""nbgrader's exchange, the shared folder through which a hub's students fetch, submit and read
feedback: ``course release --exchange``, ``course collect`` and ``course feedback --release``.

The exchange is ``Exchange.root`` of the course's nbgrader_config.py (``build/exchange/``), laid
out and permissioned by nbgrader itself: the root
world-writable, ``<course>/outbound/`` readable by all, ``<course>/inbound/`` writable but not
listable by students (0733), ``<course>/feedback/`` traversable only (0711), a student's feedback
file named by a hash of a secret only their submission holds. Every ``course`` command adds the
sticky bit to the root and to inbound/, and makes the course's folder in it itself (:mod:`.access`).

Students submit with nbgrader's own submit; the instructor collects with :func:`collect_from_exchange`,
not nbgrader's collect, which trusts the inbox: it takes the student's name from the entry's name
(any student may create ``<someone else>+<assignment>+<time>`` in the 0733 inbox, and nbgrader only
logs a warning when the owner differs), follows links inside an entry, and orders submissions by the
time the student wrote into the name (so one dated 2099 is never superseded).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from course_tools.course import Assignment, CourseError, nbgrader_config
from course_tools.untrusted import Missing, Unreadable, open_regular, read_bytes, safe_text

from .intake import Budget, Limits, Refused, Submission

# nbgrader writes this secret into each submission; its feedback is released under a hash of it
SECRET = "submission_secret.txt"
TIMESTAMP = "timestamp.txt"


def _api(root: Path, **overrides: dict):
    from nbgrader.apps import NbGraderAPI

    return NbGraderAPI(config=nbgrader_config(root, **overrides))


def _checked(result: dict, what: str) -> str:
    """nbgrader's captured log, or a CourseError with the error nbgrader logged."""
    log = result.get("log", "")
    if not result["success"]:
        errors = [line for line in log.splitlines() if line.startswith("[ERROR]")]
        reason = errors[-1][len("[ERROR] "):] if errors else (result.get("error") or
                                                              "").strip().splitlines()[-1:]
        raise CourseError(f"{what}: {reason or 'nbgrader gave no reason'}")
    return log


def exchange_root(root: Path) -> Path:
    return Path(nbgrader_config(root).Exchange.root)


def release_to_exchange(assignment: Assignment, out: TextIO | None = None) -> None:
    """Publish ``notebooks/<id>/`` to the exchange; an earlier release of it is replaced (students who
    fetched it keep their copy)."""
    out = out or sys.stdout
    # force: the release is regenerated from solutions/, so a newer one always replaces the older
    api = _api(assignment.root, ExchangeReleaseAssignment={"force": True})
    _checked(api.release_assignment(assignment.id),
             f"{assignment.id}: nbgrader could not release it to the exchange")
    print(
        f"released {assignment.id} to the exchange ({api.coursedir.course_id} in "
        f"{exchange_root(assignment.root)})",
        file=out)


def collect_from_exchange(assignment: Assignment, out: TextIO | None = None, limits: Limits | None = None
                          ) -> Collected:
    """Each student's latest submission into ``submitted/<student>/<id>/`` (:data:`COLLECT_STAGES`).

    ``course collect`` often runs as root, and the inbox is writable by every student: nothing in
    it is taken on its word. Each entry is refused, with the reason and both names where two are
    involved, when it is not a folder made by the account it is named for, or by a student of the
    roster (when the course has one, students.csv), or when a file it holds
    is a link, not a regular file, made by another account, or over the limits. Its time, which
    decides whether it was late (:mod:`.late`), is the time in its name only when that is within
    :data:`CLOCK_SKEW` of the last change of its files that the file system recorded (which no
    student can set); otherwise the file system's, and the difference is said. Only the
    assignment's notebooks and nbgrader's submission secret are copied, as regular files with fixed
    modes (:mod:`.intake`); timestamp.txt is written by the collector, holding that time.
    """
    from .lms_sheets import read_roster
    from .roster import ROSTER

    out = out or sys.stdout
    roster = assignment.root / ROSTER
    collected = Collected(assignment,
                          exchange_root(assignment.root) / _course_id(assignment.root) / "inbound", limits or
                          Limits(), {e["student_id"]
                                     for e in read_roster(roster)} if roster.is_file() else None)
    for stage in COLLECT_STAGES:
        stage(collected)
    collected.report(out)
    return collected


# ------------------------------------------------------------------------ collect, in stages ----

@dataclass
class InboxEntry:
    """One folder of the inbox, as nbgrader's submit names it:
    ``<login>+<assignment>+<timestamp>[+<random>]``."""

    name: str
    login: str  # the login its name claims
    claimed: dt.datetime | None  # the time its name claims (UTC); None when it cannot be read
    owner: str = ""  # the account that made it
    # the last change of the entry or a file collected from it (ctime, UTC)
    received: dt.datetime = dt.datetime.min
    files: list[str] = field(default_factory=list)  # the files to collect from it

    due: dt.datetime | None = None  # the student's due date (with any extension), where the gradebook has one

    @property
    def time(self) -> dt.datetime:
        """The submission time: what the name claims (nbgrader's submit writes it) when the file system
        saw the entry within CLOCK_SKEW of it, else what the file system saw: anyone can name an entry
        with any time, but nobody can set when their files last changed. A claim never moves a due
        date: where the two times lie on two sides of it, the later counts."""
        if self.straddles:
            return max(self.received, self.claimed)
        return self.claimed if self.claimed is not None and abs(self.claimed - self.received) <= CLOCK_SKEW \
            else self.received

    @property
    def straddles(self) -> bool:
        """Whether the claimed time and the file system's lie on two sides of the due date."""
        return None not in (self.claimed, self.due) and \
            min(self.claimed, self.received) <= self.due < max(self.claimed, self.received)


@dataclass
class Collected:
    """What ``course collect`` found and did: the state its stages pass on, then its report."""

    assignment: Assignment
    inbound: Path
    limits: Limits
    students_of_the_roster: set[str] | None  # None: no roster, any account may submit
    entries: list[InboxEntry] = field(default_factory=list)
    refused: list[tuple[InboxEntry, str]] = field(default_factory=list)
    notes: list[str] = field(
        default_factory=list)  # times not taken as claimed, unfinished entries, missing files
    latest: dict[str, InboxEntry] = field(default_factory=dict)  # login -> the entry to collect
    students: list[str] = field(default_factory=list)  # collected this time

    @property
    def status(self) -> int:
        return 1 if self.refused else 0

    def report(self, out: TextIO) -> None:
        print(f"collected {len(self.students)} new submission(s) of {self.assignment.id} into submitted/: "
              f"{', '.join(self.students) or 'none'}", file=out)
        if self.refused:
            print(
                f"refused {len(self.refused)} inbox entr{'y' if len(self.refused) == 1 else 'ies'} (not "
                "collected; "
                "a student's earlier entry is, when there is one; named here until removed from the inbox):",
                file=out)
            for entry, why in sorted(self.refused, key=lambda item: item[0].name):
                print(f"  {safe_text(entry.name, one_line=True)}: {safe_text(why, one_line=True)}", file=out)
        for note in self.notes:
            print(f"note: {safe_text(note, one_line=True)}", file=out)


def read_inbox(collected: Collected) -> None:
    """The inbox's entries for this assignment, each a folder made by the account it is named for."""
    if not collected.inbound.is_dir():
        raise CourseError(f"{collected.inbound}: no inbox: release the assignment to the exchange first")
    for name in sorted(os.listdir(collected.inbound)):
        login, _, rest = name.partition("+")
        assignment, _, stamp = rest.partition("+")
        if assignment != collected.assignment.id:
            continue
        entry = InboxEntry(name, login, _claimed_time(stamp))
        info = os.lstat(collected.inbound / name)
        entry.owner = _login(info.st_uid)
        if not stat.S_ISDIR(info.st_mode):
            collected.refused.append(
                (entry, f"{_kind(info.st_mode)} made by {entry.owner}, not a submission folder"))
        elif entry.owner != login:
            collected.refused.append(
                (entry, f"named for {login} but made by {entry.owner}: {entry.owner} may not "
                 f"submit in {login}'s name"))
        elif collected.students_of_the_roster is not None and login not in collected.students_of_the_roster:
            collected.refused.append((entry, f"made by {login}, who is not a student of the roster"))
        elif stat.S_IMODE(
                info.st_mode) != SUBMITTED_MODE or not os.path.lexists(collected.inbound / name / TIMESTAMP):
            collected.notes.append(
                f"{name}: nbgrader's submit has not finished with it: left for the next collect")
        else:
            entry.received = _utc(info.st_ctime)
            collected.entries.append(entry)


def vouch(collected: Collected) -> None:
    """Each file to collect from each entry opened without following links and checked: a regular
    file, made by the entry's owner, within the limits; the entry refused otherwise."""
    notebooks = [p.name for p in collected.assignment.release.parent.glob("*.ipynb")]
    kept = []
    for entry in collected.entries:
        try:
            for name in [*notebooks, SECRET]:
                with _opened(collected, entry, name) as (fd, info):
                    if fd is None:
                        continue
                    entry.files.append(name)
                    entry.received = max(entry.received, _utc(info.st_ctime))
            if not any(name in entry.files for name in notebooks):
                collected.notes.append(f"{entry.name}: holds no {' or '.join(notebooks)}")
            kept.append(entry)
        except Refused as refused:
            collected.refused.append((entry, str(refused)))
    collected.entries = kept


def read_due_dates(collected: Collected) -> None:
    """Each entry's due date from the gradebook (none before the instructor sets one)."""
    from .late import effective_due_dates

    due, per_student = effective_due_dates(collected.assignment.root, collected.assignment.id)
    for entry in collected.entries:
        entry.due = per_student.get(entry.login, due)


def choose_latest(collected: Collected) -> None:
    """Each student's entry with the latest submission time, and a note for each time not taken as claimed."""
    for entry in collected.entries:
        if entry.straddles:
            collected.notes.append(
                f"{entry.name}: claims {_shown(entry.claimed)} and its files last changed at "
                f"{_shown(entry.received)}, on two sides of its due date {_shown(entry.due)}: the later, "
                f"{_shown(entry.time)}, is used")
        elif entry.claimed is None:
            collected.notes.append(
                f"{entry.name}: no time in its name: the exchange's, {_shown(entry.received)}, is used")
        elif entry.claimed > entry.received + CLOCK_SKEW:
            collected.notes.append(
                f"{entry.name}: claims {_shown(entry.claimed)}, later than the exchange received it "
                f"({_shown(entry.received)}): that time is used")
        elif entry.claimed < entry.received - CLOCK_SKEW:
            collected.notes.append(
                f"{entry.name}: claims {_shown(entry.claimed)}, but its files last changed at "
                f"{_shown(entry.received)} (changed after it was submitted, or a wrong clock): "
                "that time is used")
        latest = collected.latest.get(entry.login)
        if latest is None or (entry.time, entry.name) > (latest.time, latest.name):
            collected.latest[entry.login] = entry


def copy_newer(collected: Collected) -> None:
    """Each student's chosen entry into submitted/, unless what is there is as recent."""
    root = collected.assignment.root
    for login, entry in sorted(collected.latest.items()):
        existing = _existing_time(collected.assignment.submitted(login))
        if existing is not None and existing >= entry.time:
            continue
        submission = Submission(root, login, collected.assignment.id)
        try:
            budget = Budget(collected.limits)
            for name in entry.files:
                with _opened(collected, entry, name) as (fd, _):
                    if fd is None:
                        raise Refused(f"{name} is gone since it was checked")
                    with os.fdopen(os.dup(fd), "rb") as source:
                        submission.write((name,), source, budget, f"{entry.name}/{name}")
            submission.write_bytes((TIMESTAMP,), entry.time.strftime(TIMESTAMP_FORMAT).encode())
        except Refused as refused:
            submission.discard()
            collected.refused.append((entry, str(refused)))
            continue
        submission.commit()
        collected.students.append(login)


COLLECT_STAGES = (read_inbox, vouch, read_due_dates, choose_latest, copy_newer)

# nbgrader's submit opens the entry's folder to everyone as its very last step (submit.py's copy_files)
SUBMITTED_MODE = 0o777
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's Exchange.timestamp_format, in UTC
CLOCK_SKEW = dt.timedelta(minutes=5)  # between the student's server's clock and the exchange's file system


def _course_id(root: Path) -> str:
    return nbgrader_config(root).CourseDirectory.course_id


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).replace(tzinfo=None)


def _shown(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _claimed_time(stamp: str) -> dt.datetime | None:
    """The UTC time in an entry's name after ``<login>+<assignment>+``: nbgrader writes the
    timestamp, then ``+`` and a random string."""
    from nbgrader.utils import parse_utc

    for text in (stamp.rsplit("+", 1)[0], stamp):
        try:
            return parse_utc(text[:64])
        except (ValueError, OverflowError, TypeError):
            continue
    return None


def _existing_time(folder: Path) -> dt.datetime | None:
    """The time of the submission collected before (its timestamp.txt, written by this collector)."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(read_bytes(folder / TIMESTAMP, 256, root=folder.parent.parent).decode().strip())
    except (Unreadable, ValueError, OverflowError, UnicodeDecodeError):
        return None


def _login(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid} (no account)"


def _kind(mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(mode) else "a file" if stat.S_ISREG(mode) else "not a folder"


@contextlib.contextmanager
def _opened(collected: Collected, entry: InboxEntry, name: str):
    """``(fd, fstat)`` of the entry's file ``name``, opened from the inbox with no link followed
    (:func:`.untrusted.open_regular`), checked to be a regular file of the entry's owner within the
    limits; ``(None, None)`` when there is none. :class:`Refused` otherwise."""
    try:
        fd, info = open_regular(collected.inbound / entry.name / name, root=collected.inbound,
                                max_bytes=collected.limits.file_bytes)
    except Missing:
        yield None, None
        return
    except Unreadable as why:  # its message names the file from the inbox: the report names the entry already
        raise Refused(str(why).replace(f"{entry.name}/", "", 1)) from None
    try:
        if info.st_uid != os.lstat(collected.inbound / entry.name).st_uid:
            raise Refused(
                f"{name} was made by {_login(info.st_uid)}, not by {entry.owner} whose submission it is in")
        yield fd, info
    finally:
        os.close(fd)


def release_feedback_to_exchange(assignment: Assignment, students: list[str] | None = None,
                                 out: TextIO | None = None) -> int:
    """Put each ``feedback/<student>/<id>/*.html`` into the exchange for the student's Assignments tab.

    A page can be released only for a submission that came through the exchange: its hash comes
    from the secret nbgrader wrote into that submission. Returns 1 when some page could not be.
    """
    out = out or sys.stdout
    root = assignment.root
    api = _api(root)
    released, missing = [], []
    for student in assignment.feedback_students():
        folder = assignment.feedback(student).parent
        if students and student not in students or not any(folder.glob("*.html")):
            continue
        submission = assignment.submitted(student)
        if not (submission / SECRET).is_file():
            missing.append(student)
            continue
        for name in (SECRET,
                     TIMESTAMP):  # nbgrader reads them beside the page, as its generate_feedback leaves them
            shutil.copy(submission / name, folder / name)
        for page in folder.glob(
                "*.html"):  # nbgrader's copy keeps the mode: the student reads it, whatever the umask
            page.chmod(0o644)
        _checked(api.release_feedback(assignment.id, student),
                 f"{assignment.id}: nbgrader could not release {student}'s feedback")
        released.append(student)
    print(f"released feedback on {assignment.id} to the exchange for {len(released)} student(s): "
          f"{', '.join(released) or 'none'}", file=out)
    if missing:
        print(
            f"not released for {len(missing)}: their submission did not come through the exchange "
            f"(no {SECRET}), give them feedback/<student>/{assignment.id}/ another way: {', '.join(missing)}",
            file=out)
    return 1 if missing else 0
