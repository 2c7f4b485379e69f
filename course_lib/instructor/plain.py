"""Results as plain data, and the comparison the trusted grader makes with them.

A replayed call's result leaves the student's sandbox as *plain* data only: tensors, numbers,
strings, and lists and dicts of them, which ``torch.load(weights_only=True)`` reads back without
running any code. Objects are reduced to their class name and simple public attributes, modules to
their parameter names and shapes. :func:`compare` runs in the grader's own process.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

MAX_ITEMS = 10_000  # longest list/dict kept in a plain result
ATOL = RTOL = 1e-4  # loose on purpose: the notebook's own checks are the precise ones; this one catches forgery


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as data that ``torch.load(weights_only=True)`` reads back: no code, no custom classes."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        tensor = tensor.to_dense() if tensor.is_sparse else tensor
        tensor = torch.view_as_real(tensor.resolve_conj()) if tensor.is_complex() else tensor
        return {"tensor": tensor.clone().contiguous()}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype == object:
            return {"object": "numpy.ndarray[object]"}
        return {"tensor": torch.from_numpy(array.astype(np.float64 if array.dtype.kind in "fcu" else array.dtype))}
    if isinstance(value, (bool, int, float, str)):  # subclasses (IntEnum, a float with a lying __eq__ ...)
        return {"object": type(value).__qualname__, "value": plain(type(value).__mro__[-2](value))}
    if depth > 8:
        return {"object": "nested too deep"}
    if isinstance(value, nn.Module):
        return {"module": type(value).__qualname__, "attrs": _attrs(value, depth),
                "params": {k: list(p.shape) for k, p in value.named_parameters()}}
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: repr(item[0]))[:MAX_ITEMS]
        return {"map": [[plain(k, depth + 1), plain(v, depth + 1)] for k, v in items]}
    if isinstance(value, (list, tuple)):
        return {"seq": [plain(v, depth + 1) for v in list(value)[:MAX_ITEMS]], "len": len(value)}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted(repr(v) for v in value)[:MAX_ITEMS]}
    if isinstance(value, (torch.dtype, torch.device)):
        return {"object": type(value).__qualname__, "value": str(value)}
    if dataclasses.is_dataclass(value) or hasattr(value, "__dict__"):
        return {"object": type(value).__qualname__, "attrs": _attrs(value, depth)}
    return {"object": type(value).__qualname__}


def _attrs(obj: Any, depth: int) -> dict:
    """Public attributes holding numbers, strings or tensors (a config's fields, a counter ...)."""
    kept = {}
    for name, value in sorted(vars(obj).items()):
        if not name.startswith("_") and (type(value) in (bool, int, float, str) or isinstance(value, torch.Tensor)):
            kept[name] = plain(value, depth + 1)
    return kept


def describe_error(error: BaseException) -> dict:
    return {"error": f"{type(error).__name__}: {str(error)[:500]}"}


def compare(expected: dict, got: Any) -> str | None:
    """None when ``got`` (a replayed call's record) matches ``expected``, else what differs."""
    if not isinstance(got, dict):
        return "the grader could not read your function's result"
    if "error" in expected:
        wanted = expected["error"].split(":")[0]
        if "error" in got and got["error"].split(":")[0] == wanted:
            return None
        return f"expected it to raise {wanted}, " + (f"it raised {got['error']}" if "error" in got else "it returned")
    if "error" in got:
        return f"it raised {got['error']}"
    return (_compare(expected.get("return"), got.get("return"), "return value")
            or _compare(expected.get("args_after"), got.get("args_after"), "arguments after the call"))


def _number(value: Any) -> float | None:
    if type(value) in (int, float):
        return float(value)
    if isinstance(value, dict) and "tensor" in value and isinstance(value["tensor"], torch.Tensor) \
            and value["tensor"].numel() == 1 and value["tensor"].dim() == 0:
        return float(value["tensor"])
    return None


def _compare(want: Any, have: Any, name: str) -> str | None:
    if type(want) is bool or want is None or isinstance(want, str):
        return None if (type(have) is type(want) and have == want) else f"{name}: expected {want!r}, got {_show(have)}"
    if type(want) in (int, float) and _number(have) is not None:
        return _compare_tensors(torch.tensor(float(want)), torch.tensor(_number(have)), name)
    if not isinstance(want, dict) or not isinstance(have, dict):
        return f"{name}: expected {_show(want)}, got {_show(have)}"
    if "tensor" in want:
        if "tensor" not in have or not isinstance(have["tensor"], torch.Tensor):
            number = _number(have) if want["tensor"].dim() == 0 else None
            if number is None:
                return f"{name}: expected a tensor of shape {tuple(want['tensor'].shape)}, got {_show(have)}"
            return _compare_tensors(want["tensor"], torch.tensor(number), name)
        return _compare_tensors(want["tensor"], have["tensor"], name)
    if "seq" in want:
        if "seq" not in have or have.get("len") != want.get("len") or len(have["seq"]) != len(want["seq"]):
            return f"{name}: expected a sequence of {want.get('len')} items, got {_show(have)}"
        return _first(_compare(w, h, f"{name}[{i}]") for i, (w, h) in enumerate(zip(want["seq"], have["seq"])))
    if "map" in want:
        if "map" not in have or [repr(k) for k, _ in have["map"]] != [repr(k) for k, _ in want["map"]]:
            return f"{name}: expected a mapping with keys {[k for k, _ in want['map']][:10]}, got {_show(have)}"
        return _first(_compare(w, h, f"{name}[{k!r}]") for (k, w), (_, h) in zip(want["map"], have["map"]))
    if "set" in want:
        return None if have.get("set") == want["set"] else f"{name}: the sets differ"
    if "module" in want:
        if "module" not in have or have.get("params") != want["params"]:
            return f"{name}: expected a module with parameters {want['params']}, got {_show(have)}"
        return _compare_attrs(want, have, name)
    if "object" in want:
        if have.get("object") != want["object"]:
            return f"{name}: expected a {want['object']}, got {_show(have)}"
        if "value" in want:
            return _compare(want["value"], have.get("value"), name)
        return _compare_attrs(want, have, name)
    return f"{name}: the grader cannot compare {_show(want)}"


def _compare_attrs(want: dict, have: dict, name: str) -> str | None:
    """Attributes both objects have (a student may keep extra ones, or fewer, in their own class)."""
    mine, theirs = want.get("attrs") or {}, have.get("attrs") or {}
    return _first(_compare(mine[k], theirs[k], f"{name}.{k}") for k in sorted(set(mine) & set(theirs)))


def _compare_tensors(want: torch.Tensor, have: torch.Tensor, name: str) -> str | None:
    if tuple(have.shape) != tuple(want.shape):
        return f"{name}: expected shape {tuple(want.shape)}, got shape {tuple(have.shape)}"
    want64, have64 = want.to(torch.float64), have.to(torch.float64)
    both_nan = torch.isnan(want64) & torch.isnan(have64)
    same_inf = torch.isinf(want64) & (want64 == have64)
    error = (have64 - want64).abs().masked_fill(both_nan | same_inf, 0.0).nan_to_num(nan=math.inf)
    allowed = ATOL + RTOL * want64.abs().nan_to_num(posinf=0.0, neginf=0.0)
    if not (error > allowed).any():
        return None
    worst = int(torch.argmax(error - allowed))
    where = tuple(int(i) for i in np.unravel_index(worst, tuple(want64.shape))) if want64.dim() else ()
    return (f"{name}: values differ: max abs error {error.max().item():.4g} at index {where} "
            f"(expected {want64[where].item():.6g}, got {have64[where].item():.6g})")


def _first(messages: Iterator[str | None]) -> str | None:
    return next((m for m in messages if m), None)


def _show(value: Any) -> str:
    if isinstance(value, dict):
        kind = next(iter(value), "nothing")
        if kind == "tensor":
            return f"a tensor of shape {tuple(value['tensor'].shape)}"
        return {"seq": "a sequence", "map": "a mapping", "module": "a module", "set": "a set"}.get(
            kind, f"a {value.get('object', kind)}")
    return repr(value)[:60]
