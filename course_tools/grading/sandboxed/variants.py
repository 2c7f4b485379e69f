"""Per-student hidden inputs: the solution's record run of one variant draws its hidden inputs anew.

A hidden check draws its inputs from seeds its test cell names (``seed_everything(21)``,
``torch.Generator().manual_seed(404)``, ``random.Random(61)``). In the record run of variant ``v > 0``
(:mod:`.runner`, mode ``record``), every seed that the hidden part of a test cell sets *itself* is
replaced by :func:`variant_seed` ``(seed, v)``: the same code draws other shapes and values, and the
solution's answers on them are what that variant's students are compared with. Visible checks, the
answer cells and any seed a graded function sets inside a call keep theirs: a visible check is the
same for everyone, and the solution's own randomness must replay as it ran. Variant 0 is the
notebook as written. Only the instructor's record run is changed; a student's run replays the
recorded inputs (:class:`.runs.ProbeServer`) and never sees a seed.
"""
from __future__ import annotations

import hashlib
import random
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
    variant other than 0 (a process of its own, which ends with the run). Returns what the runner
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
