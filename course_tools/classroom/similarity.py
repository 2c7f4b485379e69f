"""``course similarity ASSIGNMENT``: pairs of submissions whose answer cells are suspiciously alike.

Each student's answer cells (nbgrader ``solution`` cells, found by grade id or cell id as the
autograder finds them) are brought into canonical form (:mod:`.canonical`: names a student chose
as one placeholder; comments, docstrings, dead code and inert statements dropped; temporaries
inlined; loops, operators and calls in one spelling; the statements of each block in one order
that keeps their dependencies), so that renaming, reordering, padding and respelling a copy
changes nothing. Each cell's canonical tokens are fingerprinted: every run of ``K`` tokens hashed
(a k-gram; winnowing with a window of one, as copydetect's defaults, keeps them all). A pair's
score is the larger of the two shares: the part of one student's fingerprints, over all answer
cells, that the same cell of the other student also has, so that a student who copied one
exercise of a long submission is caught as well as one who copied it all.

Every code cell of the release notebook (the stubs a student starts from and the given code) is
boilerplate: its fingerprints are removed from every submission first, so that two untouched
notebooks, or two students who kept a signature, never match on it.

Submissions are untrusted: each notebook is read with :func:`.submission.read_submission` (no link
followed, size capped, any JSON refused that is not a notebook); one that cannot be read is reported
and the batch goes on. A cell that is not valid Python is compared as its raw tokens. Nothing a
student wrote reaches the terminal or the report unescaped.
"""
from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TextIO

from course_tools.course import Assignment, CourseError
from course_tools.grading.submission import answers, cell_ids, read_submission, source_cells
from course_tools.notebooks import read_notebook
from course_tools.pages import render
from course_tools.untrusted import Missing, Unreadable, csv_cell, no_links, safe_text

from .canonical import canonical_answers, vocabulary
from .canonical.model import Canonical, Vocabulary

DEFAULT_THRESHOLD = 0.5
K = 12  # canonical tokens per fingerprint, about a statement (``ν = ν . sum ( - 1 , keepdim = True )`` is 13)
# A pair is flagged only when the fingerprints they share are this many (a few statements): two
# students who each answered one short exercise the one natural way share all of it.
MIN_SHARED = 40
SHOWN_UNFLAGGED = 10  # unflagged pairs printed under the flagged ones, for scale
REPORTED_PAIRS = 100  # pairs shown side by side in the HTML report


@dataclass
class Pair:
    first: str
    second: str
    first_share: float  # the part of first's fingerprinted answer code found in second's
    second_share: float
    shared: int  # fingerprints the two have in common, summed over the answer cells

    @property
    def score(self) -> float:
        return max(self.first_share, self.second_share)

    def flagged(self, threshold: float) -> bool:
        return self.score >= threshold and self.shared >= MIN_SHARED


@dataclass(frozen=True)
class Fingerprinted:
    """One answer cell: its canonical tokens and the hashes of their k-grams that are not boilerplate."""

    code: str
    canonical: Canonical
    hashes: frozenset[int]


def answer_cells(assignment: Assignment, student: str) -> dict[str, str]:
    """One student's answer code per solution grade id, in the notebook's order; :class:`Unreadable` with the
    reason. The submission is what ``course autograde`` grades: the release's notebook name, nothing else
    (a renamed notebook is reported by both, with what the folder holds)."""
    folder = assignment.submitted(student)
    no_links(folder, assignment.submitted_root)
    raw = read_submission(folder / assignment.release.name, root=folder)
    cells = source_cells(assignment.source)
    found = answers(raw, cells, cell_ids(assignment.source))
    return {c.grade_id: safe_text(found.code[c.grade_id]) for c in cells
            if c.kind == "solution" and c.grade_id in found.code}


def given_cells(assignment: Assignment) -> list[str]:
    """What every student was given: each code cell of the release (stubs and given code alike)."""
    if not assignment.release.is_file():
        raise CourseError(
            f"{assignment.release}: not released yet (course release {assignment.id}); its stubs "
            "are needed so that they never count as a match")
    return [cell.source for cell in read_notebook(assignment.release).cells if cell.cell_type == "code"]


def collect(assignment: Assignment) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Student -> answer cells for every readable submission; one line per submission that is not."""
    submitted = assignment.submitted_root  # every entry: one that is not a readable folder is reported
    codes, problems = {}, []
    students = sorted(p.name for p in submitted.iterdir()) if submitted.is_dir() else []
    for student in students:
        try:
            codes[student] = answer_cells(assignment, student)
        except Missing:
            continue  # no submission of this assignment
        except Unreadable as error:
            problems.append(f"{safe_text(student, one_line=True)}: {safe_text(error, one_line=True)}: "
                            "left out of the comparison")
    return codes, problems


def kgrams(canonical: Canonical) -> list[int]:
    """The hash of every run of ``K`` canonical tokens, in order (one per start position)."""
    tokens = canonical.tokens
    return [hash(tokens[i:i + K]) for i in range(len(tokens) - K + 1)]


def fingerprinted(codes: dict[str, dict[str, str]], given: list[str]) -> dict[str, dict[str, Fingerprinted]]:
    """Student -> grade id -> the cell's canonical form and its fingerprints, the release's removed."""
    known: Vocabulary = vocabulary(given)
    released = canonical_answers({str(i): code for i, code in enumerate(given)}, known)
    boilerplate = {h for canonical in released.values() for h in kgrams(canonical)}
    prints = {}
    for student, cells in codes.items():
        canonical = canonical_answers(cells, known)
        prints[student] = {grade_id: Fingerprinted(code, canonical[grade_id],
                                                   frozenset(kgrams(canonical[grade_id])) - boilerplate)
                           for grade_id, code in cells.items()}
    return prints


def compare(codes: dict[str, dict[str, str]], given: list[str]) -> list[Pair]:
    """Every pair of students, the most alike first.

    Each answer cell is compared with the same cell of the other student: code moved to another
    cell is neither the student's answer to that exercise nor boilerplate.
    """
    return compare_fingerprints(fingerprinted(codes, given))


def compare_fingerprints(prints: dict[str, dict[str, Fingerprinted]]) -> list[Pair]:
    """Every pair of students, the most alike first, from their fingerprinted answer cells."""
    sizes = {student: sum(len(cell.hashes) for cell in cells.values()) for student, cells in prints.items()}
    pairs = []
    for first, second in combinations(sorted(prints), 2):
        mine, theirs = prints[first], prints[second]
        shared = sum(len(mine[g].hashes & theirs[g].hashes) for g in mine.keys() & theirs.keys())
        pairs.append(Pair(first, second, shared / sizes[first] if sizes[first] else 0.0,
                          shared / sizes[second] if sizes[second] else 0.0, shared))
    return sorted(pairs, key=lambda p: (-p.score, p.first, p.second))


def matched_lines(mine: Fingerprinted, theirs: Fingerprinted) -> frozenset[int]:
    """The lines of ``mine``'s cell whose canonical tokens are part of a fingerprint ``theirs`` shares."""
    common = mine.hashes & theirs.hashes
    lines = set()
    for start, value in enumerate(kgrams(mine.canonical)):
        if value in common:
            for token_lines in mine.canonical.lines[start:start + K]:
                lines |= token_lines
    return frozenset(lines)


def marked_lines(code: str, lines: frozenset[int]) -> list[tuple[str, bool]]:
    """Each line of ``code`` and whether the report marks it: in ``lines`` (from 1), and not blank."""
    return [(line, number in lines and bool(line.strip())) for number, line in enumerate(code.split("\n"), 1)]


def report_folder(root: Path, assignment_id: str) -> Path:
    """Where ``course similarity`` writes its report of ``assignment_id`` unless told otherwise."""
    return root / "build" / "similarity" / assignment_id


def flagged_pairs(folder: Path) -> list[tuple[str, str]] | None:
    """The pairs flagged in the report last written to ``folder`` (its ``pairs.csv``); None without one."""
    try:
        with open(folder / "pairs.csv", newline="", encoding="utf-8") as stream:
            return [(row["student_a"], row["student_b"]) for row in csv.DictReader(stream)
                    if row["flagged"] == "yes"]
    except FileNotFoundError:
        return None


def _table(pairs: list[Pair], threshold: float) -> list[str]:
    flagged = [p for p in pairs if p.flagged(threshold)]
    shown = flagged + [p for p in pairs if not p.flagged(threshold)][:SHOWN_UNFLAGGED]
    width = max([len("student a")] + [len(safe_text(p.first, one_line=True)) for p in shown])
    lines = [f"{'score':>6}  {'a→b':>5}  {'b→a':>5}  {'shared':>6}  {'student a':<{width}}  student b"]
    for pair in shown:
        lines.append(
            f"{pair.score:6.2f}  {pair.first_share:5.2f}  {pair.second_share:5.2f}  {pair.shared:6d}  "
            f"{safe_text(pair.first, one_line=True):<{width}}  {safe_text(pair.second, one_line=True)}"
            f"{'  FLAGGED' if pair.flagged(threshold) else ''}")
    if len(pairs) > len(shown):
        lines.append(f"({len(pairs) - len(shown)} more pair(s), none flagged, in pairs.csv)")
    return lines


@dataclass(frozen=True)
class SharedCell:
    """One answer cell of a reported pair that shares fingerprints: both students' code, marked."""

    grade_id: str
    raw: list[str]  # the students whose cell is not valid Python (compared as raw tokens)
    first: list[tuple[str, bool]]  # the first student's lines, each marked or not (:func:`marked_lines`)
    second: list[tuple[str, bool]]


def shared_cells(pair: Pair, prints: dict[str, dict[str, Fingerprinted]]) -> list[SharedCell]:
    """The answer cells the two students of ``pair`` share fingerprints in, side by side."""
    cells = []
    mine, theirs = prints[pair.first], prints[pair.second]
    for grade_id in mine:
        if grade_id not in theirs or not mine[grade_id].hashes & theirs[grade_id].hashes:
            continue
        raw = [student for student, cells_of in ((pair.first, mine), (pair.second, theirs))
               if not cells_of[grade_id].canonical.parsed]
        cells.append(SharedCell(
            grade_id, raw, marked_lines(mine[grade_id].code, matched_lines(mine[grade_id], theirs[grade_id])),
            marked_lines(theirs[grade_id].code, matched_lines(theirs[grade_id], mine[grade_id]))))
    return cells


def write_report(
    out: Path,
    assignment: Assignment,
    prints: dict[str, dict[str, Fingerprinted]],
    pairs: list[Pair],
    threshold: float,
    problems: list[str],
) -> Path:
    """``out/index.html`` (the most alike pairs, their answer cells side by side) and ``out/pairs.csv`` (every
    pair)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "pairs.csv", "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(("student_a", "student_b", "score", "share_a", "share_b", "shared", "flagged"))
        writer.writerows(
            (
                csv_cell(p.first),
                csv_cell(p.second),
                f"{p.score:.3f}",
                f"{p.first_share:.3f}",
                f"{p.second_share:.3f}",
                p.shared,
                "yes" if p.flagged(threshold) else "",
            )
            for p in pairs
        )
    reported = [p for p in pairs[:REPORTED_PAIRS] if p.score > 0]
    page = render(__file__, "similarity.html.j2", assignment=assignment.id, threshold=threshold,
                  fingerprint_tokens=K, min_shared=MIN_SHARED, problems=problems,
                  pairs=[(p, p.flagged(threshold), shared_cells(p, prints)) for p in reported])
    (out / "index.html").write_text(page, encoding="utf-8")
    return out / "index.html"


def similarity_report(
    root: Path,
    assignment: Assignment,
    threshold: float,
    out: Path,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Print the pairs, write the report; exit status 1 when a pair is flagged or a submission unreadable."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if not 0 < threshold <= 1:
        raise CourseError(f"--threshold {threshold:g}: give a share between 0 and 1")
    given = given_cells(assignment)
    codes, problems = collect(assignment)
    prints = fingerprinted(codes, given)
    pairs = compare_fingerprints(prints)
    for problem in problems:
        print(f"course similarity: {problem}", file=stderr)
    for line in _table(pairs, threshold):
        print(line, file=stdout)
    page = write_report(out, assignment, prints, pairs, threshold, problems)
    flagged = sum(p.flagged(threshold) for p in pairs)
    print(
        f"{len(codes)} submission(s), {len(pairs)} pair(s), {flagged} flagged at {threshold:g}; "
        f"report: {page.relative_to(root) if page.is_relative_to(root) else page}",
        file=stdout,
    )
    return 1 if flagged or problems else 0
