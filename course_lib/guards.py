"""forbid() and bind(): which library calls an exercise may make, and which versions of earlier
exercises it sees while it is checked (:mod:`course_lib.grading` re-exports both)."""
from __future__ import annotations

import _thread
import contextlib
import importlib
import re
import sys
import threading
import types
import warnings
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode

from course_lib.allowlist import review_answer
from course_lib.grading_errors import ForbiddenCallError, ThreadRefusedError

_MISSING = object()  # marks an attribute that forbid() found only on a base class


def resolve_dotted(dotted: str) -> tuple[Any, str]:
    """Split ``"torch.nn.RNN.forward"`` into the object that owns the attribute and its name."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:-1]:
            owner = getattr(owner, attribute)
        if not hasattr(owner, parts[-1]):
            raise AttributeError(f"forbid(): {dotted} does not exist")
        return owner, parts[-1]
    raise ImportError(f"forbid(): cannot import any module of {dotted}")


def _words(name: str) -> tuple[str, ...]:
    """``RNNCell`` -> ("rnn", "cell"), ``scaled_dot_product_attention`` -> ("scaled", "dot", "product",
    "attention")."""
    return tuple(w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z]|\d|_|$)|[A-Z]?[a-z]+|\d+", name))


def kernel_words(owner: Any, attribute: str) -> tuple[str, ...]:
    """The words a torch kernel behind a forbidden name has in its own name: the kernels behind
    ``nn.RNNCell.forward`` are ``rnn_tanh_cell`` and ``rnn_relu_cell`` ("rnn", "cell"), behind
    ``F.cross_entropy`` ``cross_entropy_loss``, behind ``torch.softmax`` ``_softmax`` and
    ``log_softmax``. A module's forward is named by its class, a function or a tensor method by its
    own name; a constructor or any other method has no kernel (it is blocked where it is defined).
    Nothing of course_lib: its references are not in a grader's sandbox at all."""
    module = getattr(owner, "__module__", None) if isinstance(owner, type) else getattr(owner, "__name__", "")
    if not str(module or "").startswith("torch"):
        return ()
    if isinstance(owner, type) and owner is not torch.Tensor:
        return _words(owner.__name__) if attribute == "forward" and issubclass(owner, torch.nn.Module) else ()
    return _words(attribute)


def spellings(owner: Any, attribute: str) -> list[tuple[Any, str]]:
    """Where a forbidden attribute must be replaced: its owner, and for a constructor every base class
    below ``nn.Module`` that defines one too (``nn.RNN(...)`` builds its weights in
    ``nn.RNNBase.__init__``, which a student could call on an object made with ``__new__``)."""
    found = [(owner, attribute)]
    if isinstance(owner, type) and attribute == "__init__" and issubclass(owner, torch.nn.Module):
        found += [(base, attribute) for base in owner.__mro__[1:owner.__mro__.index(torch.nn.Module)]
                  if attribute in vars(base)]
    return found


def _normalised(name: str) -> str:
    return name.split(".")[0].replace("_", "").lower()


class KernelBlock(TorchFunctionMode):
    """Refuses every torch function (``torch.X``, ``torch._VF.X``, ``torch._C._VariableFunctions.X``,
    ``torch.ops.aten.X`` and its overloads, tensor methods, ``torch.nn.functional.X``) whose name
    holds all the words of a forbidden kernel, however the student's code got hold of it: a name
    captured before the check runs is still the same kernel when it is called."""

    def __init__(self, rules: list[tuple[str, tuple[str, ...]]], exercise: str):
        super().__init__()
        self.rules = [(dotted, tuple(w.replace("_", "") for w in words)) for dotted, words in rules if words]
        self.exercise = exercise

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "") or ""
        flat = _normalised(name)
        for dotted, words in self.rules:
            if all(word in flat for word in words):
                raise ForbiddenCallError(
                    f"[{self.exercise}] your code called {name.split('.')[0]}, a kernel of "
                    f"{dotted}, which this exercise asks you to write yourself")
        return func(*args, **(kwargs or {}))


def _blocked_code(dotted: str, exercise: str, free: int) -> types.CodeType:
    """The code of a function that refuses to run: swapped into a forbidden Python function, it also
    stops the aliases taken before the check (``_init = nn.RNNBase.__init__``). A function's code can
    only be swapped for code with as many free variables (``super()`` makes one): the refusal names
    that many, unused."""
    message = f"[{exercise}] your code called {dotted}, which this exercise asks you to write yourself"
    names = [f"_free{i}" for i in range(free)]
    source = (
        "def outer():\n" + "".join(f"    {name} = None\n" for name in names) +
        "    def blocked(*args, **kwargs):\n"
        "        from course_lib.grading_errors import ForbiddenCallError\n" +
        f"        raise ForbiddenCallError({message!r})\n" + "".join(f"        {name}\n" for name in names) +
        "    return blocked\n")
    space: dict[str, Any] = {}
    exec(compile(source, "<forbid>", "exec"), space)
    return space["outer"]().__code__


def _function(value: Any) -> Any:
    return value.__func__ if isinstance(value, (staticmethod, classmethod)) else value


def _no_thread(exercise: str):
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ThreadRefusedError(f"[{exercise}] your code started a thread: a check runs your code in one "
                                 "thread, and the grader's sandbox starts none")
    return refused


@contextlib.contextmanager
def forbid(*dotted_names: str, exercise: str = "exercise") -> Iterator[None]:
    """Make the named functions raise :class:`ForbiddenCallError` inside the ``with`` block.

    Used around a student's function to check it implements the idea rather than calling
    torch's version (or course_lib's reference) of the same thing. Every spelling is closed: the
    attribute itself (and, for a constructor, the base classes' that build the same thing), the code
    of a Python function (so an alias taken before the block refuses too), and the torch kernels
    behind the name (:class:`KernelBlock`). Everything is restored on exit.
    """
    review_answer(exercise)  # Validate shows what the grader's lint finds in the answer
    saved: list[tuple[Any, str, Any]] = []
    swapped: list[tuple[types.FunctionType, types.CodeType]] = []
    rules: list[tuple[str, tuple[str, ...]]] = []

    def blocker(dotted: str):
        def blocked(*args: Any, **kwargs: Any) -> Any:
            raise ForbiddenCallError(
                f"[{exercise}] your code called {dotted}, which this exercise asks you to write yourself"
            )
        return blocked

    mode = None
    try:
        for dotted in dotted_names:
            owner, attribute = resolve_dotted(dotted)
            rules.append((dotted, kernel_words(owner, attribute)))
            for where, name in spellings(owner, attribute):
                original = where.__dict__.get(name, _MISSING) if isinstance(where, type) else getattr(
                    where, name)
                function = _function(original)
                # course_lib's own references are not swapped: a check binds them as the correct version
                # of an earlier exercise (bind(globals(), ngrams=course_lib.bleu.ngrams)) while it
                # forbids their names, and the grader's sandbox holds none of this assignment's.
                if (
                    isinstance(function, types.FunctionType)
                    and not function.__module__.startswith("course_lib")
                    and all(function is not f for f, _ in swapped)
                ):
                    swapped.append((function, function.__code__))
                    function.__code__ = _blocked_code(dotted, exercise, len(function.__code__.co_freevars))
                saved.append((where, name, original))
                setattr(where, name, blocker(dotted))
        # A TorchFunctionMode guards one thread: the checked code runs in this one, as in the grader's
        # sandbox, where no thread can start at all (grading.seccomp.students_program).
        for owner, attribute in ((threading.Thread, "start"), (_thread, "start_new_thread"),
                                 (threading, "_start_new_thread")):
            if dotted_names and hasattr(owner, attribute):  # while something is forbidden
                saved.append((owner, attribute, owner.__dict__.get(attribute, _MISSING)
                              if isinstance(owner, type) else getattr(owner, attribute)))
                setattr(owner, attribute, _no_thread(exercise))
        if any(words for _, words in rules):
            mode = KernelBlock(rules, exercise)
            mode.__enter__()
        with _warnings_on_stdout():
            yield
    finally:
        if mode is not None:
            mode.__exit__(None, None, None)
        for function, code in reversed(swapped):
            function.__code__ = code
        for owner, attribute, original in reversed(saved):
            if original is _MISSING:
                delattr(owner, attribute)  # the attribute was inherited: uncover the base class's again
            else:
                setattr(owner, attribute, original)


@contextlib.contextmanager
def _warnings_on_stdout() -> Iterator[None]:
    """The warnings of the code inside printed on stdout, not stderr: nbgrader counts any stderr
    output of a test cell as a failure, so a correct answer that warns (``float()`` of a loss that
    requires grad) showed red in Validate while the grade, which compares answers, gave it full marks."""
    with warnings.catch_warnings(record=True) as raised:
        try:
            yield
        finally:
            for warning in raised:
                print(f"{warning.category.__name__} from the code checked: {warning.message}",
                      file=sys.stdout)


@contextlib.contextmanager
def bind(namespace: dict, **objects: Any) -> Iterator[None]:
    """Bind ``namespace[name] = object`` for each keyword inside the ``with`` block, then undo it.

    One bug costs one exercise: while a graded cell checks exercise k, the other graded names that
    k calls (the student's ``softmax`` inside their ``masked_softmax``, say) are bound to course_lib's
    reference versions, so a wrong earlier answer cannot fail a later exercise::

        with bind(globals(), softmax=course_lib.attention.softmax):
            got = masked_softmax(scores, mask)       # calls the reference softmax

    On exit every name gets its previous object back, and a name that did not exist before is
    deleted again, even when the block raised. ``namespace`` is the notebook's ``globals()``: the
    functions and classes a notebook defines look their helpers up there when they run.
    """
    saved = {name: namespace.get(name, _MISSING) for name in objects}
    try:
        namespace.update(objects)
        yield
    finally:
        for name, previous in saved.items():
            if previous is _MISSING:
                namespace.pop(name, None)
            else:
                namespace[name] = previous
