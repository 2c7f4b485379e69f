"""Per-student hidden inputs: the solution's record run draws every variant's hidden inputs.

A hidden check draws its inputs from seeds its test cell names (``seed_everything(21)``,
``torch.Generator().manual_seed(404)``, ``random.Random(61)``). The record run (:mod:`.runner`, mode
``record``) runs the notebook once, as written: that is variant 0. As each test cell's hidden part
starts, every other variant ``v`` the plan names runs that hidden part in a fork of its own, from
the state the cell's visible part left, with every seed the hidden part sets *itself* replaced by
:func:`variant_seed` ``(seed, v)``: the same code draws other shapes and values, and the solution's
answers on them are what that variant's students are compared with. The fork's calls come back as
:class:`HiddenCalls` and join the record (:func:`merge`), each hidden call naming its variant; the
grader splits the record per variant (:func:`course_tools.grading.variants.variant_probes`). So a
variant costs its hidden parts, not the whole notebook again, and every variant's visible checks are
the very calls of variant 0. Visible checks, the answer cells and any seed a graded function sets
inside a call keep theirs: the solution's own randomness must replay as it ran. Only the
instructor's record run is changed; a student's run replays the recorded inputs
(:class:`~course_tools.grading.channel.ProbeServer`) and never sees a seed.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

SEED_BITS = 31  # below 2**31: every seeding function below takes it (NumPy's up to 2**32 - 1)


def variant_seed(seed: Any, variant: int) -> Any:
    """The seed a variant's hidden checks use instead of ``seed``: a stable hash of both (the same on
    every machine and Python, unlike ``hash()``); ``seed`` itself for variant 0 and for anything that
    is not an integer (``None``, a SeedSequence, a byte string: left as the notebook wrote it)."""
    if variant == 0 or isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        return seed
    digest = hashlib.sha256(f"hidden variant {variant} of seed {int(seed)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def reseed(variant: int, drawing_hidden_inputs: Callable[[], bool]) -> Callable[[str], None]:
    """From now on in this process, every seeding entry point of torch, ``random`` and NumPy uses
    :func:`variant_seed` while ``drawing_hidden_inputs()`` is true (the hidden part of a test cell,
    outside any graded call): ``torch.manual_seed`` (which ``course_lib.seed_everything`` calls too),
    ``torch.Generator().manual_seed``, ``random.seed``, ``random.Random(seed)``, ``np.random.seed``,
    ``np.random.default_rng`` and ``np.random.RandomState``. Installed only in a record run of a
    variant other than 0 (the fork of a hidden part, which ends with it). Returns what the runner
    calls as each hidden part starts (:func:`draw_anew`)."""
    def mapped(seed: Any) -> Any:
        return variant_seed(seed, variant) if drawing_hidden_inputs() else seed

    manual_seed = torch.manual_seed

    def reseeded_manual_seed(seed):
        return manual_seed(mapped(seed))

    torch.manual_seed = torch.random.manual_seed = reseeded_manual_seed

    class Generator(torch.Generator):
        def manual_seed(self, seed):
            return super().manual_seed(mapped(seed))

    torch.Generator = Generator

    python_seed = random.Random.seed

    def reseeded_python_seed(self, a=None, version=2):
        return python_seed(self, mapped(a), version)

    random.Random.seed = reseeded_python_seed  # random.Random(seed) seeds through it too
    # the module's function is a method of its hidden instance, bound at import: bind it again
    random.seed = random._inst.seed

    numpy_seed, default_rng = np.random.seed, np.random.default_rng

    class RandomState(np.random.RandomState):
        def __init__(self, seed=None):
            super().__init__(mapped(seed))

        def seed(self, seed=None):
            super().seed(mapped(seed))

    np.random.seed = lambda seed=None: numpy_seed(mapped(seed))
    np.random.default_rng = lambda seed=None: default_rng(mapped(seed))
    np.random.RandomState = RandomState

    def draw_anew(cell: str) -> None:
        """As the hidden part of test cell ``cell`` starts: the global generators from a seed of the
        cell and the variant, so that hidden inputs drawn without a seed of their own (after the
        visible part's ``seed_everything(0)``, say) differ between variants too."""
        seed = variant_seed(int.from_bytes(hashlib.sha256(cell.encode()).digest()[:4], "big"), variant)
        manual_seed(seed)
        python_seed(random._inst, seed)
        numpy_seed(seed)

    return draw_anew


@dataclass
class HiddenCalls:
    """What one variant's fork of a hidden part recorded: the calls from ``since`` on (the fork held
    the main run's ``since`` calls before them), their pickled inputs and results, the test cells that
    took gradients, and the error the hidden part failed with (None when it passed)."""

    variant: int
    since: int
    calls: list[dict]
    blobs: list[bytes | None]
    results: list[dict]
    gradient_cells: set[str]
    error: str | None


def hidden_calls(recorder: Any, variant: int, since: int, error: str | None) -> HiddenCalls:
    """What ``recorder`` (a :class:`.probes.Recorder`, in the fork) recorded since call ``since``."""
    return HiddenCalls(variant, since, recorder.calls[since:], recorder.blobs[since:],
                       recorder.results[since:], set(recorder.gradient_cells), error)


def merge(recorder: Any, parts: list[HiddenCalls]) -> None:
    """The forks' calls into ``recorder``'s, each part where its fork started (before the main run's
    own hidden calls of that cell), every reference to a call (a method's ``instance``) renumbered."""
    order: list[tuple[int, int]] = []  # (-1: the main run, or the part's number; the call's index in it)
    cursor = 0
    for number, part in sorted(enumerate(parts), key=lambda item: item[1].since):
        order += [(-1, i) for i in range(cursor, part.since)]
        cursor = max(cursor, part.since)
        order += [(number, i) for i in range(len(part.calls))]
    order += [(-1, i) for i in range(cursor, len(recorder.calls))]
    position = {key: new for new, key in enumerate(order)}

    def renumbered(number: int, instance: int | None) -> int | None:
        if instance is None:
            return None
        if number < 0 or instance < parts[number].since:  # built by the main run, before the fork
            return position[(-1, instance)]
        return position[(number, instance - parts[number].since)]

    calls, blobs, results = [], [], []
    for number, i in order:
        source = recorder if number < 0 else parts[number]
        calls.append({**source.calls[i], "instance": renumbered(number, source.calls[i]["instance"])})
        blobs.append(source.blobs[i])
        results.append(source.results[i])
    recorder.calls, recorder.blobs, recorder.results = calls, blobs, results
    for part in parts:
        recorder.gradient_cells |= part.gradient_cells
