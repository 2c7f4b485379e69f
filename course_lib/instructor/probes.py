"""Checking a student's answers where the student's code cannot reach the comparison.

A graded test cell runs in the same Python process as the student's code, so the student's code can
make it report anything (patch ``check_close``, ``torch.allclose``, IPython's hooks ...). What it
cannot forge is what its functions return on inputs it has not seen, compared by a process it cannot
touch. So, generically over the existing test cells:

- **record** (the instructor's solution, sandboxed): every call a graded test cell makes to a graded
  function, class or method is saved as a *probe*: its arguments (pickled), the random generators'
  state, grad mode, the ``forbid()`` names in force, the module's parameters for a method call,
  and its result in a *plain* form (tensors, numbers, strings, lists, dicts);
- **replay** (the student's notebook, in its own sandbox, after its cells ran): the same calls on
  the student's definitions, with the forbidden references blocked, results saved in plain form;
- **compare** (the trusted grader, outside): plain results are read with
  ``torch.load(weights_only=True)``, which cannot run code, and compared with the recorded ones.
"""
from __future__ import annotations

import contextlib
import functools
import pickle
import random
import types
import weakref
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

from .plain import describe_error, plain

PERTURBED_SEED = 987_654_321  # replayed a second time from this state, a call that uses randomness shows it
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
        self.depth = 0
        self.forbidden: list[str] = []
        self.instances: dict[int, int] = {}  # id(instance) -> index of the call that built it

    def install(self) -> None:
        """Follow ``course_lib.grading.forbid`` so that each probe knows what it must not call."""
        from course_lib import grading

        original = grading.forbid

        @contextlib.contextmanager
        def forbid(*names: str, exercise: str = "exercise") -> Iterator[None]:
            with original(*names, exercise=exercise):
                self.forbidden.extend(names)
                try:
                    yield
                finally:
                    del self.forbidden[len(self.forbidden) - len(names):]

        grading.forbid = forbid

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
            if isinstance(function, types.FunctionType) and (attribute == "__init__" or not attribute.startswith("__")):
                kind = "new" if attribute == "__init__" else "method"
                setattr(cls, attribute, self._wrapped(name, kind, attribute, function))

    def _call(self, target: str, kind: str, method: str | None, function: Any, args: tuple, kwargs: dict) -> Any:
        instance = self.instances.get(id(args[0])) if kind == "method" else None
        if self.depth or self.cell is None or (kind != "call" and type(args[0]).__name__ != target):
            self.depth += 1
            try:
                return function(*args, **kwargs)
            finally:
                self.depth -= 1
        index = len(self.calls)
        meta = {"cell": self.cell, "target": target, "kind": kind, "method": method,
                "instance": instance, "forbid": list(self.forbidden), "unreplayable": None}
        if kind == "method" and instance is None:
            meta["unreplayable"] = "the object was not built by the test cell"
        own = args[1:] if kind != "call" else args
        try:
            blob = pickle.dumps({"args": own, "kwargs": kwargs, "rng": rng_state(), "grad": torch.is_grad_enabled(),
                                 "state": module_state(args[0]) if kind == "method" else None}, protocol=4)
        except Exception as error:  # lambdas, generators, tensors in a graph ...
            blob, meta["unreplayable"] = None, f"its arguments cannot be saved ({type(error).__name__})"
        self.calls.append(meta)
        self.blobs.append(blob)
        self.results.append({})
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
        self.results[index] = {"return": plain(args[0] if kind == "new" else result),
                               "args_after": plain([list(own), kwargs])}
        return result

    def save(self, folder: Path) -> None:
        import json

        (folder / "probes").mkdir(exist_ok=True)
        for index, blob in enumerate(self.blobs):
            if blob is not None:
                (folder / "probes" / f"{index}.pkl").write_bytes(blob)
            torch.save(self.results[index], folder / "probes" / f"{index}.expected.pt")
        (folder / "probes.json").write_text(json.dumps(self.calls), encoding="utf-8")


# ---------------------------------------------------------------- replay (student's run) ----

def _blocked(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("this exercise asks you to write it yourself: the grader blocked a reference implementation")


@contextlib.contextmanager
def blocked(names: list[str], forbid: Any, resolve: Any) -> Iterator[None]:
    """``forbid`` the names, and also swap the code of the Python functions among them, so that an
    alias taken before the test (``from course_lib.rnn import rnn_forward as ref``) is blocked too."""
    swapped = []
    try:
        for dotted in names:
            owner, attribute = resolve(dotted)
            function = getattr(owner, attribute, None)
            if isinstance(function, types.FunctionType) and not function.__code__.co_freevars:
                swapped.append((function, function.__code__))
                function.__code__ = _blocked.__code__
        with forbid(*names, exercise="grader's replay"):
            yield
    finally:
        for function, code in swapped:
            function.__code__ = code


def replay(index: int, calls: list[dict], folder: Path, captured: dict, namespace: dict, *,
           forbid: Any, resolve: Any, perturb: bool = False) -> dict:
    """Run probe ``index`` on the student's definitions; its record in plain form."""
    meta = calls[index]
    target = captured.get(meta["target"])
    if target is None:
        return {"error": f"NameError: {meta['target']} is not defined"}
    snapshot = _load(folder / f"{index}.pkl", captured, namespace)
    try:
        with blocked(meta["forbid"], forbid, resolve), torch.set_grad_enabled(snapshot["grad"]):
            if meta["kind"] == "method":
                built = _load(folder / f"{meta['instance']}.pkl", captured, namespace)
                set_rng_state(built["rng"])
                obj = target(*built["args"], **built["kwargs"])
                _load_state(obj, snapshot["state"])
                function, args = getattr(target, meta["method"]), (obj, *snapshot["args"])
            else:
                function, args = target, snapshot["args"]
            set_rng_state(snapshot["rng"])
            if perturb:
                torch.manual_seed(PERTURBED_SEED)
                random.seed(PERTURBED_SEED)
                np.random.seed(PERTURBED_SEED)
            result = function(*args, **snapshot["kwargs"])
    except BaseException as error:  # SystemExit and KeyboardInterrupt too: the answer is wrong, the grader goes on
        return describe_error(error)
    return {"return": plain(result), "args_after": plain([list(snapshot["args"]), snapshot["kwargs"]])}


def _load(path: Path, captured: dict, namespace: dict) -> dict:
    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module == "__main__":
                if name in captured:
                    return captured[name]
                if name in namespace:
                    return namespace[name]
            return super().find_class(module, name)

    with open(path, "rb") as stream:
        return Unpickler(stream).load()


def _load_state(obj: Any, state: dict | None) -> None:
    """Give the student's freshly built module the reference's parameters at the time of the call."""
    if state is None:
        return
    if not isinstance(obj, nn.Module):
        raise TypeError(f"expected an nn.Module, built a {type(obj).__name__}")
    own = dict(obj.named_parameters())
    shapes = {k: tuple(v.shape) for k, v in own.items()}
    wanted = {k: tuple(v.shape) for k, v in state["params"].items()}
    if shapes != wanted:
        missing, extra = sorted(set(wanted) - set(shapes)), sorted(set(shapes) - set(wanted))
        raise AttributeError(f"the module's parameters differ from the reference's (missing {missing}, "
                             f"unexpected {extra}, or other shapes): use the attribute names the docstring gives")
    with torch.no_grad():
        for key, value in state["params"].items():
            own[key].copy_(value)
        buffers = dict(obj.named_buffers())
        for key, value in state["buffers"].items():
            if key in buffers and buffers[key].shape == value.shape:
                buffers[key].copy_(value)
    for key, module in obj.named_modules():
        module.training = state["training"].get(key, module.training)
