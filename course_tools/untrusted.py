"""Reading what a student controls, and writing text a student wrote, without trusting either.

The trusted grader reads back two kinds of untrusted files: a submission (``submitted/<student>/
<assignment>/``) and a sandbox's outbox (``events.jsonl``, ``replay/<k>.pt``), which the student's
code writes as it likes. Both can hold anything a file system can: a symbolic link (to a classmate's
outbox, to ``solutions/``, to ``/dev/stdin``), a FIFO (whose ``open`` blocks until a writer comes,
which never happens once the sandbox is gone), a folder, or a sparse 3 GiB file. The grader runs as
root with ``--jobs N``, so following a link reads what the student could never read themselves.
Hence every read here:

* walks from a trusted ``root`` one component at a time with ``O_NOFOLLOW`` (``openat``), so no
  link anywhere below ``root`` is followed, not even one swapped in between a check and the open;
* opens with ``O_NONBLOCK``, so a FIFO never blocks ``open``, then ``fstat``\\ s the open file and
  refuses anything but a regular file;
* refuses a file over its size cap from ``fstat``, before reading a byte, and never reads past it;
* reads under a deadline.

Text a student wrote (a grade_id, an exception message, a file name) ends up in the summary, the
JSON record, the feedback page and the grades CSV. A lone surrogate (``"\\ud800"``, which JSON
allows) cannot be encoded as UTF-8 and crashed each of those writes; control characters rewrite a
terminal; a CSV cell starting with ``=`` is a formula to a spreadsheet. :func:`safe_text`,
:func:`csv_cell` and :func:`safe_data` make such text harmless (and every HTML page prints its text
through :func:`safe_text`, then escapes it: :mod:`course_tools.pages`).

Torch-free on purpose: the sandbox's poll loop uses :func:`tree_bytes`.
"""
from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

DEADLINE_S = 10.0  # one read of one file; local files take milliseconds
CHUNK = 1 << 20
MAX_DEPTH = 64  # folders nested deeper than this in an outbox count as over any quota
ENTRY_BYTES = 4096  # what each file, folder, link or FIFO costs in tree_bytes (a block and an inode)
TOO_DEEP = 1 << 62  # tree_bytes of a tree nested deeper than MAX_DEPTH

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


class Unreadable(Exception):
    """An untrusted file that is not read; the message names it and says why."""


class Missing(Unreadable):
    """The file (or a folder on its way) does not exist."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _size(count: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} bytes"


def _parts(path: Path, root: Path) -> tuple[str, ...]:
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        raise ValueError(f"{path} is not under {root}") from None
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{path} is not a file under {root}")
    return parts


def _refused(error: OSError, shown: str, name: str, dir_fd: int) -> Unreadable:
    """Why ``open`` failed, in words: a link is the usual culprit of ELOOP and ENOTDIR."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return Missing(f"{shown} does not exist")
    except OSError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        return Unreadable(f"{shown} is a symbolic link: links are not followed")
    if isinstance(error, FileNotFoundError):
        return Missing(f"{shown} does not exist")
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return Unreadable(f"{shown} is {_kind(mode)}, not a regular file")
    return Unreadable(f"{shown} cannot be opened ({error.strerror or error})")


def open_regular(path: Path, *, root: Path | None = None,
                 max_bytes: int | None = None) -> tuple[int, os.stat_result]:
    """``(fd, fstat)`` of the regular file ``path`` under the trusted folder ``root`` (default: its own
    folder).

    Every component below ``root`` is opened with ``O_NOFOLLOW`` relative to the one before, so no
    link is followed; the file itself with ``O_NONBLOCK`` (a FIFO cannot block) and checked with
    ``fstat`` after opening (what is checked is what is read). Raises :class:`Missing` when it does
    not exist, :class:`Unreadable` when it is a link, not a regular file, or over ``max_bytes``.
    The caller closes the descriptor.
    """
    path = Path(path)
    root = Path(root) if root is not None else path.parent
    parts = _parts(path, root)
    shown = "/".join(parts)
    try:
        dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the trusted root itself
    except FileNotFoundError:
        raise Missing(f"{shown} does not exist") from None
    except OSError as error:
        raise Unreadable(f"{shown} cannot be opened ({error.strerror or error})") from None
    try:
        for depth, part in enumerate(parts[:-1]):
            try:
                fd = os.open(part, _DIRECTORY, dir_fd=dir_fd)
            except OSError as error:
                raise _refused(error, "/".join(parts[:depth + 1]), part, dir_fd) from None
            os.close(dir_fd)
            dir_fd = fd
        try:
            fd = os.open(parts[-1], _FILE, dir_fd=dir_fd)
        except OSError as error:
            raise _refused(error, shown, parts[-1], dir_fd) from None
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Unreadable(f"{shown} is {_kind(info.st_mode)}, not a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(fd)
        raise Unreadable(f"{shown} is {_size(info.st_size)}, over the {_size(max_bytes)} limit")
    return fd, info


def read_fd(fd: int, offset: int, count: int, *, shown: str = "the file",
            deadline_s: float = DEADLINE_S) -> bytes:
    """At most ``count`` bytes of an open file from ``offset`` (fewer at its end), within ``deadline_s``."""
    deadline = time.monotonic() + deadline_s
    chunks, got = [], 0
    while got < count:
        chunk = os.pread(fd, min(CHUNK, count - got), offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
        if time.monotonic() > deadline:
            raise Unreadable(f"{shown} took over {deadline_s:g} s to read")
    return b"".join(chunks)


def read_bytes(path: Path, max_bytes: int, *, root: Path | None = None,
               deadline_s: float = DEADLINE_S) -> bytes:
    """The whole regular file ``path`` (see :func:`open_regular`); :class:`Unreadable` when it is over
    ``max_bytes``, which is known from ``fstat`` before anything is read (a sparse 3 GiB file costs
    nothing)."""
    fd, info = open_regular(path, root=root, max_bytes=max_bytes)
    try:
        return read_fd(fd, 0, min(info.st_size, max_bytes), shown=Path(path).name, deadline_s=deadline_s)
    finally:
        os.close(fd)


def read_range(path: Path, offset: int, max_bytes: int, *, root: Path | None = None,
               deadline_s: float = DEADLINE_S) -> bytes:
    """Up to ``max_bytes`` of the regular file ``path`` from ``offset``; a negative offset counts from
    its end (``read_range(log, -20_000, 20_000)`` is the last 20 kB). Never refuses a file for its size."""
    fd, info = open_regular(path, root=root)
    try:
        start = max(0, info.st_size + offset) if offset < 0 else offset
        count = max(0, min(max_bytes, info.st_size - start))
        return read_fd(fd, start, count, shown=Path(path).name, deadline_s=deadline_s)
    finally:
        os.close(fd)


def no_links(path: Path, root: Path) -> os.stat_result:
    """``lstat`` of ``path`` after checking that no component of it below ``root`` is a link.

    For folders a grader lists or walks (a submission folder that is a link to ``solutions/``);
    files are opened with :func:`open_regular`, which needs no separate check.
    """
    parts = _parts(path, Path(root))
    current = Path(root)
    for depth, part in enumerate(parts):
        current = current / part
        shown = "/".join(parts[:depth + 1])
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            raise Missing(f"{shown} does not exist") from None
        except OSError as error:
            raise Unreadable(f"{shown} cannot be read ({error.strerror or error})") from None
        if stat.S_ISLNK(info.st_mode):
            raise Unreadable(f"{shown} is a symbolic link: links are not followed")
        if depth < len(parts) - 1 and not stat.S_ISDIR(info.st_mode):
            raise Missing(f"{shown} is not a folder")
    return info


def tree_bytes(folder: Path, stop_above: int | None = None) -> int:
    """What ``folder`` holds, for a quota: each regular file's size (or its allocated blocks, when
    larger), plus :data:`ENTRY_BYTES` per entry of any kind, so that a million empty files count too.

    Walks with ``O_NOFOLLOW`` and ``lstat``: a link counts as an entry and is never followed (a link
    to ``/`` is not a large outbox). Stops counting once over ``stop_above`` (the walk of an outbox
    that fills up quickly stays short). A tree nested deeper than :data:`MAX_DEPTH` is
    :data:`TOO_DEEP`. A missing folder is 0; entries that vanish while walking are skipped.
    """
    try:
        top = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return 0
    total = 0
    stack: list[tuple[int, list[str], int]] = []

    def scan(fd: int, depth: int) -> None:
        nonlocal total
        subfolders = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    total += ENTRY_BYTES
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        total += max(info.st_size, getattr(info, "st_blocks", 0) * 512)
                    elif stat.S_ISDIR(info.st_mode):
                        subfolders.append(entry.name)
                    if stop_above is not None and total > stop_above:
                        break
        except OSError:
            pass
        stack.append((fd, subfolders, depth))

    try:
        scan(top, 0)
        while stack and not (stop_above is not None and total > stop_above):
            fd, pending, depth = stack[-1]
            if not pending:
                os.close(fd)
                stack.pop()
                continue
            name = pending.pop()
            try:
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            except OSError:  # gone, or swapped for a link or a file since the scan: counted next time
                continue
            if depth + 1 > MAX_DEPTH:
                os.close(child)
                return TOO_DEEP
            scan(child, depth + 1)
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    return total


# ------------------------------------------------------------------ text a student wrote ----

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls but newline and tab, and the invisible format characters that reorder or hide
# text (bidi overrides and isolates, zero-width characters, the byte order mark).
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_LINE_BREAKS = re.compile("[\n\t\u2028\u2029\u0085]")
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20"
            )  # and their full-width forms
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def safe_text(value: object, *, one_line: bool = False) -> str:
    """``value`` as text that every writer accepts and that shows what it says: lone surrogates
    (which no UTF-8 writer encodes) become U+FFFD, control and invisible formatting characters are
    removed (newlines and tabs stay, or become spaces with ``one_line``)."""
    text = value if isinstance(value, str) else str(value)
    text = _SURROGATE.sub("\ufffd", text)
    if one_line:
        text = _LINE_BREAKS.sub(" ", text)
    return _CONTROL.sub("", text)


def safe_data(value: object, *, strip_controls: bool = True) -> object:
    """``value`` (dicts, lists, tuples, strings, numbers, anything else) with every string, keys too,
    made safe; anything that needs no change is returned as it is (the same object).

    ``strip_controls=False`` only replaces lone surrogates: for a notebook's code, where a tab or a
    form feed is legitimate, and for results read back from a sandbox, which the grader compares
    exactly: a lone surrogate can only come from a student (a JSON escape, ``chr(0xD800)``).
    """
    def text(s: str) -> str:
        return safe_text(s) if strip_controls else _SURROGATE.sub("\ufffd", s)

    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        items = [(safe_data(k, strip_controls=strip_controls), safe_data(v, strip_controls=strip_controls))
                 for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        items = [safe_data(v, strip_controls=strip_controls) for v in value]
        if all(v is v0 for v, v0 in zip(items, value)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


def csv_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: safe, on one line, and with a leading apostrophe when
    it starts (after spaces) with ``= + - @``, a tab or a carriage return, which Excel, LibreOffice
    and Google Sheets would run as a formula (``=cmd|' /C calc'!A0``). Plain numbers stay numbers."""
    text = safe_text(value, one_line=True)
    if _NUMBER.fullmatch(text):
        return text
    if text.lstrip(" ").startswith(_FORMULA) or text.startswith(_FORMULA):
        return "'" + text
    return text


def text_table(rows: list[tuple[str, ...]], rule: bool = False) -> list[str]:
    """``rows`` (the header first) as lines of aligned columns, two spaces apart; the last column is
    free text and is not padded. ``rule``: a line of dashes under the header. The cells must be
    one-line safe text already (:func:`safe_text`)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip() for row in rows]
    if rule:
        lines.insert(1, "  ".join("-" * w for w in [*widths, len(rows[0][-1])]))
    return lines
