"""The page and the CSV files of ``course report`` (:mod:`.report`), with the charts drawn in.

The page is rendered from ``templates/report.html.j2`` by :mod:`course_tools.pages` (every text made
safe, then escaped): a grade_id or a finding may hold what a student wrote. The charts are drawn
with matplotlib's Agg canvas (no display, no pyplot state) and embedded as PNG data, so that the
page works offline and as one file. Each chart reads without its numbers: one colour per outcome, in
the same order everywhere, the exercises in the notebook's order.
"""
from __future__ import annotations

import base64
import csv
import io
import math
from pathlib import Path

from course_tools.pages import render
from course_tools.untrusted import csv_cell, safe_text

from .report import FAILED_HIDDEN, FAILED_VISIBLE, HELD, OUTCOMES, PASSED, AssignmentRow, ExerciseRow, Report

COLOURS = {PASSED: "#4c9a2a", FAILED_HIDDEN: "#e69f00", FAILED_VISIBLE: "#c0392b", HELD: "#5b7dbd"}
EXERCISE_COLUMNS = ("assignment", "exercise", "points", "submissions", "mean", "spread", "passed",
                    "failed_hidden_only", "failed_visible", "held", "held_by_reason", "saved_by_cascade",
                    "lost_through_cascade", "point_biserial", "upper_lower_27")
ASSIGNMENT_COLUMNS = ("assignment", "max_score", "students", "submissions", "graded", "pending_review",
                      "failed_to_grade", "not_graded_yet", "not_submitted", "late", "penalty_points",
                      "flagged_pairs", "flagged_students", "mean", "median", "spread")


def _number(value: float | int | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def _label(text: str) -> str:
    """``text`` on a chart: one safe line, a ``$`` shown as itself rather than starting mathtext."""
    return safe_text(text, one_line=True).replace("$", r"\$")


def _png(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def score_histogram(row: AssignmentRow) -> str:
    """The distribution of the scores after late penalties, the mean marked."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 2.6))
    axes = figure.subplots()
    top = math.ceil(row.max_score) or 1
    # a bar per point, centred on it, up to 20 points; 20 bars beyond
    edges = [i - 0.5 for i in range(top + 2)] if top <= 20 else [top * i / 20 for i in range(21)]
    axes.hist(row.scores, bins=edges, color="#5b7dbd", edgecolor="white")
    if row.mean is not None:
        axes.axvline(row.mean, color="black", linestyle="--", label="mean")
        axes.legend(loc="upper left", frameon=False)
    axes.set(xlabel=f"score (of {row.max_score:g})", ylabel="students",
             title=f"{_label(row.assignment)}: scores")
    axes.spines[["top", "right"]].set_visible(False)
    return _png(figure)


def exercise_chart(rows: list[ExerciseRow]) -> str:
    """Left: each exercise's submissions split by outcome (shares); right: its discrimination."""
    from matplotlib.figure import Figure

    names = [_label(r.grade_id) for r in rows]
    figure = Figure(figsize=(9, 0.45 * len(rows) + 1.4))
    outcomes, discrimination = figure.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 1]})
    left = [0.0] * len(rows)
    for outcome in OUTCOMES:
        shares = [r.share(outcome) for r in rows]
        outcomes.barh(names, shares, left=left, color=COLOURS[outcome], label=outcome)
        left = [a + b for a, b in zip(left, shares)]
    outcomes.invert_yaxis()  # the notebook's order, top to bottom
    outcomes.set(xlim=(0, 1), xlabel="share of the graded submissions")
    outcomes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    values = [r.point_biserial or 0.0 for r in rows]
    discrimination.barh(names, values, color=["#888" if v < 0.2 else "#333" for v in values])
    discrimination.axvline(0.2, color="#c0392b", linestyle=":", linewidth=1, label="weak below")
    discrimination.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    discrimination.set(xlim=(min(-0.2, *values), 1), xlabel="discrimination (r)")
    for axes in (outcomes, discrimination):
        axes.spines[["top", "right"]].set_visible(False)
    return _png(figure)


def points_histograms(rows: list[ExerciseRow]) -> str:
    """One small histogram of the points per exercise."""
    from matplotlib.figure import Figure

    columns = min(4, len(rows))
    lines = -(-len(rows) // columns)
    figure = Figure(figsize=(2.4 * columns, 1.8 * lines), layout="constrained")
    grid = figure.subplots(lines, columns, squeeze=False)
    for axes, row in zip(grid.flat, rows):
        axes.hist(row.scores, bins=max(2, min(10, int(row.points * 2) + 1)), range=(0, row.points or 1),
                  color="#5b7dbd", edgecolor="white")
        axes.set_title(_label(row.grade_id[:30]), fontsize=9)
        axes.tick_params(labelsize=7)
        axes.spines[["top", "right"]].set_visible(False)
    for axes in list(grid.flat)[len(rows):]:
        axes.set_visible(False)
    return _png(figure)


def write_csv(path: Path, columns: tuple[str, ...], rows: list[tuple]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(columns)
        writer.writerows(tuple(csv_cell(value) for value in row) for row in rows)


def exercise_cells(e: ExerciseRow) -> tuple:
    held = "; ".join(f"{reason}: {count}" for reason, count in e.held_by_reason.items())
    return (e.assignment, e.grade_id, _number(e.points), e.submissions, _number(e.mean), _number(e.spread),
            e.counts[PASSED], e.counts[FAILED_HIDDEN], e.counts[FAILED_VISIBLE], e.counts[HELD], held,
            e.saved_by_cascade, e.lost_through_cascade, _number(e.point_biserial, 2),
            _number(e.upper_lower, 2))


def assignment_cells(a: AssignmentRow) -> tuple:
    return (a.assignment, _number(a.max_score), a.students, a.submissions, a.graded, a.pending_review,
            a.failed_to_grade, a.not_graded_yet, a.not_submitted, a.late, _number(a.penalty_points),
            _number(a.flagged_pairs), _number(a.flagged_students), _number(a.mean), _number(a.median),
            _number(a.spread))


def page(report: Report) -> str:
    sections = []
    for a in report.assignments:
        exercises = [e for e in report.exercises if e.assignment == a.assignment]
        sections.append({
            "row": a, "scores": score_histogram(a) if a.scores else None,
            "chart": exercise_chart(exercises) if exercises else None,
            "histograms": points_histograms(exercises) if exercises else None,
            "exercises": exercises,
            "failures": [f for f in report.failures if f.assignment == a.assignment],
            "held_back": [h for h in report.held_back if h.assignment == a.assignment],
        })
    return render(
        __file__, "report.html.j2", sections=sections, outcomes=OUTCOMES, colours=COLOURS, number=_number,
        PASSED=PASSED, FAILED_HIDDEN=FAILED_HIDDEN, FAILED_VISIBLE=FAILED_VISIBLE, HELD=HELD)


def write(report: Report, out: Path) -> Path:
    """``out/index.html``, ``out/exercises.csv`` and ``out/assignments.csv``."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "exercises.csv", EXERCISE_COLUMNS, [exercise_cells(e) for e in report.exercises])
    write_csv(out / "assignments.csv", ASSIGNMENT_COLUMNS, [assignment_cells(a) for a in report.assignments])
    (out / "index.html").write_text(page(report), encoding="utf-8")
    return out / "index.html"
