"""Stages: loops as their comprehensions and ranges, dead stores, and temporaries written where they are
read.
"""
from __future__ import annotations

import ast
from collections import Counter

from .model import FUNCTIONS, LOOKAHEAD, MAX_DEPTH, Variables
from .names import dotted_path
from .order import effects_of, meet, prefixes_of, read_paths, written_path
from .rewrites import constant
from .tree import depth_of, lines_of, located, names_in, rewrite_blocks, source_of, stored, target_names, walk


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
    _Replace({id(item): ast.Name(name, ast.Load()) for item in items}).visit(body)
    loop.iter = iterated.args[0].value.value
    return True


class _Replace(ast.NodeTransformer):
    """Nodes replaced by identity."""

    def __init__(self, replacements: dict[int, ast.AST]):
        self.replacements = replacements

    def generic_visit(self, node):
        super().generic_visit(node)
        return self.replacements.get(id(node), node)


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


# --------------------------------------------------------------------------- stage: dead stores, temporaries
def drop_dead_stores(tree: ast.Module, variables: Variables) -> None:
    """Assignments to local variables nobody reads (but to update themselves), or that the next
    assignment overwrites before anybody reads them, and functions defined inside a function nobody calls."""
    loads = Counter(n.id for n in walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    own = Counter()  # reads of a variable in the value of its own assignment (``x = x + 1``)
    for node in walk(tree):
        if isinstance(node, ast.Assign):
            for name in _plain_targets(node) or ():
                own[name] += sum(1 for n in walk(node.value) if isinstance(n, ast.Name) and n.id == name)
    read = {name for name, count in loads.items() if count > own[name]}

    def live(block: list[ast.stmt]) -> list[ast.stmt]:
        assigned = Counter(
            name for s in block if isinstance(s, ast.Assign) for name in _plain_targets(s) or ()
        )
        overwritten = _overwritten(block) if any(count > 1 for count in assigned.values()) else set()
        kept = []
        for i, statement in enumerate(block):
            names = _plain_targets(statement) if isinstance(statement, ast.Assign) else None
            if names and set(names) <= variables.local and (not set(names) & read or i in overwritten):
                continue
            if (
                isinstance(statement, (*FUNCTIONS, ast.ClassDef))
                and statement.name in variables.local
                and statement.name not in read
            ):
                continue
            kept.append(statement)
        return kept

    rewrite_blocks(tree, live)


def _plain_targets(assignment: ast.Assign) -> list[str] | None:
    names = [target_names(t) for t in assignment.targets]
    return None if any(n is None for n in names) else [name for n in names for name in n]


def _overwritten(block: list[ast.stmt]) -> set[int]:
    """Indices of the assignments to one name in ``block`` that a later assignment in the block
    overwrites before anything reads the name (one pass, from the end)."""
    next_event: dict[str, str] = {}  # name -> what happens to it next: "read", "overwritten" or "changed"
    found = set()
    for i in range(len(block) - 1, -1, -1):
        statement = block[i]
        plain = _plain_targets(statement) if isinstance(statement, ast.Assign) else None
        if plain and len(plain) == 1 and next_event.get(plain[0]) == "overwritten":
            found.add(i)
        for name in stored(statement):
            next_event[name] = "overwritten" if plain and name in plain else "changed"
        for name in names_in(statement):  # a statement reads before it assigns
            next_event[name] = "read"
    return found


def inline_temporaries(tree: ast.Module, variables: Variables) -> None:
    """A local variable that is another under a second name (``a = b``, neither assigned again) is that
    one; one assigned once and read once, later in the same block, is written where it is read (when
    nothing in between changes what its value reads)."""
    loads = Counter(n.id for n in walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    stores = Counter(n.id for n in walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))

    def unchanging(name: str) -> bool:
        return stores[name] == 0 if name in variables.parameters else stores[name] <= 1

    aliases = {}  # a = b, with neither assigned anywhere else: every a is b
    for node in walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
            and node.targets[0].id in variables.local
            and node.targets[0].id not in variables.parameters
            and stores[node.targets[0].id] == 1
            and unchanging(node.value.id)
            and node.value.id != node.targets[0].id
        ):
            aliases[node.targets[0].id] = node.value.id
    if aliases:
        for node in walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in aliases:
                while node.id in aliases:
                    node.id = aliases[node.id]
        rewrite_blocks(
            tree,
            lambda block: [
                s
                for s in block
                if not (
                    isinstance(s, ast.Assign)
                    and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name)
                    and s.targets[0].id in aliases
                )
            ],
        )
        return  # the counts changed: the temporaries wait for the next round

    def inlined(block: list[ast.stmt]) -> list[ast.stmt]:
        block, i = list(block), 0
        while i < len(block):
            statement = block[i]
            name = (
                statement.targets[0].id
                if isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                else None
            )
            if (
                name in variables.local
                and name not in variables.parameters
                and stores[name] == 1
                and loads[name] == 1
                and not any(
                    isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
                    for n in walk(statement.value)
                )
            ):
                use = next(
                    (
                        j
                        for j in range(i + 1, min(i + 1 + LOOKAHEAD, len(block)))
                        if name in names_in(block[j])
                    ),
                    None,
                )
                if (
                    use is not None
                    and not _changes(block[i + 1 : use + 1], statement.value)
                    and depth_of(statement.value) + depth_of(block[use]) < MAX_DEPTH
                ):
                    read = next(n for n in walk(block[use]) if isinstance(n, ast.Name) and n.id == name)
                    _Replace({id(read): statement.value}).visit(block[use])
                    block[use].absorbed = lines_of(block[use]) | lines_of(statement)
                    del block[i]
                    continue
            i += 1
        return block

    rewrite_blocks(tree, inlined)


def _changes(statements: list[ast.stmt], value: ast.expr) -> bool:
    """Whether ``statements`` (the last one the statement that reads a temporary) may change what
    ``value`` reads before the last one evaluates it."""
    *between, use = statements
    if not isinstance(use, (ast.Assign, ast.Return, ast.Expr)):
        between.append(use)  # a loop or a branch may assign before it reads
    reads = read_paths(value, set())
    read_prefixes = prefixes_of(reads)
    return any(meet(e.writes, e.write_prefixes, reads, read_prefixes) for e in map(effects_of, between))
