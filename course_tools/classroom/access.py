"""Who may read what in the course folder, decided by a list of what is public (:data:`PUBLIC`) and
applied by every ``course`` command.

On the course hub, students have Unix accounts on the machine that holds the course folder. They
need the release, course_lib and the data it loads, the Python environment their servers run, the
students' Jupyter configuration and nbgrader's exchange (and a grader's account, the tooling in
course_tools, which holds no answer). Everything else the folder holds, or will
hold after any step of a term (solutions/ with its hidden tests, .git, build/'s executed copies and
grading caches, the gradebook and its backups, submitted/, autograded/, feedback/, grading records,
students.csv, anything a later version adds) is the instructor's alone. So:

- The course folder is 0711: anyone may pass through it to a public entry by name, only its owner
  may list it. So are the folders on the way to a public entry (build/, deploy/, deploy/jupyter/).
- In those folders, every entry not on the list is made owner-only. Nothing below a private entry
  needs a mode of its own: nobody but the owner can pass through it.
- What is created later is private from birth, whoever creates it: those folders carry a default
  ACL giving group and others nothing, which the kernel applies to every file and folder created in
  them (by git, Jupyter, nbgrader's formgrader, an editor), and ``course`` itself runs with umask 077.
- Each public entry is opened: made readable by all (folders also traversable, files executable by
  all where their owner may execute them), its folders without the default ACL so that what is
  added inside later follows its creator's umask.

:func:`apply_access` runs at the start and at the end of every ``course`` command (``cli.main``), so
entries that other tools made between two commands are put right by the next one. Only the
instructor writes in the course folder (the exchange, where students write, is never walked), so
checking a path with ``lstat`` and then changing its mode races with nobody.
"""
from __future__ import annotations

import contextlib
import enum
import errno
import os
import stat
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TextIO

# the course folder and the folders on the way to a public entry: traversable, not listable
COURSE_MODE = 0o711
UMASK = 0o077  # what every `course` command creates is its owner's alone
# nbgrader needs its exchange world-writable; the sticky bit keeps each entry its creator's
EXCHANGE_MODE = 0o1777
INBOUND_MODE = 0o1733  # nbgrader's 0733 (students create entries, cannot list them), plus the sticky bit: a
#                        student who learnt another's entry name still cannot rename or delete it
DEFAULT_ACL = "system.posix_acl_default"
# The default ACL u::rwx g::--- o::--- (acl_ea_header version 2, then entries: tag, permissions, id).
_UNDEFINED_ID = 0xFFFFFFFF
PRIVATE_DEFAULT_ACL = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", tag, permissions, _UNDEFINED_ID)
    for tag, permissions in ((0x01, 7), (0x04, 0), (0x20, 0)))


class Kind(enum.Enum):
    TREE = "readable by all, all the way down; opened again by every command"
    ENVIRONMENT = (
        "a Python environment: too large to walk at every command, opened whole when it looks newly "
        "installed (not yet readable by all, or born under the course's private default) and by "
        "`course hub`")
    EXCHANGE = "nbgrader's exchange: world-writable with the sticky bit; nbgrader's own modes inside"


@dataclass(frozen=True)
class PublicEntry:
    path: str  # relative to the course folder
    kind: Kind
    why: str


# What students may read, and nothing else of the course folder. The exchange's path comes from
# nbgrader_config.py (Exchange.root); this is where the course puts it.
PUBLIC = (
    PublicEntry("notebooks", Kind.TREE, "the release students fetch and work on"),
    PublicEntry("course_lib", Kind.TREE, "the course's library, imported by every notebook"),
    PublicEntry(
        "course_tools", Kind.TREE, "the course tool, which a grader's account runs from this environment "
        "(it holds no answer: those are in solutions/)"),
    PublicEntry("build/data", Kind.TREE, "the data course_lib loads (scripts/fetch_data.sh)"),
    PublicEntry("nbgrader_config.py", Kind.TREE,
                "read by the students' nbgrader (deploy/jupyter/student/nbgrader_config.py loads it)"),
    PublicEntry("deploy/jupyter/student", Kind.TREE, "the students' Jupyter configuration on the hub"),
    PublicEntry(".venv", Kind.ENVIRONMENT, "the Python environment the hub runs the students' servers with"),
    PublicEntry("build/exchange", Kind.EXCHANGE, "nbgrader's exchange: releases, submissions, feedback"),
)


@dataclass
class Report:
    """What :func:`apply_access` could not do, in words for the instructor; and whether new files are
    private from birth on this file system (no POSIX ACLs: only until the next `course` command)."""

    problems: list[str] = field(default_factory=list)
    acl: bool = True


def public_entries(root: Path) -> tuple[PublicEntry, ...]:
    """:data:`PUBLIC`, with the exchange where nbgrader_config.py puts it (when inside the course)."""
    from .exchange import exchange_root

    return _public_entries(root, exchange_root(root))


def public_entry_of(root: Path, path: Path) -> PublicEntry | None:
    """The public entry that ``path`` (inside the course folder ``root``) is, or lies inside; None
    when it is private."""
    relative = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    return next((e for e in public_entries(root) if relative == e.path or relative.startswith(e.path + "/")),
                None)


def _public_entries(root: Path, exchange: Path) -> tuple[PublicEntry, ...]:
    entries = tuple(entry for entry in PUBLIC if entry.kind is not Kind.EXCHANGE)
    with contextlib.suppress(ValueError):
        relative = exchange.resolve().relative_to(root.resolve()).as_posix()
        return entries + (PublicEntry(relative, Kind.EXCHANGE, PUBLIC[-1].why),)
    return entries


def apply_access(root: Path, *, open_environment: bool = False) -> Report:
    """Make the course folder private but for its public entries (see the module's docstring), and
    prepare the exchange for students (:func:`prepare_exchange`).

    ``open_environment``: open every :attr:`Kind.ENVIRONMENT` entry whole (``course hub``), not only
    when it looks newly installed.
    """
    from course_tools.course import nbgrader_config

    config = nbgrader_config(root)
    exchange = Path(config.Exchange.root)
    report = Report()
    entries = _public_entries(root, exchange)
    public = {entry.path: entry for entry in entries}
    on_the_way = {"."} | {parent.as_posix() for entry in entries for parent in Path(entry.path).parents}
    for relative in sorted(on_the_way):
        folder = root / relative
        if not _is_real_folder(folder):
            continue
        _set_mode(folder, COURSE_MODE, report)
        _set_default_acl(folder, report)
        for child in sorted(os.listdir(folder)):
            name = child if relative == "." else f"{relative}/{child}"
            if name in on_the_way:
                continue  # its own turn in this loop
            if name in public:
                _open(folder / child, public[name], report, open_environment)
            else:
                _make_private(folder / child, report)
    prepare_exchange(exchange, config.CourseDirectory.course_id,
                     {os.geteuid(), os.lstat(root).st_uid}, report)
    return report


@contextlib.contextmanager
def private_by_default(root: Path, err: TextIO | None = None) -> Iterator[None]:
    """Run a ``course`` command: the access rules applied before and after it, umask 077 meanwhile;
    what could not be done is named on ``err`` (stderr)."""
    err = err or sys.stderr
    said: set[str] = set()

    def apply() -> None:
        for problem in apply_access(root).problems:
            if problem not in said:
                said.add(problem)
                print(f"course: warning: {problem}", file=err)

    old = os.umask(UMASK)
    try:
        apply()
        yield
    finally:
        try:
            apply()
        finally:
            os.umask(old)


def prepare_exchange(exchange: Path, course_id: str, instructors: set[int], report: Report) -> None:
    """nbgrader's exchange as students use it: its folder world-writable with the sticky bit, the
    course's folder in it made by one of ``instructors`` (uids: whoever runs `course`, the course
    folder's owner), so that no student can plant one first; its inbound folder with the sticky
    bit; no default ACL on them (entries get nbgrader's own modes)."""
    from course_tools.course import CourseError

    course = exchange / course_id
    try:
        exchange.mkdir(parents=True, exist_ok=True)
        if not _is_real_folder(exchange):
            raise CourseError(f"{exchange}: the exchange must be a folder, not a link")
        _set_mode(exchange, EXCHANGE_MODE, report)
        _drop_default_acl(exchange)
        with contextlib.suppress(FileExistsError):
            course.mkdir()
            os.chmod(course, 0o755)  # nbgrader's own mode for it
    except PermissionError as error:
        report.problems.append(f"{error.filename}: cannot prepare the exchange ({error.strerror})")
        return
    info = os.lstat(course)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in instructors | {os.lstat(exchange).st_uid}:
        raise CourseError(
            f"{course}: not the instructor's folder (owner uid {info.st_uid}): someone else created "
            "it in the exchange; remove it and run the command again")
    _drop_default_acl(course)
    for name in ("inbound", "outbound", "feedback"):
        if _is_real_folder(course / name):
            _drop_default_acl(course / name)
    if _is_real_folder(course / "inbound") and os.lstat(course / "inbound").st_uid == os.geteuid():
        _set_mode(course / "inbound", INBOUND_MODE, report)


# ---------------------------------------------------------------------------------- the steps ----

def _is_real_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _set_mode(path: Path, mode: int, report: Report) -> None:
    """chmod ``path`` (never through a link) unless it has ``mode`` already (a chmod also moves its ctime)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) == mode:
        return
    try:
        os.chmod(path, mode)
    except PermissionError:
        report.problems.append(
            f"{path}: mode {stat.S_IMODE(info.st_mode):o} and not yours to change to {mode:o} "
            f"(owner uid {info.st_uid})")


def _make_private(path: Path, report: Report) -> None:
    """Group and others lose every permission on the entry itself; a link is left alone (its target
    is an entry of its own, or outside the course)."""
    info = os.lstat(path)
    if not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
        _set_mode(path, stat.S_IMODE(info.st_mode) & ~0o077, report)


def _opened_mode(mode: int, folder: bool) -> int:
    """``mode`` readable by all, writable by its owner only (a student who could change course_lib
    would run code in the instructor's next `course` command); a folder also traversable, a file
    also executable where its owner may execute it."""
    executable = 0o111 if folder or mode & stat.S_IXUSR else 0
    return stat.S_IMODE(mode) & ~0o022 | 0o444 | executable


def _open(path: Path, entry: PublicEntry, report: Report, open_environment: bool) -> None:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return
    if entry.kind is Kind.EXCHANGE:
        return  # prepare_exchange
    if entry.kind is Kind.ENVIRONMENT and not open_environment and \
            _opened_mode(info.st_mode, True) == stat.S_IMODE(info.st_mode) and not _has_default_acl(path):
        # installed as usual (umask 022): walking its tens of thousands of files at every command costs
        # seconds
        return
    _set_mode(path, _opened_mode(info.st_mode, stat.S_ISDIR(info.st_mode)), report)
    if not stat.S_ISDIR(info.st_mode):
        return
    for folder, folders, files in os.walk(path):  # os.walk never descends into a link
        _drop_default_acl(Path(folder))
        for name in folders + files:
            child = Path(folder) / name
            child_info = os.lstat(child)
            if not stat.S_ISLNK(child_info.st_mode):
                _set_mode(child, _opened_mode(child_info.st_mode, stat.S_ISDIR(child_info.st_mode)), report)


def _has_default_acl(path: Path) -> bool:
    try:
        os.getxattr(path, DEFAULT_ACL, follow_symlinks=False)
        return True
    except OSError:
        return False


def _set_default_acl(folder: Path, report: Report) -> None:
    try:
        if os.getxattr(folder, DEFAULT_ACL, follow_symlinks=False) == PRIVATE_DEFAULT_ACL:
            return
    except OSError:
        pass
    try:
        os.setxattr(folder, DEFAULT_ACL, PRIVATE_DEFAULT_ACL, follow_symlinks=False)
    except OSError as error:
        if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            report.acl = False
        else:
            report.problems.append(
                f"{folder}: no default ACL ({error.strerror}): what other tools create there "
                "is readable by others until the next `course` command")


def _drop_default_acl(folder: Path) -> None:
    with contextlib.suppress(OSError):  # none there, or a file system without ACLs
        os.removexattr(folder, DEFAULT_ACL, follow_symlinks=False)
