"""``course report [ASSIGNMENT ...]``: where the class struggled, per exercise and per check.

After a batch is graded, the instructor's question is what to teach again. This report reads only
what grading left (each student's record and the probes saved beside it, :mod:`..grading.records`,
and the gradebook through :mod:`.grades`, which applies the late policy as ``course grades`` does;
the source notebook once, for which test cell follows which answer cell) and counts, per exercise
(test cell): the points (mean, spread, histogram); how many submissions passed every check, failed
only hidden checks (the visible check was too weak to warn them), failed a visible check, were held
for a person (by reason), were saved by the cascade (passed once the exercises they build on were
corrected) or lost the points through it (the cascade could not run again); the grader's own words
for the commonest failures; and how well the exercise separates strong from weak submissions
(point-biserial correlation and the upper-lower 27 % index, each against the rest of the score).
Per assignment: the score distribution after late penalties, late submissions, the pairs ``course
similarity`` flagged, the manual reviews still pending, and the lint findings that held back
submissions whose every check passed (what the allow-list may lack).

The page (:mod:`.report_page`) goes under ``build/report/``, which the access rules keep the
instructor's (:mod:`.access`); it names students by their id only, and only where a person must look.
"""
from __future__ import annotations

import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from course_tools.course import Assignment
from course_tools.grading import gradebook
from course_tools.grading.records import FAILED, GRADED, NOT_SUBMITTED, REVIEW, BadRecord, Probe, Result, \
    read_explanation, read_record
from course_tools.grading.submission import source_cells
from course_tools.untrusted import safe_text

from . import grades, similarity

PASSED, FAILED_HIDDEN = "passed", "failed hidden checks only"
FAILED_VISIBLE, HELD = "failed a visible check", "held for a person"
OUTCOMES = (PASSED, FAILED_HIDDEN, FAILED_VISIBLE, HELD)
UPPER_LOWER = 0.27  # Kelley's share of the class in each of the upper and lower groups
KIND_CHARACTERS = 160
# How student.grade_again_on_corrected_exercises says that cells (named before the colon) kept the
# verdict of their first run because the cascade could not grade them again.
NOT_GRADED_AGAIN = (" not graded again with the exercises they build on corrected",
                    " could not be graded again with the exercises they build on corrected")
NOT_RUN = "): not run: "  # a check's message when the grader never got to run it (a crash, the time spent)
TAMPER = ": a way around the grader"  # how student.check_statically words a finding that holds a submission
NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+(\.\d+)?([eE][-+]?\d+)?")  # a number, not a name's digits (sqlite3)


@dataclass(frozen=True)
class CellOutcome:
    """One student's result on one test cell."""

    grade_id: str
    points: float
    score: float  # a grader's manual score where there is one, else the automatic one
    outcome: str  # one of OUTCOMES
    kind: str  # the grader's words for the failure or the hold ("" when it passed)
    saved_by_cascade: bool  # passed only once the exercises it builds on were corrected
    lost_through_cascade: bool  # failed, and the cascade could not grade it again or stopped before it


@dataclass
class Submission:
    """One student's submission of one assignment as ``course grades`` reports it, with its cells."""

    student: str
    status: str  # GRADED, REVIEW, FAILED, NOT_SUBMITTED or grades.NOT_GRADED
    score: float | None  # after the late penalty
    late: bool
    penalty: float
    cells: list[CellOutcome] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # the lint's findings that held it for a person
    reasons: list[str] = field(default_factory=list)  # why it is held or failed (:func:`reason_kind`)


@dataclass
class ExerciseRow:
    assignment: str
    grade_id: str
    points: float
    submissions: int  # with a verdict on this cell
    mean: float | None
    spread: float | None  # the population standard deviation of the points
    counts: dict[str, int]  # outcome -> submissions
    held_by_reason: dict[str, int]
    saved_by_cascade: int
    lost_through_cascade: int
    point_biserial: float | None  # None where the cell or the rest of the score never varies
    upper_lower: float | None
    scores: list[float]  # every submission's points, for the histogram

    def share(self, outcome: str) -> float:
        return self.counts[outcome] / self.submissions if self.submissions else 0.0


@dataclass(frozen=True)
class FailureKind:
    assignment: str
    grade_id: str
    outcome: str  # FAILED_HIDDEN, FAILED_VISIBLE or HELD
    kind: str
    count: int


@dataclass(frozen=True)
class HeldBack:
    """A lint finding on submissions whose every check passed: honest code, or a way around the grader."""

    assignment: str
    answer_cell: str
    test_cells: tuple[str, ...]  # the test cells that check that answer cell
    finding: str  # what the lint found, without the line
    students: tuple[str, ...]


@dataclass
class AssignmentRow:
    assignment: str
    max_score: float
    students: int  # on the roster or with a folder
    submissions: int  # handed in
    graded: int  # with a score
    pending_review: int
    failed_to_grade: int
    not_graded_yet: int
    not_submitted: int
    late: int
    penalty_points: float
    flagged_pairs: int | None  # None: `course similarity` has not been run on it
    flagged_students: int | None
    mean: float | None
    median: float | None
    spread: float | None
    scores: list[float]
    held_by_reason: dict[str, int]


@dataclass
class Report:
    assignments: list[AssignmentRow]
    exercises: list[ExerciseRow]
    failures: list[FailureKind]
    held_back: list[HeldBack]


# ------------------------------------------------------------------------------- the grader's words ----

def grader_words(message: str) -> str:
    """The kind of a failed check's message, in the grader's words only: its first line (a visible
    check's second line is the student's own error), numbers as ``#`` after the check's name, and
    nothing from the student's value on (``got ...``)."""
    first = safe_text(message.split("\n", 1)[0], one_line=True)
    head, separator, rest = first.partition("): ")
    if not separator:
        head, rest = "", first
    rest = re.split(r"\bgot\b", rest, maxsplit=1)[0]
    if rest.count("(") > rest.count(")"):  # "(expected 1, " without its student's half
        rest = rest[:rest.rfind("(")]
    rest = rest.rstrip(" ,;:")
    return (head + separator + NUMBER.sub("#", rest))[:KIND_CHARACTERS]


def reason_kind(reason: str, cells: set[str]) -> str:
    """A reason a submission is held, without the cell and line it names (``answer_x line 3: ``), what it
    quotes of the submission (a path, a grade_id: ``'…'``, ``(…)``) and numbers (``#``), so that the
    same reason counts once however many cells give it; a lint finding as ``lint: what it found``."""
    text = safe_text(reason, one_line=True)
    head, separator, rest = text.partition(": ")
    if separator and (head in cells or re.fullmatch(r"\S+ line \d+", head)):
        text = rest
    if TAMPER in text:
        text = "lint: " + text.split(TAMPER, 1)[0]
    return NUMBER.sub("#", unquoted(text))[:KIND_CHARACTERS]


def unquoted(text: str) -> str:
    """``text`` without what it quotes (``'…'``) or puts in parentheses (``(…)``): a path, a grade_id."""
    return re.sub(r"\([^()]*\)", "(…)", re.sub(r"'[^']*'", "'…'", text))


# --------------------------------------------------------------------------- one student's record ----

def cascade_lost(result: Result) -> set[str]:
    """The cells the record says the cascade could not grade again."""
    lost = set()
    for reason in result.reasons:
        if any(words in reason for words in NOT_GRADED_AGAIN):
            lost |= set(reason.split(":", 1)[0].split(", "))
    return lost


def cell_outcomes(result: Result, probes: list[Probe], manual: dict[str, float]) -> list[CellOutcome]:
    """Each checked cell of ``result``: whether the visible or only the hidden checks failed (read from the
    probes when the record has them, else from the message), held, and the cascade's part."""
    by_cell: dict[str, list[Probe]] = {}
    for probe in probes:
        by_cell.setdefault(probe.grade_id, []).append(probe)
    lost = cascade_lost(result)
    cells = []
    for check in result.checks:
        mine = by_cell.get(check.grade_id, [])
        if check.status == "passed":
            outcome, kind = PASSED, ""
        elif check.status == "review":
            outcome, kind = HELD, grader_words(check.message)
        elif mine:
            visible_passed = all(p.outcome == "passed" for p in mine if not p.hidden)
            hidden_failed = any(p.outcome == "failed" for p in mine if p.hidden)
            outcome = FAILED_HIDDEN if visible_passed and hidden_failed else FAILED_VISIBLE
            kind = grader_words(check.message)
        else:
            outcome = FAILED_HIDDEN if check.message.startswith("hidden check") else FAILED_VISIBLE
            kind = grader_words(check.message)
        cascade_run = any(p.run.startswith("cascade run") for p in mine)
        # lost through the cascade: never graded again, or graded again by a run that stopped before it
        lost_to_it = check.grade_id in lost or (cascade_run and NOT_RUN in check.message)
        cells.append(CellOutcome(check.grade_id, check.points, manual.get(check.grade_id, check.score),
                                 outcome, kind, outcome == PASSED and cascade_run,
                                 outcome in (FAILED_HIDDEN, FAILED_VISIBLE) and lost_to_it))
    return cells


def submissions(assignment: Assignment, rows: list[dict],
                scores: dict[str, gradebook.Scores]) -> list[Submission]:
    """Every student's row of ``course grades`` for ``assignment``, with the cells of their record."""
    found = []
    tests = None
    for row in rows:
        status = next((s for s in (REVIEW, FAILED, grades.NOT_GRADED, NOT_SUBMITTED)
                       if row["status"].startswith(s)), GRADED)
        submission = Submission(row["student"], status, float(row["score"]) if row["score"] != "" else None,
                                bool(row["late"]), float(row["penalty"] or 0))
        found.append(submission)
        if status in (NOT_SUBMITTED, grades.NOT_GRADED):
            continue
        try:
            record = read_record(assignment, row["student"])
            probes = read_explanation(assignment, row["student"]) if record is not None else []
        except BadRecord:
            continue  # its row of `course grades` says so
        if record is None:
            continue
        tests = tests or {c.grade_id for c in record.checks}
        manual = scores[row["student"]].manual if row["student"] in scores else {}
        submission.cells = cell_outcomes(record, probes, manual)
        submission.findings = [f.split(TAMPER, 1)[0] for f in record.reasons if TAMPER in f]
        submission.reasons = [reason_kind(r, tests) for r in record.reasons]
    return found


# ------------------------------------------------------------------------------------ the counting ----

def correlation(xs: list[float], ys: list[float]) -> float | None:
    """Pearson's r (point-biserial where ``xs`` is pass or fail); None when either never varies."""
    if len(xs) < 2:
        return None
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    sxx, syy = sum((x - mean_x) ** 2 for x in xs), sum((y - mean_y) ** 2 for y in ys)
    return None if sxx == 0 or syy == 0 else sxy / (sxx * syy) ** 0.5


def upper_lower(xs: list[float], ys: list[float]) -> float | None:
    """The mean of ``xs`` (a cell's share of its points) in the upper 27 % by ``ys`` (the rest of the
    score) minus in the lower 27 %; None with fewer than two submissions or when ``ys`` never varies."""
    if len(xs) < 2 or len(set(ys)) < 2:
        return None
    size = max(1, round(UPPER_LOWER * len(xs)))
    ranked = [x for _, x in sorted(zip(ys, xs), key=lambda pair: pair[0])]
    return statistics.fmean(ranked[-size:]) - statistics.fmean(ranked[:size])


def exercise_rows(assignment: str, graded: list[Submission]) -> list[ExerciseRow]:
    """One row per test cell, over the submissions with a verdict on it."""
    order = list(dict.fromkeys(c.grade_id for s in graded for c in s.cells))
    rows = []
    for grade_id in order:
        pairs = [(s, c) for s in graded for c in s.cells if c.grade_id == grade_id]
        points = max(c.points for _, c in pairs)
        scores = [c.score for _, c in pairs]
        share = [c.score / c.points if c.points else 0.0 for _, c in pairs]
        rest = [sum(o.score for o in s.cells) - c.score for s, c in pairs]
        rows.append(ExerciseRow(
            assignment, grade_id, points, len(pairs), statistics.fmean(scores),
            statistics.pstdev(scores), {o: sum(c.outcome == o for _, c in pairs) for o in OUTCOMES},
            dict(Counter(c.kind for _, c in pairs if c.outcome == HELD).most_common()),
            sum(c.saved_by_cascade for _, c in pairs), sum(c.lost_through_cascade for _, c in pairs),
            correlation(share, rest), upper_lower(share, rest), scores))
    return rows


def failure_kinds(assignment: str, graded: list[Submission]) -> list[FailureKind]:
    """Per test cell, how often each kind of failure or hold occurred, the commonest first."""
    counts = Counter((c.grade_id, c.outcome, c.kind) for s in graded for c in s.cells if c.outcome != PASSED)
    return [FailureKind(assignment, grade_id, outcome, kind, count)
            for (grade_id, outcome, kind), count in sorted(counts.items(),
                                                           key=lambda item: (-item[1], item[0]))]


def tests_of_answers(assignment: Assignment) -> dict[str, tuple[str, ...]]:
    """Answer cell -> the test cells that follow it in the source notebook, up to the next answer cell."""
    concerned: dict[str, list[str]] = {}
    current = None
    for cell in source_cells(assignment.source):
        if cell.kind == "solution":
            current = cell.grade_id
            concerned.setdefault(current, [])
        elif cell.kind == "test" and current is not None:
            concerned[current].append(cell.grade_id)
    return {answer: tuple(tests) for answer, tests in concerned.items()}


def held_back(assignment: Assignment, graded: list[Submission]) -> list[HeldBack]:
    """The lint findings on submissions that passed every check, grouped by answer cell and finding."""
    tests = tests_of_answers(assignment) if assignment.source.is_file() else {}
    groups: dict[tuple[str, str], list[str]] = {}
    for s in graded:
        if s.cells and all(c.outcome == PASSED for c in s.cells):
            for finding in s.findings:
                cell, _, text = finding.partition(" line ")
                groups.setdefault((cell, unquoted(text.partition(": ")[2] or finding)), []).append(s.student)
    return [HeldBack(assignment.id, cell, tests.get(cell, ()), text, tuple(sorted(students)))
            for (cell, text), students in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))]


def assignment_row(assignment: Assignment, everyone: list[Submission], flagged: list[tuple[str, str]] | None,
                   max_score: float) -> AssignmentRow:
    scores = [s.score for s in everyone if s.status == GRADED and s.score is not None]
    held = Counter(r for s in everyone if s.status == REVIEW for r in s.reasons)
    return AssignmentRow(
        assignment.id, max_score, len(everyone),
        sum(s.status != NOT_SUBMITTED for s in everyone), len(scores),
        sum(s.status == REVIEW for s in everyone), sum(s.status == FAILED for s in everyone),
        sum(s.status == grades.NOT_GRADED for s in everyone),
        sum(s.status == NOT_SUBMITTED for s in everyone),
        sum(s.late for s in everyone), round(sum(s.penalty for s in everyone), 4),
        None if flagged is None else len(flagged),
        None if flagged is None else len({student for pair in flagged for student in pair}),
        statistics.fmean(scores) if scores else None, statistics.median(scores) if scores else None,
        statistics.pstdev(scores) if scores else None, scores, dict(held.most_common()))


def build(root: Path, selected: list[Assignment]) -> Report:
    """The report's rows for ``selected``, from the records and the gradebook."""
    table = grades.rows(root, selected)
    url = gradebook.db_url(root)
    report = Report([], [], [], [])
    for assignment in selected:
        scores = gradebook.scores(url, assignment.id) if grades.exists(url) else {}
        everyone = submissions(assignment, [r for r in table if r["assignment"] == assignment.id], scores)
        graded = [s for s in everyone if s.cells]
        max_score = max([sum(c.points for c in s.cells) for s in graded] +
                        [score.max_score for score in scores.values()] + [0.0])
        report.assignments.append(assignment_row(
            assignment, everyone, similarity.flagged_pairs(similarity.report_folder(root, assignment.id)),
            max_score))
        report.exercises += exercise_rows(assignment.id, graded)
        report.failures += failure_kinds(assignment.id, graded)
        report.held_back += held_back(assignment, graded)
    return report


def summary(report: Report) -> list[str]:
    """A few lines for the terminal: per assignment the scores, per exercise the outcomes."""
    lines = []
    for a in report.assignments:
        mean = "-" if a.mean is None else f"{a.mean:.1f}"
        lines.append(safe_text(
            f"{a.assignment}: {a.graded} scored of {a.submissions} submitted "
            f"(mean {mean} / {a.max_score:g}); "
            f"{a.pending_review} pending review, {a.failed_to_grade} failed to grade, {a.late} late, "
            + ("similarity not run" if a.flagged_pairs is None else f"{a.flagged_pairs} flagged pair(s)"),
            one_line=True))
        for e in (e for e in report.exercises if e.assignment == a.assignment):
            lines.append(safe_text(
                f"  {e.grade_id}: {e.counts[PASSED]}/{e.submissions} passed, {e.counts[FAILED_HIDDEN]} "
                f"failed hidden checks only, {e.counts[FAILED_VISIBLE]} failed a visible one, "
                f"{e.counts[HELD]} held",
                one_line=True))
    return lines


def report_command(root: Path, selected: list[Assignment], out: Path, stdout: TextIO | None = None) -> int:
    """Print the summary, write ``out/index.html`` and its CSV files; exit status 1 when anything still
    needs attention, as for ``course grades`` (a review pending, a submission failed or not yet graded)."""
    from .report_page import write

    stdout = stdout or sys.stdout
    report = build(root, selected)
    for line in summary(report):
        print(line, file=stdout)
    page = write(report, out)
    print(f"report: {page.relative_to(root) if page.is_relative_to(root) else page}", file=stdout)
    attention = any(a.pending_review or a.failed_to_grade or a.not_graded_yet for a in report.assignments)
    return 1 if attention else 0
