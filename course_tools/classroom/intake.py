"""A student's files into ``submitted/<student>/<assignment>/``: the last step of ``course collect``
(nbgrader's exchange, :mod:`.exchange`) and of ``course collect --zip`` (an LMS download,
:mod:`.zip_collect`).

What a student sends is data: its names, modes, owner, type and size are theirs to choose, and the
collector runs as the instructor, often as root. So every file placed is
- a regular file that this module writes itself (``O_CREAT | O_EXCL | O_NOFOLLOW``) with a fixed
  mode (:data:`FILE_MODE`: no setuid, no exec bit), whatever mode, owner or type the student's copy
  had: a link is never created, nor followed;
- named by a relative path of plain names (:func:`relative_parts`: no absolute path, no ``..``);
- within the limits of :class:`Limits`, counted on the bytes actually written as they are written
  (:class:`Budget`), never on a size that an archive's header or a ``stat`` claimed.

A student's new submission is written beside the old one and swapped in whole
(:class:`Submission`): a submission refused half-way leaves the earlier one as it was.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from course_tools.course import Assignment
from course_tools.untrusted import no_links

FILE_MODE = 0o644  # and narrower under `course`'s umask 077 (access.py)
CHUNK = 1 << 20
# A plain name for a folder under submitted/: a roster's student_id or a login (roster.LOGIN_NAME is
# stricter).
PLAIN_NAME = re.compile(r"[^/\\\0]{1,255}")


class Refused(Exception):
    """A student's upload or inbox entry that is not collected; the message says why, in words."""


@dataclass(frozen=True)
class Limits:
    """What one student's submission may hold. A notebook is graded up to 20 MiB
    (submission.MAX_NOTEBOOK_BYTES); an archive of notebooks compresses them about 3 to 10 times."""

    file_bytes: int = 32 << 20  # one file, as written
    student_bytes: int = 64 << 20  # all that one student's upload decompresses to or copies, in all
    files: int = 1000  # entries (files, folders, members of archives) looked at for one student
    depth: int = 16  # folders in a path
    archive_depth: int = 3  # archives inside archives: the LMS's download, the student's zip, one more
    ratio: float = 100.0  # bytes decompressed per compressed byte, for one student's archives in all ...
    ratio_floor: int = 8 << 20  # ... once past this many bytes (a small file may compress much better)


@dataclass
class Budget:
    """One student's running totals against :class:`Limits`; :class:`Refused` the moment one is passed."""

    limits: Limits
    written: int = 0
    compressed: int = 0
    entries: int = 0

    def entry(self, shown: str) -> None:
        self.entries += 1
        if self.entries > self.limits.files:
            raise Refused(f"over {self.limits.files} files and folders (at {shown})")

    def credit(self, compressed_bytes: int) -> None:
        """Compressed bytes about to be read, for the ratio limit."""
        self.compressed += max(0, compressed_bytes)

    def spend(self, count: int, file_total: int, shown: str) -> None:
        """``count`` more bytes written, ``file_total`` of them so far in the file ``shown``."""
        self.written += count
        if file_total > self.limits.file_bytes:
            raise Refused(f"{shown} is over {self.limits.file_bytes >> 20} MiB")
        if self.written > self.limits.student_bytes:
            raise Refused(f"over {self.limits.student_bytes >> 20} MiB in all (at {shown})")
        if self.written > self.limits.ratio_floor and self.written > self.limits.ratio * self.compressed:
            raise Refused(f"decompresses over {self.limits.ratio:g} times its compressed size (at {shown}): "
                          "an archive bomb, or data that is not a notebook")


def relative_parts(name: str, limits: Limits) -> tuple[str, ...]:
    """The plain names of the relative path ``name`` (``/`` or ``\\`` separated); :class:`Refused`
    for an absolute path, a drive, ``..``, a NUL, or too many folders."""
    if "\0" in name:
        raise Refused(f"{name!r}: a NUL in its name")
    unified = name.replace("\\", "/")
    if unified.startswith("/") or re.match(r"[A-Za-z]:", unified):
        raise Refused(f"{name!r}: an absolute path")
    parts = tuple(part for part in unified.split("/") if part not in ("", "."))
    if ".." in parts:
        raise Refused(f"{name!r}: a path that leaves its folder (..)")
    if not parts:
        raise Refused(f"{name!r}: no file name")
    if len(parts) > limits.depth:
        raise Refused(f"{name!r}: over {limits.depth} folders deep")
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in parts):
        raise Refused(f"{name!r}: a name over 255 bytes")
    return parts


def write_stream(path: Path, source: BinaryIO, budget: Budget, shown: str) -> int:
    """A new regular file at ``path`` (never an existing one, never through a link) with
    :data:`FILE_MODE`, holding what ``source`` reads, within ``budget``; its size. A refused file is
    removed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
    total = 0
    try:
        with os.fdopen(fd, "wb") as target:
            while True:
                chunk = source.read(CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                budget.spend(len(chunk), total, shown)
                target.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return total


@dataclass
class Submission:
    """``submitted/<student>/<assignment>/`` being built: files go to a fresh folder beside it, which
    :meth:`commit` swaps in whole, or :meth:`discard` removes."""

    root: Path  # the course
    student: str
    assignment: str
    staging: Path = field(init=False)
    files: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not PLAIN_NAME.fullmatch(self.student) or self.student in (".",
                                                                      "..") or self.student.startswith("."):
            raise Refused(f"{self.student!r} cannot name a folder under submitted/")
        folder = Assignment(self.assignment, self.root).submitted_root / self.student
        folder.mkdir(parents=True, exist_ok=True)
        no_links(folder, self.root)  # submitted/ and the student's folder are the course's own, never links
        # A hidden name: `course autograde` and nbgrader list submitted/*/<assignment>, which never matches
        # it.
        self.staging = Path(tempfile.mkdtemp(prefix=f".{self.assignment}.incoming-", dir=folder))

    def path(self, parts: tuple[str, ...]) -> Path:
        """Where the file ``parts`` goes, its folders created (each a new real folder of ours)."""
        folder = self.staging
        for part in parts[:-1]:
            folder = folder / part
            try:
                os.mkdir(folder, 0o755)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    raise Refused(f"{'/'.join(parts)}: {part} is both a file and a folder") from None
        self.files.append("/".join(parts))
        return folder / parts[-1]

    def write(self, parts: tuple[str, ...], source: BinaryIO, budget: Budget, shown: str) -> int:
        return write_stream(self.path(parts), source, budget, shown)

    def write_bytes(self, parts: tuple[str, ...], data: bytes) -> None:
        """A small file of ours (timestamp.txt), outside any student's budget."""
        fd = os.open(self.path(parts), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     FILE_MODE)
        with os.fdopen(fd, "wb") as target:
            target.write(data)

    def commit(self) -> Path:
        """The new submission in place of the old one, which is removed; its folder."""
        final = self.staging.parent / self.assignment
        old = None
        if os.path.lexists(final):
            old = Path(tempfile.mkdtemp(prefix=f".{self.assignment}.replaced-", dir=self.staging.parent))
            os.rename(final, old / self.assignment)
        os.rename(self.staging, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        with contextlib.suppress(
                OSError):  # the student's folder, when this made it and it holds nothing else
            self.staging.parent.rmdir()
