"""Results as plain data, made inside the sandbox.

A replayed call's result leaves the student's sandbox as *plain* data only: tensors, numbers,
strings, and lists and dicts of them, which ``torch.load(weights_only=True)`` reads back without
running any code. Objects are reduced to their class name and simple public attributes, modules to
their parameter names and shapes. The trusted grader compares them (:mod:`course_tools.grading.compare`).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

MAX_ITEMS = 10_000  # longest list/dict kept in a plain result
OPTIMIZER_SETTINGS = ("lr", "weight_decay", "betas", "eps", "momentum")  # the maths; not foreach, fused ...
DEFAULT_TOLERANCE = (1e-5, 1e-5)  # (atol, rtol) of check_close; a probe gets its cell's tighter ones


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as data that ``torch.load(weights_only=True)`` reads back: no code, no custom classes."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        tensor = tensor.to_dense() if tensor.is_sparse else tensor
        tensor = torch.view_as_real(tensor.resolve_conj()) if tensor.is_complex() else tensor
        return {"tensor": tensor.clone().contiguous(), "grad": bool(value.requires_grad)}
    if isinstance(value, np.float64):  # a Python float (its subclass): check_number(float) takes it too
        return float(value)
    if isinstance(value, (np.integer, np.floating)):  # not a Python number, as check_number says: kept apart
        return {"object": f"numpy.{type(value).__name__}", "value": value.item()}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype == object:
            return {"object": "numpy.ndarray[object]"}
        return {
            "tensor": torch.from_numpy(array.astype(np.float64 if array.dtype.kind in "fcu" else array.dtype))
        }
    if isinstance(value, (bool, int, float, str)):  # subclasses (IntEnum, a float with a lying __eq__ ...)
        return {"object": type(value).__qualname__, "value": plain(type(value).__mro__[-2](value))}
    if depth > 8:
        return {"object": "nested too deep"}
    if isinstance(value, torch.optim.Optimizer):  # what it will do: its groups' settings and parameters
        shapes: dict[str, list] = {}  # groups with the same settings act as one
        settings: dict[str, dict] = {}
        for group in value.param_groups:
            key = repr(sorted((k, v) for k, v in group.items() if k in OPTIMIZER_SETTINGS))
            settings[key] = dict(sorted((k, v) for k, v in group.items() if k in OPTIMIZER_SETTINGS))
            shapes.setdefault(key, []).extend(list(p.shape) for p in group["params"])
        groups = [{**settings[key], "parameter shapes": sorted(shapes[key])} for key in sorted(shapes)
                  if shapes[key]]
        return {"object": type(value).__qualname__, "attrs": {"groups": plain(groups, depth + 1)}}
    if isinstance(value, nn.Module):
        return {"module": type(value).__qualname__, "attrs": _attrs(value, depth),
                "params": {k: list(p.shape) for k, p in value.named_parameters()}}
    if isinstance(value, collections.Counter):  # a missing key counts 0: only the non-zero counts matter
        items = sorted(((k, v) for k, v in value.items() if v), key=lambda item: repr(item[0]))[:MAX_ITEMS]
        return {"counter": [[plain(k, depth + 1), plain(v, depth + 1)] for k, v in items]}
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


def mutable(value: Any, depth: int = 0) -> Any:
    """What a call may have changed in its arguments: tensors (changed in place, or not), the
    public numbers of objects (a stand-in model's count of decode calls) and the public tensors of
    objects that are not modules (a KV cache's keys and values, None until the first append). A
    module's train/eval mode and everything else are the answer's own business, so they are left out.
    Inside lists and dicts, numbers and strings are kept too (an item can be replaced), and sets and
    arrays as :func:`plain` keeps them: what ``course_lib.grading.unchanged`` sees change, this does."""
    if isinstance(value, torch.Tensor):
        return {"tensor": value.detach().cpu().clone()}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, (np.ndarray, set, frozenset)):
        return plain(value)
    if depth < 4 and (isinstance(value, nn.Module) or
                      hasattr(value, "__dict__")) and not isinstance(value, type):
        counts = {k: v for k, v in vars(value).items() if not k.startswith("_") and k != "training"
                  and type(v) in (int, float, bool)}
        if isinstance(value, nn.Module):  # a training step changes the parameters it is given
            counts.update(
                {f"parameter {k}": {"tensor": p.detach().cpu().clone()}
                 for k, p in value.named_parameters()})
        else:
            counts.update({k: None if v is None else {"tensor": v.detach().cpu().clone()}
                           for k, v in vars(value).items()
                           if not k.startswith("_") and (v is None or isinstance(v, torch.Tensor))})
        return {"object": type(value).__qualname__, "attrs": counts}
    if depth < 4 and isinstance(value, (list, tuple)):
        return {"seq": [mutable(v, depth + 1) for v in list(value)[:MAX_ITEMS]], "len": len(value)}
    if depth < 4 and isinstance(value, dict):  # its length too: a key added to an argument is a change
        return {
            "map": [[repr(k), mutable(v, depth + 1)]
                    for k, v in sorted(value.items(), key=lambda i: repr(i[0]))], "len": len(value)
        }
    return None


def same_state(before: Any, after: Any) -> bool:
    """Whether two results of :func:`mutable` are equal (NaN equal to NaN): whether a call left its
    arguments as it was given them."""
    if isinstance(before, torch.Tensor) or isinstance(after, torch.Tensor):
        if not (isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor)) or \
                before.shape != after.shape or before.dtype != after.dtype:
            return False
        same = before == after
        return bool((same | (before.isnan() & after.isnan()) if before.is_floating_point() else same).all())
    if isinstance(before, dict) and isinstance(after, dict):
        return before.keys() == after.keys() and all(same_state(before[k], after[k]) for k in before)
    if isinstance(before, list) and isinstance(after, list):
        return len(before) == len(after) and all(same_state(b, a) for b, a in zip(before, after))
    return type(before) is type(after) and before == after


def _attrs(obj: Any, depth: int) -> dict:
    """Public attributes holding numbers, strings or tensors (a config's fields, a counter ...)."""
    kept = {}
    for name, value in sorted(vars(obj).items()):
        if not name.startswith("_") and (type(value) in (bool, int, float, str) or
                                         isinstance(value, torch.Tensor)):
            kept[name] = plain(value, depth + 1)
    return kept


def describe_error(error: BaseException) -> dict:
    return {"error": f"{type(error).__name__}: {str(error)[:500]}"}
