"""Static signs that a student's answer cell reaches beyond its exercise.

A heuristic, not a proof: the probes (:mod:`.sandboxed.probes`) are what make wrong answers score nothing,
and ``forbid()`` what blocks an exercise's forbidden implementations while its code runs. Guards
inside the student's own process can always be taken apart (ctypes, the garbage collector, frames,
names built from strings), so every answer that leaves the course's allowlist of capabilities
(:mod:`course_lib.allowlist`, which Validate applies too) goes to a person (a "tamper" finding:
status "needs manual review", with the cell, line and reason). The lint also decides whether an
answer that matches used what the exercise forbids (a "reference" finding: an alias of
``F.scaled_dot_product_attention`` imported, a kernel behind a forbidden module spelled out), and
notes a name of the notebook's own cells defined again ("rebind"). The solutions, the alternatives
and the bug catalogues raise none.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
from dataclasses import dataclass

from course_lib import allowlist
from course_lib.guards import kernel_words, resolve_dotted
from course_lib import pyparse


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
            names |= _stored(node)
    return names


def module_names(source: str) -> dict[str, str]:
    """The names of modules a cell's imports bind at its top level (``{"F": "torch.nn.functional"}``):
    for an answer cell, its notebook's instructor cells give them."""
    tree = parse(source)
    names: dict[str, str] = {}
    for node in tree.body if tree else []:
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                try:  # the instructor's imports: finding the module may import its package
                    is_module = importlib.util.find_spec(dotted) is not None
                except (ImportError, ValueError, AttributeError):
                    is_module = False
                if is_module:
                    names[alias.asname or alias.name] = dotted
    return names


def lint(cell: str, source: str, forbidden: set[str] = frozenset(),
         protected: set[str] = frozenset(), modules: dict[str, str] | None = None) -> list[Finding]:
    """Findings in one answer cell; ``forbidden`` holds the dotted names its tests forbid, ``protected``
    the names the notebook's locked and test cells define (``check_close``, ``forbid`` ...), ``modules``
    the names of modules they import (by default the notebooks' conventional ``torch``, ``F``, ``np``...)."""
    tree = parse(source)
    if tree is None:
        return []  # it fails on its own when it runs
    found = [Finding(cell, f.line, "tamper", f.text) for f in allowlist.findings(source, modules, tree)]
    banned = {distinctive(name): name for name in forbidden}
    kernels = [(name, words) for name in sorted(forbidden) if (words := _kernels(name))]
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

    def add(node: ast.AST, text: str) -> None:
        found.append(Finding(cell, getattr(node, "lineno", 0), "reference", text))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in banned:
                    add(node, f"imports {alias.name}, which its tests forbid ({banned[alias.name]})")
                elif kernel := _kernel_of(alias.name, kernels):
                    add(node, f"imports {alias.name}, a kernel of {kernel}, which its tests forbid")
        elif isinstance(node, ast.Attribute):
            if (
                node.attr in banned
                and id(node) not in in_hints
                and (id(node) in called or not node.attr[:1].isupper())
            ):
                add(node, f"uses .{node.attr}, which its tests forbid ({banned[node.attr]})")
            elif (
                isinstance(node.ctx, ast.Load)
                and allowlist.base_name(node) not in ("self", "cls")
                and not node.attr[:1].isupper()
                and id(node) not in in_hints
                and (kernel := _kernel_of(node.attr, kernels))
            ):  # a kernel is a function: a class is not one
                add(node, f"uses .{node.attr}, a kernel of {kernel}, which its tests forbid")
    for node in tree.body:
        rebound = (
            {node.name}
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            else set()
            if isinstance(node, (ast.Import, ast.ImportFrom))
            else _stored(node)
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


def _stored(statement: ast.AST) -> set[str]:
    """The names a statement assigns in the cell's own scope (not inside functions and classes)."""
    return {n.id for n in allowlist.walk_scope(statement)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
