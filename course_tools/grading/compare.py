"""The trusted grader's comparison of a student's plain result with the solution's.

Both results are plain data (:mod:`course_tools.grading.sandboxed.plain`), read back with
``torch.load(weights_only=True)``; this runs in the grader's own process, never in the sandbox.
"""
from __future__ import annotations

import builtins
import math
from typing import Any, Iterator

import numpy as np
import torch

from course_tools.grading.sandboxed.plain import DEFAULT_TOLERANCE
from course_tools.grading.sandboxed.probes import CHANGES_ARGUMENTS

GRADIENT_SLACK = 10.0  # gradients go through one more chain of float operations than the values
ARGUMENTS_AFTER = "arguments after the call"  # where a Mismatch in what a call left in its arguments is


class Mismatch(str):
    """What differs between a student's result and the solution's: the text (with the values, for a
    visible check), and without any value the kind of difference (shape, dtype, values differ, type,
    an error ...) and where (the return value, the arguments after the call ...), which is all a
    hidden check may say (:meth:`hidden`)."""

    kind: str
    where: str

    def __new__(cls, text: str, kind: str, where: str = "") -> "Mismatch":
        made = super().__new__(cls, text)
        made.kind, made.where = kind, where
        return made

    def hidden(self) -> str:
        return f"{self.where}: {self.kind}" if self.where else self.kind


def _differ(kind: str, text: str) -> Mismatch:
    return Mismatch(text, kind)


def _at(where: str, found: Mismatch | None) -> Mismatch | None:
    """``found`` as a difference in ``where`` (a part of the result that no hidden input names)."""
    return Mismatch(found, found.kind, where) if found else None


NOT_AN_ANSWER = {"NotImplementedError", "NameError", "ForbiddenCallError",
                 "GradingError"}  # unwritten or forbidden
# Exception classes whose names a message may show (any other is "an exception": see error_class)
KNOWN_ERRORS = {
    name
    for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
} | NOT_AN_ANSWER | {"LinAlgError"}


def compare(expected: dict, got: Any, tolerance: tuple[float, float] = DEFAULT_TOLERANCE) -> Mismatch | None:
    """None when ``got`` (a replayed call's record) matches ``expected``, else what differs.

    Where the test cell checked the result itself (or one item of it) with ``check_close``, that
    value is compared as the test did: with what it expected, at its tolerance. The rest of the
    result is compared with the solution's, within twice ``tolerance`` (the tightest the cell
    applies; both answers may err by it); types are compared exactly (a 0-d tensor is not a float);
    a mapping may hold extra keys; a module's parameters are compared by shape, not by name, except
    those the test checked as built (``initial``: RMSNorm's weight starts at ones) and those a
    method of the solution changed (``self_after``: ``load_from_torch`` copies weights in);
    gradients, where recorded, within ``GRADIENT_SLACK`` times the tolerance. Where the solution
    raised, any exception of the student's code matches (the checks accept any error), except those
    that mean the answer is not written or calls what it must not (``NOT_AN_ANSWER``).
    """
    if not isinstance(got, dict):
        return Mismatch("the grader could not read your function's result", "no result")
    if "samples" in expected:
        return compare_samples(expected["samples"], got.get("samples"))
    if "error" in expected:
        wanted = expected["error"].split(":")[0]
        if "error" in got and not got.get("by_grader") and error_class(got) not in NOT_AN_ANSWER:
            return None
        raised = f"it raised {error_class(got)}" if "error" in got else "it returned"
        return Mismatch(f"expected it to raise {wanted}, {raised}", f"an error was expected, {raised}")
    if "error" in got:
        if got.get("by_grader"):  # the grader's own words (a time limit ...): no value of the student's
            return Mismatch(str(got["error"]), str(got["error"]))
        return Mismatch(f"it raised {error_class(got)}", f"it raised {error_class(got)}")
    atol, rtol = tolerance
    checked = {tuple(c["path"]): c for c in expected.get("checks", [])}
    initial = got.get("initial") if isinstance(got.get("initial"), dict) else {}
    as_built = (_compare_as_check(c["expected"], initial.get(c["path"][1]), f"{c['path'][1]} as built",
                                  c["atol"], c["rtol"])
                for c in expected.get("checks", []) if c["path"][:1] == ["initial"])
    found = (_at("return value", _compare(expected.get("return"), got.get("return"), "return value",
                                          atol * 2, rtol * 2, checked=checked))
             or _at(ARGUMENTS_AFTER, _compare(expected.get("args_after"), got.get("args_after"),
                                              ARGUMENTS_AFTER, atol, rtol))
             or _at("parameters as built", _first(as_built)))
    if not found and "self_after" in expected:
        name = "the module's parameters after the call"
        found = _at(name, _compare(expected["self_after"], got.get("self_after"), name, atol * 2, rtol * 2))
    if found or "gradients" not in expected:
        return found
    slack = GRADIENT_SLACK
    return _at(
        "gradient",
        _compare(_gradient_plain(expected["gradients"]), _gradient_plain(got.get("gradients")), "gradient",
                 atol * slack, rtol * slack))


def compare_samples(expected: list, got: Any) -> Mismatch | None:
    """A random answer's results over several seeds against the solution's: the same kind and shape
    each time, and the same distribution, read as a few statistics of all the floating values (mean,
    spread, quantiles, how much a result changes from one seed to the next). Each statistic may
    differ by four times its spread over the solution's seeds, plus 2%."""
    if not isinstance(got, list) or len(got) != len(expected):
        return Mismatch("the grader could not read your function's results", "no result")
    for want, have in zip(expected, got):
        problem = compare(want, have, (math.inf, math.inf))
        if problem:
            return problem
    mine = torch.stack([_statistics(w.get("return"), w_next.get("return"))
                        for w, w_next in zip(expected, expected[1:] + expected[:1])])
    theirs = torch.stack([_statistics(h.get("return"), h_next.get("return"))
                          for h, h_next in zip(got, got[1:] + got[:1])])
    allowed = 4 * mine.std(dim=0) + 0.02 * mine.mean(dim=0).abs().clamp_min(1e-3)
    off = (theirs.mean(dim=0) - mine.mean(dim=0)).abs() > allowed
    if not off.any():
        return None
    i = int(off.nonzero()[0])
    return Mismatch(
        f"over {len(got)} random seeds, the {STATISTICS[i]} of your results is "
        f"{theirs[:, i].mean():.4g}, the solution's {mine[:, i].mean():.4g} (allowed difference "
        f"{allowed[i]:.3g})", f"over {len(got)} random seeds, the {STATISTICS[i]} of your results differs")


STATISTICS = ("mean", "standard deviation", "5% quantile", "25% quantile", "median", "75% quantile",
              "95% quantile", "change from one seed to the next")


def _statistics(value: Any, following: Any) -> torch.Tensor:
    values, others = _floats(value), _floats(following)
    if values.numel() == 0:
        return torch.zeros(len(STATISTICS), dtype=torch.float64)
    quantiles = torch.quantile(values, torch.tensor([0.05, 0.25, 0.5, 0.75, 0.95], dtype=torch.float64))
    change = (values - others).abs().mean() if others.shape == values.shape else torch.tensor(
        0.0, dtype=torch.float64)
    return torch.cat([values.mean()[None], values.std(unbiased=False)[None], quantiles, change[None]])


def _floats(value: Any) -> torch.Tensor:
    """Every number of a plain result, flattened into one float64 vector."""
    found: list[torch.Tensor] = []

    def walk(item: Any, depth: int = 0) -> None:
        if depth > 8:
            return
        if type(item) in (int, float):
            found.append(torch.tensor([float(item)], dtype=torch.float64))
        elif isinstance(item, dict) and isinstance(item.get("tensor"), torch.Tensor):
            found.append(item["tensor"].to(torch.float64).flatten())
        elif isinstance(item, dict):
            for inner in item.get("seq", []) or [v for _, v in item.get("map", [])]:
                walk(inner, depth + 1)
    walk(value)
    return torch.cat(found) if found else torch.zeros(0, dtype=torch.float64)


def error_class(record: dict) -> str:
    """The exception's class name only, and only a name Python, NumPy, torch or the grader gives its
    own exceptions: its message is the student's text, and so is the name of a class of their own,
    which could spell a hidden input as well as a message."""
    name = str(record.get("error", "")).split(":")[0].strip()
    return name if name in KNOWN_ERRORS else "an exception"


def error_message(record: dict) -> str:
    return str(record.get("error", ""))[:500]


def _gradient_plain(gradients: Any) -> Any:
    """Gradients as plain data that _compare reads: a missing gradient is the string "none"."""
    if not isinstance(gradients, dict):
        return {"object": "no gradients"}
    inputs = gradients.get("inputs") or []
    parameters = gradients.get("parameters") or {}
    return {
        "map": [["inputs", {"seq": ["none" if g is None else g for g in inputs], "len": len(inputs)}],
                [
                    "parameters",
                    {"map": [[k, "none" if g is None else g] for k, g in sorted(parameters.items())]}
                ]]
    }


def _number(value: Any) -> float | None:
    if type(value) in (int, float):
        return float(value)
    return None


def _compare(want: Any, have: Any, name: str, atol: float, rtol: float, checked: dict | None = None,
             path: tuple = ()) -> Mismatch | None:
    if checked and path in checked:
        check = checked[path]
        return (_compare(want, have, name, math.inf, math.inf)
                or _compare_as_check(check["expected"], have, name, check["atol"], check["rtol"]))
    if type(want) is bool or want is None or isinstance(want, str):
        return None if (type(have) is type(want) and have == want) else \
            _differ("values differ", f"{name}: expected {want!r}, got {_show(have)}")
    if type(want) in (int, float):  # a Python number: an int is a float too, a float no int, a tensor neither
        if _number(have) is None or (type(want) is int and type(have) is not int):
            return _differ("type differs",
                           f"{name}: expected a Python number ({type(want).__name__}), got {_show(have)}")
        if _close_numbers(float(want), _number(have), atol, rtol):
            return None
        return _compare_tensors(torch.tensor(float(want), dtype=torch.float64),
                                torch.tensor(_number(have), dtype=torch.float64), name, atol, rtol)
    if not isinstance(want, dict) or not isinstance(have, dict):
        return _differ("type differs", f"{name}: expected {_show(want)}, got {_show(have)}")
    if "tensor" in want:
        if "tensor" not in have or not isinstance(have["tensor"], torch.Tensor):
            return _differ(
                "type differs",
                f"{name}: expected a tensor of shape {tuple(want['tensor'].shape)}, got {_show(have)}")
        if want.get("grad") and have.get("grad") is False:
            return _differ("gradient tracking differs",
                           f"{name}: does not track gradients (was it detached, or computed outside torch?)")
        return _compare_tensors(want["tensor"], have["tensor"], name, atol, rtol)
    if "seq" in want:
        if "seq" not in have or have.get("len") != want.get("len") or len(have["seq"]) != len(want["seq"]):
            return _differ("length differs",
                           f"{name}: expected a sequence of {want.get('len')} items, got {_show(have)}")
        return _first(_compare(w, h, f"{name}[{i}]", atol, rtol, checked, (*path, i))
                      for i, (w, h) in enumerate(zip(want["seq"], have["seq"])))
    if "counter" in want:
        if "counter" not in have:
            return _differ("type differs", f"{name}: expected a Counter, got {_show(have)}")
        mine, theirs = _keyed(want["counter"]), _keyed(have["counter"])
        if sorted(mine) != sorted(theirs):
            differ = sorted(set(mine) ^ set(theirs))[:5]
            return _differ(
                "keys differ", f"{name}: the Counter's keys with non-zero counts differ (for example "
                f"{', '.join(differ)})")
        return _first(_compare(mine[k][1], theirs[k][1], f"{name}[{k}]", atol, rtol) for k in sorted(mine))
    if "map" in want:
        if "map" not in have:
            return _differ("type differs", f"{name}: expected a mapping, got {_show(have)}")
        mine, theirs = _keyed(want["map"]), _keyed(have["map"])
        missing = [k for k in mine if k not in theirs]
        if missing:
            return _differ("keys differ", f"{name}: the mapping has no key {missing[0]}")
        if "len" in want and have.get("len") != want["len"]:  # an argument's keys: extra ones are a change
            extra = [k for k in theirs if k not in mine]
            return _differ("keys differ", f"{name}: the mapping has a key it did not have, {extra[0]}")
        return _first(
            _compare(mine[k][1], theirs[k][1], f"{name}[{k}]", atol, rtol, checked, (*path, mine[k][0]))
            for k in sorted(mine))
    if "set" in want:
        return None if have.get("set") == want["set"] else _differ(
            "values differ", f"{name}: the sets differ")
    if "module" in want:
        shapes = sorted(map(tuple, want["params"].values()))
        if "module" not in have or sorted(map(tuple, (have.get("params") or {}).values())) != shapes:
            return _differ(
                "shape differs",
                f"{name}: expected a module with parameters of shapes {shapes}, got {_show(have)}")
        return _compare_attrs(want, have, name, atol, rtol)
    if "object" in want:
        if have.get("object") != want["object"]:
            return _differ("type differs", f"{name}: expected a {want['object']}, got {_show(have)}")
        if "value" in want:
            return _compare(want["value"], have.get("value"), name, atol, rtol)
        return _compare_attrs(want, have, name, atol, rtol)
    return _differ("type differs", f"{name}: the grader cannot compare {_show(want)}")


def _compare_as_check(expected: Any, have: Any, name: str, atol: float, rtol: float) -> Mismatch | None:
    """As ``check_close`` compares: numbers, tensors and sequences of them alike, by shape and value."""
    if isinstance(expected, dict) and "seq" in expected:
        if not isinstance(have, dict) or "seq" not in have or len(have["seq"]) != len(expected["seq"]):
            return _differ("length differs",
                           f"{name}: expected a sequence of {len(expected['seq'])} items, got {_show(have)}")
        return _first(_compare_as_check(e, h, f"{name}[{i}]", atol, rtol)
                      for i, (e, h) in enumerate(zip(expected["seq"], have["seq"])))
    want, got = _as_tensor(expected), _as_tensor(have)
    if want is None or got is None:
        return _differ("type differs", f"{name}: expected a tensor or a number, got {_show(have)}")
    return _compare_tensors(want, got, name, atol, rtol)


def _as_tensor(value: Any) -> torch.Tensor | None:
    if type(value) in (int, float, bool):
        return torch.tensor(float(value), dtype=torch.float64)
    if isinstance(value, dict) and isinstance(value.get("tensor"), torch.Tensor):
        return value["tensor"]
    return None


def _keyed(pairs: list) -> dict[str, list]:
    return {repr(k): [k, v] for k, v in pairs}


def _compare_attrs(want: dict, have: dict, name: str, atol: float, rtol: float) -> Mismatch | None:
    """Attributes both objects have (a student may keep extra ones, or fewer, in their own class)."""
    mine, theirs = want.get("attrs") or {}, have.get("attrs") or {}
    return _first(_compare(mine[k], theirs[k], f"{name}.{k}", atol, rtol)
                  for k in sorted(set(mine) & set(theirs)) if k != "training")


def _compare_tensors(want: torch.Tensor, have: torch.Tensor, name: str, atol: float,
                     rtol: float) -> Mismatch | None:
    if tuple(have.shape) != tuple(want.shape):
        return _differ("shape differs",
                       f"{name}: expected shape {tuple(want.shape)}, got shape {tuple(have.shape)}")
    # a mask, an index, a token id or a count is its dtype too (torch.long is not int32, nor a float);
    # floating results are compared by value whatever their precision
    exact = want.dtype == torch.bool or have.dtype == torch.bool or not (
        want.is_floating_point() or want.is_complex())
    if exact and want.dtype != have.dtype:
        return _differ("dtype differs", f"{name}: expected dtype {want.dtype}, got dtype {have.dtype}")
    if want.dtype == have.dtype and torch.equal(want, have):  # most answers: one operation, not twelve
        return None
    want64, have64 = want.to(torch.float64), have.to(torch.float64)
    bad_nan = torch.isnan(have64) & ~torch.isnan(want64)
    if bad_nan.any():
        where = tuple(int(i) for i in bad_nan.nonzero()[0])
        return _differ(
            "NaN values", f"{name}: got NaN at index {where} ({int(bad_nan.sum())} NaN values in all); "
            f"expected {want64[where].item():.6g}")
    both_nan = torch.isnan(want64) & torch.isnan(have64)
    same_inf = torch.isinf(want64) & (want64 == have64)
    error = (have64 - want64).abs().masked_fill(both_nan | same_inf, 0.0).nan_to_num(nan=math.inf)
    allowed = atol + rtol * want64.abs().nan_to_num(posinf=0.0, neginf=0.0)
    if not (error > allowed).any():
        return None
    worst = int(torch.argmax(error - allowed))
    where = tuple(int(i) for i in np.unravel_index(worst, tuple(want64.shape))) if want64.dim() else ()
    return _differ(
        "values differ", f"{name}: values differ: max abs error {error.max().item():.4g} at index {where} "
        f"(expected {want64[where].item():.6g}, got {have64[where].item():.6g}); "
        f"allowed atol={atol:g}, rtol={rtol:g}")


def _close_numbers(want: float, have: float, atol: float, rtol: float) -> bool:
    """Two finite (or equal) numbers within the tolerance: what :func:`_compare_tensors` accepts of
    them, in Python arithmetic (a result holds thousands of numbers); anything else goes there."""
    return want == have or (math.isfinite(want) and math.isfinite(have)
                            and abs(have - want) <= atol + rtol * abs(want))


def _first(messages: Iterator[Mismatch | None]) -> Mismatch | None:
    return next((m for m in messages if m), None)


def _show(value: Any) -> str:
    if isinstance(value, dict):
        kind = next(iter(value), "nothing")
        if kind == "tensor":
            return f"a tensor of shape {tuple(value['tensor'].shape)}"
        return {"seq": "a sequence", "map": "a mapping", "module": "a module", "set": "a set",
                "counter": "a Counter"}.get(
            kind, f"a {value.get('object', kind)}")
    return repr(value)[:60]


def arguments_contract(call: dict) -> str:
    """What the contract expected of the arguments after a call, read from what the solution's call
    did with them: left them as given, or changed them as its exercise says."""
    if call.get(CHANGES_ARGUMENTS):
        return ("the exercise fixes what this call leaves in its arguments, such as a model's parameters "
                "after a step or the keys and values a cache holds: yours are not what it says")
    return ("the contract leaves the arguments as they were given, and your function changed one in "
            "place: compute on a copy (x = x / t rather than x /= t, masked_fill rather than masked_fill_)")
