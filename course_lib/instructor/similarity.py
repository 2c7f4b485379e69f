"""``course similarity ASSIGNMENT``: pairs of submissions whose answer cells are suspiciously alike.

Each student's answer cells (nbgrader ``solution`` cells, found by grade id or cell id as the
autograder finds them) are joined into one document and fingerprinted with copydetect: Python
tokens with every name replaced by a placeholder, comments and layout dropped, k-grams hashed and
winnowed (Schleimer, Wilkerson and Aiken, SIGMOD 2003). So a renamed variable, a changed comment or
a reordered helper leaves the fingerprints as they were, while independently written code shares
few of them. A pair's score is the larger of the two shares: the part of one student's fingerprinted
code that also appears in the other's, so that a student who copied one exercise of a long
submission is caught as well as one who copied it all.

Every code cell of the release notebook (the stubs a student starts from and the given code) is
boilerplate: its fingerprints are removed from every submission first, so that two untouched
notebooks, or two students who kept a signature and its docstring, never match on it.

Submissions are untrusted: each notebook is read with :func:`.submission.read_submission` (no link
followed, size capped, any JSON refused that is not a notebook); one that cannot be read is reported
and the batch goes on. Nothing a student wrote reaches the terminal or the report unescaped.
"""
from __future__ import annotations

import csv
import io
import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TextIO

from .course import Assignment, CourseError
from .notebooks import read_notebook
from .submission import Unreadable, answers, cell_ids, read_submission, source_cells
from .untrusted import Missing, csv_cell, html_text, no_links, safe_text

DEFAULT_THRESHOLD = 0.5
# copydetect's defaults: matches shorter than 25 characters of filtered code (about a dozen tokens)
# are noise, and every match of that length is found (a window of one k-gram).
NOISE_CHARS = 25
GUARANTEE_CHARS = 25
# A pair is flagged only when the code they share is at least this long (filtered characters, a few
# lines): two students who each answered one short exercise the one natural way share all of it.
MIN_MATCHED_CHARS = 80
SHOWN_UNFLAGGED = 10  # unflagged pairs printed under the flagged ones, for scale
REPORTED_PAIRS = 100  # pairs shown side by side in the HTML report


@dataclass
class Pair:
    first: str
    second: str
    first_share: float  # the part of first's fingerprinted answer code found in second's
    second_share: float
    matched: int  # filtered characters of the larger match, in first's code or in second's
    slices: dict[str, tuple]  # grade id -> copydetect's (starts, ends) of the matches in first's and second's cell

    @property
    def score(self) -> float:
        return max(self.first_share, self.second_share)

    def flagged(self, threshold: float) -> bool:
        return self.score >= threshold and self.matched >= MIN_MATCHED_CHARS


def answer_cells(assignment: Assignment, student: str) -> dict[str, str]:
    """One student's answer code per solution grade id, in the notebook's order; :class:`Unreadable` with the reason."""
    submitted = assignment.root / "submitted"
    folder = submitted / student / assignment.id
    no_links(folder, submitted)
    notebook = folder / assignment.release.name
    if not notebook.exists():  # a renamed notebook ("toy-Copy1.ipynb") is still the student's work
        others = sorted(p for p in folder.glob("*.ipynb") if p.is_file())
        notebook = others[0] if len(others) == 1 else notebook
    raw = read_submission(notebook, root=folder)
    cells = source_cells(assignment.source)
    found = answers(raw, cells, cell_ids(assignment.source))
    return {c.grade_id: safe_text(found.code[c.grade_id]) for c in cells
            if c.kind == "solution" and c.grade_id in found.code}


def given_cells(assignment: Assignment) -> list[str]:
    """What every student was given: each code cell of the release (stubs and given code alike)."""
    if not assignment.release.is_file():
        raise CourseError(f"{assignment.release}: not released yet (course release {assignment.id}); its stubs "
                          "are needed so that they never count as a match")
    return [cell.source for cell in read_notebook(assignment.release).cells if cell.cell_type == "code"]


def collect(assignment: Assignment) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Student -> answer cells for every readable submission; one line per submission that is not."""
    submitted = assignment.root / "submitted"
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


def fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint("answer.py", NOISE_CHARS, GUARANTEE_CHARS - NOISE_CHARS + 1, boilerplate,
                           language="python", fp=io.StringIO(code))


def compare(codes: dict[str, dict[str, str]], given: list[str]) -> list[Pair]:
    """Every pair of students, the most alike first.

    Cells are fingerprinted one by one, each answer cell compared with the same cell of the other
    student: a k-gram spanning two cells would be neither the student's code nor boilerplate.
    """
    import numpy as np
    from copydetect import compare_files

    boilerplate = np.unique(np.array([h for code in given for h in fingerprint(code).hashes], dtype=np.int64))
    prints = {student: {grade_id: fingerprint(code, boilerplate) for grade_id, code in cells.items()}
              for student, cells in codes.items()}
    sizes = {student: sum(p.token_coverage for p in cells.values()) for student, cells in prints.items()}
    pairs = []
    for first, second in combinations(sorted(prints), 2):
        first_matched = second_matched = 0.0
        slices = {}
        for grade_id in prints[first].keys() & prints[second].keys():
            mine, theirs = prints[first][grade_id], prints[second][grade_id]
            _, (first_share, second_share), slices[grade_id] = compare_files(mine, theirs)
            first_matched += first_share * mine.token_coverage
            second_matched += second_share * theirs.token_coverage
        pairs.append(Pair(first, second, first_matched / sizes[first] if sizes[first] else 0.0,
                          second_matched / sizes[second] if sizes[second] else 0.0,
                          round(max(first_matched, second_matched)), slices))
    return sorted(pairs, key=lambda p: (-p.score, p.first, p.second))


def highlighted(code: str, slices) -> str:
    """``code`` escaped for HTML, the parts in ``slices`` marked."""
    from copydetect.utils import highlight_overlap

    if len(slices) == 0 or slices.shape[-1] == 0:
        return html_text(code)
    return highlight_overlap(code, slices, "<mark>", "</mark>", escape_html=True)[0]


def _table(pairs: list[Pair], threshold: float) -> list[str]:
    flagged = [p for p in pairs if p.flagged(threshold)]
    shown = flagged + [p for p in pairs if not p.flagged(threshold)][:SHOWN_UNFLAGGED]
    width = max([len("student a")] + [len(safe_text(p.first, one_line=True)) for p in shown])
    lines = [f"{'score':>6}  {'a→b':>5}  {'b→a':>5}  {'matched':>7}  {'student a':<{width}}  student b"]
    for pair in shown:
        lines.append(f"{pair.score:6.2f}  {pair.first_share:5.2f}  {pair.second_share:5.2f}  {pair.matched:7d}  "
                     f"{safe_text(pair.first, one_line=True):<{width}}  {safe_text(pair.second, one_line=True)}"
                     f"{'  FLAGGED' if pair.flagged(threshold) else ''}")
    if len(pairs) > len(shown):
        lines.append(f"({len(pairs) - len(shown)} more pair(s), none flagged, in pairs.csv)")
    return lines


def _side_by_side(pair: Pair, codes: dict[str, dict[str, str]]) -> str:
    parts = []
    for grade_id in codes[pair.first]:
        if grade_id not in pair.slices:
            continue
        first_slices, second_slices = pair.slices[grade_id]
        parts.append(f"<h3>{html_text(grade_id)}</h3><div class=\"side\">"
                     f"<pre>{highlighted(codes[pair.first][grade_id], first_slices)}</pre>"
                     f"<pre>{highlighted(codes[pair.second][grade_id], second_slices)}</pre></div>")
    return "".join(parts)


def write_report(out: Path, assignment: Assignment, codes: dict[str, dict[str, str]], pairs: list[Pair],
                 threshold: float, problems: list[str]) -> Path:
    """``out/index.html`` (the most alike pairs, their answer cells side by side) and ``out/pairs.csv`` (every pair)."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "pairs.csv", "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(("student_a", "student_b", "score", "share_a", "share_b", "matched", "flagged"))
        writer.writerows((csv_cell(p.first), csv_cell(p.second), f"{p.score:.3f}", f"{p.first_share:.3f}",
                          f"{p.second_share:.3f}", p.matched, "yes" if p.flagged(threshold) else "") for p in pairs)
    reported = [p for p in pairs[:REPORTED_PAIRS] if p.score > 0]
    rows = "".join(
        f'<tr class="{"flagged" if p.flagged(threshold) else ""}"><td><a href="#pair-{i}">{p.score:.2f}</a></td>'
        f"<td>{p.first_share:.2f}</td><td>{p.second_share:.2f}</td><td>{p.matched}</td>"
        f"<td>{html_text(p.first)}</td><td>{html_text(p.second)}</td></tr>" for i, p in enumerate(reported))
    sections = "".join(
        f'<section id="pair-{i}"><h2>{html_text(p.first)} (left) · {html_text(p.second)} (right): '
        f'{p.score:.2f}{" FLAGGED" if p.flagged(threshold) else ""}</h2>{_side_by_side(p, codes)}</section>'
        for i, p in enumerate(reported))
    unread = "".join(f"<li>{html_text(problem)}</li>" for problem in problems)
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Similarity: {html_text(assignment.id)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }} td, th {{ padding: 0.2em 0.8em; text-align: left; }}
tr.flagged td {{ background: #fdd; font-weight: bold; }}
.side {{ display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }}
pre {{ background: #f6f6f6; padding: 0.8em; overflow-x: auto; white-space: pre-wrap; margin: 0; }}
mark {{ background: #ffd54f; }}
</style></head><body>
<h1>Similarity of the answer cells of {html_text(assignment.id)}</h1>
<p>A share is the part of one student's answer code that also appears in the other's, once names,
comments and layout are set aside and the release's stubs and given code removed; a pair's score is
the larger share. Flagged: a score of at least {threshold:g} over at least {MIN_MATCHED_CHARS} matched
characters of normalised code. Highlighted below: the matching parts, cell by cell. A flag is a
reason to look, not a verdict.</p>
{f"<h2>Not compared</h2><ul>{unread}</ul>" if unread else ""}
<table><tr><th>score</th><th>a→b</th><th>b→a</th><th>matched</th><th>student a</th><th>student b</th></tr>
{rows}</table>
{sections}
</body></html>
"""
    (out / "index.html").write_text(page, encoding="utf-8")
    return out / "index.html"


def similarity_report(root: Path, assignment: Assignment, threshold: float, out: Path,
                      stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Print the pairs, write the report; exit status 1 when a pair is flagged or a submission unreadable."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if not 0 < threshold <= 1:
        raise CourseError(f"--threshold {threshold:g}: give a share between 0 and 1")
    given = given_cells(assignment)
    codes, problems = collect(assignment)
    pairs = compare(codes, given)
    for problem in problems:
        print(f"course similarity: {problem}", file=stderr)
    for line in _table(pairs, threshold):
        print(line, file=stdout)
    page = write_report(out, assignment, codes, pairs, threshold, problems)
    flagged = sum(p.flagged(threshold) for p in pairs)
    print(f"{len(codes)} submission(s), {len(pairs)} pair(s), {flagged} flagged at {threshold:g}; "
          f"report: {page.relative_to(root) if page.is_relative_to(root) else page}", file=stdout)
    return 1 if flagged or problems else 0
