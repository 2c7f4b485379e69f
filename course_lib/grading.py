"""Checks used by the graded test cells: every failure says what was expected and what came back.

A test cell reads like this::

    with forbid("torch.nn.RNN.forward", "course_lib.rnn.rnn_forward", exercise="rnn_forward"):
        hs, h_T = rnn_forward(xs, h0, W_e, W_h, b)
    check_shape("rnn_forward", hs, (B, T, d_h), name="hs")
    check_close("rnn_forward", hs, expected_hs, name="hs")

and a wrong answer fails with, for example::

    GradingError: [rnn_forward] hs: values differ: max abs error 0.4137 at index (1, 3, 0)
    (expected 0.2210, got -0.1927); allowed atol=1e-05, rtol=1e-05
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from course_lib.allowlist import review_answer
# notebooks import these from here
from course_lib.grading_errors import ForbiddenCallError, GradingError, ThreadRefusedError
from course_lib.guards import bind, forbid

# Every public spelling of the same operation, so that one name in forbid() closes every door.
SOFTMAX = (
    "torch.softmax",
    "torch.Tensor.softmax",
    "torch.nn.functional.softmax",
    "torch.special.softmax",
    "torch.nn.Softmax.forward",
)
SDPA = ("torch.nn.functional.scaled_dot_product_attention",)
MULTIHEAD = ("torch.nn.MultiheadAttention.forward", "torch.nn.functional.multi_head_attention_forward")


def _fail(exercise: str, message: str) -> None:
    raise GradingError(f"[{exercise}] {message}")


def check(exercise: str, condition: Any, message: str) -> None:
    """Fail with ``message`` unless ``condition`` is true."""
    review_answer(exercise)
    if condition is not True and not (isinstance(condition, (bool, np.bool_)) and bool(condition)):
        _fail(exercise, message)


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '…' if len(text) > 60 else text}"


def _as_tensor(exercise: str, value: Any, name: str, role: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, float):  # float64, as Python keeps it: torch.as_tensor would round it to float32
        return torch.tensor(value, dtype=torch.float64)
    if isinstance(value, np.ndarray) or (isinstance(value, int) and not isinstance(value, bool)):
        return torch.as_tensor(value)
    _fail(exercise, f"{name}: {role} a tensor or a number, got {_describe(value)}")
    raise AssertionError  # unreachable: _fail raises


def check_shape(exercise: str, got: Any, expected_shape: Sequence[int | None], name: str = "output") -> None:
    """``got`` must be a tensor of ``expected_shape`` (``None`` matches any size in that axis)."""
    review_answer(exercise)
    if not isinstance(got, (torch.Tensor, np.ndarray)):
        _fail(exercise, f"{name}: expected a tensor of shape {tuple(expected_shape)}, got {_describe(got)}")
    shape = tuple(got.shape)
    expected = tuple(expected_shape)
    if len(shape) != len(expected) or any(e is not None and e != s for e, s in zip(expected, shape)):
        shown = tuple("*" if e is None else e for e in expected)
        _fail(exercise, f"{name}: expected shape {shown}, got shape {shape}")


def check_close(
    exercise: str,
    got: Any,
    expected: Any,
    *,
    atol: float = 1e-5,
    rtol: float = 1e-5,
    name: str = "output",
    check_dtype: bool = False,
) -> None:
    """``got`` must equal ``expected`` elementwise within ``atol + rtol·|expected|``.

    Tensors, arrays, numbers, and tuples/lists of them (compared item by item) are accepted.
    The message gives the shapes, dtypes, the largest error and where it is.
    """
    review_answer(exercise)
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            _fail(exercise, f"{name}: expected a sequence of {len(expected)} items, got {_describe(got)}")
        for i, (g, e) in enumerate(zip(got, expected)):
            check_close(exercise, g, e, atol=atol, rtol=rtol, name=f"{name}[{i}]", check_dtype=check_dtype)
        return
    want = _as_tensor(exercise, expected, name, "the reference is")
    have = _as_tensor(exercise, got, name, "expected")
    if tuple(have.shape) != tuple(want.shape):
        _fail(exercise, f"{name}: expected shape {tuple(want.shape)}, got shape {tuple(have.shape)}")
    if check_dtype and have.dtype != want.dtype:
        _fail(exercise, f"{name}: expected dtype {want.dtype}, got dtype {have.dtype}")
    if have.is_complex() or want.is_complex():
        have, want = torch.view_as_real(have.to(torch.complex128)), torch.view_as_real(
            want.to(torch.complex128))
    have64, want64 = have.to(torch.float64).cpu(), want.to(torch.float64).cpu()
    bad_nan = torch.isnan(have64) & ~torch.isnan(want64)
    if bad_nan.any():
        where = tuple(int(i) for i in bad_nan.nonzero()[0])
        _fail(exercise, f"{name}: got NaN at index {where} ({int(bad_nan.sum())} NaN values in all); "
                        f"expected {want64[where].item():.6g}")
    both_nan = torch.isnan(have64) & torch.isnan(want64)
    same_inf = torch.isinf(want64) & (have64 == want64)
    error = (have64 - want64).abs().masked_fill(both_nan | same_inf, 0.0).nan_to_num(nan=math.inf)
    allowed = atol + rtol * want64.abs().nan_to_num(posinf=0.0, neginf=0.0)
    if (error > allowed).any():
        worst = int(torch.argmax(error - allowed))
        where = tuple(int(i) for i in np.unravel_index(worst, tuple(want64.shape))) if want64.dim() else ()
        _fail(exercise, (
            f"{name}: values differ: max abs error {error.max().item():.4g} at index {where} "
            f"(expected {want64[where].item():.6g}, got {have64[where].item():.6g}); "
            f"{int((error > allowed).sum())} of {want64.numel()} entries outside atol={atol:g}, rtol={rtol:g}"
        ))


def check_number(exercise: str, got: Any, kind: type, name: str = "output") -> None:
    """``got`` must be the Python number the contract names: ``int`` (a Python int: not a bool, not a
    float such as 6.0, not a NumPy integer) or ``float`` (a Python float or int, NumPy's float64
    included since it is one; not a tensor, not another NumPy number)."""
    review_answer(exercise)
    if kind is int:
        ok = type(got) is int
        wanted = "a Python int"
    elif kind is float:
        ok = isinstance(got, (int, float)) and not isinstance(got, (bool, np.integer))
        wanted = "a Python float"
    else:
        raise ValueError(f"check_number(): kind must be int or float, not {kind!r}")
    if not ok:
        advice = (
            " (convert it with .item() or float(...))" if kind is float else (" (convert it with int(...))")
        )
        _fail(exercise, f"{name}: expected {wanted}, got {_type_name(got)} {_short(got)}{advice}")


def check_dtype(exercise: str, got: Any, dtype: torch.dtype, name: str = "output") -> None:
    """``got`` must be a tensor of ``dtype`` (token ids are ``torch.long``, masks ``torch.bool``)."""
    review_answer(exercise)
    if not isinstance(got, torch.Tensor):
        _fail(exercise, f"{name}: expected a tensor of dtype {dtype}, got {_describe(got)}")
    if got.dtype != dtype:
        _fail(exercise, f"{name}: expected dtype {dtype}, got dtype {got.dtype}")


def _type_name(value: Any) -> str:
    kind = type(value)
    return (
        kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__name__}"
    )


def _short(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = repr(value)
    return text[:60] + "…" if len(text) > 60 else text


@dataclasses.dataclass(frozen=True)
class _Container:
    """The snapshot of a list, tuple, dict or set: its items' snapshots."""

    items: Any  # list of snapshots (list, tuple), dict of snapshots (dict, Counter), or a set


def _snapshot(value: Any) -> Any:
    """A copy of what a call could change in place: tensors, arrays, and the lists, tuples, dicts
    (Counters included) and sets holding them or plain values; anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return _Container([_snapshot(v) for v in value])
    if isinstance(value, dict):
        return _Container({k: _snapshot(v) for k, v in value.items()})
    if isinstance(value, (set, frozenset)):
        return _Container(set(value))
    return value


@dataclasses.dataclass(frozen=True)
class _Fields:
    """The snapshot of a dataclass given as an argument (a config): its fields' snapshots."""

    fields: dict[str, Any]


def _snapshot_argument(value: Any) -> Any:
    """An argument's snapshot: as :func:`_snapshot`, and a dataclass (a config) field by field, as the
    grader records an object's public fields. Only an argument itself: a KV cache inside a list of
    caches is state its exercise says the call fills."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _Fields({f.name: _snapshot(getattr(value, f.name)) for f in dataclasses.fields(value)})
    return _snapshot(value)


def _first_change(before: Any, after: Any, path: str) -> str | None:
    """Where ``after`` differs from the snapshot ``before``, in words; None when it does not."""
    if isinstance(before, _Fields):
        return next((c for name, field in before.fields.items()
                     if (c := _first_change(field, getattr(after, name, None), f"{path}.{name}"))), None)
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            return f"{path} is now {_describe(after)}, it was {_describe(before)}"
        now = after.detach()
        same = (
            (now == before) | (now.isnan() & before.isnan()) if before.is_floating_point() else now == before
        )
        if bool(same.all()):
            return None
        where = tuple(int(i) for i in (~same).nonzero()[0])
        return (
            f"{path}[{', '.join(map(str, where))}] was {before[where].item():.6g}, it is now "
            f"{now[where].item():.6g}"
        )
    if isinstance(before, np.ndarray):
        return None if np.array_equal(before, after, equal_nan=True) else f"{path}'s values changed"
    if isinstance(before, _Container):
        items = before.items
        if isinstance(items, list):
            if not isinstance(after, (list, tuple)) or len(after) != len(items):
                return (
                    f"{path} had {len(items)} items, it now has "
                    f"{len(after) if hasattr(after, '__len__') else 'none'}"
                )
            return next(
                (
                    c
                    for i, (b, a) in enumerate(zip(items, after))
                    if (c := _first_change(b, a, f"{path}[{i}]"))
                ),
                None,
            )
        if isinstance(items, dict):
            if not isinstance(after, dict) or set(after) != set(items):
                return f"{path}'s keys changed"
            return next(
                (c for k, b in items.items() if (c := _first_change(b, after[k], f"{path}[{k!r}]"))), None
            )
        return None if after == items else f"{path} changed"
    if isinstance(before, (bool, int, float, str, bytes, type(None))):
        return None if after == before or (before != before and after != after) else \
            f"{path} was {before!r}, it is now {after!r}"
    return None


@contextlib.contextmanager
def unchanged(exercise: str, **arguments: Any) -> Iterator[None]:
    """The named arguments must be unchanged after the ``with`` block: a graded function leaves what it
    is given as it found it unless its text says otherwise. A failure names the argument and the
    first entry that changed::

        with unchanged("sample_next", logits=logits):
            tokens = sample_next(logits, top_k=2)
    """
    before = {name: _snapshot_argument(value) for name, value in arguments.items()}
    yield
    for name, value in arguments.items():
        change = _first_change(before[name], value, name)
        if change:
            _fail(
                exercise,
                f"your function changed its argument {name} in place ({change}); the contract leaves "
                f"its arguments unchanged: compute on a copy (x = x / t instead of x /= t, masked_fill "
                f"instead of masked_fill_, no item assignment into an argument)",
            )


def frequency_tolerance(n: int, p: float, false_failure: float) -> float:
    """How far the frequency of an outcome of probability ``p`` in ``n`` independent draws may stray
    from ``p`` with probability at most ``false_failure``: Bernstein's inequality,
    P(|f - p| ≥ t) ≤ 2·exp(-n t² / (2 p(1-p) + 2t/3)), solved for t."""
    spread = math.log(2.0 / false_failure) / n
    return spread / 3.0 + math.sqrt(spread**2 / 9.0 + 2.0 * spread * p * (1.0 - p))


def check_frequencies(
    exercise: str,
    draws: Any,
    expected: Sequence[float],
    *,
    false_failure: float = 1e-6,
    name: str = "samples",
) -> None:
    """``draws`` (n independent draws of token ids) must follow the distribution ``expected`` (V
    probabilities): no draw of a token of probability 0, and every token's frequency within the
    Bernstein bound for ``false_failure`` divided among the V tokens. So an answer that samples the
    right distribution fails with probability below ``false_failure``, whatever its way of drawing
    (the checks seed the random state, so a given answer passes or fails every time)."""
    if (
        not isinstance(draws, torch.Tensor)
        or draws.dim() != 1
        or draws.is_floating_point()
        or draws.is_complex()
    ):
        _fail(exercise, f"{name}: expected a 1-d tensor of token ids, got {_describe(draws)}")
    want = torch.as_tensor(expected, dtype=torch.float64)
    V, n = want.numel(), draws.numel()
    if bool(((draws < 0) | (draws >= V)).any()):
        _fail(
            exercise,
            f"{name}: token ids must be in 0..{V - 1}, got "
            f"{sorted(set(draws[(draws < 0) | (draws >= V)].tolist()))[:5]}",
        )
    counts = torch.bincount(draws.long(), minlength=V).double()
    banned = (want == 0) & (counts > 0)
    if bool(banned.any()):
        tokens = banned.nonzero()[:, 0].tolist()
        _fail(
            exercise,
            f"{name}: tokens {tokens} have probability 0 (they must be filtered out) but were drawn "
            f"{int(counts[banned].sum())} times in {n}",
        )
    freq = counts / n
    allowed = torch.tensor(
        [frequency_tolerance(n, float(p), false_failure / V) for p in want], dtype=torch.float64
    )
    off = (freq - want).abs() > allowed
    if bool(off.any()):
        i = int(off.nonzero()[0])
        _fail(
            exercise,
            f"{name}: token {i} was drawn with frequency {freq[i]:.4f} in {n} draws, expected "
            f"probability {want[i]:.4f} (allowed ±{allowed[i]:.4f}, a bound a correct answer exceeds "
            f"with probability below {false_failure:g}); frequencies {[round(f, 3) for f in freq.tolist()]}, "
            f"expected {[round(p, 3) for p in want.tolist()]}",
        )


__all__ = [
    "GradingError",
    "ForbiddenCallError",
    "ThreadRefusedError",
    "check",
    "check_shape",
    "check_close",
    "forbid",
    "bind",
    "check_number",
    "check_dtype",
    "unchanged",
    "check_frequencies",
    "frequency_tolerance",
    "SOFTMAX",
    "SDPA",
    "MULTIHEAD",
]
