"""The solution's probes for one assignment: recorded once, kept when they replay exactly.

The solution runs in the sandbox twice: once recording every call its graded test cells make
(:class:`.probes.Recorder`), once as a student's notebook runs (no test cells, the redacted
course_lib) replaying those calls on the solution itself, each a second time from another random
state. A probe is used for grading only when its replay reproduces the recorded result and does not
depend on the random state; the others are listed with the reason.
One record run draws every variant's hidden inputs (:mod:`.sandboxed.hidden_parts`); each variant's
probes are cached under ``build/autograde/<assignment>/`` per source notebook, grader and variant.
"""
from __future__ import annotations

import ast
import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import torch

from course_tools.course import Assignment, CourseError
from course_tools.grading.sandboxed.protocol import PERTURBED, Plan
from course_lib.pyparse import parse

from .compare import compare, error_message
from .limits import Limits
from .probe_report import ProbeTexts, probe_texts
from .redacted import redacted_course_lib
from .runs import Run, run_plan
from .seccomp import students_program
from .sandbox import Sandbox
from .spec import RunSpec
from .submission import Answers, Cell, graded_plan, release_stubs, replay_after
from .variants import variant_probes


@dataclass
class Reference:
    # probes/<k>.pkl (inputs), probes/<k>.expected.pt (results), probes.json, usable.json, texts.json
    folder: Path
    calls: list[dict]
    usable: dict[int, str]  # probe -> "" when the grader replays it, else why it cannot
    texts: ProbeTexts  # each replayed probe's inputs and result as short text, for `course explain`
    variant: int = 0  # whose hidden inputs: 0 the notebook's own, another drawn from other seeds (.variants)
    loaded: dict[int, dict] = field(default_factory=dict, repr=False)  # expected results read so far

    def replayed(self) -> list[int]:
        return [k for k, why in self.usable.items() if not why]

    def expected(self, k: int) -> dict:
        """The solution's result of probe ``k``, read once per batch (every student is compared with it)."""
        if k not in self.loaded:
            self.loaded[k] = torch.load(self.folder / "probes" / f"{k}.expected.pt", weights_only=True)
        return self.loaded[k]


SOURCES = Path(__file__).resolve().parents[2]  # the folder holding course_lib/ and course_tools/
TEACHING, TOOLING = "course_lib", "course_tools"
# The grader and the modules that run in the sandbox: of the tooling, a grade depends only on what
# these import, so that editing the publishing or class tooling (slides, lms, similarity, hub, ...)
# keeps every saved grade and a rerun resumes instead of grading the whole class again.
GRADING_ENTRY_POINTS = ("course_tools.grading.autograde", "course_tools.grading.sandboxed.runner",
                        "course_tools.grading.sandboxed.zygote")


def grading_sources(root: Path) -> list[Path]:
    """The files under ``root`` (the folder holding both packages) that a grade depends on: every
    module of course_lib, and of course_tools the modules :data:`GRADING_ENTRY_POINTS` import, directly
    or not, with their packages' ``__init__.py`` (read from their ``import`` statements, so a new
    module is counted as soon as the grader uses it)."""
    graded, todo = set(), list(GRADING_ENTRY_POINTS)
    while todo:
        name = todo.pop()
        path = _module_file(root, name)
        if name in graded or path is None:
            continue
        graded.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # the packages it runs on import
        todo += _tooling_imports(parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py")
    return sorted([*(root / TEACHING).rglob("*.py"), *(_module_file(root, name) for name in graded)])


def _module_file(root: Path, name: str) -> Path | None:
    """The file of the tooling module ``name`` under ``root`` (None for another package's, or none)."""
    if name.split(".")[0] != TOOLING:
        return None
    base = root.joinpath(*name.split("."))
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


def _tooling_imports(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """The tooling modules that module ``module`` imports (relative imports resolved): a name imported
    from a package may be a module of it, so both are listed (:func:`_module_file` drops the others)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            found += [source, *(f"{source}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name.split(".")[0] == TOOLING]


def grader_key(cells: list[Cell], root: Path | None = None) -> str:
    """What a reference and the grades against it depend on: the assignment's cells, the files of
    :func:`grading_sources` (under :data:`SOURCES` by default) and torch's version."""
    root = root or SOURCES
    digest = hashlib.sha256(json.dumps([c.as_plan() for c in cells]).encode())
    for path in grading_sources(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    digest.update(torch.__version__.encode())
    return digest.hexdigest()[:16]


def graded_names(cells: list[Cell]) -> set[str]:
    return {name for c in cells if c.kind == "solution" for name in c.names}


def redacted_for(assignment: Assignment, cells: list[Cell], calls: list[dict],
                 keep: set[str] = frozenset()) -> Path:
    """course_lib without the answers of this assignment: the references named like its graded
    names, and the course_lib definitions its test cells forbid (the class of a forbidden method),
    except the graded names in ``keep`` and the references the tests bind for those."""
    kept_references = {
        dotted
        for call in calls
        for name, dotted in call.get("binds", {}).items() if name in keep
    }
    names = references_of(cells, calls, keep) - kept_references
    folder, _ = redacted_course_lib(names, assignment.root / "build" / "autograde" / "course_lib")
    return folder


def references_of(cells: list[Cell], calls: list[dict], keep: set[str] = frozenset()) -> set[str]:
    """The answers course_lib holds for this assignment: its graded names (bare: wherever defined),
    and the course_lib definitions its test cells forbid (dotted; the class of a forbidden method)."""
    forbidden = {".".join(dotted.split(".")[:3]) for call in calls for dotted in call["forbid"]
                 if dotted.startswith("course_lib.")}
    return (graded_names(cells) - set(keep)) | forbidden


def build_references(assignment: Assignment, cells: list[Cell], sandbox: Sandbox, limits: Limits,
                     files: dict[str, Path], variants: Iterable[int] = (0,), key: str | None = None
                     ) -> dict[int, Reference]:
    """Each variant's reference: the solution's probes that replay exactly, read from its cache or
    recorded (with every other variant not cached yet) in one record run.

    The record run is the solution notebook with its test cells and the full course_lib (the tests
    compute what they expect with it); each test cell's hidden part runs once more for every missing
    variant other than 0, in a fork (:mod:`.sandboxed.hidden_parts`). The check run is what a student's
    run will be: the solution's answer cells without any test cell, on the redacted course_lib, then
    every probe of every variant replayed twice. A probe is kept when the check run reproduces the
    recorded result and does not depend on the random state; the check run's record (with gradients,
    where the cell checks them) is what the students' answers are compared with. Each variant's
    reference is then its part of the record (:func:`.variants.variant_probes`), cached apart, with
    its probes described as text (:func:`.probe_report.probe_texts`). Every run is a fork of slot 0's
    warm runner, as a student's is, so the batch's students reuse the warm runner the reference
    started. ``key``: :func:`grader_key`,
    when the caller has it already (it reads and parses every module a grade depends on).
    """
    wanted = sorted(set(variants))
    key = key or grader_key(cells)
    found = {v: reference for v in wanted if (reference := _cached(assignment, key, v))}
    missing = [v for v in wanted if v not in found]
    if not missing:
        return found
    with tempfile.TemporaryDirectory(prefix="reference-", dir=sandbox.scratch) as scratch:
        plan = make_plan("record", cells, limits, variants=[v for v in missing if v])
        record = run_plan(sandbox, RunSpec.of(plan, Path(scratch) / "record", files, limits))
        _solution_must_pass(assignment, cells, record)
        calls = json.loads((record.outbox / "probes.json").read_text())
        replayable = [k for k, call in enumerate(calls) if not call["unreplayable"]]
        solution = Answers({c.grade_id: c.source for c in cells if c.kind == "solution"})
        check_cells = graded_plan(cells, solution, {})
        replaying = {**files, "probes.json": record.outbox / "probes.json"}
        check = run_plan(sandbox, RunSpec.of(
            make_plan("check", check_cells, limits, cells, calls, replayable, sampled=[]),
            Path(scratch) / "check", replaying, limits, course_lib=redacted_for(assignment, cells, calls),
            probe_inputs=record.outbox / "probes"))
        _solution_must_pass(assignment, check_cells, check, kinds=("solution",))
        usable = {}
        for k, call in enumerate(calls):
            recorded = torch.load(record.outbox / "probes" / f"{k}.expected.pt", weights_only=True)
            replayed = check.result(k)
            tolerance = tuple(call["tolerance"])
            if call["unreplayable"]:
                usable[k] = call["unreplayable"]
            elif problem := compare(recorded, {key: value for key, value in (replayed or {}).items()
                                               if key != "gradients"}, tolerance):
                usable[k] = ("replaying the solution without its test cells did not reproduce its result: "
                             f"{problem} {error_message(replayed or {})}".rstrip())
            elif compare(replayed, check.result(k, PERTURBED), tolerance):
                call["sampled"] = True  # a random answer: compared by the distribution of its results
            else:
                usable[k] = ""
                torch.save({**replayed, "checks": recorded.get("checks", [])},
                           record.outbox / "probes" / f"{k}.expected.pt")
        sampled = [k for k, call in enumerate(calls) if call.get("sampled")]
        if sampled:
            samples = run_plan(sandbox, RunSpec.of(
                make_plan("grade", check_cells, limits, cells, calls, sampled, sampled=sampled),
                Path(scratch) / "samples", replaying, limits,
                course_lib=redacted_for(assignment, cells, calls), probe_inputs=record.outbox / "probes"))
            for k in sampled:
                result = samples.result(k)
                if isinstance(result, dict) and compare(result, result) is None:
                    usable[k] = ""
                    torch.save(result, record.outbox / "probes" / f"{k}.expected.pt")
                else:
                    usable[k] = "its result depends on the random state, and the solution's samples failed"
        (record.outbox / "probes.json").write_text(json.dumps(calls), encoding="utf-8")
        passes = _what_the_release_passes(assignment, cells, sandbox, limits, files, record.outbox,
                                          Path(scratch), calls, usable)
        # once for the record: the visible probes are every variant's
        texts = probe_texts(record.outbox / "probes", [k for k, why in usable.items() if not why])
        for variant in missing:
            found[variant] = _save_variant(assignment, key, variant, record.outbox, calls, usable, passes,
                                           texts)
    return found


def _cached(assignment: Assignment, key: str, variant: int) -> Reference | None:
    folder = assignment.root / "build" / "autograde" / assignment.id / reference_name(key, variant)
    if not (folder / "usable.json").is_file():
        return None
    usable = {int(k): v for k, v in json.loads((folder / "usable.json").read_text()).items()}
    return Reference(folder, json.loads((folder / "probes.json").read_text()), usable,
                     ProbeTexts.load(folder / "texts.json"), variant)


def _save_variant(assignment: Assignment, key: str, variant: int, recorded: Path, calls: list[dict],
                  usable: dict[int, str], passes: dict[int, bool], texts: ProbeTexts) -> Reference:
    """``variant``'s part of a record of several (``recorded``: its probes; ``texts``: theirs),
    renumbered from 0 and cached; a test cell whose usable probes of this variant all pass on the
    release's stubs checks only given code: it cannot tell a student's answer from none, so the
    grader does not credit it on its own."""
    chosen = variant_probes(calls, variant)
    number = {k: new for new, k in enumerate(chosen)}
    mine = [{**calls[k], "instance": None if calls[k]["instance"] is None else number[calls[k]["instance"]]}
            for k in chosen]
    kept = {number[k]: usable[k] for k in chosen}
    by_cell: dict[str, list[int]] = {}
    for k in chosen:
        if not usable[k] and k in passes:
            by_cell.setdefault(calls[k]["cell"], []).append(k)
    for probes in by_cell.values():
        if all(passes[k] for k in probes):
            for k in probes:
                kept[number[k]] = RELEASE_PASSES
    folder = assignment.root / "build" / "autograde" / assignment.id / reference_name(key, variant)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent))
    (staging / "probes").mkdir()
    for k in chosen:
        for suffix in (".pkl", ".expected.pt"):
            if (recorded / "probes" / f"{k}{suffix}").is_file():
                shutil.copy(recorded / "probes" / f"{k}{suffix}", staging / "probes" / f"{number[k]}{suffix}")
    replayed = [k for k in chosen if not kept[number[k]]]
    mine_texts = ProbeTexts({number[k]: texts.inputs[k] for k in replayed},
                            {number[k]: texts.expected[k] for k in replayed})
    (staging / "probes.json").write_text(json.dumps(mine), encoding="utf-8")
    mine_texts.save(staging / "texts.json")
    (staging / "usable.json").write_text(json.dumps(kept, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return Reference(folder, mine, kept, mine_texts, variant)


RELEASE_PASSES = "the release's stub passes every probe of this cell: it checks only given code"


def reference_name(key: str, variant: int) -> str:
    """The cache folder of a variant's reference, and the grader a record names: the grader's key
    (:func:`grader_key`) and the variant, so that a student graded on one variant never resumes
    against another's."""
    return f"reference-{key}-variant{variant}"


def _what_the_release_passes(assignment: Assignment, cells: list[Cell], sandbox: Sandbox, limits: Limits,
                             files: dict[str, Path], recorded: Path, scratch: Path, calls: list[dict],
                             usable: dict[int, str]) -> dict[int, bool]:
    """Each usable probe (of every variant): whether the release's stubs pass it (none without stubs)."""
    stubs = release_stubs(assignment.release)
    kept = [k for k, why in usable.items() if not why]
    if not stubs or not kept:
        return {}
    plan_cells = graded_plan(cells, Answers({}), stubs)
    run = run_plan(sandbox, RunSpec.of(
        make_plan("grade", plan_cells, limits, cells, calls, kept), scratch / "release",
        {**files, "probes.json": recorded / "probes.json"}, limits,
        course_lib=redacted_for(assignment, cells, calls), probe_inputs=recorded / "probes"))
    passes = {}
    for k, got in run.outcomes(len(plan_cells), kept, limits).items():
        expected = torch.load(recorded / "probes" / f"{k}.expected.pt", weights_only=True)
        passes[k] = compare(expected, got, tuple(calls[k]["tolerance"])) is None
    return passes


def _solution_must_pass(assignment: Assignment, cells: list[Cell], run: Run,
                        kinds: tuple[str, ...] = ("solution", "test", "other")) -> None:
    """The solution's cells of ``kinds`` all ran without error (in the check run, an experiment that
    uses a redacted reference may fail: only the answer cells must run); a hidden check that fails
    on a variant's inputs names the variant (the runner's error says it)."""
    if run.failure:
        raise CourseError(f"{assignment.source}: the solution could not run in the sandbox: {run.failure}\n"
                          f"{run.log[-2000:]}")
    for step, cell in enumerate(cells):
        event = run.steps.get(step, {"ok": False, "error": "not run"})
        if cell.kind in kinds and not event["ok"]:
            raise CourseError(f"{assignment.source}: the solution fails in the sandbox, cell "
                              f"{cell.grade_id or step}: {event.get('error')}\n{run.log[-2000:]}")


def plan_limits(limits: Limits) -> dict:
    return {
        "memory_bytes": limits.memory_bytes, "processes": limits.processes, "file_bytes": limits.file_bytes
    }


def make_plan(mode: str, cells: list[Cell], limits: Limits, source: list[Cell] = (), calls: list[dict] = (),
              replay: list[int] = (), sampled: list[int] | None = None, bind: bool = False,
              variants: Iterable[int] = ()) -> Plan:
    """The plan of a run of ``cells`` replaying the probes ``replay`` (of ``calls``), each after the
    plan step its test cell followed in ``source`` (the source notebook's cells); ``sampled``: the
    probes replayed from several seeds (by default those ``calls`` marks as random); ``variants``: in
    a record run, the variants other than 0 whose hidden inputs the test cells draw too."""
    replay = list(replay)
    return Plan(mode, [c.as_plan() for c in cells], plan_limits(limits), replay,
                replay_after(source, calls, replay) if replay else {},
                [k for k in replay if calls[k].get("sampled")] if sampled is None else list(sampled), bind,
                variants=list(variants), students_filter=(students_program() or b"").hex())
