"""Stage: loops as their comprehensions and ranges."""
from __future__ import annotations

import ast

from .model import LOOKAHEAD, Variables
from .names import dotted_path
from .order import written_path
from .spellings import constant
from .tree import Replaced, located, names_in, rewrite_blocks, source_of, stored, walk


# --------------------------------------------------------------------------- stage: loops
def rewrite_loops(tree: ast.Module, variables: Variables) -> None:
    """A counting ``while`` as ``for ... in range``; a loop that only appends to a list (adds to a set,
    fills a dict, adds to a sum) started empty just before as the comprehension (``sum``) it spells out."""
    rewrite_blocks(tree, _loops_in)


def _loops_in(block: list[ast.stmt]) -> list[ast.stmt]:
    block, i = list(block), 0
    while i < len(block):
        statement, start = block[i], None
        if isinstance(statement, ast.While):
            counted = _counting_loop(block, i)
            if counted:
                start, block[i] = counted
        elif isinstance(statement, ast.For) and _element_loop(statement):
            continue  # now ``for x in xs``: it may collect
        elif isinstance(statement, ast.For):
            collected = _collecting_loop(statement, [])
            start = _initialised(block, i, *collected[:2]) if collected else None
            if start is not None:
                kind, name, parts, generators = collected
                made = {
                    "list": lambda: ast.ListComp(parts[0], generators),
                    "set": lambda: ast.SetComp(parts[0], generators),
                    "dict": lambda: ast.DictComp(parts[0], parts[1], generators), "sum": lambda: ast.Call(
                        ast.Name("sum", ast.Load()), [ast.GeneratorExp(parts[0], generators)], [])
                }[kind]()
                block[i] = located(ast.Assign([ast.Name(name, ast.Store())], made), statement, block[start])
        if start is not None:
            del block[start]
            i -= 1  # the turned statement moved up one place: a counted loop may now collect
            continue
        i += 1
    return block


def _element_loop(loop: ast.For) -> bool:
    """``for i in range(len(xs))`` that reads ``i`` only as ``xs[i]``, and ``for i, x in enumerate(xs)``
    that never reads ``i``, turned into ``for x in xs``; True when the loop was turned."""
    iterated = loop.iter
    if (
        isinstance(loop.target, ast.Tuple)
        and len(loop.target.elts) == 2
        and isinstance(loop.target.elts[0], ast.Name)
        and isinstance(iterated, ast.Call)
        and source_of(iterated.func) == "enumerate"
        and len(iterated.args) == 1
        and not iterated.keywords
        and loop.target.elts[0].id not in names_in(ast.Module(loop.body, []))
    ):
        loop.target, loop.iter = loop.target.elts[1], iterated.args[0]
        return True
    # range(len(xs)) is range(xs.shape[0]) once spelled
    if not (
        isinstance(loop.target, ast.Name)
        and isinstance(iterated, ast.Call)
        and source_of(iterated.func) == "range"
        and len(iterated.args) == 1
        and isinstance(iterated.args[0], ast.Subscript)
        and isinstance(iterated.args[0].value, ast.Attribute)
        and iterated.args[0].value.attr == "shape"
        and constant(iterated.args[0].slice, 0)
        and dotted_path(iterated.args[0].value.value)
    ):
        return False
    name, sequence = loop.target.id, dotted_path(iterated.args[0].value.value)
    body = ast.Module(loop.body, [])
    uses = [n for n in walk(body) if isinstance(n, ast.Name) and n.id == name]
    items = [
        n
        for n in walk(body)
        if isinstance(n, ast.Subscript)
        and isinstance(n.ctx, ast.Load)
        and isinstance(n.slice, ast.Name)
        and n.slice.id == name
        and dotted_path(n.value) == sequence
    ]
    if (
        len(uses) != len(items)
        or sequence.split(".")[0] in stored(body)
        or any(
            written_path(t) == sequence for n in walk(body) if isinstance(n, ast.Assign) for t in n.targets
        )
    ):
        return False
    Replaced({id(item): ast.Name(name, ast.Load()) for item in items}).visit(body)
    loop.iter = iterated.args[0].value.value
    return True


EMPTY = {"list": ("[]", "list()"), "set": ("set()",), "dict": ("{}", "dict()"), "sum": ("0", "0.0")}


def _collecting_loop(statement: ast.stmt, generators: list[ast.comprehension]):
    """(kind, accumulator, parts, generators) when a loop (nest) only collects into one variable."""
    if isinstance(statement, ast.For):
        if statement.orelse or len(statement.body) != 1:
            return None
        generators = [*generators, ast.comprehension(statement.target, statement.iter, [], 0)]
        return _collecting_loop(statement.body[0], generators)
    if isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1 and generators:
        generators[-1] = ast.comprehension(
            generators[-1].target, generators[-1].iter, [*generators[-1].ifs, statement.test], 0
        )
        return _collecting_loop(statement.body[0], generators)
    found = None
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and len(statement.value.args) == 1
        and not statement.value.keywords
        and isinstance(statement.value.func, ast.Attribute)
        and isinstance(statement.value.func.value, ast.Name)
        and statement.value.func.attr in ("append", "add")
    ):
        kind = "list" if statement.value.func.attr == "append" else "set"
        found = kind, statement.value.func.value.id, [statement.value.args[0]]
    elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0], statement.value
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            found = "dict", target.value.id, [target.slice, value]
        elif isinstance(target, ast.Name) and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            for mine, other in ((value.left, value.right), (value.right, value.left)):
                if isinstance(mine, ast.Name) and mine.id == target.id:
                    found = "sum", target.id, [other]
                    break
    if found is None:
        return None
    kind, name, parts = found
    if any(name in names_in(part) for part in parts) or any(name in names_in(g) for g in generators):
        return None
    return kind, name, parts, generators


def _initialised(block: list[ast.stmt], loop: int, kind: str, name: str) -> int | None:
    """The index of ``name = <empty>`` before ``block[loop]`` when nothing in between touches ``name``."""
    for start in range(loop - 1, max(loop - LOOKAHEAD, 0) - 1, -1):
        statement = block[start]
        if name in stored(statement):
            fresh = (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and ast.unparse(statement.value) in EMPTY[kind]
            )
            return start if fresh else None
        if name in names_in(statement):
            return None
    return None


def _counting_loop(block: list[ast.stmt], i: int) -> tuple[int, ast.For] | None:
    """``v = a`` ... ``while v < b: ...; v = v + s; ...`` as (index of ``v = a``, ``for v in range(a, b, s):
    ...``),
    when the body reads ``v`` only before its one increment and has no ``continue``."""
    loop = block[i]
    test = loop.test
    if (
        loop.orelse
        or not isinstance(test, ast.Compare)
        or len(test.ops) != 1
        or not isinstance(test.ops[0], (ast.Lt, ast.LtE))
        or not isinstance(test.left, ast.Name)
    ):
        return None
    name, stop = test.left.id, test.comparators[0]
    increments = [(k, step) for k, statement in enumerate(loop.body) for step in _increment(statement, name)]
    if len(increments) != 1 or name in names_in(stop) or any(isinstance(n, ast.Continue) for n in walk(loop)):
        return None
    at, step = increments[0]
    body = loop.body[:at] + loop.body[at + 1 :]
    if (
        name in stored(ast.Module(body, []))
        or name in names_in(ast.Module(loop.body[at + 1 :], []))
        or name in names_in(step)
    ):
        return None
    for start in range(i - 1, max(i - LOOKAHEAD, 0) - 1, -1):
        statement = block[start]
        if name in stored(statement):
            if not (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                return None
            if isinstance(test.ops[0], ast.LtE):
                stop = ast.BinOp(stop, ast.Add(), ast.Constant(1))
            bounds = [statement.value, stop] + ([] if constant(step, 1) else [step])
            counted = ast.For(
                ast.Name(name, ast.Store()),
                ast.Call(ast.Name("range", ast.Load()), bounds, []),
                body or [ast.Pass()],
                [],
            )
            return start, located(counted, loop, statement)
        if name in names_in(statement):
            return None
    return None


def _increment(statement: ast.stmt, name: str) -> list[ast.expr]:
    """[s] when ``statement`` is ``name = name + s`` (or ``s + name``)."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
        and isinstance(statement.value, ast.BinOp)
        and isinstance(statement.value.op, ast.Add)
    ):
        return []
    value = statement.value
    return [
        other
        for mine, other in ((value.left, value.right), (value.right, value.left))
        if isinstance(mine, ast.Name) and mine.id == name
    ][:1]
