"""The program that runs inside the sandbox: ``python -I -m course_tools.grading.sandboxed.runner IN OUT``.

It executes the cells of ``IN/plan.json`` one by one in an IPython shell (so magics and
``get_ipython()`` behave as in Jupyter), then replays the grader's probes on the student's
definitions (:mod:`.probes`). It reports in ``OUT``: ``events.jsonl`` (a line when each step starts
and ends, which the trusted parent also uses to time steps) and, when recording, the probes; each
replayed check's result goes to the parent over the channel as the check ends. Modes: ``record``
runs the instructor's solution with its test cells (visible and hidden parts as separate steps of
one cell; the hidden part again in a fork for each other variant of the hidden inputs the plan
names: :mod:`.variants`) and records the probes; ``check`` and ``grade`` run a plan without test
cells (the grader never sends test code to a student's sandbox) and replay the probes, ``check``
twice (the second time from another random state). The student's code runs in this process, so the
parent treats everything here as the student's word, except what
:func:`course_tools.grading.compare.compare` checks itself.

No probe's input is in the sandbox before its check starts: the runner asks the trusted parent for
it over the channel ``--channel-fd`` when the check starts, and the parent hands each over once
(:class:`~course_tools.grading.channel.ProbeServer`). No hidden input is in the sandbox before
everything the student will read is final: every cell runs and every visible check replays first;
then the runner asks the parent to seal the run (:data:`.protocol.SEAL`: the parent has the visible
results as they are then, and takes none but the hidden checks' own results from then on), and only
then do the hidden checks run, test cell after test cell in a fork from the state the notebook ended
in (each cell's checks with the names bound as that cell saw them), each asking for its input as its
check starts. So nothing learnt from a hidden input can reach a visible outcome, a cell's error or
anything else a student reads. What an exercise forbids is blocked whenever its code runs: while its
answer cell runs and while each of its checks replays.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import sys
import time
import traceback
from pathlib import Path

from .confinement import drop_privileges, one_thread_and_no_programs, prepare
from .protocol import (COUNT, DONE, EVENTS, HEADER, INPUT, PERTURBED, PROBE, PROBES, RESULT, SEAL, Plan,
                       parse_runner_arguments)

MESSAGE_CHARS = 2_000


class Events:
    """Append-only step log; a forked child of the student's code must not write to it."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.pid = os.getpid()

    def emit(self, **event) -> None:
        if os.getpid() == self.pid:
            os.write(self.fd, (json.dumps(event) + "\n").encode())


class Channel:
    """The runner's end of the channel to the trusted grader (see
    :class:`~course_tools.grading.channel.ProbeServer`): the probes' inputs, asked for one check at a
    time, and every check's result, sent as it ends (the grader keeps them; no result is a file the
    student's code could reach)."""

    def __init__(self, fd: int):
        from multiprocessing.connection import Connection

        self.connection = Connection(fd)

    def fetch(self, index: int) -> dict[int, bytes]:
        """Probe ``index``'s pickled input, and that of the call that built its object (a method's)."""
        self.connection.send_bytes(HEADER.pack(INPUT, index))
        (count,) = COUNT.unpack(self.connection.recv_bytes())
        if count == 0:
            raise RuntimeError(
                f"the grader did not hand over the input of check {index}: it hands each check's "
                "input over once, when that check starts")
        blobs = {}
        for _ in range(count):
            (probe,) = PROBE.unpack(self.connection.recv_bytes())
            blobs[probe] = self.connection.recv_bytes()
        return blobs

    def send(self, what: int, index: int, data: bytes = b"") -> None:
        """A message for the grader: a check's result (``RESULT``, ``PERTURBED``) or ``DONE``."""
        self.connection.send_bytes(HEADER.pack(what, index) + data)

    def seal(self) -> None:
        """Every cell and visible check has ended: the grader keeps their results as they are now."""
        self.connection.send_bytes(HEADER.pack(SEAL, 0))
        self.connection.recv_bytes()


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):  # ``%matplotlib inline`` asks for it; there is no GUI here
            pass

    shell = Shell.instance(colors="nocolor", history_length=0)
    # Nobody sees a grading run's figures: draw them (the student's code runs as in Jupyter) but do
    # not render them to PNG when a cell shows them (a quarter of notebook 01's grading time).
    shell.display_formatter.active_types = ["text/plain"]
    # A cell's error goes to the run's log as file, line and code, without IPython's default context
    # and variable inspection, which reads the source of every frame (a notebook's instructor cells
    # that need a redacted reference fail in every grading run).
    shell.InteractiveTB.set_mode("Plain")
    return shell


def _error(result) -> str | None:
    error = result.error_before_exec or result.error_in_exec
    if error is None:
        return None
    return (f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)[:MESSAGE_CHARS]


def _in_fork(work) -> int:
    """Run ``work`` in a child process and wait for it: its exit status (negative: the signal that
    ended it). The child never comes back here, whatever the student's code does in it."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            work()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _stop_in_a_fork(pid: int) -> None:
    """A fork of the student's code that came back into the runner (``pid`` is the process that
    should be here) must stop: only the run's own processes report."""
    if os.getpid() != pid:
        os._exit(0)


class Runner:
    """One run of ``plan``: its cells in order, each visible check after its test cell, then the seal
    and the hidden checks (:meth:`run`). Everything the grading needs is bound here before any
    student code runs: rebinding the modules' names afterwards changes nothing the runner calls."""

    def __init__(self, plan: Plan, inbox: Path, outbox: Path, channel: Channel | None):
        import torch

        from course_lib.guards import forbid, resolve_dotted

        from . import probes
        from . import replay as replaying
        from . import tensor_pickle
        from .hidden_parts import hidden_calls, merge, reseed

        self.plan, self.outbox, self.channel = plan, outbox, channel
        self.events, self.pid = Events(outbox / EVENTS), os.getpid()
        self.forbid, self.resolve, self.sample_seeds = forbid, resolve_dotted, probes.SAMPLE_SEEDS
        self.replay, self.guard = replaying.replay, replaying.guard
        self.save, self.BytesIO, self.dumps = torch.save, io.BytesIO, tensor_pickle.dumps
        self.hidden_calls, self.merge, self.reseed = hidden_calls, merge, reseed
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        self.recorder = probes.Recorder() if plan.mode == "record" else None
        if self.recorder:
            self.recorder.install()
        self.hidden_parts: list = []  # record mode: what the other variants' hidden parts recorded, in forks
        self.shell = _shell()
        self.captured: dict = {}
        self.calls = None if self.recorder else json.loads((inbox / PROBES).read_text(encoding="utf-8"))
        self.guards = {} if self.recorder else replaying.exercise_guards(self.calls)
        # test cell -> its hidden probes (step, index), and the names bound where it stood
        self.deferred: dict[str, tuple[list[tuple[int, int]], tuple[dict, dict]]] = {}

    def run(self) -> None:
        plan, recorder, events = self.plan, self.recorder, self.events
        if plan.students_filter:  # the last thing before the first cell: no thread of the runner's needed
            one_thread_and_no_programs(bytes.fromhex(plan.students_filter))
        if not recorder:
            self.replay_after(-1)  # probes of a test cell that stood before every cell of the plan
        for step, cell in enumerate(plan.cells):
            if step in plan.skip:
                events.emit(step=step, ok=False, error=plan.skip[step], skipped=True)
            else:
                self.run_cell(cell, step)
            if not recorder:
                self.replay_after(step)
        if self.deferred:
            self.channel.seal()
            self.hidden_checks([(step, index, names) for group, names in self.deferred.values()
                                for step, index in group])
        sys.stdout.flush()
        if recorder:
            self.merge(recorder, self.hidden_parts)
            recorder.save(self.outbox)
        if self.channel:
            self.channel.send(DONE, 0)
        events.emit(done=True)

    def run_cell(self, cell: dict, step: int) -> None:
        """One cell of the plan (a test cell as its visible and hidden parts), its end reported; an
        answer cell runs with what its exercises forbid blocked."""
        recorder, shell = self.recorder, self.shell
        self.events.emit(step=step, start=True)
        if recorder:
            recorder.cell = cell["grade_id"] if cell["kind"] == "test" else None
        started = time.perf_counter()
        names = [name for target in cell["names"] for name in self.guards.get(target, [])] \
            if cell["kind"] == "solution" else []
        failed = None  # the error another variant's hidden part failed with
        for segment, source in cell.get("segments") or [("visible", cell["source"])]:
            if recorder:
                recorder.segment = segment
                if segment == "hidden":
                    failed = failed or self.other_variants(cell["grade_id"], source)
            with self.guard(names, self.forbid, self.resolve, f"answer cell {cell['grade_id']}"):
                result = shell.run_cell(source, store_history=False)
                _stop_in_a_fork(self.pid)
            if _error(result):
                break
        if recorder:
            recorder.cell = None
        if cell["kind"] == "solution":
            self.captured.update({name: shell.user_ns.get(name) for name in cell["names"]})
            if recorder:
                recorder.wrap(shell.user_ns, cell["names"])
        error = _error(result) or failed
        self.events.emit(step=step, ok=error is None, error=error,
                         seconds=round(time.perf_counter() - started, 3))

    def other_variants(self, grade_id: str, source: str) -> str | None:
        """The hidden part ``source`` of test cell ``grade_id`` on the inputs of each variant of
        ``plan.variants``, each in a fork from the state the visible part left (nothing it does reaches
        the main run), its calls kept for the record; the first error a variant failed with."""
        recorder, failed = self.recorder, None
        for variant in self.plan.variants:
            path = self.outbox / f"variant-{len(self.hidden_parts)}.pkl"

            def work() -> None:
                draw_anew = self.reseed(variant, lambda: recorder.cell is not None
                                        and recorder.segment == "hidden" and not recorder.depth)
                draw_anew(grade_id)
                recorder.variant, since = variant, len(recorder.calls)
                result = self.shell.run_cell(source, store_history=False)
                part = self.hidden_calls(recorder, variant, since, _error(result))
                path.write_bytes(self.dumps(part))

            status = _in_fork(work)
            part = pickle.loads(path.read_bytes()) if status == 0 and path.is_file() else None
            path.unlink(missing_ok=True)
            if part is None:
                failed = failed or f"the hidden part of variant {variant} ended with exit status {status}"
                continue
            self.hidden_parts.append(part)
            if part.error:
                failed = failed or f"on the hidden inputs of variant {variant}: {part.error}"
        return failed

    def send(self, what: int, index: int, record: dict) -> None:
        buffer = self.BytesIO()
        self.save(record, buffer)  # into memory: torch.save to a file costs eight times as much
        self.channel.send(what, index, buffer.getbuffer())

    def check(self, index: int) -> None:
        """Replay probe ``index`` (from several random states when it is random, and once more from
        another in check mode) and send the grader what it gave."""
        process, plan, calls = os.getpid(), self.plan, self.calls
        given = self.channel.fetch(index)
        once = lambda **options: self.replay(  # noqa: E731
            index, calls, given, self.captured, self.shell.user_ns, forbid=self.forbid, resolve=self.resolve,
            guarded=self.guards.get(calls[index]["target"], []), bind_references=plan.bind, **options)
        if index in plan.sampled:  # a random answer: its results from several seeds
            record = {"samples": [once(seed=seed) for seed in self.sample_seeds]}
        else:
            record = once()
        _stop_in_a_fork(process)
        self.send(RESULT, index, record)
        if plan.mode == "check":
            self.send(PERTURBED, index, once(perturb=True))

    def hidden_checks(self, checks: list[tuple[int, int, tuple[dict, dict]]]) -> None:
        """The hidden probes (step, index, names), test cell after test cell, one check after the other
        in a fork, each input asked for only as its check starts: no process of the main run ever
        holds a hidden input. Before the first check of each test cell the fork binds the notebook's
        names as they were where that cell stood (``names``: the namespace and the graded names then),
        so a global that a later cell rebinds is what the student's code saw when that test ran. One
        fork serves them all, since forking a process that holds torch costs more than a small
        notebook's checks; a fork that dies ends the check it was in (the parent says how), and the
        rest run in a new fork."""
        events = self.events
        while checks:
            reading, writing = os.pipe()  # the fork says which checks it finished, a probe at a time

            def each() -> None:
                events.pid = os.getpid()  # this fork reports its own checks; a fork of the student's cannot
                bound = None
                for step, index, names in checks:
                    if names is not bound:
                        for now, then in zip((self.shell.user_ns, self.captured), names):
                            now.clear()
                            now.update(then)
                        bound = names
                    events.emit(step=step, start=True)
                    self.check(index)
                    events.emit(step=step, ok=True)
                    os.write(writing, PROBE.pack(index))

            status = _in_fork(each)
            os.close(writing)
            with os.fdopen(reading, "rb") as finished:
                done = {PROBE.unpack_from(chunk)[0] for chunk in iter(lambda: finished.read(PROBE.size), b"")
                        if len(chunk) == PROBE.size}
            left = [check for check in checks if check[1] not in done]
            if not left:
                return
            (step, _, _), checks = left[0], left[1:]
            # exit status 0 with no result: the check ran and returned nothing, which grading says
            events.emit(step=step, ok=status == 0, **({"exit": status} if status else {}))

    def replay_after(self, position: int) -> None:
        """The visible probes whose test cell stood right after plan step ``position``; its hidden
        ones wait for the seal."""
        plan, calls, last = self.plan, self.calls, len(self.plan.cells) - 1
        for offset, index in enumerate(plan.replay):
            if min(plan.replay_after.get(index, last), last) != position:
                continue
            step = len(plan.cells) + offset
            if step in plan.skip:
                self.events.emit(step=step, ok=False, error=plan.skip[step], skipped=True)
            elif calls[index].get("segment") == "hidden":
                cell = calls[index]["cell"]
                if cell not in self.deferred:  # the names as this test cell saw them, once
                    self.deferred[cell] = ([], (dict(self.shell.user_ns), dict(self.captured)))
                self.deferred[cell][0].append((step, index))
            else:
                self.events.emit(step=step, start=True)
                self.check(index)
                _stop_in_a_fork(self.pid)
                self.events.emit(step=step, ok=True)


def main(argv: list[str]) -> int:
    arguments = parse_runner_arguments(argv)
    if arguments.drop_to is not None:
        drop_privileges(arguments.drop_to)
    inbox, outbox = Path(arguments.inbox), Path(arguments.outbox)
    plan = prepare(inbox)
    channel = Channel(arguments.channel_fd) if arguments.channel_fd is not None else None
    Runner(plan, inbox, outbox, channel).run()
    sys.stdout.flush()
    os._exit(0)  # skip interpreter shutdown: the student's atexit hooks and finalisers must not run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
