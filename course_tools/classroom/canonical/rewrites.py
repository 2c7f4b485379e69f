"""Stages: dead and inert code, and one assignment per statement."""
from __future__ import annotations

import ast
import copy

from .model import (
    FUNCTIONS,
    SCOPES,
    TERMINAL,
    Variables,
)
from .order import Effects, meet, read_paths, written_path
from .tree import as_load, ends, inert, located, names_in, rewrite_blocks, source_of, stored, walk, walk_until


# --------------------------------------------------------------------------- stage: dead and inert code
def drop_annotations(tree: ast.Module) -> None:
    """Type annotations and assertion messages: what a student says about the code, not the code."""
    for node in walk(tree):
        if isinstance(node, FUNCTIONS):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.Assert):
            node.msg = None


def simplify(tree: ast.Module, variables: Variables | None = None) -> None:
    """Docstrings, ``pass``, inert expressions, ``x = x`` dropped; code after a ``return`` (``raise``,
    ``break``, ``continue``) and under a test that is never true dropped; ``else`` after a branch that
    returns flattened; ``return a if c else b`` and ``if not c: A else: B`` turned."""
    rewrite_blocks(tree, _simplified)


def _simplified(block: list[ast.stmt]) -> list[ast.stmt]:
    todo, kept = list(reversed(block)), []
    while todo:
        statement = todo.pop()
        if isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and inert(statement.value):
            continue
        if isinstance(statement, ast.AnnAssign):
            if statement.value is not None:
                todo.append(located(ast.Assign([statement.target], statement.value), statement))
            continue
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Name) \
                and statement.targets[0].id == statement.value.id:
            continue  # x = x
        if isinstance(statement, ast.Assert) and isinstance(statement.test,
                                                            ast.Constant) and statement.test.value:
            continue
        if isinstance(statement, ast.For) and source_of(statement.iter) in ("[]", "()", "range(0)"):
            todo += reversed(statement.orelse)
            continue
        if _wrapper(statement):  # try: B except: raise; for _ in range(1): B; while True: B; break
            body = (
                [s for s in statement.body if not isinstance(s, ast.Break)]
                if isinstance(statement, ast.While)
                else statement.body
            )
            todo += reversed(body)
            continue
        if isinstance(statement, (ast.If, ast.While)) and isinstance(statement.test, ast.Constant):
            if isinstance(statement, ast.If) or not statement.test.value:
                todo += reversed(statement.body if statement.test.value else statement.orelse)
                continue
        if isinstance(statement, ast.If):
            if statement.orelse and ends(statement.body):
                todo += reversed(statement.orelse)
                statement.orelse = []
            elif (
                statement.orelse
                and isinstance(statement.test, ast.UnaryOp)
                and isinstance(statement.test.op, ast.Not)
            ):
                statement.test = statement.test.operand
                statement.body, statement.orelse = statement.orelse, statement.body
            elif (
                [type(s) for s in statement.body] == [ast.Pass]
                and not statement.orelse
                and inert(statement.test)
            ):
                continue
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.IfExp):
            choice = statement.value
            todo.append(located(ast.Return(choice.orelse), statement))
            todo.append(
                located(ast.If(choice.test, [located(ast.Return(choice.body), statement)], []), statement)
            )
            continue
        kept.append(statement)
        if isinstance(statement, TERMINAL):
            break
    return kept


def _wrapper(statement: ast.stmt) -> bool:
    """Whether ``statement`` only runs its body once as it stands: ``try`` whose every handler re-raises
    (and nothing else), ``for`` over ``range(1)`` not reading its variable, ``while True`` ending in
    its only ``break`` (or in a ``return`` or ``raise``, with none)."""
    if isinstance(statement, ast.Try):
        return (
            not statement.orelse
            and not statement.finalbody
            and all(
                len(h.body) == 1 and isinstance(h.body[0], ast.Raise) and h.body[0].exc is None
                for h in statement.handlers
            )
        )
    inside = ast.Module(statement.body, []) if isinstance(statement, (ast.For, ast.While)) else None
    if isinstance(statement, ast.For):
        return (
            not statement.orelse
            and source_of(statement.iter) == "range(1)"
            and not stored(statement.target) & names_in(inside)
        )
    if isinstance(statement, ast.While):
        loops = (ast.For, ast.AsyncFor, ast.While)
        jumps = [n for n in walk_until(inside, (*SCOPES, *loops)) if isinstance(n, (ast.Break, ast.Continue))]
        last = statement.body[-1]
        return (
            not statement.orelse
            and isinstance(statement.test, ast.Constant)
            and bool(statement.test.value)
            and len(jumps) == isinstance(last, ast.Break)
            and isinstance(last, (ast.Break, ast.Return, ast.Raise))
        )
    return False


# --------------------------------------------------------------------------- stage: assignments
def split_assignments(tree: ast.Module, variables: Variables) -> None:
    """``x op= y`` as ``x = x op y``; ``a, b = x, y`` as two assignments when no later value reads an
    earlier target (then it means the same); ``a, b = v`` as ``a = v[0]``, ``b = v[1]`` when ``v`` is a
    name or an attribute (``B, T, C = x.shape``)."""
    rewrite_blocks(tree, _split)


def _split(block: list[ast.stmt]) -> list[ast.stmt]:
    new = []
    for statement in block:
        if isinstance(statement, ast.AugAssign):
            statement = located(
                ast.Assign(
                    [statement.target], ast.BinOp(as_load(statement.target), statement.op, statement.value)
                ),
                statement,
            )
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], (ast.Tuple, ast.List))
            and isinstance(statement.value, (ast.Tuple, ast.List))
        ):
            targets, values = statement.targets[0].elts, statement.value.elts
            starred = any(isinstance(e, ast.Starred) for e in (*targets, *values))
            written = [Effects(set(), {written_path(t)}) for t in targets]
            later = [
                Effects(set().union(*(read_paths(v, set()) for v in values[i + 1 :])), set())
                for i in range(len(values))
            ]
            if (
                not starred
                and len(targets) == len(values)
                and len({source_of(t) for t in targets}) == len(targets)
                and not any(
                    meet(w.writes, w.write_prefixes, r.reads, r.read_prefixes) for w, r in zip(written, later)
                )
            ):
                new += [located(ast.Assign([t], v), statement) for t, v in zip(targets, values)]
                continue
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], (ast.Tuple, ast.List))
            and inert(statement.value)
            and isinstance(statement.value, (ast.Name, ast.Attribute, ast.Subscript))
            and not any(isinstance(e, ast.Starred) for e in statement.targets[0].elts)
            and not stored(statement.targets[0]) & names_in(statement.value)
        ):  # B, T, C = x.shape
            new += [
                located(
                    ast.Assign(
                        [t], ast.Subscript(copy.deepcopy(statement.value), ast.Constant(i), ast.Load())
                    ),
                    statement,
                )
                for i, t in enumerate(statement.targets[0].elts)
            ]
            continue
        new.append(statement)
    return new
