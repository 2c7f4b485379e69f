"""A student's own error text, without anything that could be a hidden check's value.

The feedback shows a visible check's failure with the message of the exception the student's code
raised: that message is the student's text, written by code that ran in the sandbox. No hidden
input is in the sandbox before its own check runs (:class:`.channel.ProbeServer`), but a hidden check
that ran earlier could have left its input where a later visible one reads it, to raise it in the
message. So, as a second line of defence, every number in the text that matches a hidden check's
input or expected result (and no visible one) to its first four significant digits or more, every
small number that equals one, every hidden string (and each of its words of five letters or more),
and every long run of letters and digits that could encode them (base64, hex) become "…".

The values come from the solution's probes: their pickled inputs, read with an unpickler that
builds no class of the notebook's (an object becomes its state), and their recorded results.
"""
from __future__ import annotations

import math
import pickle
import re
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch

from .sandboxed import tensor_pickle

MAX_NUMBERS = 200_000  # values kept per side (hidden, visible): the first ones of each probe in turn
PREFIX = 4  # significant digits from which a number counts as matching a hidden one
SMALL_DIGITS = 4  # numbers with fewer significant digits are matched by value instead
MIN_STRING = 4  # hidden strings this long or longer are removed wherever they appear
MIN_WORD = 5  # and so are their words this long or longer
NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
ENCODED = re.compile(r"[A-Za-z0-9+/=_-]{24,}")  # base64, hex, a long run of digits
SAFE_MODULES = ("torch", "numpy", "collections", "builtins", "copyreg", "_codecs", "math", "fractions")
HIDDEN = "…"


class _State:
    """What the unpickler makes of a class it does not build: the state it was given (an object
    pickle makes with ``__new__`` only gets its state)."""

    args: tuple = ()
    kwargs: dict = {}
    state: Any = None

    def __init__(self, *args: Any, **kwargs: Any):
        self.args, self.kwargs, self.state = args, kwargs, None

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __call__(self, *args: Any, **kwargs: Any) -> "_State":  # a reconstructor called with its arguments
        return _State(*args, **kwargs)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (tensor_pickle.__name__, tensor_pickle.rebuild.__name__):
            return tensor_pickle.rebuild
        if module.split(".")[0] in SAFE_MODULES:
            return super().find_class(module, name)
        return _State


def probe_input(folder: Path, k: int) -> list[Any]:
    """Probe ``k``'s input (``<k>.pkl``) as the unpickler rebuilds it: a list of one, or empty when it
    cannot (its result, which the grader reads apart, still counts)."""
    try:
        with open(folder / f"{k}.pkl", "rb") as stream:
            return [_Unpickler(stream).load()]
    except Exception:
        return []


def _walk(value: Any, numbers: list[float], strings: set[str], depth: int = 0) -> None:
    if depth > 12 or len(numbers) >= MAX_NUMBERS:
        return
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        numbers.append(float(value))
    elif isinstance(value, str):
        strings.add(value)
    elif isinstance(value, torch.Tensor):
        flat = value.detach().flatten()[:MAX_NUMBERS - len(numbers)]
        if flat.is_complex():
            flat = torch.view_as_real(flat).flatten()
        numbers.extend(flat.to(torch.float64).tolist())
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            numbers.extend(value.astype(np.float64).ravel()[:MAX_NUMBERS - len(numbers)].tolist())
        else:
            for item in value.ravel()[:1000]:
                _walk(item, numbers, strings, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(key, numbers, strings, depth + 1)
            _walk(item, numbers, strings, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _walk(item, numbers, strings, depth + 1)
    elif isinstance(value, _State):
        _walk([value.args, value.kwargs, value.state], numbers, strings, depth + 1)
    elif hasattr(value, "__dict__"):
        _walk(vars(value), numbers, strings, depth + 1)


def _digits(number: float) -> str:
    """The significant digits of a number: 0.04817291 -> "4817291", 8505 -> "8505"."""
    if not math.isfinite(number) or number == 0:
        return ""
    return f"{abs(number):.11e}".split("e")[0].replace(".", "").rstrip("0")


def _by_prefix(numbers: Iterable[float]) -> dict[str, set[float]]:
    """First PREFIX significant digits -> each number that has that many."""
    found: dict[str, set[float]] = {}
    for number in numbers:
        digits = _digits(number)
        if len(digits) >= PREFIX:
            found.setdefault(digits[:PREFIX], set()).add(abs(number))
    return found


def _shown(number: float, shown: float, digits: int) -> bool:
    """Whether ``shown`` (a number in a text, with ``digits`` significant digits) is ``number``,
    rounded or cut (within one unit of its last digit), whatever its scale (0.4817 or 481.7)."""
    scale = 10 ** (math.floor(math.log10(number)) - math.floor(math.log10(shown)))
    return abs(shown * scale - number) <= 10 ** (math.floor(math.log10(number)) - digits + 1)


class Scrubber:
    """Replaces in a text whatever could be one of the ``hidden`` values (inputs and results of the
    hidden checks) and is not one of the ``visible`` ones."""

    def __init__(self, hidden: Iterable[Any], visible: Iterable[Any]):
        sides = []
        for values in (hidden, visible):
            numbers: list[float] = []
            strings: set[str] = set()
            for value in values:
                _walk(value, numbers, strings)
            sides.append((numbers, strings))
        # each distinct number once: a token id or a zero repeats thousands of times in the probes
        (hidden_numbers, hidden_strings), (visible_numbers, visible_strings) = \
            ((set(numbers), strings) for numbers, strings in sides)
        self.prefixes, self.visible_prefixes = _by_prefix(hidden_numbers), _by_prefix(visible_numbers)
        self.small = {n for n in hidden_numbers if len(_digits(n)) < SMALL_DIGITS} - visible_numbers
        words = {w for s in hidden_strings for w in re.findall(r"\w+", s) if len(w) >= MIN_WORD}
        visible_words = {w for s in visible_strings for w in re.findall(r"\w+", s)}
        texts = {s for s in hidden_strings if len(s) >= MIN_STRING} - visible_strings
        self.texts = sorted(texts | (words - visible_words), key=len, reverse=True)

    def _number(self, match: re.Match) -> str:
        token = match.group(0)
        try:
            value = float(token)
        except ValueError:
            return token
        digits = _digits(value)
        if len(digits) >= PREFIX:
            same = lambda known: any(
                _shown(number, abs(value), len(digits)) for number in known.get(digits[:PREFIX], ()))
            return HIDDEN if same(self.prefixes) and not same(self.visible_prefixes) else token
        return HIDDEN if value in self.small else token

    def __call__(self, text: str) -> str:
        for hidden in self.texts:
            text = text.replace(hidden, HIDDEN)
        text = ENCODED.sub(lambda m: HIDDEN
                           if sum(c.isdigit() for c in m.group(0)) >= 4 else m.group(0), text)
        return NUMBER.sub(self._number, text)


class LazyScrubber:
    """A :class:`Scrubber` made on its first use from ``values()`` (the hidden values, then the
    visible ones): reading and walking every probe of a variant takes seconds, and only a visible
    check that fails with the student's own error text needs it, in few batches."""

    def __init__(self, values: Callable[[], tuple[Iterable[Any], Iterable[Any]]]):
        self._values = values
        self._made: Scrubber | None = None
        self._lock = threading.Lock()  # the graders of a batch share it, each in its own thread

    def __call__(self, text: str) -> str:
        with self._lock:
            if self._made is None:
                self._made = Scrubber(*self._values())
        return self._made(text)
