"""The sheets around an LMS export (:mod:`.lms`): the roster (``students.csv``) and the sheet an LMS
exported, read with their limits, and each graded student matched to a row by the identities both
hold (Canvas's ids, Moodle's participant number or email), compared whole.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_tools.course import CourseError
from course_tools.untrusted import csv_cell, safe_text

# students.csv: student_id is required (the folder name under submitted/, the JupyterHub user);
# the others are optional and only used to fill and match the LMS's identity columns.
ROSTER_COLUMNS = ("student_id", "name", "email", "canvas_id", "sis_user_id", "sis_login_id", "section",
                  "moodle_identifier")


# LMS column -> roster field holding the same identity, compared whole. A column's first field is its own;
# student_id stands in for it only for a roster entry that has none (a roster of ids alone, no roster at all).
CANVAS_KEYS = (
    ("ID", "canvas_id"), ("SIS User ID", "sis_user_id"), ("SIS Login ID", "sis_login_id"),
    ("SIS Login ID", "student_id"), ("SIS User ID", "student_id"))
MOODLE_KEYS = (
    ("Identifier", "moodle_identifier"), ("Email address", "email"), ("Email address", "student_id"))
MOODLE_PARTICIPANT = re.compile(
    r"(?:Participant )?(\d+)")  # the worksheet's "Participant 5003"; downloads: 5003
MAX_SHEET_BYTES = 50 << 20


@dataclass
class Sheet:
    """A CSV sheet as header and rows of text, every row as long as the header."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)

    def column(self, name: str) -> int:
        return self.header.index(name)

    def add_column(self, name: str) -> int:
        self.header.append(name)
        for row in self.rows:
            row.append("")
        return len(self.header) - 1

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            writer.writerow([csv_cell(cell) for cell in self.header])
            writer.writerows([csv_cell(cell) for cell in row] for row in self.rows)


def read_sheet(path: Path) -> Sheet:
    """A CSV file the instructor gives (a roster, an LMS export); a byte order mark is dropped."""
    try:
        if path.stat().st_size > MAX_SHEET_BYTES:
            raise CourseError(f"{path}: over {MAX_SHEET_BYTES >> 20} MiB, not a roster or a grades sheet")
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as stream:
            lines = list(csv.reader(stream))
    except OSError as error:
        raise CourseError(f"{path}: cannot be read ({error.strerror or error})") from None
    except csv.Error as error:
        raise CourseError(f"{path}: not a CSV file ({error})") from None
    if not lines:
        raise CourseError(f"{path}: empty")
    header = [safe_text(cell, one_line=True).strip() for cell in lines[0]]
    width = len(header)
    for number, row in enumerate(lines[1:], 2):
        if any(cell.strip() for cell in row[width:]):
            raise CourseError(f"{path}, line {number}: more cells than the header has columns")
    return Sheet(header, [(row + [""] * width)[:width] for row in lines[1:] if any(row)])


def read_roster(path: Path) -> list[dict[str, str]]:
    """``students.csv``: one row per student, :data:`ROSTER_COLUMNS` by name (other columns are ignored)."""
    sheet = read_sheet(path)
    if "student_id" not in sheet.header:
        raise CourseError(
            f"{path}: no student_id column (a roster has the columns {', '.join(ROSTER_COLUMNS)})")
    known = [name for name in ROSTER_COLUMNS if name in sheet.header]
    roster, seen = [], set()
    for line, row in enumerate(sheet.rows, 2):
        entry = {name: row[sheet.column(name)].strip() for name in known}
        if not entry["student_id"]:
            raise CourseError(f"{path}, line {line}: no student_id")
        if entry["student_id"] in seen:
            raise CourseError(f"{path}, line {line}: student_id {entry['student_id']} appears twice")
        seen.add(entry["student_id"])
        roster.append(entry)
    return roster


def moodle_participant(value: str) -> str | None:
    """Moodle's participant number in ``Participant 5003`` or ``5003``; None for anything else."""
    match = MOODLE_PARTICIPANT.fullmatch(value.strip())
    return match[1] if match else None


@dataclass(frozen=True)
class Match:
    """The roster entry an LMS row belongs to; None and why not, when it is not exactly one."""

    entry: dict[str, str] | None
    why: str = ""  # empty when no identity column of the row names anyone of the roster


class Matcher:
    """The roster entry of each LMS row, by exact equality of its identity columns with the roster's
    fields (:data:`CANVAS_KEYS`, :data:`MOODLE_KEYS`): never a part of a value (the local part of an
    e-mail), never a name. A row that names two students, that contradicts the student it names
    (an ID other than theirs), or that names the same student as another row is matched to nobody,
    with the reason: a grade is never written on a guess."""

    def __init__(self, roster: list[dict[str, str]], keys: tuple[tuple[str, str], ...]):
        self.roster, self.keys = roster, keys
        self.own_field = {}  # LMS column -> the roster field that is its own
        for column, name in keys:
            self.own_field.setdefault(column, name)

    def match(self, sheet: Sheet) -> list[Match]:
        found = [self._row(sheet, row) for row in sheet.rows]
        rows_of: dict[str, list[int]] = {}
        for number, match in enumerate(found, 2):
            if match.entry is not None:
                rows_of.setdefault(match.entry["student_id"], []).append(number)
        for student, numbers in rows_of.items():
            if len(numbers) > 1:
                for number in numbers:
                    found[number - 2] = Match(
                        None, f"rows {', '.join(map(str, numbers))} all identify {student}: "
                        "none of them is filled")
        return found

    def _row(self, sheet: Sheet, row: list[str]) -> Match:
        values = {column: self._value(column, row[sheet.column(column)])
                  for column in self.own_field if column in sheet.header}
        by: dict[str, list[str]] = {}  # student -> the columns that name them
        for column, name in self.keys:
            value = values.get(column)
            for entry in self.roster if value else ():
                stands_in = name != self.own_field[column] and entry.get(self.own_field[column], "").strip()
                if not stands_in and self._value(column, entry.get(name, "")) == value:
                    by.setdefault(entry["student_id"], []).append(column)
        if len(by) > 1:
            return Match(
                None, "names more than one student of the roster (" +
                "; ".join(f"{student} by {', '.join(dict.fromkeys(columns))}"
                          for student, columns in sorted(by.items())) + "): not guessed")
        if not by:
            return Match(None)
        student = next(iter(by))
        entry = next(e for e in self.roster if e["student_id"] == student)
        for column, name in self.own_field.items():
            theirs = self._value(column, entry.get(name, ""))
            if values.get(column) and theirs and values[column] != theirs:
                return Match(
                    None, f"its {column} {safe_text(row[sheet.column(column)], one_line=True)[:80]} is not "
                    f"{student}'s {name} {entry[name]}, though its {', '.join(by[student])} is theirs: "
                    "not guessed")
        return Match(entry)

    @staticmethod
    def _value(column: str, text: str) -> str:
        """A cell or roster field as compared: whole, trimmed, case-folded; Moodle's participant number."""
        text = text.strip()
        if column == "Identifier":
            return moodle_participant(text) or text.casefold()
        return text.casefold()


def report_unmatched(matches: list[Match], sheet: Sheet, label: str, lms_file: Path,
                     problems: list[str]) -> set[int]:
    """Rows not matched for a reason (two students, a contradiction), each named once; their numbers."""
    explained = set()
    for number, match in enumerate(matches, 2):
        if match.why:
            row = sheet.rows[number - 2]
            name = safe_text(row[sheet.column(label)], one_line=True)[:80] if label in sheet.header else ""
            problems.append(f"{lms_file.name} row {number} ({name}): {match.why}: grade left as it was")
            explained.add(number)
    return explained


def _normalised(name: str) -> str:
    """An LMS column name compared with ours: without Canvas's `` (id)``, case, and ``_``/``-``/space runs."""
    return re.sub(r"[\s_\-]+", " ", re.sub(r"\s*\(\d+\)\s*$", "", name)).strip().casefold()


def find_or_add_column(sheet: Sheet, name: str, problems: list[str], lms_file: Path | None) -> int:
    """The column for ``name``: in an LMS file, the one of the same name, else a new one (reported there)."""
    if lms_file is not None:
        for index, header in enumerate(sheet.header):
            if _normalised(header) == _normalised(name):
                return index
        problems.append(
            f"{lms_file.name} has no column {name}: added one (the LMS creates a new assignment for it)")
    return sheet.add_column(name)
