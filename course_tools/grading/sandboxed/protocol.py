"""What the grader and the sandboxed runner say to each other: the run plan and the file names.

Read on both sides of the trust boundary (the grader writes the plan; :mod:`.runner` reads it inside
the sandbox), so this module imports nothing but the standard library. docs/ARCHITECTURE.md lists
the whole protocol.
"""
from __future__ import annotations

import argparse
import json
import struct
from dataclasses import asdict, dataclass, field

MODES = ("record", "check", "grade")
PLAN, PROBES, EVENTS = "plan.json", "probes.json", "events.jsonl"
# The channel between the runner and the grader (--channel-fd), framed by multiprocessing.connection:
# each message from the runner is a HEADER (what, probe) and, for a result, the result's bytes.
HEADER = struct.Struct("<Bq")
INPUT = 1  # the runner asks for a probe's input as its check starts; the grader answers with COUNT
# inputs (0: refused), each a message of its probe (PROBE) and then one of its pickled bytes
RESULT = 2  # a check's result (torch.save): the grader keeps it, the runner writes no file
PERTURBED = 3  # check mode: the same check's result from another random state
# Asked once every cell and every visible check of the run has ended: from then on the grader takes
# no visible result and hands over hidden checks' inputs; it answers with an empty message.
SEAL = 4
DONE = 5  # the runner's last message: every result is sent
COUNT = struct.Struct("<I")
PROBE = struct.Struct("<q")


def runner_arguments(inbox: str, outbox: str, drop_to: int | None = None,
                     channel_fd: int | None = None) -> list[str]:
    """The runner's command line after ``-m RUNNER`` (:func:`parse_runner_arguments` reads it): the
    one place it is written, by the launcher for a new Python and by the zygote for a fork."""
    return [inbox, outbox] + (["--drop-to", str(drop_to)] if drop_to is not None else []) + \
        (["--channel-fd", str(channel_fd)] if channel_fd is not None else [])


def parse_runner_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="runner", description="one sandboxed run of a plan")
    parser.add_argument("inbox", help="the plan, the probes' calls and the released files (read-only)")
    parser.add_argument("outbox", help="where the run reports its events (and, recording, the probes)")
    parser.add_argument("--drop-to", type=int, default=None, metavar="UID",
                        help="a root grader's slot user: the run drops to it before anything else")
    parser.add_argument("--channel-fd", type=int, default=None, metavar="FD",
                        help="the channel to the grader: the probes' inputs and the checks' results")
    return parser.parse_args(argv)


@dataclass
class Plan:
    """One sandboxed run: its cells in order, then the probes it replays.

    ``record``: the solution with its test cells, recording every call they make (the probes);
    ``check``: the solution without test cells, each probe replayed twice (from two random states);
    ``grade``: a student's notebook without test cells, each probe replayed once."""

    mode: str
    cells: list[dict]  # submission.Cell.as_plan(): kind, grade_id, source, names, segments
    limits: dict[str, int]  # what the runner sets on its own process (reference.plan_limits)
    replay: list[int] = field(default_factory=list)  # the probes, in order
    replay_after: dict[int,
                       int] = field(default_factory=dict)  # probe -> the plan step its test cell followed
    sampled: list[int] = field(default_factory=list)  # probes of random answers: several seeds each
    bind: bool = False  # bind each probe's dependencies to course_lib's references (the cascade)
    skip: dict[int, str] = field(default_factory=dict)  # step -> why it is not run (it broke a limit before)
    # record mode: the variants other than 0 whose hidden inputs the test cells draw too, each in a
    # fork from where the cell's visible part left the run (.variants); variant 0 runs as written
    variants: list[int] = field(default_factory=list)
    # the seccomp program (hex) the runner loads before the first cell: no thread, no new program
    # (grading.seccomp.students_program); empty where the machine has none
    students_filter: str = ""

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"a plan's mode is one of {MODES}, not {self.mode!r}")

    def dumps(self) -> str:
        return json.dumps(asdict(self))  # JSON turns the int keys into strings; loads turns them back

    @classmethod
    def loads(cls, text: str) -> Plan:
        data = json.loads(text)
        data["replay_after"] = {int(k): int(v) for k, v in data["replay_after"].items()}
        data["skip"] = {int(k): str(v) for k, v in data["skip"].items()}
        return cls(**data)
