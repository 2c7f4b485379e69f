"""Checking a student's answers where the student's code cannot reach the comparison.

A graded test cell run in the student's process could be made to report anything (patch
``check_close``, ``torch.allclose``, IPython's hooks ...). So no test cell runs there. What the
student's code cannot forge is what its functions return on inputs it has not seen, compared by a
process it cannot touch. Generically over the test cells as the instructor wrote them:

- **record** (the instructor's solution, sandboxed, with the full course_lib): every call a graded
  test cell makes to a graded function, class or method is saved as a *probe*: its arguments
  (pickled), the random generators' state, grad mode, the ``forbid()`` names in force, the
  ``bind()`` dependencies in force, the module's parameters for a method call, whether the cell is
  visible or hidden, the tightest ``check_close`` tolerance applied to its results, whether the cell
  checks gradients, and the result in a *plain* form (tensors, numbers, strings, lists, dicts);
- **replay** (the student's answer cells and the notebook's other cells, in their own sandbox, with
  a course_lib whose references of this assignment are stubbed out: :mod:`.redacted`): the same
  calls on the student's definitions, each call's input handed over by the grader when its check
  starts (:class:`~course_tools.grading.channel.ProbeServer`), with everything its exercise forbids blocked
  (:func:`.replay.guard`), results (and gradients, where the cell checks them) saved in plain form;
- **compare** (the trusted grader, outside: :func:`course_tools.grading.compare.compare`): plain results are
read with
  ``torch.load(weights_only=True)``, which cannot run code, and compared with the recorded ones.
"""
from __future__ import annotations

import contextlib
import functools
import math
import random
import types
import weakref
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

from . import tensor_pickle
from .plain import DEFAULT_TOLERANCE, describe_error, mutable, plain, same_state

INITIAL = "initial"  # a test's checks of a module's parameters as built: (INITIAL, name) in a probe's checks
# a method's module parameters after the call (named as the solution's), when it sets them
SELF_AFTER = "self_after"
# in a probe's metadata: whether the solution's call changed its arguments (a training step, a cache
# appended to) or left them as given, which is the contract a student's different arguments after
# the call broke (course_tools.grading.student names it)
CHANGES_ARGUMENTS = "changes_arguments"
PERTURBED_SEED = 987_654_321  # replayed a second time from this state, a call that uses randomness shows it
SAMPLE_SEEDS = tuple(range(1_000, 1_008))  # the random states a random answer is replayed from


# ---------------------------------------------------------------- record (instructor's run) ----

def rng_state() -> dict:
    return {"torch": torch.get_rng_state(), "random": random.getstate(), "numpy": np.random.get_state()}


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["random"])
    np.random.set_state(state["numpy"])


def module_state(obj: Any) -> dict | None:
    if not isinstance(obj, nn.Module):
        return None
    return {"params": {k: p.detach().clone() for k, p in obj.named_parameters()},
            "buffers": {k: b.detach().clone() for k, b in obj.named_buffers()},
            "training": {k: m.training for k, m in obj.named_modules()}}


class Recorder:
    """Wraps graded definitions in the instructor's run and saves every call a test cell makes."""

    def __init__(self) -> None:
        self.calls: list[dict] = []  # metadata, JSON-able
        self.blobs: list[bytes | None] = []
        self.results: list[dict] = []
        self.cell: str | None = None  # grade_id of the test cell running, None outside test cells
        self.segment = "visible"  # the part of that cell running: "visible" or "hidden"
        self.variant = 0  # whose hidden inputs it draws (another in a fork of the hidden part: .variants)
        self.depth = 0
        self.forbidden: list[str] = []
        self.bound: dict[str, str] = {}  # graded name -> dotted name of the reference bind() put there
        self.instances: dict[int, int] = {}  # id(instance) -> index of the call that built it
        self.unchecked: list[int] = []  # probes whose results the next check_close calls look at
        self.live: dict[int, Any] = {}  # their results, to recognise them in a check_close call
        self.checked = False  # a check_close ran since the last probe
        self.gradient_cells: set[str] = set()

    def install(self) -> None:
        """Follow ``course_lib.grading``'s ``forbid``, ``bind`` and ``check_close``, and torch's
        gradient entry points, so that each probe knows what it must not call, which dependencies
        are the reference's, how precisely its result is checked and whether gradients are."""
        from course_lib import grading

        forbid, bind, check_close = grading.forbid, grading.bind, grading.check_close

        @contextlib.contextmanager
        def recorded_forbid(*names: str, exercise: str = "exercise") -> Iterator[None]:
            with forbid(*names, exercise=exercise):
                self.forbidden.extend(names)
                try:
                    yield
                finally:
                    del self.forbidden[len(self.forbidden) - len(names):]

        @contextlib.contextmanager
        def recorded_bind(namespace: dict, **objects: Any) -> Iterator[None]:
            saved = dict(self.bound)
            self.bound.update(
                {name: dotted
                 for name, obj in objects.items() if (dotted := reference_name(obj))})
            try:
                with bind(namespace, **objects):
                    yield
            finally:
                self.bound = saved

        def recorded_check_close(exercise: str, got: Any, expected: Any, *, atol: float = 1e-5,
                                 rtol: float = 1e-5, **kwargs: Any) -> None:
            """A check of a probe's result itself (or of one item of it) is kept as it is: the value it
            expected, at its tolerance. Any other check (of a slice, a sum ...) tightens the tolerance
            of the comparison with the solution's result."""
            matched = False
            for index in self.unchecked:
                path = path_to(self.live.get(index), got)
                if path is None and isinstance(self.live.get(index), nn.Module):  # a built module's parameter
                    name = named_tensor(self.live[index], got)
                    if name is not None:
                        path = (INITIAL, name)
                        self.calls[index].setdefault(INITIAL, []).append(name)
                if path is not None:
                    self.results[index].setdefault("checks", []).append(
                        {"path": list(path), "expected": plain(expected), "atol": atol, "rtol": rtol})
                    matched = True
            if not matched:
                for index in self.unchecked:
                    tolerance = self.calls[index]["tolerance"] or [math.inf, math.inf]
                    self.calls[index]["tolerance"] = [min(tolerance[0], atol), min(tolerance[1], rtol)]
            self.checked = True
            return check_close(exercise, got, expected, atol=atol, rtol=rtol, **kwargs)

        grading.forbid, grading.bind = recorded_forbid, recorded_bind
        grading.check_close = recorded_check_close
        for owner, name in ((torch.autograd, "grad"), (torch.Tensor, "backward")):
            setattr(owner, name, self._noting_gradients(getattr(owner, name)))

    def _noting_gradients(self, function: Any) -> Any:
        @functools.wraps(function)
        def noted(*args: Any, **kwargs: Any) -> Any:
            if self.cell is not None:
                self.gradient_cells.add(self.cell)
            return function(*args, **kwargs)

        return noted

    def wrap(self, namespace: dict, names: list[str]) -> None:
        for name in names:
            obj = namespace.get(name)
            if isinstance(obj, type):
                self._wrap_class(name, obj)
            elif callable(obj):
                namespace[name] = self._wrapped(name, "call", None, obj)

    def _wrapped(self, target: str, kind: str, method: str | None, function: Any) -> Any:
        @functools.wraps(function)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            return self._call(target, kind, method, function, args, kwargs)

        return recorded

    def _wrap_class(self, name: str, cls: type) -> None:
        for attribute, function in list(vars(cls).items()):
            if isinstance(function, types.FunctionType) and (
                attribute == "__init__" or not attribute.startswith("__")
            ):
                kind = "new" if attribute == "__init__" else "method"
                setattr(cls, attribute, self._wrapped(name, kind, attribute, function))

    def _call(
        self, target: str, kind: str, method: str | None, function: Any, args: tuple, kwargs: dict
    ) -> Any:
        instance = self.instances.get(id(args[0])) if kind == "method" else None
        if self.depth or self.cell is None or (kind != "call" and type(args[0]).__name__ != target):
            self.depth += 1
            try:
                return function(*args, **kwargs)
            finally:
                self.depth -= 1
        index = len(self.calls)
        meta = {
            "cell": self.cell,
            "segment": self.segment,
            "variant": self.variant if self.segment == "hidden" else None,
            "target": target,
            "kind": kind,
            "method": method,
            "instance": instance,
            "forbid": list(self.forbidden),
            "binds": dict(self.bound),
            "tolerance": None,
            "gradients": False,
            "unreplayable": None,
        }
        if kind == "method" and instance is None:
            meta["unreplayable"] = "the object was not built by the test cell"
        own = args[1:] if kind != "call" else args
        try:
            blob = tensor_pickle.dumps(
                {
                    "args": own,
                    "kwargs": kwargs,
                    "rng": rng_state(),
                    "grad": torch.is_grad_enabled(),
                    "state": module_state(args[0]) if kind == "method" else None,
                    "stale_grads": stale_gradients(own),
                }
            )
        except Exception as error:  # lambdas, generators, tensors in a graph ...
            blob, meta["unreplayable"] = None, f"its arguments cannot be saved ({type(error).__name__})"
        if self.checked:
            self.unchecked, self.checked, self.live = [], False, {}
        self.unchecked.append(index)
        self.calls.append(meta)
        self.blobs.append(blob)
        self.results.append({})
        before = (
            {k: p.detach().clone() for k, p in args[0].named_parameters()}
            if kind == "method" and isinstance(args[0], nn.Module)
            else {}
        )
        arguments = mutable([list(own), kwargs])
        self.depth += 1
        try:
            result = function(*args, **kwargs)
        except Exception as error:
            self.results[index] = describe_error(error)
            raise
        finally:
            self.depth -= 1
        if kind == "new":
            self.instances[id(args[0])] = index
            weakref.finalize(args[0], self.instances.pop, id(args[0]), None)
        self.results[index] = {
            "return": plain(args[0] if kind == "new" else result),
            "args_after": mutable([list(own), kwargs]),
        }
        meta[CHANGES_ARGUMENTS] = not same_state(arguments, self.results[index]["args_after"])
        after = dict(args[0].named_parameters()) if before else {}
        if any(k not in after or not torch.equal(v, after[k].detach()) for k, v in before.items()):
            meta[
                # a method that sets the module's weights (load_from_torch): they are compared
                SELF_AFTER
            ] = True
            self.results[index][SELF_AFTER] = plain(after)
        self.live[index] = args[0] if kind == "new" else result
        return result

    def save(self, folder: Path) -> None:
        """The probes' inputs, metadata and results; a probe's gradients are added by the check run."""
        import json

        (folder / "probes").mkdir(exist_ok=True)
        for index, blob in enumerate(self.blobs):
            self.calls[index]["gradients"] = self.calls[index]["cell"] in self.gradient_cells
            self.calls[index]["tolerance"] = self.calls[index]["tolerance"] or list(DEFAULT_TOLERANCE)
            if blob is not None:
                (folder / "probes" / f"{index}.pkl").write_bytes(blob)
            torch.save(self.results[index], folder / "probes" / f"{index}.expected.pt")
        (folder / "probes.json").write_text(json.dumps(self.calls), encoding="utf-8")


def path_to(container: Any, target: Any, depth: int = 0) -> tuple | None:
    """Where ``target`` (the very object) sits in a result: () for the result itself, (1,) for its
    second item, ("key",) for a mapping's value; None when it is not there."""
    if container is target:
        return ()
    if depth < 4 and isinstance(container, (tuple, list)):
        for i, item in enumerate(container):
            found = path_to(item, target, depth + 1)
            if found is not None:
                return (i, *found)
    if depth < 4 and isinstance(container, dict):
        for key, item in container.items():
            found = path_to(item, target, depth + 1) if isinstance(key, (str, int)) else None
            if found is not None:
                return (key, *found)
    return None


def stale_gradients(args: tuple) -> dict[int, dict[str, torch.Tensor]]:
    """The ``.grad`` of the parameters of each module among ``args`` (pickling a module drops them,
    and a training step must zero what an earlier step left)."""
    return {
        i: {name: p.grad.detach().clone() for name, p in arg.named_parameters() if p.grad is not None}
        for i, arg in enumerate(args)
        if isinstance(arg, nn.Module)
    }


def restore_gradients(args: tuple, grads: dict[int, dict[str, torch.Tensor]]) -> None:
    for i, named in grads.items():
        parameters = dict(args[i].named_parameters())
        for name, grad in named.items():
            parameters[name].grad = grad


def named_tensor(module: nn.Module, target: Any) -> str | None:
    """The name of ``target`` (the very tensor) among ``module``'s parameters and buffers, if it is one."""
    for name, tensor in (*module.named_parameters(), *module.named_buffers()):
        if tensor is target:
            return name
    return None


def initial_values(module: Any, names: list[str]) -> dict[str, Any]:
    """The named parameters and buffers of a module just built, in plain form (None where missing)."""
    found = (
        dict((*module.named_buffers(), *module.named_parameters())) if isinstance(module, nn.Module) else {}
    )
    return {name: plain(found[name]) if name in found else None for name in names}


def reference_name(obj: Any) -> str | None:
    """``course_lib.attention.softmax`` for course_lib's softmax; None for anything not in course_lib."""
    module, name = getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", None) or ""
    return f"{module}.{name}" if module.startswith("course_lib.") and name and "<" not in name else None


def _tensors(value: Any, depth: int = 0) -> list[torch.Tensor]:
    """The tensors in a (nested) result or argument list, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 8:
        return []
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item, depth + 1)]
    if isinstance(value, dict):
        return [t for key in sorted(value, key=repr) for t in _tensors(value[key], depth + 1)]
    return []


def gradients(result: Any, inputs: Any, parameters: dict[str, torch.Tensor]) -> dict:
    """The gradient of a fixed random projection of the result with respect to each floating input
    that requires it and each parameter (named as in the reference): a check that the result
    depends on its inputs as the reference's does, not only in value."""
    outputs = [t for t in _tensors(result) if t.is_floating_point() and t.requires_grad]
    leaves = [t for t in _tensors(inputs) if t.is_floating_point() and t.requires_grad]
    names = sorted(parameters)
    wrt = leaves + [parameters[n] for n in names]
    if not outputs or not wrt:
        return {"inputs": [None] * len(leaves), "parameters": {n: None for n in names}}
    generator = torch.Generator().manual_seed(0)
    total = sum((o * torch.randn(o.shape, generator=generator, dtype=o.dtype)).sum() for o in outputs)
    found = torch.autograd.grad(total, wrt, allow_unused=True)
    plain_grads = [None if g is None else plain(g) for g in found]
    return {"inputs": plain_grads[: len(leaves)], "parameters": dict(zip(names, plain_grads[len(leaves) :]))}
