"""``course check`` (the fast guard before a commit) and ``course build`` (the main job)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from course_tools.course import Assignment
from course_tools.notebooks import dumps, graded_cells, read_notebook, write_if_changed
from course_tools.untrusted import text_table

from .execute import execute, validate
from .release import plan_release


@dataclass
class Row:
    assignment: str
    tests: str  # "passed/total" for the solution
    release: str  # "failing/total" for the release
    seconds: float
    headline: str
    ok: bool


def format_table(rows: list[Row]) -> str:
    header = ("assignment", "solution tests passed", "release tests failing", "runtime", "headline")
    lines = [header] + [(r.assignment, r.tests, r.release, _minutes(r.seconds), r.headline) for r in rows]
    return "\n".join(text_table(lines, rule=True))


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def check(root: Path, selected: list[Assignment], out: TextIO | None = None) -> bool:
    """Release in sync, every solution passes its graded tests, every release fails all of them."""
    out = out or sys.stdout
    ok = True
    stale = plan_release(selected).out_of_sync()
    if stale:
        ok = False
        shown = ", ".join(str(p.relative_to(root)) for p in stale)
        print(f"out of sync with solutions/ (run `course release`): {shown}", file=out)
    rows = []
    for assignment in selected:
        solution = validate(root, assignment.source)
        release = validate(root, assignment.release, invert=True)
        total = len(solution.passed) + len(solution.failed)
        good = not solution.failed and not release.passed and total > 0
        ok &= good
        rows.append(Row(assignment.id, f"{len(solution.passed)}/{total}", f"{len(release.failed)}/{total}",
                        solution.seconds + release.seconds, "", good))
        for grade_id, error in solution.failed.items():
            print(
                f"{assignment.id}: solution fails {grade_id}: "
                f"{error.strip().splitlines()[-1] if error.strip() else ''}",
                file=out)
        for grade_id in release.passed:
            print(f"{assignment.id}: release passes {grade_id} without any work", file=out)
    print(format_table(rows), file=out)
    return ok


def build(root: Path, selected: list[Assignment], profile: str, out: TextIO | None = None, *,
          cell_timeout: float = 900) -> bool:
    """Regenerate the release, execute every solution in ``profile``, check the releases fail, tabulate.

    A notebook that times out (a cell over ``cell_timeout`` seconds) or fails is its assignment's
    row in the table, "timed out in cell N after S s" or "failed in cell N: error"; the build goes
    on with the other assignments and returns False at the end.
    """
    out = out or sys.stdout
    changed = plan_release(selected).apply()
    print(f"release: {len(changed)} file(s) regenerated" if changed else "release: up to date", file=out)
    rows = []
    executed_dir = root / "build" / "executed"
    for assignment in selected:
        print(f"{assignment.id}: executing the solution in the {profile} profile …", file=out, flush=True)
        try:
            rows.append(_build_one(root, assignment, profile, cell_timeout, executed_dir, out))
        # e.g. the release's validation timing out: one assignment's row, not the build
        except Exception as e:
            problem = (f"failed: {type(e).__name__}: "
                       f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}")
            print(f"{assignment.id}: {problem}", file=out)
            rows.append(Row(assignment.id, "-", "-", 0.0, problem, False))
    print(format_table(rows), file=out)
    if not all(row.ok for row in rows):
        print(f"\n{sum(not row.ok for row in rows)} of {len(rows)} assignment(s) need attention (see above). "
              "On a slow machine, try `course build --profile smoke` (a one-minute dry run) or a longer "
              f"`--cell-timeout` (now {cell_timeout:g} s).", file=out)
    return all(row.ok for row in rows)


def _build_one(root: Path, assignment: Assignment, profile: str, cell_timeout: float, executed_dir: Path,
               out: TextIO) -> Row:
    """Execute one solution and validate its release: its row of the table."""
    from course_lib.checkpoints import read_results

    run = execute(assignment.source, profile=profile, cell_timeout=cell_timeout)
    total = len(graded_cells(read_notebook(assignment.source)))
    if run.stopped:  # a half-run notebook is no deck for `course slides`, and its results are stale
        print(f"{assignment.id}: {run.stopped}", file=out)
        release = validate(root, assignment.release, invert=True)
        return Row(assignment.id, "-", f"{len(release.failed)}/{total}", run.seconds, run.stopped, False)
    run.notebook.metadata["course"] = {"profile": profile}  # lets `course slides` reuse it
    write_if_changed(executed_dir / assignment.id / assignment.source.name, dumps(run.notebook))
    release = validate(root, assignment.release, invert=True)
    results = read_results(assignment.id) or {}
    headline = results.get("headline", {})
    shown = (
        f"{headline['name']} {headline['value']:.3g}"
        + (f", {headline['detail']}" if headline.get("detail") else "")
        if headline
        else "-"
    )
    good = not run.graded_failures and not run.other_errors and not release.passed
    for grade_id, error in run.graded_failures.items():
        print(f"{assignment.id}: solution fails {grade_id}: {error}", file=out)
    for error in run.other_errors:
        print(f"{assignment.id}: a cell raised {error}", file=out)
    return Row(
        assignment.id,
        f"{total - len(run.graded_failures)}/{total}",
        f"{len(release.failed)}/{total}",
        run.seconds,
        run.first_failure or shown,
        good,
    )
