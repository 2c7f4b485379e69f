"""Final stage: the statements of every block in one order that keeps every dependency.
"""
from __future__ import annotations

import ast
import heapq
from dataclasses import dataclass

from .model import FUNCTIONS, MAX_REORDERED, SCOPES, TERMINAL, Variables
from .names import dotted_path
from .tree import rewrite_blocks, source_of, walk_scope


# --------------------------------------------------------------------------- stage: order
@dataclass
class Effects:
    """What a statement reads and writes: names and attribute paths such as ``self.w`` (``self.w`` and
    ``self`` meet, ``self.w`` and ``self.b`` do not), and whether it must keep its place."""

    reads: set[str]
    writes: set[str]
    barrier: bool = False

    def __post_init__(self):
        self.read_prefixes, self.write_prefixes = prefixes_of(self.reads), prefixes_of(self.writes)


def meet(paths: set[str], prefixes: set[str], other: set[str], other_prefixes: set[str]) -> bool:
    """Whether a path of one set is a path of the other or a prefix of one."""
    return bool(paths & other_prefixes) or bool(other & prefixes)


WORLD = "<world>"  # what calls made for their effect read and write: they keep their order among themselves


def prefixes_of(paths: set[str]) -> set[str]:
    found = set()
    for path in paths:
        parts = path.split(".")
        found |= {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
    return found


def read_paths(node: ast.AST, found: set[str]) -> set[str]:
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and dotted_path(node):
        found.add(dotted_path(node))
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        found.add(node.id)
    else:
        for child in ast.iter_child_nodes(node):
            read_paths(child, found)
    return found


def written_path(target: ast.expr) -> str:
    while isinstance(target, (ast.Subscript, ast.Starred)):
        target = target.value
    return dotted_path(target) or WORLD


def effects_of(node: ast.AST) -> Effects:
    if isinstance(node,
                  (*FUNCTIONS, ast.ClassDef)):  # its body runs later: only what the definition evaluates
        evaluated = [*node.decorator_list]
        if isinstance(node, ast.ClassDef):
            evaluated += [
                *node.bases, *node.keywords, *(s for s in node.body if not isinstance(s, (*FUNCTIONS, )))
            ]
        else:
            evaluated += [*node.args.defaults, *filter(None, node.args.kw_defaults)]
        return Effects(set().union(*(read_paths(e, set()) for e in evaluated)), {node.name})
    reads, writes, barrier = read_paths(node, set()), set(), isinstance(node, (ast.Global, ast.Nonlocal))
    for inner in walk_scope(node):
        if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)) \
                and isinstance(inner.ctx, (ast.Store, ast.Del)):
            writes.add(written_path(inner))
        elif isinstance(inner, (*FUNCTIONS, ast.ClassDef)) and inner is not node:
            writes.add(inner.name)
        elif isinstance(inner, ast.Expr):  # a call made for its effect: on its receiver, and on the world
            function = inner.value.func if isinstance(inner.value, ast.Call) else None
            writes |= {
                WORLD, *([written_path(function.value)] if isinstance(function, ast.Attribute) else [])
            }
            reads.add(WORLD)
        elif isinstance(inner, (ast.Assert, ast.With, ast.AsyncWith, ast.Try, ast.Delete)):
            writes.add(WORLD)
            reads.add(WORLD)
    loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
    return Effects(reads, writes, barrier or isinstance(node, TERMINAL) or _escapes(node, loop))


def _escapes(node: ast.AST, in_loop: bool) -> bool:
    """Whether control can leave the block from inside ``node`` (a return, raise, yield, or a break or
    continue of a loop outside it)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*SCOPES, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(child, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom, ast.Await)) \
                or isinstance(child, (ast.Break, ast.Continue)) and not in_loop \
                or _escapes(child, in_loop or isinstance(child, (ast.For, ast.AsyncFor, ast.While))):
            return True
    return False


def _depends(first: Effects, second: Effects) -> bool:
    """Whether ``second`` must stay after ``first``."""
    both = second.reads | second.writes
    return first.barrier or second.barrier \
        or meet(first.writes, first.write_prefixes, both, second.read_prefixes | second.write_prefixes) \
        or meet(second.writes, second.write_prefixes, first.reads, first.read_prefixes)


def reorder(tree: ast.Module, variables: Variables) -> None:
    """The statements of every block in one canonical order that keeps every dependency: among the
    statements free to go next, the one whose canonical text comes first."""
    rewrite_blocks(tree, _ordered)


def _ordered(block: list[ast.stmt]) -> list[ast.stmt]:
    if len(block) < 2 or len(block) > MAX_REORDERED:
        return block
    effects, keys = [effects_of(s) for s in block], [source_of(s) for s in block]
    after: list[list[int]] = [[] for _ in block]
    waiting = [0] * len(block)
    for j in range(len(block)):
        for i in range(j):
            if _depends(effects[i], effects[j]):
                after[i].append(j)
                waiting[j] += 1
    ready = [(keys[j], j) for j in range(len(block)) if not waiting[j]]
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, i = heapq.heappop(ready)
        ordered.append(block[i])
        for j in after[i]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (keys[j], j))
    return ordered
