"""``course collect --zip FILE ASSIGNMENT``: a submissions archive downloaded from Canvas or Moodle
into ``submitted/<student>/<assignment>/``.

The download's own entry names are written by the LMS; what each entry holds, and every name inside
an archive a student uploaded, is the student's. So the pipeline (:data:`STAGES`) is:

1. :func:`read_download`: the download's entries, each one student's uploaded file.
2. :func:`identify`: the student of each entry from the LMS's part of its name only, by the LMS id
   that exactly one student of the roster (:mod:`.roster`) has: ``canvas_id`` or
   ``moodle_identifier``. Never by a name (not unique, and the student's to change), never from a
   name inside the upload. Two layouts:

   - Canvas ("Download Submissions"): ``<lastfirst>_[LATE_]<canvas user id>_<attachment id>_<file>``,
     where ``<lastfirst>`` is the sortable name in lower case without spaces or punctuation, and a
     re-uploaded file gets ``-1``, ``-2`` ... before its extension;
   - Moodle ("Download all submissions"): ``<Full Name>_<participant id>_assignsubmission_file_<file>``,
     or, with "download submissions in folders", the same name as a folder holding ``<file>``.

   A name that reads as both layouts, or as Moodle's twice, is not guessed at: reported.
3. :func:`extract`: per student, their uploads read as streams (:mod:`.intake`: bytes counted as
   they are decompressed, per-student size and compression-ratio limits, nested archives up to
   :attr:`.intake.Limits.archive_depth`): an uploaded ``.zip`` is opened and whatever it holds
   belongs to the student of the entry it came in. The assignment's notebooks (found by file name,
   in any folder) are written as regular files with a fixed mode; an archive member that is a link,
   a device or a FIFO, has an absolute or ``..`` path, or breaks a limit refuses that student's
   whole upload.
4. :func:`place`: each student's notebooks swapped in for their earlier submission.

One bad upload costs only its student: it is reported with the student's name and the reason, their
earlier submission is kept, and every other student is placed. Every file not placed is listed with
why, and the exit status is then 1.
"""
from __future__ import annotations

import os
import re
import stat
import struct
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, TextIO

from course_tools.course import Assignment, CourseError, assignments
from course_tools.untrusted import safe_text

from .intake import Budget, Limits, Refused, Submission, relative_parts, write_stream
from .lms_sheets import moodle_participant, read_roster
from .roster import ROSTER

CANVAS = re.compile(r"(?P<name>[^/_]+)_(?:LATE_)?(?P<lms_id>\d+)_\d+_(?P<file>[^/]+)")
MOODLE_FLAT = re.compile(
    r"(?P<name>[^/]+?)_(?P<lms_id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>[^/]+)")
MOODLE_FOLDER = re.compile(r"(?P<name>[^/]+)_(?P<lms_id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_")
MOODLE_MARK = re.compile(
    r"_\d+_assignsubmission_")  # the LMS's part of a Moodle name: once, or not guessed at
CANVAS_REUPLOAD = re.compile(r"-\d+(?=\.ipynb$)")
ARCHIVE = ".zip"
MAX_CENTRAL_DIRECTORY = 2 << 20  # bytes: a student's zip of notebooks needs a few hundred
_END_OF_CENTRAL_DIRECTORY = b"PK\x05\x06"


@dataclass
class Upload:
    """One entry of the download: a file a student uploaded, and who the LMS says uploaded it."""

    entry: str  # its name in the download, written by the LMS
    info: zipfile.ZipInfo
    file: str = ""  # the name the student gave the file (the part after the LMS's prefix)
    student: str | None = None
    why: str = ""  # why it has no student


@dataclass
class StudentUploads:
    """What one student sent and what became of it."""

    student: str
    uploads: list[Upload] = field(default_factory=list)
    notebooks: dict[str, str] = field(default_factory=dict)  # notebook name -> where it came from
    submission: Submission | None = None
    refused: str = ""  # why nothing of theirs is placed
    unplaced: list[tuple[str, str]] = field(default_factory=list)  # (where, why)


@dataclass
class Collection:
    """The state the stages pass on: the download, the roster, and the outcome per student."""

    root: Path
    assignment: Assignment
    archive: Path
    notebooks: list[str]  # the assignment's notebook file names
    roster: list[dict[str, str]]
    limits: Limits
    download: zipfile.ZipFile | None = None
    uploads: list[Upload] = field(default_factory=list)
    students: dict[str, StudentUploads] = field(default_factory=dict)
    placed: list[str] = field(default_factory=list)

    @property
    def unidentified(self) -> list[Upload]:
        return [upload for upload in self.uploads if upload.student is None]


# ------------------------------------------------------------------------------------ stages ----

def read_download(collection: Collection) -> None:
    """The download's file entries (folders are only names on the way)."""
    try:
        collection.download = zipfile.ZipFile(collection.archive)
    except (OSError, zipfile.BadZipFile) as error:
        raise CourseError(f"{collection.archive}: not a zip archive ({error})") from None
    collection.uploads = [Upload(info.filename, info) for info in collection.download.infolist()
                          if not info.is_dir()]


def identify(collection: Collection) -> None:
    """Each upload's student, from the LMS's part of the entry's name and the roster's LMS ids."""
    for upload in collection.uploads:
        lms = _layout(upload)
        if lms is None:
            continue
        match, column, upload.file = lms
        if column == "moodle_identifier" and match["plugin"] != "file":
            upload.why = f"Moodle's {match['plugin']} submission, not an uploaded file"
            continue
        upload.student, upload.why = _student(collection.roster, column, match["lms_id"], match["name"])
        if upload.student is not None:
            collection.students.setdefault(upload.student,
                                           StudentUploads(upload.student)).uploads.append(upload)


def extract(collection: Collection) -> None:
    """Each student's uploads read, nested archives opened, the assignment's notebooks written."""
    download_bytes = collection.archive.stat().st_size
    with tempfile.TemporaryDirectory(prefix="course-zip-collect-") as scratch:
        for student in collection.students.values():
            budget = Budget(collection.limits)
            try:
                for upload in sorted(student.uploads, key=lambda u: u.entry):
                    budget.entry(upload.entry)
                    relative_parts(upload.file,
                                   collection.limits)  # the student's part of the name: plain names
                    _take(collection, student, budget, Path(scratch), upload.file, upload.entry, upload.info,
                          collection.download, download_bytes, depth=1)
            except Refused as refused:
                student.refused = str(refused)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError,
                    OSError, ValueError) as error:  # a corrupt, encrypted or oddly compressed member
                student.refused = f"an archive that cannot be read ({safe_text(error, one_line=True)[:200]})"
            if student.submission is not None and student.refused:
                student.submission.discard()
                student.submission = None


def place(collection: Collection) -> None:
    """Each student's new submission in place of their earlier one."""
    for student in collection.students.values():
        if student.submission is not None:
            student.submission.commit()
            collection.placed.append(student.student)


STAGES: tuple[Callable[[Collection], None], ...] = (read_download, identify, extract, place)


def collect_zip(root: Path, assignment_id: str, archive: Path, out: TextIO | None = None,
                limits: Limits | None = None) -> int:
    """Place the archive's submissions; 0 when every file found its student, 1 when some did not or
    a student's upload was refused."""
    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    collection = Collection(root, assignment, archive,
                            sorted(p.name for p in assignment.release.parent.glob("*.ipynb")),
                            read_roster(root / ROSTER), limits or Limits())
    try:
        for stage in STAGES:
            stage(collection)
    finally:
        if collection.download is not None:
            collection.download.close()
        for student in collection.students.values():  # a stage that stopped half-way leaves no staging folder
            if student.submission is not None and student.submission.staging.exists():
                student.submission.discard()
    return report(collection, out)


def report(collection: Collection, out: TextIO) -> int:
    placed = sorted(collection.placed)
    print(f"placed {len(placed)} submission(s) of {collection.assignment.id} under submitted/: "
          f"{', '.join(placed) or 'none'}", file=out)
    refused = sorted((s for s in collection.students.values() if s.refused), key=lambda s: s.student)
    if refused:
        print(f"refused the upload of {len(refused)} student(s), whose earlier submission (if any) is kept:",
              file=out)
        for student in refused:
            entries = ", ".join(u.entry for u in student.uploads)
            print(f"  {student.student} ({_shown(entries)}): {_shown(student.refused)}", file=out)
    unplaced = [(u.entry, u.why) for u in collection.unidentified]
    unplaced += [item for s in collection.students.values() if not s.refused for item in s.unplaced]
    unplaced += [(", ".join(u.entry
                            for u in s.uploads), f"{s.student} sent no {' or '.join(collection.notebooks)}")
                 for s in collection.students.values()
                 if not s.refused and not s.notebooks and not s.unplaced]
    if unplaced:
        print(f"could not place {len(unplaced)} file(s):", file=out)
        for where, why in sorted(unplaced):
            print(f"  {_shown(where)}: {_shown(why)}", file=out)
    return 1 if unplaced or refused else 0


# ----------------------------------------------------------------------------------- helpers ----

def _shown(text: str) -> str:
    """A name a student chose, on one line of the report."""
    return safe_text(text, one_line=True)[:300]


def _layout(upload: Upload) -> tuple[re.Match, str, str] | None:
    """The LMS's reading of the entry's name: its match, the roster column of its LMS id, and the
    student's own part (a file name, or a path in Moodle's folders). None, with the reason in
    ``upload.why``, when it is neither layout, or both, or holds Moodle's part twice."""
    lms_part, _, inside = upload.entry.partition("/")
    if inside:  # only Moodle writes folders: "<Full Name>_<id>_assignsubmission_file_/<path>"
        moodle = MOODLE_FOLDER.fullmatch(lms_part)
        if moodle and len(MOODLE_MARK.findall(lms_part)) == 1:
            return moodle, "moodle_identifier", inside
        upload.why = (
            "its folder's name reads as more than one student's (Moodle's pattern twice): not guessed at"
            if moodle else "its name is in neither Canvas's nor Moodle's download pattern")
        return None
    canvas = CANVAS.fullmatch(upload.entry)
    moodle = MOODLE_FLAT.fullmatch(upload.entry)
    if (canvas and moodle) or len(MOODLE_MARK.findall(upload.entry)) > 1:
        upload.why = (
            "its name reads as more than one student's download entry (Canvas's and Moodle's patterns, or "
            "Moodle's twice): not guessed at")
        return None
    if moodle:
        return moodle, "moodle_identifier", moodle["file"]
    if canvas:
        return canvas, "canvas_id", CANVAS_REUPLOAD.sub("", canvas["file"])
    upload.why = "its name is in neither Canvas's nor Moodle's download pattern"
    return None


def _lms_id(column: str, value: str) -> str | None:
    """The roster's LMS id as the download writes it: Canvas's digits; Moodle's, with or without
    the worksheet's "Participant "."""
    value = value.strip()
    if column == "moodle_identifier":
        return moodle_participant(value)
    return value if value.isdigit() else None


def _student(roster: list[dict[str, str]], column: str, lms_id: str, name: str) -> tuple[str | None, str]:
    """The one student whose ``column`` is ``lms_id``; else None and why (with the student the name
    suggests, when they have no id yet: a hint for the instructor, never a match)."""
    found = [entry["student_id"] for entry in roster if _lms_id(column, entry.get(column, "")) == lms_id]
    if len(found) == 1:
        return found[0], ""
    if found:
        return None, f"{len(found)} students of the roster have {column} {lms_id} ({', '.join(found)})"
    why = f"no student of the roster has {column} {lms_id}"
    named = [entry for entry in roster if _key(name) in _name_keys(entry.get("name", ""))]
    if len(named) == 1 and not named[0].get(column, "").strip():
        why += (
            f" (the name {name!r} is {named[0]['student_id']}'s, who has no {column}: add {lms_id} to their "
            "row "
            "of the roster if that is them)")
    return None, why


def _name_keys(name: str) -> set[str]:
    """A roster name as Canvas ("lastfirst") or Moodle ("First Last", "Last First") may write it,
    compared case-folded on letters and digits only."""
    words = name.split()
    return {_key("".join(words[i:] + words[:i])) for i in range(len(words))}


def _key(text: str) -> str:
    return re.sub(r"[\W_]", "", text.casefold())


def _member_kind(info: zipfile.ZipInfo) -> str | None:
    """None for a regular file; else what the member is, from the Unix mode it records."""
    mode = info.external_attr >> 16
    # 3: made on Unix, the only maker of these modes; many zippers record permission bits without a type
    if info.create_system != 3 or stat.S_IFMT(mode) == 0 or stat.S_ISREG(mode):
        return None
    for test, kind in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO,
                                                                                       "a FIFO"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def _take(collection: Collection, student: StudentUploads, budget: Budget, scratch: Path, name: str,
          shown: str, info: zipfile.ZipInfo, container: zipfile.ZipFile, container_bytes: int,
          depth: int) -> None:
    """One file the student sent, called ``name`` by them and found at ``shown``: an archive opened,
    one of the assignment's notebooks written, anything else listed as not placed."""
    kind = _member_kind(info)
    if kind == "a folder":
        return
    if kind is not None:
        raise Refused(f"{shown} is {kind}: an upload holds regular files only")
    file_name = name.rsplit("/", 1)[-1]
    if file_name.lower().endswith(ARCHIVE):
        _open_archive(collection, student, budget, scratch, shown, info, container, container_bytes, depth)
    elif file_name in collection.notebooks and file_name not in student.notebooks:
        budget.credit(min(info.compress_size, container_bytes))
        if student.submission is None:
            student.submission = Submission(collection.root, student.student, collection.assignment.id)
        with container.open(info) as source:
            student.submission.write((file_name,), source, budget, shown)
        student.notebooks[file_name] = shown
    elif file_name in collection.notebooks:
        student.unplaced.append((shown, f"a second {file_name} of {student.student} (kept: "
                                        f"{student.notebooks[file_name]})"))
    else:
        student.unplaced.append(
            (shown, f"{student.student}'s file {file_name!r} is not the assignment's notebook "
             f"({', '.join(collection.notebooks)}): rename it and collect again"))


def _open_archive(collection: Collection, student: StudentUploads, budget: Budget, scratch: Path, shown: str,
                  info: zipfile.ZipInfo, container: zipfile.ZipFile, container_bytes: int,
                  depth: int) -> None:
    """An archive the student uploaded: copied to the scratch folder within the budget, checked, and
    each member taken in turn; whatever it holds is the student's, whatever its names say."""
    if depth >= collection.limits.archive_depth:
        raise Refused(f"{shown}: archives nested over {collection.limits.archive_depth} deep")
    budget.credit(min(info.compress_size, container_bytes))
    fd, name = tempfile.mkstemp(dir=scratch, suffix=ARCHIVE)
    os.close(fd)
    copy = Path(name)
    copy.unlink()  # write_stream creates it anew, never through an existing path
    with container.open(info) as source:
        size = write_stream(copy, source, budget, shown)
    try:
        with open(copy, "rb") as stream:
            _check_central_directory(stream, size, shown)
            with zipfile.ZipFile(stream) as archive:
                # the shallowest first: of two copies of the notebook, the one at the top is kept
                members = sorted(archive.infolist(), key=lambda member:
                                 (member.filename.count("/"), member.filename))
                for member in members:  # every name checked before anything is taken
                    budget.entry(f"{shown}/{member.filename}")
                    try:
                        relative_parts(member.filename, collection.limits)
                    except Refused as refused:
                        raise Refused(f"{shown} holds {refused}") from None
                for member in members:
                    _take(collection, student, budget, scratch, member.filename, f"{shown}/{member.filename}",
                          member, archive, size, depth + 1)
    finally:
        copy.unlink(missing_ok=True)


def _check_central_directory(stream: BinaryIO, size: int, shown: str) -> None:
    """Refuse an archive whose table of contents is large before zipfile reads it all into memory
    (millions of entries in a few MiB), or that needs ZIP64 (no notebook archive does)."""
    tail_bytes = min(size, 22 + 0xFFFF)  # the end record, after a comment of at most 64 KiB
    stream.seek(size - tail_bytes)
    tail = stream.read(tail_bytes)
    at = tail.rfind(_END_OF_CENTRAL_DIRECTORY)
    if at < 0 or len(tail) - at < 22:
        raise Refused(f"{shown}: not a zip archive")
    entries, directory_bytes = struct.unpack("<HI", tail[at + 10:at + 16])
    if entries == 0xFFFF or directory_bytes == 0xFFFFFFFF:
        raise Refused(f"{shown}: a ZIP64 archive (over 65535 entries or 4 GiB)")
    if directory_bytes > MAX_CENTRAL_DIRECTORY:
        raise Refused(f"{shown}: its table of contents is over {MAX_CENTRAL_DIRECTORY >> 20} MiB")
    stream.seek(0)
