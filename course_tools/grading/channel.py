"""The grader's end of a run's channel (``--channel-fd``): a socket pair whose other end the run
gets, served in a thread (:class:`Served`) by the probe server (:class:`ProbeServer`), which hands
over the probes' inputs and keeps the checks' results. The runner's end is
:class:`.sandboxed.runner.Channel`; the messages are :mod:`.sandboxed.protocol`'s.
"""
from __future__ import annotations

import os
import socket
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable

from course_tools.grading.sandboxed.protocol import (COUNT, DONE, HEADER, INPUT, PERTURBED, PROBE, RESULT,
                                                     SEAL, Plan)

MAX_RESULT_BYTES = 256 << 20  # one replayed result


class ProbeServer:
    """The grader's end of a run's channel (``--channel-fd``; :class:`.sandboxed.runner.Channel` is the
    other): it hands the run the probes' inputs one check at a time, takes each check's result as it
    ends, and seals the run before any hidden input.

    Each probe of the run's plan is handed over once, when the runner asks for it as its check
    starts (a method's probe comes with the input of the call that built its object), and once a
    check has started it cannot start again in the same run. A result is taken once, for a check
    whose input was handed over, and kept here: nothing the run does later can change it. A hidden
    check's input is handed over only after the seal (:data:`.protocol.SEAL`), which the runner asks
    for once every cell and visible check has ended: from then on no visible result is taken, and
    ``on_seal`` marks where the run's events were, so nothing the run does once it may hold a hidden
    input reaches what the student reads. A hidden input asked for before the seal, a seal before
    every visible check has a result, or a visible result after it, is what no grading run does
    (:attr:`premature`). :attr:`log` is the server's own account, in order: ("seal", SEAL) and
    ("hand", probe). At most ``quota`` bytes of results are kept; a result past it is refused, and
    so is everything after a message the runner does not send.
    """

    def __init__(self, folder: Path, calls: list[dict], plan: Plan, quota: int,
                 on_seal: Callable[[], None] = lambda: None):
        self.folder, self.calls, self.quota, self.on_seal = folder, calls, quota, on_seal
        self.left = set(plan.replay)
        first = len(plan.cells)
        self.visible = [k for offset, k in enumerate(plan.replay)
                        if calls[k].get("segment") != "hidden" and first + offset not in plan.skip]
        self.wanted = {RESULT} | ({PERTURBED} if plan.mode == "check" else set())
        self.sealed = False
        self.results: dict[tuple[int, int], bytes] = {}  # (probe, RESULT or PERTURBED) -> its bytes
        self.refused: dict[int, str] = {}  # probe -> why its result was not kept
        self.received = 0
        self.premature: list[str] = []
        self.log: list[tuple[str, int]] = []

    def __call__(self, channel: socket.socket) -> None:
        with Connection(os.dup(channel.fileno())) as connection:
            while True:
                try:
                    message = connection.recv_bytes(HEADER.size + MAX_RESULT_BYTES)
                except (EOFError, OSError):  # the run's end closed, or a message over the limit
                    break
                what, probe = HEADER.unpack_from(message) if len(message) >= HEADER.size else (0, 0)
                if what == DONE:
                    return
                if what == INPUT:
                    self._hand(connection, probe)
                elif what == SEAL:
                    self._seal()
                    connection.send_bytes(b"")
                elif what in (RESULT, PERTURBED):
                    if what in self.wanted:  # a perturbed result only in a check run
                        self._keep(probe, what, memoryview(message)[HEADER.size:])
                else:  # not what the runner sends: nothing after it is read
                    break
        try:  # a run still writing to its end gets an error instead of waiting forever
            channel.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _hand(self, connection: Connection, index: int) -> None:
        hidden = index in self.left and self.calls[index].get("segment") == "hidden"
        if index not in self.left or (hidden and not self.sealed):
            if index in self.left:
                self.premature.append(f"the run asked for the input of hidden check {index} before "
                                      "its visible checks had ended")
            connection.send_bytes(COUNT.pack(0))
            return
        self.left.discard(index)
        self.log.append(("hand", index))
        wanted = [index] + ([self.calls[index]["instance"]] if self.calls[index]["kind"] == "method" else [])
        connection.send_bytes(COUNT.pack(len(wanted)))
        for k in wanted:
            connection.send_bytes(PROBE.pack(k))
            connection.send_bytes((self.folder / f"{k}.pkl").read_bytes())

    def _keep(self, index: int, what: int, data: memoryview) -> None:
        if not 0 <= index < len(self.calls):
            return
        if self.sealed and self.calls[index].get("segment") != "hidden":
            self.premature.append(f"the run sent the result of visible check {index} after the seal")
            return
        if (index, what) in self.results or index in self.left:
            return  # a result already kept, or of a check that never started
        if self.received + len(data) > self.quota:
            self.refused[index] = f"its results were over the {self.quota / 2**20:.3g} MiB a run may send"
            return
        self.received += len(data)
        self.results[index, what] = bytes(data)

    def _seal(self) -> None:
        if self.sealed:
            return
        self.on_seal()
        self.sealed = True
        missing = [str(k) for k in self.visible if any((k, what) not in self.results for what in self.wanted)]
        if missing:
            self.premature.append(f"the run asked for the seal before visible checks {', '.join(missing)} "
                                  "had results")
        self.log.append(("seal", SEAL))


DRAIN_S = 10.0


class Served:
    """The parent's end of a run's channel (a socket pair), served by ``channel`` in a thread."""

    def __init__(self, channel: Callable[[socket.socket], None] | None):
        self.ours = self.theirs = self.thread = None
        if channel is not None:
            self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            self.thread = threading.Thread(target=self._serve, args=(channel,), daemon=True)
            self.thread.start()

    def _serve(self, channel: Callable[[socket.socket], None]) -> None:
        try:
            channel(self.ours)
        except OSError:  # the run ended, or closed its end: nothing more to serve
            pass

    def fd(self) -> int | None:
        return None if self.theirs is None else self.theirs.fileno()

    def handed_over(self) -> None:
        """The run has its end (passed to the process): the parent's copy of it goes."""
        if self.theirs is not None:
            self.theirs.close()
            self.theirs = None

    def close(self) -> None:
        """Once the run's process has ended: what it sent before it ended is read first (its end is
        closed, so the server reads to the end; a process the run left behind holding it open delays
        that by at most ``DRAIN_S``), then the channel closes."""
        self.handed_over()
        if self.ours is not None:
            self.thread.join(DRAIN_S)
            try:
                self.ours.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.thread.join(5.0)
            self.ours.close()
            self.ours = None
