"""``course autograde``: grade every submission in its own sandbox; credit only what the grader re-checked.

Per assignment, once (cached under ``build/autograde/``): the solution runs in the sandbox and its
graded test cells' calls are recorded as probes (:mod:`.sandboxed.probes`), then replayed on the solution to
keep only the probes that reproduce exactly and do not depend on the random state (:mod:`.reference`).

Per student, each in a sandbox of its own (:mod:`.sandbox`), several at a time with ``--jobs``: the
source notebook's cells run with the student's answer code but without any test cell, on a
course_lib whose references of this assignment are stubbed out (:mod:`.redacted`), then the probes
replay on the student's definitions. Each run is forked from the slot's zygote (:mod:`.sandboxed.zygote`),
which imported torch once for the batch, instead of a new Python importing it again. Credit is
decided here, outside the student's reach: a test cell scores its points when the student's answers
on every one of its probes match the solution's (:func:`.compare.compare`, at the cell's own
tolerance). No probe's input is in the sandbox before its check starts (:class:`.channel.ProbeServer`),
and what the checks' exercises forbid is blocked whenever the student's code runs. A failed hidden
check says only what kind of difference it found; a visible one may show values, and the student's
own error text scrubbed of the hidden checks' values (:mod:`.scrub`). One bug costs one exercise: a cell that
fails
while an exercise it builds on failed too is re-run in a sandbox of its own in which those
exercises are course_lib's references, as the test cell binds them in the notebook (not when the
answer that failed is the released stub: a stub fails whatever it builds on). All of one student's
runs together have one time limit (:class:`.limits.Budget`). A cell the grader cannot re-check,
an answer that uses what its exercise forbids, and an answer cell in which the lint finds a way
around the grader (:mod:`.lint`) go to a person.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import queue
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Iterable, Iterator, TextIO

from course_tools.course import Assignment, CourseError, assignments
from course_tools.untrusted import Missing, Unreadable, no_links, read_bytes, safe_text, text_table

from . import gradebook
from .limits import Limits
from .records import FAILED, GRADED, NOT_SUBMITTED, REVIEW, BadRecord, Result, read_record, write_record
from .redacted import reference_sources
from .reference import Reference, build_references, grader_key, redacted_for, reference_name, references_of
from .runs import link_or_copy
from .sandbox import Sandbox
from .scrub import LazyScrubber, probe_input
from .student import Context, grade_student, test_cells
from .submission import MAX_NOTEBOOK_BYTES, Cell, cell_ids, release_stubs, source_cells
from .variants import variant_count, variant_key, variant_of


def _slots(jobs: int) -> queue.Queue[int]:
    free: queue.Queue[int] = queue.Queue()
    for slot in range(jobs):
        free.put(slot)
    return free


def stage_probe_inputs(reference: Reference, work: Path) -> Path:
    """The probes' inputs without the solution's results: what the grader hands each student's run,
    one check at a time (:class:`.channel.ProbeServer`)."""
    staged = work / f".probe-inputs-{reference.variant}"  # no student id starts with a dot
    staged.mkdir(parents=True)
    for path in (reference.folder / "probes").glob("*.pkl"):
        link_or_copy(str(path), str(staged / path.name))  # a link: hundreds of files per variant
    return staged


def hidden_values(reference: Reference) -> tuple[list, list]:
    """What the student's own error text must never show: the inputs and results of the hidden
    checks; and the values of the visible ones, which may stay (:class:`.scrub.Scrubber`)."""
    folder = reference.folder / "probes"
    sides: dict[bool, list] = {True: [], False: []}
    for k in reference.replayed():
        sides[reference.calls[k].get("segment") == "hidden"].extend(
            [*probe_input(folder, k), reference.expected(k)])
    return sides[True], sides[False]


SWITCH_S = 0.0005


@contextlib.contextmanager
def _answering_quickly() -> Iterator[None]:
    """Each check waits for its input from a probe server's thread while this one compares results:
    the interpreter changes threads every ``SWITCH_S`` instead of Python's 5 ms, so that a check does
    not wait behind a whole slice of the comparisons."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_S)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@contextlib.contextmanager
def batch(assignment: Assignment, cells: list[Cell], limits: Limits, *, jobs: int = 1,
          isolated: bool = True, variants: Iterable[int] = (0,), key: str | None = None
          ) -> Iterator[dict[int, Context]]:
    """What the graders of one batch share (:class:`Context`), per variant of the hidden inputs in
    ``variants``: the sandbox with ``jobs`` slots (one for all), that variant's solution probes, the
    redacted course_lib; the sandbox and its working folder go at the end. ``key``: the grader's
    (:func:`.reference.grader_key`), when the caller has it already."""
    sandbox = Sandbox(isolated)
    if sandbox.warning:
        print(f"course: {sandbox.warning}", file=sys.stderr)
    files = {"files": assignment.release.parent} if assignment.release.parent.is_dir() else {}
    with sandbox, _answering_quickly():
        work = Path(tempfile.mkdtemp(prefix="autograde-", dir=sandbox.scratch))
        slots = _slots(jobs)
        contexts = {}
        references = build_references(assignment, cells, sandbox, limits, files, variants, key)
        stubs, ids = release_stubs(assignment.release), cell_ids(assignment.source)  # once: every variant's
        for variant, reference in references.items():
            contexts[variant] = Context(
                assignment, cells, reference, sandbox, limits, files, stubs, ids, work,
                stage_probe_inputs(reference, work), redacted_for(assignment, cells, reference.calls),
                reference_sources(references_of(cells, reference.calls)), slots,
                LazyScrubber(functools.partial(hidden_values, reference)))
        yield contexts


def autograde(root: Path, assignment_id: str, students: list[str] | None = None, *, jobs: int = 1,
              limits: Limits | None = None, isolated: bool = True, out: TextIO | None = None,
              progress: bool = True, regrade: bool = False) -> list[Result]:
    """Grade ``submitted/<student>/<assignment>/`` for every (or each named) student; write the gradebook.

    Each student is saved as soon as they are graded, so an interrupted batch loses nothing. Run
    again over the whole class, it keeps every student whose submission and grader are those of
    their saved grade (``Result.kept``) and grades the rest; ``regrade`` (or naming students) grades
    them all.
    """
    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    limits = limits or limits_for(root)
    cells = source_cells(assignment.source)
    if not any(c.kind == "test" for c in cells):
        raise CourseError(f"{assignment.source}: no graded test cells")
    names = students or assignment.submitted_students()
    url = gradebook.db_url(root)
    saved = gradebook.backup(root, url)
    print(
        f"gradebook backed up to {saved.relative_to(root)}"
        if saved else "gradebook: none yet, nothing to back up", file=out)
    gradebook.ensure_cells(url, assignment, cells)
    results = []
    count = variant_count(root)
    # before grading, so a later change regrades; the student's id is the folder the collector named
    # from what the exchange or the LMS vouches for
    digests = {name: submission_digest(root, assignment, name) for name in names}
    secret = variant_key(root)
    variant = {name: variant_of(assignment.id, name, digests[name], count, secret) for name in names}
    key = grader_key(cells)
    if not regrade and students is None:  # a rerun (after an interruption) grades only what is new
        in_gradebook = set(gradebook.scores(url, assignment.id))
        results = [kept for name in names if (kept := unchanged(
            root, assignment, name, reference_name(key, variant[name]), in_gradebook))]
        names = [name for name in names if name not in {r.student for r in results}]
    # the references (and a sandbox) only of the variants someone is graded on: none when every
    # grade stands; with no submission at all, variant 0's, which checks that the solution passes
    graded_variants = {variant[name] for name in names} or ({0} if not results else set())
    if graded_variants:
        with batch(assignment, cells, limits, jobs=jobs, isolated=isolated, variants=graded_variants,
                   key=key) as contexts:
            results += grade_all(root, url, assignment, names, contexts, variant, digests, count, jobs,
                                 progress)
    results.sort(key=lambda r: r.student)
    print(summary(results), file=out)
    return results


def grade_all(root: Path, url: str, assignment: Assignment, names: list[str], contexts: dict[int, Context],
              variant: dict[str, int], digests: dict[str, str | None], count: int, jobs: int,
              progress: bool) -> list[Result]:
    """Each of ``names`` graded on the context of their variant, and saved as soon as graded."""
    from tqdm.auto import tqdm

    results = []

    def graded(student: str) -> Result:
        context = contexts[variant[student]]
        try:
            result = grade_student(context, student)
        # a grader bug must not stop the batch: this student fails, with the reason
        except Exception as error:
            result = Result(student, assignment.id, FAILED, None, 0.0,
                            reasons=[f"{GRADER_ERROR}: {error!r}"])
        result.submission, result.grader = digests[student] or "", context.reference.folder.name
        result.variant, result.variants = variant[student], count
        return result

    # One thread more than sandboxes: while ``jobs`` students run, another's results are compared.
    with ThreadPoolExecutor(max_workers=jobs + 1) as pool, \
            tqdm(total=len(names), unit="student", disable=not progress, file=sys.stderr) as bar:
        for future in as_completed([pool.submit(graded, name) for name in names]):
            result = future.result()
            try:
                save(root, url, assignment, result, contexts[variant[result.student]].work)
            except Exception as error:  # e.g. a locked database: report it, keep grading the others
                result.status, result.reasons = FAILED, result.reasons + [f"{NOT_SAVED}: {error!r}"]
            results.append(result)
            bar.update()
    return results


def limits_for(root: Path, cell_s: float | None = None, **overrides) -> Limits:
    """Default limits, the per-cell time from ``Execute.timeout`` in nbgrader_config.py unless given."""
    from course_tools.course import nbgrader_config

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
    timestamp = _timestamp(assignment.submitted(result.student) / "timestamp.txt", assignment.submitted_root)
    review = {c.grade_id for c in result.checks if c.status == "review"}
    scores = {c.grade_id: (c.score if result.status != FAILED else None) for c in result.checks}
    if result.status == FAILED:
        scores = {c.grade_id: None for c in test_cells(assignment)}
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
        no_links(folder, assignment.submitted_root)
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
