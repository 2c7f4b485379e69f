"""``course autograde``: grade every submission in its own sandbox; credit only what the grader re-checked.

Per assignment, once (cached under ``build/autograde/``): the solution runs in the sandbox and its
graded test cells' calls are recorded as probes (:mod:`.probes`), then replayed on the solution to
keep only the probes that reproduce exactly and do not depend on the random state (:mod:`.reference`).

Per student, each in a sandbox of its own (:mod:`.sandbox`), several at a time with ``--jobs``: the
source notebook's cells run with the student's answer code but without any test cell, on a
course_lib whose references of this assignment are stubbed out (:mod:`.redacted`), then the probes
replay on the student's definitions. Each run is forked from the slot's zygote (:mod:`.zygote`),
which imported torch once for the batch, instead of a new Python importing it again. Credit is
decided here, outside the student's reach: a test cell scores its points when the student's answers
on every one of its probes match the solution's (:func:`.plain.compare`, at the cell's own
tolerance). No probe's input is in the sandbox before its check starts (:class:`.runs.ProbeServer`),
and what the checks' exercises forbid is blocked whenever the student's code runs. A failed hidden
check says only what kind of difference it found; a visible one may show values, and the student's
own error text scrubbed of the hidden checks' values (:mod:`.scrub`). One bug costs one exercise: a cell that fails
while an exercise it builds on failed too is re-run in a sandbox of its own in which those
exercises are course_lib's references, as the test cell binds them in the notebook (not when the
answer that failed is the released stub: a stub fails whatever it builds on). All of one student's
runs together have one time limit (:class:`.sandbox.Budget`). A cell the grader cannot re-check,
an answer that uses what its exercise forbids, and an answer cell in which the lint finds a way
around the grader (:mod:`.lint`) go to a person.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import queue
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, TextIO

import nbformat

from . import gradebook
from .copies import pasted_references
from .course import SUBMITTED, Assignment, CourseError, assignments
from .lint import Finding, bound_names, lint
from .notebooks import dumps, nbgrader_meta, read_notebook, write_if_changed
from .plain import Mismatch, compare, error_message
from .probe_report import ProbeTexts, call_inputs, probe_reports, returned
from .redacted import reference_sources
from .reference import Reference, build_reference, load_result, make_plan, redacted_for, references_of
from .runs import Run, run_plan
from .sandbox import Budget, Limits, Sandbox, describe_exit
from .scrub import Scrubber, probe_values
from .submission import (MAX_NOTEBOOK_BYTES, Answers, Cell, Unreadable, answers, cell_ids, graded_plan,
                         read_submission, release_stubs, replay_after, source_cells)
from .untrusted import Missing, no_links, read_bytes, safe_text, text_table
from .records import FAILED, GRADED, NOT_SUBMITTED, REVIEW, BadRecord, Check, Result, read_record, write_record


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
    scrub: Scrubber  # removes the hidden checks' values from a student's own error text
    explained: ProbeTexts  # each probe's inputs and the solution's result, as `course explain` shows them

    def solution_of(self) -> dict[str, str]:
        return {name: c.grade_id for c in self.cells if c.kind == "solution" for name in c.names}

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
            return [s for s, k in steps.items() if calls[k]["target"] == calls[crashed]["target"] and s != step]
        return related


def _slots(jobs: int) -> queue.Queue[int]:
    free: queue.Queue[int] = queue.Queue()
    for slot in range(jobs):
        free.put(slot)
    return free


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
        no_links(folder, assignment.root / SUBMITTED)
    except Missing:
        return g.stop(NOT_SUBMITTED)
    except Unreadable as error:
        return g.stop(FAILED, f"{SUBMITTED}/{error}")
    if not folder.is_dir():
        return g.stop(NOT_SUBMITTED)
    notebook = folder / assignment.release.name
    ignored = sorted(safe_text(p.name, one_line=True) for p in folder.iterdir()
                     if p.name not in (notebook.name, "timestamp.txt", "submission_secret.txt"))  # nbgrader's own
    if ignored:
        g.result.notes.append(f"only {notebook.name} was graded; ignored: {', '.join(ignored)}")
    try:
        g.raw = read_submission(notebook, root=folder)
    except Unreadable as error:
        return g.stop(FAILED, str(error))
    if g.raw.get("converted_from"):
        g.result.notes.append(f"the notebook was in format {g.raw['converted_from']}; it was converted to format 4")
    kernel = g.raw.get("metadata", {}).get("kernelspec", {}) if isinstance(g.raw.get("metadata"), dict) else {}
    if isinstance(kernel, dict) and kernel.get("name") not in (None, "python3"):
        g.result.notes.append(f"the notebook asks for kernel {kernel.get('name')!r}; it was graded with Python 3")


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
                                    g.context.explained, g.outcomes, g.mismatches, g.runs)
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
    if g.run is not None:  # this student's own time, without queueing for a slot; the run's log for the record
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
    plan = make_plan("grade", cells, context.limits, context.cells, context.reference.calls, replay, bind=bind)
    course_lib = redacted_for(context.assignment, context.cells, context.reference.calls, keep) \
        if keep else context.course_lib
    queued = time.monotonic()
    slot = context.slots.get()
    queued = time.monotonic() - queued
    try:
        run = run_plan(context.sandbox, workdir, plan, {**context.files,
                                                        "probes.json": context.reference.folder / "probes.json"},
                       context.limits, slot, related=context.related(len(cells), replay), course_lib=course_lib,
                       warm=True, budget=budget, probe_inputs=context.probe_inputs)
    finally:
        context.slots.put(slot)
    records = {}
    for i, k in enumerate(replay):
        step = len(cells) + i
        event = run.steps.get(step, {})
        if step in run.skipped:  # the grader's own words: a limit the step broke, or the notebook stopped
            records[k] = {"error": run.skipped[step], "by_grader": True}
        elif isinstance(event.get("exit"), int):  # the check's own process ended (a crash, os._exit)
            records[k] = {"error": f"not run: {describe_exit(event['exit'], context.limits)}", "by_grader": True}
        elif event.get("ok"):
            records[k] = load_result(run.outbox / "replay" / f"{k}.pt")
        elif event:
            records[k] = {"error": str(event.get("error") or "an exception")[:500]}
        else:
            records[k] = {"error": "not run: the notebook stopped before it", "by_grader": True}
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


def graded_notebook(source: Path, found: Answers, stubs: dict[str, str], checks: list[Check], path: Path) -> None:
    """What was graded, for the instructor (formgrader opens it): the source notebook with the
    student's answer code, and each graded cell's verdict as its output."""
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


def stage_probe_inputs(reference: Reference, work: Path) -> Path:
    """The probes' inputs without the solution's results: what the grader hands each student's run,
    one check at a time (:class:`.runs.ProbeServer`)."""
    staged = work / "_probe_inputs"
    staged.mkdir(parents=True)
    for path in (reference.folder / "probes").glob("*.pkl"):
        shutil.copy(path, staged / path.name)
    return staged


def probe_texts(reference: Reference) -> ProbeTexts:
    """Each replayed probe's inputs and the solution's result as short text, once per batch."""
    folder = reference.folder / "probes"
    replayed = reference.replayed()
    return ProbeTexts({k: call_inputs(folder, k) for k in replayed},
                      {k: returned(reference.expected(k)) for k in replayed})


def hidden_values(reference: Reference) -> Scrubber:
    """What the student's own error text must never show: the inputs and results of the hidden
    checks (the values of the visible ones may stay)."""
    folder = reference.folder / "probes"
    sides: dict[bool, list] = {True: [], False: []}
    for k in reference.replayed():
        sides[reference.calls[k].get("segment") == "hidden"].extend(probe_values(folder, k))
    return Scrubber(sides[True], sides[False])


def _lint(context: Context, found: Answers) -> list[Finding]:
    owner = context.solution_of()
    forbidden: dict[str, set[str]] = {}
    for call in context.reference.calls:
        forbidden.setdefault(owner.get(call["target"], ""), set()).update(call["forbid"])
    protected = {name for c in context.cells if c.kind == "other" for name in bound_names(c.source)}
    return [f for grade_id, code in found.code.items()
            for f in lint(grade_id, code, forbidden.get(grade_id, set()), protected)]


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
            checks.append(Check(cell.grade_id, cell.points, 0.0, "review", "the grader cannot re-check this test "
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


def _message(call: dict, number: int, total: int, mismatch: Mismatch, got: dict | None, scrub: Scrubber) -> str:
    """What the student reads about a failed check. A hidden check names the check and the kind of
    difference only: its code and inputs stay with the grader, and so do its expected values and
    the student's own values on its inputs. A visible check may show values, and the student's own
    error message (scrubbed of anything that could be a hidden check's value: :mod:`.scrub`)."""
    what = call["target"] + (f".{call['method']}" if call.get("method") and call["kind"] == "method" else "")
    if call.get("segment") == "hidden":
        return f"hidden check {number} of {total} ({what}): {mismatch.hidden()}"
    detail = f"\n{scrub(error_message(got))}" if isinstance(got, dict) and "error" in got and not got.get("by_grader") \
        else ""
    return f"check {number} of {total} ({what}): {mismatch}{detail}"


@contextlib.contextmanager
def batch(assignment: Assignment, cells: list[Cell], limits: Limits, *, jobs: int = 1,
          isolated: bool = True) -> Iterator[Context]:
    """What the graders of one batch share (:class:`Context`): the sandbox with ``jobs`` slots, the
    solution's probes, the redacted course_lib; the sandbox and its working folder go at the end."""
    sandbox = Sandbox(isolated)
    if sandbox.warning:
        print(f"course: {sandbox.warning}", file=sys.stderr)
    files = {"files": assignment.release.parent} if assignment.release.parent.is_dir() else {}
    with sandbox:
        work = Path(tempfile.mkdtemp(prefix="autograde-", dir=sandbox.scratch))
        reference = build_reference(assignment, cells, sandbox, limits, files)
        yield Context(assignment, cells, reference, sandbox, limits, files, release_stubs(assignment.release),
                      cell_ids(assignment.source), work, stage_probe_inputs(reference, work),
                      redacted_for(assignment, cells, reference.calls),
                      reference_sources(references_of(cells, reference.calls)), _slots(jobs), hidden_values(reference),
                      probe_texts(reference))


def autograde(root: Path, assignment_id: str, students: list[str] | None = None, *, jobs: int = 1,
              limits: Limits | None = None, isolated: bool = True, out: TextIO | None = None,
              progress: bool = True, regrade: bool = False) -> list[Result]:
    """Grade ``submitted/<student>/<assignment>/`` for every (or each named) student; write the gradebook.

    Each student is saved as soon as they are graded, so an interrupted batch loses nothing. Run
    again over the whole class, it keeps every student whose submission and grader are those of
    their saved grade (``Result.kept``) and grades the rest; ``regrade`` (or naming students) grades
    them all.
    """
    from tqdm.auto import tqdm

    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    limits = limits or limits_for(root)
    cells = source_cells(assignment.source)
    if not any(c.kind == "test" for c in cells):
        raise CourseError(f"{assignment.source}: no graded test cells")
    names = students or sorted(p.parent.name for p in (root / SUBMITTED).glob(f"*/{assignment.id}") if p.is_dir())
    url = gradebook.db_url(root)
    saved = gradebook.backup(root, url)
    print(f"gradebook backed up to {saved.relative_to(root)}" if saved else "gradebook: none yet, nothing to back up",
          file=out)
    gradebook.ensure_cells(url, assignment, cells)
    results = []
    with batch(assignment, cells, limits, jobs=jobs, isolated=isolated) as context:
        reference = context.reference
        if not regrade and students is None:  # a rerun (after an interruption) grades only what is new
            in_gradebook = set(gradebook.scores(url, assignment.id))
            results = [kept for name in names
                       if (kept := unchanged(root, assignment, name, reference.folder.name, in_gradebook))]
            names = [name for name in names if name not in {r.student for r in results}]

        def graded(student: str) -> Result:
            digest = submission_digest(root, assignment, student)  # before grading: a later change regrades
            try:
                result = grade_student(context, student)
            except Exception as error:  # a grader bug must not stop the batch: this student fails, with the reason
                result = Result(student, assignment.id, FAILED, None, 0.0, reasons=[f"{GRADER_ERROR}: {error!r}"])
            result.submission, result.grader = digest or "", reference.folder.name
            return result

        # One thread more than sandboxes: while ``jobs`` students run, another's results are compared.
        with ThreadPoolExecutor(max_workers=jobs + 1) as pool, \
                tqdm(total=len(names), unit="student", disable=not progress, file=sys.stderr) as bar:
            for future in as_completed([pool.submit(graded, name) for name in names]):
                result = future.result()
                try:
                    save(root, url, assignment, result, context.work)
                except Exception as error:  # e.g. a locked database: report it, keep grading the others
                    result.status, result.reasons = FAILED, result.reasons + [f"{NOT_SAVED}: {error!r}"]
                results.append(result)
                bar.update()
    results.sort(key=lambda r: r.student)
    print(summary(results), file=out)
    return results


def limits_for(root: Path, cell_s: float | None = None, **overrides) -> Limits:
    """Default limits, the per-cell time from ``Execute.timeout`` in nbgrader_config.py unless given."""
    from .course import nbgrader_config

    if cell_s is None:
        cell_s = float(nbgrader_config(root).Execute.get("timeout", 120) or 120)
    return dataclasses.replace(Limits(), cell_s=cell_s, **overrides)


def save(root: Path, url: str, assignment: Assignment, result: Result, work: Path) -> None:
    """The student's record, graded notebook and log under ``autograded/``, their grades in the gradebook."""
    if result.status == NOT_SUBMITTED:
        return
    folder = assignment.autograded(result.student)
    folder.mkdir(parents=True, exist_ok=True)
    graded = work / result.student / assignment.release.name
    if graded.is_file():
        shutil.copy(graded, folder / graded.name)
    log = work / result.student / "log.tail"
    if log.is_file():
        shutil.copy(log, folder / "grading.log")
    timestamp = _timestamp(assignment.submitted(result.student) / "timestamp.txt", root / SUBMITTED)
    review = {c.grade_id for c in result.checks if c.status == "review"}
    scores = {c.grade_id: (c.score if result.status != FAILED else None) for c in result.checks}
    if result.status == FAILED:
        scores = {c.grade_id: None for c in _test_cells(assignment)}
    gradebook.save(url, assignment.id, assignment.release.stem, result.student, scores, review, timestamp)
    write_record(folder, result)  # the record last: a record says its grades are in the gradebook
    shutil.rmtree(work / result.student, ignore_errors=True)


GRADER_ERROR = "grader error"
NOT_SAVED = "not saved to the gradebook"


def submission_digest(root: Path, assignment: Assignment, student: str) -> str | None:
    """sha256 of what grading reads from a submission (the notebook and timestamp.txt); None when
    there is no submission or it cannot be read (it is graded, and fails with the reason)."""
    folder = assignment.submitted(student)
    digest = hashlib.sha256()
    try:
        no_links(folder, root / SUBMITTED)
        for name, limit in ((assignment.release.name, MAX_NOTEBOOK_BYTES), ("timestamp.txt", 256)):
            try:
                digest.update(name.encode() + b"\0" + read_bytes(folder / name, limit, root=folder) + b"\0")
            except Missing:
                digest.update(name.encode() + b"\0(none)\0")
    except Unreadable:  # Missing included: no folder
        return None
    return digest.hexdigest()


def unchanged(root: Path, assignment: Assignment, student: str, grader: str, in_gradebook: set[str]
              ) -> Result | None:
    """The saved result of ``student`` when it still stands: the same submission graded by the same
    grader, saved whole, with the gradebook holding its grades and no grader trouble in its reasons."""
    try:
        result = read_record(assignment, student)
    except BadRecord:  # not one this version wrote: graded again
        return None
    if result is None or result.grader != grader or not result.submission or \
            result.submission != submission_digest(root, assignment, student) or \
            any(reason.startswith(GRADER_ERROR) or NOT_SAVED in reason for reason in result.reasons):
        return None
    if student not in in_gradebook:
        return None
    result.kept, result.seconds = True, 0.0
    return result


def _timestamp(path: Path, root: Path) -> str | None:
    """nbgrader's submission time, when the file holds one (the student could have written anything:
    a link, a FIFO, a sparse 3 GiB file; :func:`.untrusted.read_bytes` refuses each without blocking)."""
    from nbgrader.utils import parse_utc

    try:
        text = read_bytes(path, 256, root=root).decode("utf-8").strip()[:64]
        parse_utc(text)
        return safe_text(text, one_line=True)
    except Exception:  # missing, unreadable or not a date: the submission is graded without a time
        return None


def _test_cells(assignment: Assignment) -> list[Cell]:
    return [c for c in source_cells(assignment.source) if c.kind == "test"]


def summary(results: list[Result]) -> str:
    """The batch as a table; every text on one line, without what a terminal would run or could not encode."""
    rows = [("student", "score", "status", "seconds", "why")]
    for r in results:
        score = "-" if r.score is None else f"{r.score:g}/{r.max_score:g}"
        why = "; ".join(r.reasons) if r.reasons else ("; ".join(r.notes) if r.status == GRADED else "")
        rows.append((safe_text(r.student, one_line=True), score, safe_text(r.status, one_line=True),
                     "kept" if r.kept else f"{r.seconds:.1f}", safe_text(why, one_line=True)[:100]))
    lines = text_table(rows, rule=True)
    counts = {s: sum(r.status == s for r in results) for s in (GRADED, REVIEW, FAILED, NOT_SUBMITTED)}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no submissions")
    if kept := sum(r.kept for r in results):
        lines.append(f"{kept} unchanged since their last grading: grades kept (--regrade grades them again)")
    return "\n".join(line.rstrip() for line in lines)


def needs_attention(results: list[Result]) -> bool:
    return any(r.status in (REVIEW, FAILED) for r in results)
