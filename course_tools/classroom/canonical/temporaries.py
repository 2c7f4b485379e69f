"""The canonical form's stages for values: stores nobody reads dropped, single-use temporaries
inlined."""
from __future__ import annotations

import ast
from collections import Counter

from .model import FUNCTIONS, LOOKAHEAD, MAX_DEPTH, Variables
from .order import effects_of, meet, prefixes_of, read_paths
from .tree import Replaced, depth_of, lines_of, names_in, rewrite_blocks, stored, target_names, walk


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
                    Replaced({id(read): statement.value}).visit(block[use])
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
