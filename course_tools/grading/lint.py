"""Static signs that a student's answer cell reaches beyond its exercise.

A heuristic, not a proof: the probes (:mod:`.probes`) are what make wrong answers score nothing,
and ``forbid()`` what blocks an exercise's forbidden implementations while its code runs. Guards
inside the student's own process can always be taken apart (ctypes, the garbage collector, frames,
names built from strings), so the lint sends every answer that reaches for such a tool to a person
(a "tamper" finding: status "needs manual review", with the cell and line). It also decides
whether an answer that matches used what the exercise forbids (a "reference" finding: an alias of
``F.scaled_dot_product_attention`` imported, a kernel behind a forbidden module spelled out).
Honest answers are plain tensor code, so every rule below is something they never need; the
solutions, the alternatives and the bug catalogues raise none.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from course_lib.guards import kernel_words, resolve_dotted
from course_tools import pyparse

ALLOWED_MODULES = ("torch", "numpy", "math", "cmath", "collections", "itertools", "functools", "dataclasses",
                   "typing", "random", "string", "re", "heapq", "bisect", "operator", "copy", "statistics",
                   "course_lib", "__future__")
FORBIDDEN_MODULES = ("course_lib.grading", "course_lib.guards", "course_tools")
DYNAMIC_NAMES = {"exec", "eval", "compile", "open", "__import__", "getattr", "setattr", "delattr", "globals",
                 "locals", "vars", "breakpoint", "input", "get_ipython", "memoryview", "exit", "quit",
                 "__builtins__", "seed_everything"}
TAMPERING_ATTRIBUTES = {
    "manual_seed",
    "seed",
    "seed_everything",
    "set_rng_state",
    "set_state",
    "setstate",
    "settrace",
    "setprofile",
    "set_custom_exc",
    "events",
    "input_transformers_cleanup",
    "input_transformers_post",
    "ast_transformers",
    "system",
    "popen",
    "fork",
    "kill",
    "environ",
    "_exit",
    "run_cell",
    "user_ns",
    "_C",
    "ops",
    "library",
    "overrides",
    # the process, its memory and its files, however a module spells them (torch.os, np.sys)
    "sys",
    "os",
    "subprocess",
    "builtins",
    "importlib",
    "ctypes",
    "threading",
    "multiprocessing",
    "gc",
    "inspect",
    "pickle",
    "marshal",
    "mmap",
    "socket",
    "signal",
    "shutil",
    "pathlib",
    "io",
    "tempfile",
    "load",
    "loads",
    "fromfile",
    "from_file",
    "memmap",
    "loadtxt",
    "genfromtxt",
    "hub",
    "serialization",
    "f_globals",
    "f_locals",
    "f_back",
    "f_builtins"
}
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make",
                  "_field_defaults"}  # public despite the underscore
ALLOWED_DUNDERS = {"__init__", "__name__", "__repr__", "__len__", "__getitem__", "__iter__"}


@dataclass(frozen=True)
class Finding:
    cell: str  # grade_id of the answer cell
    line: int
    kind: str  # "tamper" (a way around the grader: a person looks), "reference" (uses what a test forbids)
    # or "rebind" (a name of the notebook's own cells defined again: noted, harmless to the grader)
    text: str

    def __str__(self) -> str:
        return f"{self.cell} line {self.line}: {self.text}"


def distinctive(dotted: str) -> str:
    """The part of a forbidden name that an answer would spell: ``x.softmax`` for ``torch.Tensor.softmax``,
    ``nn.MultiheadAttention`` for ``torch.nn.MultiheadAttention.forward``, ``course_lib.rnn.Seq2SeqRNN``
    (not ``self.decode``) for ``course_lib.rnn.Seq2SeqRNN.decode``."""
    parts = dotted.split(".")
    if len(parts) > 1 and parts[-2][:1].isupper() and parts[-2] != "Tensor":
        return parts[-2]
    return parts[-1]


def parse(source: str) -> ast.Module | None:
    """A cell's syntax tree after IPython's transformations (magics), or None when it does not parse."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return pyparse.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return None


def bound_names(source: str) -> set[str]:
    """Names a cell binds at its top level (what the notebook's own cells define for the tests)."""
    tree = parse(source)
    names: set[str] = set()
    for node in tree.body if tree else []:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            names |= {
                n.id
                for n in _walk_scope(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
    return names


def lint(cell: str, source: str, forbidden: set[str] = frozenset(),
         protected: set[str] = frozenset()) -> list[Finding]:
    """Findings in one answer cell; ``forbidden`` holds the dotted names its tests forbid, ``protected``
    the names the notebook's locked and test cells define (``check_close``, ``forbid`` ...)."""
    tree = parse(source)
    if tree is None:
        return []  # it fails on its own when it runs
    banned = {distinctive(name): name for name in forbidden}
    kernels = [(name, words) for name in sorted(forbidden) if (words := _kernels(name))]
    found: list[Finding] = []
    # A type hint names a class without running it, and a class is only used when it is built.
    hints = [
        n.annotation for n in ast.walk(tree) if isinstance(n, (ast.arg, ast.AnnAssign)) and n.annotation
    ] + [
        n.returns
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns
    ]
    in_hints = {id(inner) for hint in hints for inner in ast.walk(hint)}
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}

    def add(node: ast.AST, kind: str, text: str) -> None:
        found.append(Finding(cell, getattr(node, "lineno", 0), kind, text))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if node.__dict__.get("level") or not _allowed_module(module):
                    add(node, "tamper", f"imports {'.' * (getattr(node, 'level', 0) or 0)}{module}")
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in banned:
                        add(
                            node,
                            "reference",
                            f"imports {alias.name}, which its tests forbid ({banned[alias.name]})",
                        )
                    elif kernel := _kernel_of(alias.name, kernels):
                        add(
                            node,
                            "reference",
                            f"imports {alias.name}, a kernel of {kernel}, which its tests forbid",
                        )
        elif isinstance(node, ast.Name):
            if node.id in DYNAMIC_NAMES or (_dunder(node.id) and node.id not in ALLOWED_DUNDERS):
                add(node, "tamper", f"uses {node.id}")
        elif isinstance(node, ast.Attribute):
            if _dunder(node.attr) and node.attr not in ALLOWED_DUNDERS:
                add(node, "tamper", f"uses .{node.attr}")
            elif (
                node.attr in TAMPERING_ATTRIBUTES
                or "hook" in node.attr.lower()
                or (
                    node.attr.startswith("_")
                    and not _dunder(node.attr)
                    and node.attr not in NAMEDTUPLE_API
                    and _base_name(node) not in ("self", "cls")
                )
            ):
                add(node, "tamper", f"uses .{node.attr}")
            elif (
                node.attr in banned
                and id(node) not in in_hints
                and (id(node) in called or not node.attr[:1].isupper())
            ):
                add(node, "reference", f"uses .{node.attr}, which its tests forbid ({banned[node.attr]})")
            elif (
                isinstance(node.ctx, ast.Load)
                and _base_name(node) not in ("self", "cls")
                and not node.attr[:1].isupper()
                and id(node) not in in_hints
                and (kernel := _kernel_of(node.attr, kernels))
            ):  # a kernel is a function: a class is not one
                add(node, "reference", f"uses .{node.attr}, a kernel of {kernel}, which its tests forbid")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if _dunder(node.name) and node.name not in ALLOWED_DUNDERS:
                add(node, "tamper", f"defines {node.name}")
            if isinstance(node, ast.AsyncFunctionDef):
                add(node, "tamper", f"defines async {node.name}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _dunder(node.value)
            and node.value not in ALLOWED_DUNDERS
        ):
            add(node, "tamper", f"spells {node.value}")  # type("X", (float,), {"__eq__": ...}) and the like
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("/")
            and len(node.value) > 1
        ):
            add(
                node, "tamper", f"spells the path {node.value[:40]!r}"
            )  # the sandbox's files, /dev/shm, /proc ...
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "type"
            and len(node.args) == 3
        ):
            add(node, "tamper", "builds a class with type()")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            add(node, "tamper", f"declares {', '.join(node.names)} {type(node).__name__.lower()}")
    found += _foreign_assignments(cell, tree)
    for node in tree.body:
        rebound = (
            {node.name}
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            else set()
            if isinstance(node, (ast.Import, ast.ImportFrom))
            else {n.id for n in _walk_scope(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        )
        for name in sorted(rebound & set(protected)):  # the grader never runs the cells that use them
            found.append(
                Finding(cell, node.lineno, "rebind", f"rebinds {name}, which the notebook's own cells define")
            )
    return sorted(set(found), key=lambda f: (f.line, f.text))


@functools.lru_cache(maxsize=256)
def _kernels(dotted: str) -> tuple[str, ...]:
    """The words of the torch kernels behind a forbidden name (see
    :func:`course_lib.guards.kernel_words`)."""
    try:
        return tuple(word.replace("_", "") for word in kernel_words(*resolve_dotted(dotted)))
    except (AttributeError, ImportError):
        return ()


def _kernel_of(name: str, kernels: list[tuple[str, tuple[str, ...]]]) -> str | None:
    """The forbidden name whose kernel ``name`` is (``rnn_tanh_cell`` of ``torch.nn.RNNCell.forward``)."""
    flat = name.replace("_", "").lower()
    return next((dotted for dotted, words in kernels if all(word in flat for word in words)), None)


def _allowed_module(module: str) -> bool:
    if any(module == m or module.startswith(m + ".") for m in FORBIDDEN_MODULES):
        return False
    if any(part.startswith("_") for part in module.split(".") if part != "__future__"):
        return False
    return any(module == m or module.startswith(m + ".") for m in ALLOWED_MODULES)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _foreign_assignments(cell: str, tree: ast.Module) -> list[Finding]:
    """``torch.allclose = ...``, ``F.softmax.__code__ = ...``: attributes of objects the cell did not make."""
    found = []
    scopes = [tree] + [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    ]
    for scope in scopes:
        own = _local_names(scope)
        body = scope.body if isinstance(scope.body, list) else [scope.body]
        for statement in body:
            for node in _walk_scope(statement):
                targets = []
                if isinstance(node, (ast.Assign, ast.Delete)):
                    targets = node.targets
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                    targets = [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        stored = isinstance(getattr(part, "ctx", None), (ast.Store, ast.Del))
                        if isinstance(part, (ast.Attribute, ast.Subscript)) and stored:
                            base = _base_name(part)
                            if base is None or base not in own:
                                found.append(
                                    Finding(cell, node.lineno, "tamper", f"changes {ast.unparse(part)}")
                                )
    return found


def _walk_scope(node: ast.AST):
    """Walk a statement without entering nested functions and classes (scopes of their own)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _walk_scope(child)


def _local_names(scope: ast.AST) -> set[str]:
    names = {"self", "cls"}
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = scope.args
        names |= {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a}
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    for statement in body:
        for node in _walk_scope(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            names -= set(node.names)
    return names


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
