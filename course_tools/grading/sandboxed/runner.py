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
(:class:`.channel.ProbeServer`). No hidden input is in the sandbox before everything the student will
read is final: every cell runs and every visible check replays first; then the runner asks the
parent to seal the run (:data:`.protocol.SEAL`: the parent has the visible results as they are
then, and takes none but the hidden checks' own results from then on), and only then do the
hidden checks run, those of each test cell in a fork of their own from the state the notebook
ended in, each asking for its input as its check starts. So nothing learnt from a hidden input can
reach a visible outcome, a cell's error or anything else a student reads. What an exercise forbids is blocked
whenever its code runs: while its answer cell runs and while each of its checks replays.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import resource
import shutil
import sys
import time
import traceback
from pathlib import Path

from .protocol import COUNT, DONE, EVENTS, HEADER, INPUT, PERTURBED, PLAN, PROBE, PROBES, RESULT, SEAL, Plan

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
    """The runner's end of the channel to the trusted grader (see :class:`.channel.ProbeServer`): the
    probes' inputs, asked for one check at a time, and every check's result, sent as it ends (the
    grader keeps them; no result is a file the student's code could reach)."""

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


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _limit(limits: dict) -> None:
    for name, value in (("RLIMIT_AS", limits["memory_bytes"]), ("RLIMIT_NPROC", limits["processes"]),
                        ("RLIMIT_FSIZE", limits["file_bytes"]), ("RLIMIT_CORE", 0)):
        resource.setrlimit(getattr(resource, name), (value, value))


def _one_thread_and_no_programs(program: bytes) -> None:
    """Load ``program`` (``plan.students_filter``): from now on no thread starts and no program is
    executed in this process and every fork of it (see ``grading.seccomp``). Refusing is final: a
    filter can only be added to, never taken away."""
    import ctypes

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    instructions = ctypes.create_string_buffer(program, len(program))
    fprog = Program(len(program) // 8, ctypes.addressof(instructions))
    # PR_SET_NO_NEW_PRIVS (bubblewrap has set it already), then PR_SET_SECCOMP with SECCOMP_MODE_FILTER
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"the runner could not load its seccomp filter: {os.strerror(error)}")


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):  # ``%matplotlib inline`` asks for it; there is no GUI here
            pass

    shell = Shell.instance(colors="nocolor", history_length=0)
    # Nobody sees a grading run's figures: draw them (the student's code runs as in Jupyter) but do
    # not render them to PNG when a cell shows them (a quarter of notebook 01's grading time).
    shell.display_formatter.active_types = ["text/plain"]
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


def main(argv: list[str]) -> int:
    inbox, outbox = Path(argv[0]), Path(argv[1])
    if "--drop-to" in argv:
        _drop_privileges(int(argv[argv.index("--drop-to") + 1]))
    plan = Plan.loads((inbox / PLAN).read_text(encoding="utf-8"))
    _limit(plan.limits)
    for folder in ("tmp", "runs"):
        (Path(os.environ.get("HOME", ".")) / folder).mkdir(exist_ok=True)
    if (inbox / "files").is_dir():  # the files released beside the notebook (never the student's own)
        for path in (inbox / "files").iterdir():
            if path.is_dir():
                shutil.copytree(path, path.name)
            elif path.suffix != ".ipynb":
                shutil.copy(path, path.name)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]  # no torch.py from the cwd
    events = Events(outbox / EVENTS)
    main_pid = os.getpid()

    import torch  # noqa: F401 (imported before any student code, with the thread count set)

    from course_lib.guards import forbid, resolve_dotted

    from . import probes
    from . import replay as replaying
    from .variants import hidden_calls, merge, reseed

    # Everything the grading needs, bound here before any student code runs: rebinding the modules'
    # names afterwards changes nothing the runner calls.
    replay, guard, save, BytesIO = replaying.replay, replaying.guard, torch.save, io.BytesIO
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    recorder = probes.Recorder() if plan.mode == "record" else None
    if recorder:
        recorder.install()
    hidden_parts: list = []  # record mode: what the other variants' hidden parts recorded, in forks
    shell = _shell()
    skip = plan.skip
    captured: dict = {}
    calls = None if recorder else json.loads((inbox / PROBES).read_text(encoding="utf-8"))
    guards = {} if recorder else replaying.exercise_guards(calls)
    channel = Channel(int(argv[argv.index("--channel-fd") + 1])) if "--channel-fd" in argv else None
    last = len(plan.cells) - 1
    if plan.students_filter:  # the last thing before the first cell: nothing of the runner's needs a thread
        _one_thread_and_no_programs(bytes.fromhex(plan.students_filter))
    after = plan.replay_after

    def run_cell(cell: dict, step: int) -> None:
        """One cell of the plan (a test cell as its visible and hidden parts), its end reported; an
        answer cell runs with what its exercises forbid blocked."""
        events.emit(step=step, start=True)
        if recorder:
            recorder.cell = cell["grade_id"] if cell["kind"] == "test" else None
        started = time.perf_counter()
        names = [name for target in cell["names"] for name in guards.get(target, [])] \
            if cell["kind"] == "solution" else []
        failed = None  # the error another variant's hidden part failed with
        for segment, source in cell.get("segments") or [("visible", cell["source"])]:
            if recorder:
                recorder.segment = segment
                if segment == "hidden":
                    failed = failed or other_variants(cell["grade_id"], source)
            with guard(names, forbid, resolve_dotted, f"answer cell {cell['grade_id']}"):
                result = shell.run_cell(source, store_history=False)
                if os.getpid() != main_pid:  # a fork of the student's code came back here: it must stop
                    os._exit(0)
            if _error(result):
                break
        if recorder:
            recorder.cell = None
        if cell["kind"] == "solution":
            captured.update({name: shell.user_ns.get(name) for name in cell["names"]})
            if recorder:
                recorder.wrap(shell.user_ns, cell["names"])
        error = _error(result) or failed
        events.emit(step=step, ok=error is None, error=error, seconds=round(time.perf_counter() - started, 3))

    def other_variants(grade_id: str, source: str) -> str | None:
        """The hidden part ``source`` of test cell ``grade_id`` on the inputs of each variant of
        ``plan.variants``, each in a fork from the state the visible part left (nothing it does reaches
        the main run), its calls kept for the record; the first error a variant failed with."""
        failed = None
        for variant in plan.variants:
            path = outbox / f"variant-{len(hidden_parts)}.pkl"

            def work() -> None:
                draw_anew = reseed(variant, lambda: recorder.cell is not None
                                   and recorder.segment == "hidden" and not recorder.depth)
                draw_anew(grade_id)
                recorder.variant, since = variant, len(recorder.calls)
                result = shell.run_cell(source, store_history=False)
                with open(path, "wb") as stream:
                    pickle.dump(hidden_calls(recorder, variant, since, _error(result)), stream, protocol=4)

            status = _in_fork(work)
            part = pickle.loads(path.read_bytes()) if status == 0 and path.is_file() else None
            path.unlink(missing_ok=True)
            if part is None:
                failed = failed or f"the hidden part of variant {variant} ended with exit status {status}"
                continue
            hidden_parts.append(part)
            if part.error:
                failed = failed or f"on the hidden inputs of variant {variant}: {part.error}"
        return failed

    def send(what: int, index: int, record: dict) -> None:
        buffer = BytesIO()
        save(record, buffer)  # into memory: torch.save to a file costs eight times as much
        channel.send(what, index, buffer.getbuffer())

    def check(index: int) -> None:
        """Replay probe ``index`` (from several random states when it is random, and once more from
        another in check mode) and send the grader what it gave."""
        process = os.getpid()
        given = channel.fetch(index)
        once = lambda **options: replay(index, calls, given, captured, shell.user_ns, forbid=forbid,
                                        resolve=resolve_dotted, guarded=guards.get(
                                            calls[index]["target"], []), bind_references=plan.bind, **options)
        if index in plan.sampled:  # a random answer: its results from several seeds
            record = {"samples": [once(seed=seed) for seed in probes.SAMPLE_SEEDS]}
        else:
            record = once()
        if os.getpid() != process:  # a fork of the student's code came back here: it must stop
            os._exit(0)
        send(RESULT, index, record)
        if plan.mode == "check":
            send(PERTURBED, index, once(perturb=True))

    def hidden_checks(group: list[tuple[int, int]], names: tuple[dict, dict]) -> None:
        """The probes (step, index) of one test cell's hidden part in a fork of their own, one check
        after the other, each input asked for only as its check starts: no process of the main run
        ever holds a hidden input, and the forks cost one per test cell, not one per probe. The fork
        first binds the notebook's names as they were where the test cell stood (``names``: the
        namespace and the graded names then), so a global that a later cell rebinds is what the
        student's code saw when that test ran. A fork that dies ends the check it was in (the parent
        says how); the rest run in a new fork."""
        while group:
            reading, writing = os.pipe()  # the fork says which checks it finished, a probe at a time

            def each() -> None:
                events.pid = os.getpid()  # this fork reports its own checks; a fork of the student's cannot
                for now, then in zip((shell.user_ns, captured), names):
                    now.clear()
                    now.update(then)
                for step, index in group:
                    events.emit(step=step, start=True)
                    check(index)
                    events.emit(step=step, ok=True)
                    os.write(writing, PROBE.pack(index))

            status = _in_fork(each)
            os.close(writing)
            with os.fdopen(reading, "rb") as finished:
                done = {PROBE.unpack_from(chunk)[0] for chunk in iter(lambda: finished.read(PROBE.size), b"")
                        if len(chunk) == PROBE.size}
            left = [(step, index) for step, index in group if index not in done]
            if not left:
                return
            (step, _), group = left[0], left[1:]
            # exit status 0 with no result: the check ran and returned nothing, which grading says
            events.emit(step=step, ok=status == 0, **({"exit": status} if status else {}))

    # test cell -> its hidden probes (step, index), and the names bound where it stood
    deferred: dict[str, tuple[list[tuple[int, int]], tuple[dict, dict]]] = {}

    def replay_after(position: int) -> None:
        """The visible probes whose test cell stood right after plan step ``position``; its hidden
        ones wait for the seal."""
        for offset, index in enumerate(plan.replay):
            if min(after.get(index, last), last) != position:
                continue
            step = len(plan.cells) + offset
            if step in skip:
                events.emit(step=step, ok=False, error=skip[step], skipped=True)
            elif calls[index].get("segment") == "hidden":
                if calls[index]["cell"] not in deferred:  # the names as this test cell saw them, once
                    deferred[calls[index]["cell"]] = ([], (dict(shell.user_ns), dict(captured)))
                deferred[calls[index]["cell"]][0].append((step, index))
            else:
                events.emit(step=step, start=True)
                check(index)
                if os.getpid() != main_pid:
                    os._exit(0)
                events.emit(step=step, ok=True)

    if not recorder:
        replay_after(-1)  # probes of a test cell that stood before every cell of the plan
    for step, cell in enumerate(plan.cells):
        if step in skip:
            events.emit(step=step, ok=False, error=skip[step], skipped=True)
        else:
            run_cell(cell, step)
        if not recorder:
            replay_after(step)
    if deferred:
        channel.seal()
        for group, names in deferred.values():
            hidden_checks(group, names)
    sys.stdout.flush()
    if recorder:
        merge(recorder, hidden_parts)
        recorder.save(outbox)
    if channel:
        channel.send(DONE, 0)
    events.emit(done=True)
    sys.stdout.flush()
    os._exit(0)  # skip interpreter shutdown: the student's atexit hooks and finalisers must not run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
