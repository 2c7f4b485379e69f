"""The channel between a run and the grader, without a sandbox: the runner's end (:class:`runner.Channel`)
in this process, the grader's (:class:`runs.ProbeServer`) in a thread, as the sandbox serves it.

What the server keeps is what the grade reads (:meth:`runs.Run.result`), so every rule is tried here
as a student's code could break it from inside the run: results of checks that never started, a
visible result after the seal, a hidden input before it, results past the quota, and bytes that are
not the runner's framing.
"""
from __future__ import annotations

import io
import pickle
import socket
import threading

import pytest
import torch

from course_tools.grading.channel import ProbeServer
from course_tools.grading.runs import Run
from course_tools.grading.sandboxed.protocol import DONE, PERTURBED, RESULT, SEAL, Plan
from course_tools.grading.sandboxed.runner import Channel

# probes 0 and 1 are visible, 2 hidden; 1 is a method whose object probe 0 built
CALLS = [{"kind": "function", "segment": "visible"}, {"kind": "method", "instance": 0, "segment": "visible"},
         {"kind": "function", "segment": "hidden"}]


def _result(value) -> bytes:
    buffer = io.BytesIO()
    torch.save({"value": value}, buffer)
    return buffer.getvalue()


@pytest.fixture
def served(tmp_path):
    """A server for a grade plan replaying probes 0, 1, 2, and the runner's end of its channel."""
    for k in range(len(CALLS)):
        (tmp_path / f"{k}.pkl").write_bytes(pickle.dumps(f"input {k}"))
    plan = Plan("grade", [{"kind": "solution"}], {}, replay=[0, 1, 2])
    sealed_at = []
    server = ProbeServer(tmp_path, CALLS, plan, quota=4096, on_seal=lambda: sealed_at.append(True))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    thread = threading.Thread(target=server, args=(ours,), daemon=True)
    thread.start()
    channel = Channel(theirs.detach())
    yield server, channel, thread, sealed_at
    channel.connection.close()
    thread.join(5)
    ours.close()


def _kept(server: ProbeServer) -> Run:
    run = Run(outbox=None)
    run.results, run.refused = server.results, server.refused
    return run


def test_an_honest_run_hands_inputs_in_order_and_keeps_every_result(served):
    server, channel, thread, sealed_at = served
    assert channel.fetch(1) == {1: pickle.dumps("input 1"), 0: pickle.dumps("input 0")}  # with its object
    channel.send(RESULT, 1, _result(1.0))
    assert channel.fetch(0) == {0: pickle.dumps("input 0")}
    channel.send(RESULT, 0, _result(0.0))
    channel.seal()
    assert sealed_at == [True]
    assert channel.fetch(2) == {2: pickle.dumps("input 2")}
    channel.send(RESULT, 2, _result(2.0))
    channel.send(DONE, 0)
    thread.join(5)
    assert not thread.is_alive()
    assert server.premature == []
    assert server.log == [("hand", 1), ("hand", 0), ("seal", SEAL), ("hand", 2)]
    assert [_kept(server).result(k)["value"] for k in range(3)] == [0.0, 1.0, 2.0]


def test_what_no_honest_run_sends_is_refused_and_reported(served):
    server, channel, thread, _ = served
    channel.send(RESULT, 0, _result("before its input"))  # a check that never started: ignored
    with pytest.raises(RuntimeError, match="did not hand over the input of check 2"):
        channel.fetch(2)  # a hidden input before the seal
    channel.fetch(0)
    channel.send(RESULT, 0, _result("forged first"))
    channel.send(RESULT, 0, _result("the runner's"))  # the first result stands
    channel.send(PERTURBED, 0, _result("not a check run"))  # only a check run sends these
    channel.seal()  # before visible check 1 had a result
    channel.fetch(2)
    channel.send(RESULT, 0, _result("after the seal"))
    channel.send(RESULT, 2, b"not torch.save's bytes")
    channel.send(DONE, 0)
    thread.join(5)
    kept = _kept(server)
    assert kept.result(0)["value"] == "forged first"
    assert (0, PERTURBED) not in server.results
    assert kept.result(2) is None  # kept, but not what the runner sends: no answer
    assert [why.split(" had")[0].split(" before")[0].split(" after")[0] for why in server.premature] == [
        "the run asked for the input of hidden check 2",
        "the run asked for the seal",
        "the run sent the result of visible check 0",
    ]


def test_results_past_the_quota_are_refused_with_the_reason(served):
    server, channel, thread, _ = served
    channel.fetch(0)
    channel.send(RESULT, 0, _result(torch.zeros(2048)))  # about 9 KiB, over the 4 KiB quota
    channel.send(DONE, 0)
    thread.join(5)
    assert server.results == {}
    assert "over the 0.00391 MiB a run may send" in server.refused[0]


def test_bytes_that_are_not_the_runners_framing_end_the_channel_without_a_hang(served):
    server, channel, thread, _ = served
    channel.connection.send_bytes(b"\x00")  # shorter than a header
    thread.join(5)
    assert not thread.is_alive()
    with pytest.raises((OSError, EOFError)):  # the run's next request fails instead of waiting
        for _ in range(100):
            channel.fetch(0)
