"""The **replay** half of the probes (:mod:`.probes` records them): in the student's sandbox, each
recorded call made again on the student's definitions, its input handed over by the grader when its
check starts (:class:`course_tools.grading.channel.ProbeServer`), with everything its exercise forbids
blocked (:func:`guard`); its result (and gradients, where the cell checks them) saved in plain form.
"""
from __future__ import annotations

import contextlib
import io
import pickle
import random
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

from course_lib.roles import match_parameters

from .plain import describe_error, mutable, plain
from .probes import (
    INITIAL,
    PERTURBED_SEED,
    SELF_AFTER,
    gradients,
    initial_values,
    restore_gradients,
    set_rng_state,
)


@contextlib.contextmanager
def guard(names: list[str], forbid: Any, resolve: Any, exercise: str, allowed: tuple = ()) -> Iterator[None]:
    """``forbid`` the names (every spelling: see :func:`course_lib.guards.forbid`) while the student's
    code runs. A name that no longer exists (a course_lib reference the redacted build stubbed into a
    class without that method) has nothing left to block, and neither has a reference the test binds
    as the correct version of a dependency (``allowed``)."""
    present = []
    for dotted in dict.fromkeys(names):
        try:
            owner, attribute = resolve(dotted)
        except (AttributeError, ImportError):
            continue
        if not any(getattr(owner, attribute, None) is obj for obj in allowed):
            present.append(dotted)
    with forbid(*present, exercise=exercise):
        yield


def replay(
    index: int,
    calls: list[dict],
    inputs: dict[int, bytes],
    captured: dict,
    namespace: dict,
    *,
    forbid: Any,
    resolve: Any,
    guarded: list[str],
    perturb: bool = False,
    bind_references: bool = False,
    seed: int | None = None,
) -> dict:
    """Run probe ``index`` on the student's definitions, its inputs (and those of the call that built
    its object, for a method) unpickled from ``inputs``; its record in plain form.

    ``guarded``: what the exercise forbids, blocked while the call runs.
    ``bind_references``: the graded names the test cell bound to course_lib's references while it
    called the student's function are bound to them again (one bug costs one exercise).
    ``seed``: the call runs from this random state instead of the recorded one (a random answer is
    compared by the distribution of its results over several seeds:
    :func:`course_tools.grading.compare.compare`).
    """
    meta = calls[index]
    target = captured.get(meta["target"])
    if target is None:
        return {"error": f"NameError: {meta['target']} is not defined"}
    snapshot = _load(inputs[index], captured, namespace)
    restore_gradients(snapshot["args"], snapshot.get("stale_grads", {}))
    references = (
        {name: resolve_object(dotted, resolve) for name, dotted in meta.get("binds", {}).items()}
        if bind_references
        else {}
    )
    try:
        with (
            guard(guarded, forbid, resolve, "grader's replay", tuple(references.values())),
            torch.set_grad_enabled(snapshot["grad"]),
            _bound(namespace, captured, references),
        ):
            parameters: dict[str, torch.Tensor] = {}
            if meta["kind"] == "method":
                built = _load(inputs[meta["instance"]], captured, namespace)
                set_rng_state(built["rng"])
                obj = target(*built["args"], **built["kwargs"])
                parameters = _load_state(obj, snapshot["state"])
                function, args = getattr(target, meta["method"]), (obj, *snapshot["args"])
            else:
                function, args = target, snapshot["args"]
            set_rng_state(snapshot["rng"])
            if perturb or seed is not None:
                reseed = PERTURBED_SEED if seed is None else seed
                torch.manual_seed(reseed)
                random.seed(reseed)
                np.random.seed(reseed)
            result = function(*args, **snapshot["kwargs"])
            record = {
                "return": plain(result),
                "args_after": mutable([list(snapshot["args"]), snapshot["kwargs"]]),
            }
            if meta.get(INITIAL):  # the test checked these of the module as built (weights at initialisation)
                record[INITIAL] = initial_values(result, meta[INITIAL])
            if meta.get(SELF_AFTER):  # the solution's method changed its module's parameters: compare them
                record[SELF_AFTER] = plain(parameters)
            if meta.get("gradients"):
                record["gradients"] = gradients(result, (snapshot["args"], snapshot["kwargs"]), parameters)
    # SystemExit and KeyboardInterrupt too: the answer is wrong, the grader goes on
    except BaseException as error:
        return describe_error(error)
    return record


def exercise_guards(calls: list[dict]) -> dict[str, list[str]]:
    """Graded name -> every name its tests forbid, in any of its checks: what is blocked whenever that
    name's code runs (its answer cell, each of its replays), so that no check of it is unguarded."""
    guards: dict[str, dict[str, None]] = {}
    for call in calls:
        guards.setdefault(call["target"], {}).update(dict.fromkeys(call["forbid"]))
    return {target: list(names) for target, names in guards.items()}


def resolve_object(dotted: str, resolve: Any) -> Any:
    owner, attribute = resolve(dotted)
    return getattr(owner, attribute)


@contextlib.contextmanager
def _bound(namespace: dict, captured: dict, objects: dict) -> Iterator[None]:
    """Bind graded names to other objects in the student's namespace (and the grader's copy of it)."""
    saved = [(where, name, where.get(name, _MISSING)) for where in (namespace, captured) for name in objects]
    try:
        for where, name, _ in saved:
            where[name] = objects[name]
        yield
    finally:
        for where, name, old in saved:
            if old is _MISSING:
                where.pop(name, None)
            else:
                where[name] = old


_MISSING = object()


def _load(blob: bytes, captured: dict, namespace: dict) -> dict:
    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module == "__main__":
                if name in captured:
                    return captured[name]
                if name in namespace:
                    return namespace[name]
            return super().find_class(module, name)

    return Unpickler(io.BytesIO(blob)).load()


def _load_state(obj: Any, state: dict | None) -> dict[str, torch.Tensor]:
    """Give the student's freshly built module the reference's parameters at the time of the call.

    Parameters are paired by :func:`course_lib.roles.match_parameters`, the rule that the notebooks'
    checks apply too. Returns reference name -> the student's parameter.
    """
    if state is None:
        return {}
    if not isinstance(obj, nn.Module):
        raise TypeError(f"expected an nn.Module, built a {type(obj).__name__}")
    own = dict(obj.named_parameters())
    mapping = {key: own[name] for key, name in match_parameters(own, state["params"]).items()}
    with torch.no_grad():
        for key, value in state["params"].items():
            mapping[key].copy_(value)
        buffers = dict(obj.named_buffers())
        for key, value in state["buffers"].items():
            if key in buffers and buffers[key].shape == value.shape:
                buffers[key].copy_(value)
    for key, module in obj.named_modules():
        module.training = state["training"].get(key, module.training)
    return mapping
