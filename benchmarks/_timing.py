"""Timing contenders against each other on a noisy machine: take turns, keep every time, compare medians.

    times, last = alternate({"ours": ours, "theirs": theirs}, repeats=15, warmup=2)
    ratio = median(times["ours"]) / median(times["theirs"])

Other work on a shared machine changes every absolute time. Running the contenders in rounds, the
order reversed every other round, lets a change of load (and any advantage of going first) hit all
of them alike, so the ratio of their medians stays meaningful when the times themselves are not.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def alternate(contenders: dict[str, Callable[[], Any]], repeats: int, warmup: int = 0,
              budget_s: float | None = None, min_repeats: int = 3,
              sync: Callable[[], None] | None = None) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Call each contender once per round, ``repeats`` rounds after ``warmup`` untimed ones.

    ``budget_s``: stop after the round that passes this many seconds, but never before
    ``min_repeats`` rounds (long inputs get fewer repeats, not none). ``sync`` runs before and after
    each timed call (``torch.cuda.synchronize``: GPU work is asynchronous).
    Returns (seconds of every timed call per contender, each contender's last return value).
    """
    sync = sync or (lambda: None)
    names = list(contenders)
    for _ in range(warmup):
        for name in names:
            contenders[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    last: dict[str, Any] = {}
    started = time.perf_counter()
    for round_ in range(repeats):
        for name in names if round_ % 2 == 0 else names[::-1]:
            sync()
            start = time.perf_counter()
            last[name] = contenders[name]()
            sync()
            times[name].append(time.perf_counter() - start)
        if budget_s is not None and round_ + 1 >= min_repeats and time.perf_counter() - started > budget_s:
            break
    return times, last


def medians(times: dict[str, list[float]]) -> dict[str, float]:
    """The median of each contender's times."""
    return {name: statistics.median(t) for name, t in times.items()}
