"""One student's grading, as a visible list of named stages (:data:`STAGES`) run on one
:class:`Grading` record: read the submission, find the answers, check them statically, run them in
the sandbox, compare each probe with the solution's, grade again on corrected exercises (the
cascade), decide. A stage that decides the result early (nothing submitted, an unreadable notebook,
a run that failed) ends it. The batch around it is :mod:`.autograde`.
"""
from __future__ import annotations

import functools
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from course_tools.course import Assignment
from course_tools.notebooks import dumps, nbgrader_meta, read_notebook, write_if_changed
from course_tools.untrusted import Missing, Unreadable, no_links, safe_text

from .compare import ARGUMENTS_AFTER, Mismatch, arguments_contract, compare, error_message
from .copies import pasted_references
from .limits import Budget, Limits
from .lint import Finding, bound_names, lint, module_names
from .probe_report import probe_reports
from .records import FAILED, GRADED, NOT_SUBMITTED, REVIEW, Check, Result
from .reference import Reference, make_plan, redacted_for
from .runs import Run, run_plan
from .sandbox import Sandbox
from .spec import RunSpec
from .submission import Answers, Cell, answers, graded_plan, read_submission, replay_after, source_cells


@dataclass
class Context:
    """Everything the graders of one batch share."""

    assignment: Assignment
    cells: list[Cell]
    reference: Reference
    sandbox: Sandbox
    limits: Limits
    files: dict[str, Path]
    stubs: dict[str, str]
    ids: dict[str, str]
    work: Path
    probe_inputs: Path  # the probes' inputs only (see stage_probe_inputs)
    course_lib: Path  # course_lib without this assignment's references (see redacted_for)
    references: dict[str, str]  # dotted name -> source of each reference it lacks (see copies)
    slots: queue.Queue[int]  # the free sandbox slots: --jobs of them (see _run)
    scrub: Callable[[str], str]  # removes the hidden checks' values from a student's own error text (.scrub)

    def solution_of(self) -> dict[str, str]:
        return {name: c.grade_id for c in self.cells if c.kind == "solution" for name in c.names}

    @functools.cached_property
    def forbidden(self) -> dict[str, set[str]]:
        """Answer cell (grade_id) -> what its exercise forbids: the same for every student of the batch."""
        owner = self.solution_of()
        found: dict[str, set[str]] = {}
        for call in self.reference.calls:
            found.setdefault(owner.get(call["target"], ""), set()).update(call["forbid"])
        return found

    @functools.cached_property
    def modules(self) -> dict[str, str]:
        """The names of modules the instructor's cells import, which answers use (``F``, ``np``)."""
        return {n: d for c in self.cells if c.kind == "other" for n, d in module_names(c.source).items()}

    @functools.cached_property
    def protected(self) -> set[str]:
        """The names the instructor's cells bind, which no answer may rebind: parsed once per batch."""
        return {name for c in self.cells if c.kind == "other" for name in bound_names(c.source)}

    def probes_of(self, cell: Cell) -> list[int]:
        return [k for k in self.reference.replayed() if self.reference.calls[k]["cell"] == cell.grade_id]

    def related(self, plan_size: int, replay: list[int]):
        """Steps not worth running once a step broke the process: the other replays of a function
        that crashed it would only repeat the failure."""
        calls = self.reference.calls
        steps = {plan_size + i: k for i, k in enumerate(replay)}

        def related(step: int) -> list[int]:
            crashed = steps.get(step)
            if crashed is None:
                return []
            return [
                s for s, k in steps.items() if calls[k]["target"] == calls[crashed]["target"] and s != step
            ]
        return related


@dataclass
class Grading:
    """One student's grading as it passes through :data:`STAGES`; a stage that decides the result
    (no submission, an unreadable one, a run that failed) sets ``done``."""

    context: Context
    student: str
    result: Result
    budget: Budget  # one for all of this student's runs
    started: float = field(default_factory=time.monotonic)
    waited: float = 0.0  # seconds queued for a sandbox slot: not this student's own time
    done: bool = False
    raw: dict = field(default_factory=dict)  # the submitted notebook's JSON
    found: Answers | None = None
    findings: list[Finding] = field(default_factory=list)
    run: Run | None = None
    outcomes: dict[int, dict] = field(default_factory=dict)  # probe -> the student's record of it
    mismatches: dict[int, Mismatch | None] = field(default_factory=dict)  # probe -> how it differs
    runs: dict[int, str] = field(default_factory=dict)  # probe -> the cascade run its outcome is from, if any
    spent: str = ""  # the time limit a run broke, if any

    @property
    def workdir(self) -> Path:
        return self.context.work / self.student

    def stop(self, status: str, *reasons: str) -> None:
        self.result.status, self.result.reasons, self.done = status, self.result.reasons + list(reasons), True


def read_the_submission(g: Grading) -> None:
    """The submission folder (never followed through a link) and its notebook, with notes on what
    else the folder holds, its format and the kernel it asks for."""
    assignment = g.context.assignment
    folder = assignment.submitted(g.student)
    try:  # a submission folder that is a link (to solutions/, to a classmate's) is refused, not followed
        no_links(folder, assignment.submitted_root)
    except Missing:
        return g.stop(NOT_SUBMITTED)
    except Unreadable as error:
        return g.stop(FAILED, f"{assignment.submitted_root.name}/{error}")
    if not folder.is_dir():
        return g.stop(NOT_SUBMITTED)
    notebook = folder / assignment.release.name
    ignored = sorted(
        safe_text(p.name, one_line=True) for p in folder.iterdir()
        if p.name not in (notebook.name, "timestamp.txt", "submission_secret.txt"))  # nbgrader's own
    if ignored:
        g.result.notes.append(f"only {notebook.name} was graded; ignored: {', '.join(ignored)}")
    try:
        g.raw = read_submission(notebook, root=folder)
    except Unreadable as error:
        return g.stop(FAILED, str(error))
    if g.raw.get("converted_from"):
        g.result.notes.append(
            f"the notebook was in format {g.raw['converted_from']}; it was converted to format 4")
    kernel = g.raw.get("metadata", {}).get("kernelspec", {}) if isinstance(g.raw.get("metadata"),
                                                                           dict) else {}
    if isinstance(kernel, dict) and kernel.get("name") not in (None, "python3"):
        g.result.notes.append(
            f"the notebook asks for kernel {kernel.get('name')!r}; it was graded with Python 3")


def find_the_answers(g: Grading) -> None:
    """The answer cells by grade_id (or cell id), and the references pasted into them."""
    g.found = answers(g.raw, g.context.cells, g.context.ids)
    g.result.notes += g.found.notes
    g.result.reasons += g.found.flags + pasted_references(g.found.code, g.context.references)


def check_statically(g: Grading) -> None:
    """The lint of the answer cells: a way around the grader goes to a person."""
    g.findings = _lint(g.context, g.found)
    g.result.findings = [str(f) for f in g.findings]
    g.result.reasons += [f"{f}: a way around the grader, which no answer needs: a person should look at it"
                         for f in g.findings if f.kind == "tamper"]


def run_in_the_sandbox(g: Grading) -> None:
    """The student's notebook, without test cells, replaying every usable probe."""
    g.run, replayed, g.waited = _run(g.context, g.found, g.workdir, g.context.reference.replayed(), g.budget)
    g.result.reasons += g.run.tampering
    if g.run.failure:
        g.stop(FAILED, g.run.failure)
    g.outcomes, g.spent = dict(replayed), g.run.spent


def compare_the_answers(g: Grading) -> None:
    """Each probe's record against the solution's, outside the sandbox, once per result."""
    g.mismatches = {k: _mismatch(g.context, k, got) for k, got in g.outcomes.items()}


def grade_again_on_corrected_exercises(g: Grading) -> None:
    """The cascade: cells that failed while an exercise they build on failed, run again with those
    exercises bound to course_lib's references, within the student's one time limit."""
    for number, group in enumerate(cascade_groups(g.context, g.mismatches, g.found), 1):
        names = ", ".join(c.grade_id for c in group)
        if g.spent or g.budget.spent():  # the cells keep their first verdict, which a person should check
            g.result.reasons.append(f"{names}: not graded again with the exercises they build on corrected: "
                                    "this student's time limit for all of their runs was spent")
            continue
        rerun, again, queued = _run(g.context, g.found, g.workdir / f"cascade-{number}",
                                    [k for c in group for k in g.context.probes_of(c)], g.budget, bind=True)
        g.waited += queued
        g.spent = g.spent or rerun.spent
        g.result.reasons += rerun.tampering
        if rerun.failure:  # the cells keep their first verdict, which a person should check
            g.result.reasons.append(f"{names}: could not be graded again with the exercises they build on "
                                    f"corrected: {rerun.failure}")
        else:
            g.outcomes.update(again)
            g.runs.update({k: f"cascade run {number} (the exercises it builds on bound to the references)"
                           for k in again})
            g.mismatches.update({k: _mismatch(g.context, k, got) for k, got in again.items()})


def decide(g: Grading) -> None:
    """Each test cell's verdict, the graded notebook for the instructor, the score and the status."""
    g.result.checks = _verdicts(g.context, g.outcomes, g.mismatches, g.findings)
    g.result.probes = probe_reports(g.context.cells, g.context.probes_of, g.context.reference.calls,
                                    g.context.reference.texts, g.outcomes, g.mismatches, g.runs)
    graded_notebook(g.context.assignment.source, g.found, g.context.stubs, g.result.checks,
                    g.workdir / g.context.assignment.release.name)
    if g.spent:
        g.result.reasons.append(f"the grading {g.spent}")
    g.result.reasons += [f"{c.grade_id}: {c.message}" for c in g.result.checks if c.status == "review"]
    g.result.score = sum(c.score for c in g.result.checks)
    g.result.status = REVIEW if g.result.reasons else GRADED


# One student's grading, stage by stage; the batch saves each result (:func:`save`).
STAGES = (read_the_submission, find_the_answers, check_statically, run_in_the_sandbox, compare_the_answers,
          grade_again_on_corrected_exercises, decide)


def grade_student(context: Context, student: str) -> Result:
    max_score = sum(c.points for c in context.cells if c.kind == "test")
    g = Grading(context, student, Result(student, context.assignment.id, GRADED, None, max_score),
                Budget(context.limits.student_s))
    for stage in STAGES:
        stage(g)
        if g.done:
            break
    # this student's own time, without queueing for a slot; the run's log for the record
    if g.run is not None:
        g.result.seconds = time.monotonic() - g.started - g.waited
        (g.workdir / "log.tail").write_text(g.run.log, encoding="utf-8")
    return g.result


def _run(context: Context, found: Answers, workdir: Path, replay: list[int], budget: Budget,
         bind: bool = False) -> tuple[Run, dict[int, dict], float]:
    """One sandboxed run of the student's notebook (no test cells) replaying ``replay``: the run, each
    probe's record as the runner wrote it (or the reason it has none), and the seconds it waited for
    a sandbox slot. ``budget``: the student's time for all their runs. ``bind``: the dependencies
    each probe's test cell bound to course_lib's references are bound again, and kept in the
    redacted course_lib.
    The run holds a sandbox slot only while its sandbox runs: reading and comparing its records
    leaves the slot to another student's run (with --jobs 1, the grader's comparisons of one
    student overlap the next student's run on the other core)."""
    after = replay_after(context.cells, context.reference.calls, replay)
    # no cell after the last replay can change a result: a cascade of early exercises skips the rest
    cells = graded_plan(context.cells, found, context.stubs)[:max(after.values(), default=-1) + 1]
    keep = {name for k in replay for name in context.reference.calls[k].get("binds", {})} if bind else set()
    plan = make_plan("grade", cells, context.limits, context.cells, context.reference.calls, replay,
                     bind=bind)
    course_lib = redacted_for(context.assignment, context.cells, context.reference.calls, keep) \
        if keep else context.course_lib
    queued = time.monotonic()
    slot = context.slots.get()
    queued = time.monotonic() - queued
    try:
        run = run_plan(context.sandbox, RunSpec.of(
            plan, workdir, {**context.files, "probes.json": context.reference.folder / "probes.json"},
            context.limits, budget, slot=slot, course_lib=course_lib,
            probe_inputs=context.probe_inputs, related=context.related(len(cells), replay)))
    finally:
        context.slots.put(slot)
    records = run.outcomes(len(cells), replay, context.limits)
    return run, records, queued


def cascade_groups(context: Context, mismatches: dict[int, str | None], found: Answers) -> list[list[Cell]]:
    """Test cells to grade again with their dependencies bound to the references: those that failed
    while a graded name their test binds failed its own test, unless what failed is an answer the
    student left as released (a stub fails whatever it builds on). A group never binds a name that
    one of its own cells checks, so its sandbox never holds the reference of what it grades."""
    calls = context.reference.calls
    unanswered = {name for name, grade_id in context.solution_of().items()
                  if found.code.get(grade_id, "").strip() in ("", context.stubs.get(grade_id, "").strip())}
    failed_names = set()
    failed_cells = []
    for cell in (c for c in context.cells if c.kind == "test"):
        bad = [k for k in context.probes_of(cell) if mismatches[k]]
        if bad:
            failed_cells.append((cell, bad))
            failed_names |= {calls[k]["target"] for k in bad}
    groups: list[tuple[list[Cell], set[str], set[str]]] = []  # cells, names they check, names they bind
    for cell, bad in failed_cells:
        binds = {name for k in context.probes_of(cell) for name in calls[k].get("binds", {})}
        if not binds & failed_names or {calls[k]["target"] for k in bad} <= unanswered:
            continue
        checks = {calls[k]["target"] for k in context.probes_of(cell)}
        for members, checked, bound in groups:
            if not (binds & (checked | checks)) and not (bound & checks):
                members.append(cell)
                checked |= checks
                bound |= binds
                break
        else:
            groups.append(([cell], checks, binds))
    return [members for members, _, _ in groups]


def _mismatch(context: Context, k: int, got: dict | None) -> Mismatch | None:
    return compare(context.reference.expected(k), got, tuple(context.reference.calls[k]["tolerance"]))


def graded_notebook(source: Path, found: Answers, stubs: dict[str, str], checks: list[Check],
                    path: Path) -> None:
    """What was graded, for formgrader: the source notebook, the student's answers, each verdict as output."""
    notebook = read_notebook(source)
    verdicts = {c.grade_id: c for c in checks}
    for cell in notebook.cells:
        meta = nbgrader_meta(cell)
        if meta.get("solution"):
            cell.source = found.code.get(meta["grade_id"], stubs.get(meta["grade_id"], cell.source))
        elif meta.get("grade") and meta["grade_id"] in verdicts:
            check = verdicts[meta["grade_id"]]
            text = f"{check.status}: {check.score:g} / {check.points:g}\n{check.message}".rstrip() + "\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    write_if_changed(path, dumps(notebook))


def _lint(context: Context, found: Answers) -> list[Finding]:
    return [f for grade_id, code in found.code.items()
            for f in lint(grade_id, code, context.forbidden.get(grade_id, set()), context.protected,
                          context.modules)]


def _verdicts(context: Context, outcomes: dict[int, dict], mismatches: dict[int, Mismatch | None],
              findings: list[Finding]) -> list[Check]:
    """Each test cell's score, from the grader's own comparison of the student's answers on its probes."""
    owner = context.solution_of()
    reference_use = {f.cell for f in findings if f.kind == "reference"}
    calls = context.reference.calls
    checks = []
    for cell in (c for c in context.cells if c.kind == "test"):
        probes = context.probes_of(cell)
        if not probes:
            checks.append(
                Check(
                    cell.grade_id, cell.points, 0.0, "review", "the grader cannot re-check this test "
                    "on its own (its calls depend on randomness or cannot be replayed): a person "
                    "will score it", False))
            continue
        failure = None
        for number, k in enumerate(probes, 1):
            mismatch = mismatches[k]
            if mismatch:
                failure = _message(calls[k], number, len(probes), mismatch, outcomes.get(k), context.scrub)
                break
        called = {owner.get(calls[k]["target"]) for k in probes}
        if failure:
            checks.append(Check(cell.grade_id, cell.points, 0.0, "failed", failure, True))
        elif called & reference_use:
            checks.append(Check(cell.grade_id, cell.points, cell.points, "review", "passed, but your answer "
                                "uses what this exercise forbids", True))
        else:
            checks.append(Check(cell.grade_id, cell.points, cell.points, "passed", "", True))
    return checks


def _message(call: dict, number: int, total: int, mismatch: Mismatch, got: dict | None,
             scrub: Callable[[str], str]) -> str:
    """What the student reads about a failed check. A hidden check names the check and the kind of
    difference only: its code and inputs stay with the grader, and so do its expected values and
    the student's own values on its inputs. A visible check may show values, and the student's own
    error message (scrubbed of anything that could be a hidden check's value: :mod:`.scrub`)."""
    what = call["target"] + (f".{call['method']}" if call.get("method") and call["kind"] == "method" else "")
    contract = f" ({arguments_contract(call)})" if mismatch.where == ARGUMENTS_AFTER else ""
    if call.get("segment") == "hidden":
        return f"hidden check {number} of {total} ({what}): {mismatch.hidden()}{contract}"
    detail = (
        f"\n{scrub(error_message(got))}"
        if isinstance(got, dict) and "error" in got and not got.get("by_grader")
        else ""
    )
    return f"check {number} of {total} ({what}): {mismatch}{contract}{detail}"


def test_cells(assignment: Assignment) -> list[Cell]:
    return [c for c in source_cells(assignment.source) if c.kind == "test"]
