"""What the grader and the sandboxed runner say to each other: the run plan and the file names.

Read on both sides of the trust boundary (the grader writes the plan; :mod:`.runner` reads it inside
the sandbox), so this module imports nothing but the standard library. docs/ARCHITECTURE.md lists
the whole protocol.
"""
from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field

MODES = ("record", "check", "grade")
PLAN, PROBES, EVENTS, REPLAY = "plan.json", "probes.json", "events.jsonl", "replay"
# The channel of the probes' inputs (--channel-fd): the runner asks for one probe, the grader answers
REQUEST = struct.Struct("<q")  # the probe asked for, or SEAL
# Asked once every cell and every visible check of the run has ended: the grader keeps the visible
# results as they are then, and only from then on hands over a hidden check's input.
SEAL = -1
COUNT = struct.Struct("<I")  # inputs in the answer (0: refused)
BLOB = struct.Struct("<qQ")  # one input: its probe, its length; then its bytes


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
