"""Answer code in a canonical form: what a cheap disguise changes, undone before two answers are compared.

``course similarity`` compares the *canonical tokens* of answer cells, not their text. A student's
cells are parsed together, then each is brought through a visible list of small stages (``STAGES``,
repeated until nothing changes, then ``FINAL_STAGES``) and printed back as tokens:

- names: every name a student chose (variables, parameters, helpers, classes, attributes they
  assign) is one placeholder, ``ν``; names the release gives (graded names, given code, course_lib,
  torch, builtins) keep their spelling; imports are resolved (``import torch.nn.functional as fun``
  makes ``fun.relu`` ``F.relu``) and dropped;
- what is not code: comments, docstrings, type annotations, assertion messages, ``pass``;
- dead code: statements that compute nothing kept (``None``, ``x``, ``x.shape``, ``len(str(x))``,
  ``print(x)``, ``x.sum()``, ``x = x``), statements after ``return``/``raise``/``break``/``continue``,
  blocks under a test that is never true (``if False:``, ``while 0:``, ``if 1 > 2:``, ``for _ in
  []:``), wrappers that run their body once (``if True:``, ``for _ in range(1):``, ``try:`` ...
  ``except: raise``, ``while True:`` ... ``break``), assignments nobody reads (or that the next
  assignment overwrites first), and functions, methods, classes and attributes nobody uses;
- temporaries: a variable assigned once and read once, later in the same block, is written where
  it is read; ``a = b`` makes ``a`` ``b``; ``a, b = x, y`` is two assignments when that means the
  same, ``B, T, C = x.shape`` three; ``x += y`` is ``x = x + y``;
- loops: a counting ``while`` is a ``for ... in range``; ``for i in range(len(xs))`` that reads only
  ``xs[i]``, and ``enumerate`` without its index, are ``for x in xs``; a loop that only appends
  (adds, fills a dict, sums) into a variable started empty is its comprehension (``sum``);
- spellings: ``torch.matmul(a, b)``, ``a.matmul(b)``, ``a.mm(b)`` are ``a @ b`` (likewise ``mul``,
  ``add``, ``sub``, ``div``, ``pow``, ``neg``, ``logical_not``, ``eq``...); ``torch.f(x, ...)``,
  ``F.f(x, ...)``, ``math.f(x)`` and ``np.f(x)`` are ``x.f(...)``; every transpose (``.T``, ``.mT``,
  ``.t()``, ``.transpose(i, j)``, ``.swapaxes``) is one; ``view`` is ``reshape``; ``x.size(i)`` and
  ``len(x)`` are ``x.shape[i]``; ``x ** 0.5`` is ``x.sqrt()``; ``float('-inf')`` is ``-math.inf``;
  ``x * 1`` and ``x + 0`` are ``x``; ``dim=``/``axis=`` are positions and keywords are sorted;
  ``a > b`` is ``b < a``; the operands of ``+``, ``*``, ``&``, ``|``, ``==`` are sorted; ``else``
  after a ``return`` is dropped, ``return a if c else b`` is an ``if``, ``if not c: A else: B`` is
  ``if c: B else: A``;
- order: the statements of every block are put in one order that keeps every dependency (a
  statement that reads or writes what another writes stays after it; returns, raises and calls
  made for their effect keep their places among themselves): of the statements free to go next,
  the one whose canonical text comes first.

What is left is what an answer does, in the order it must do it. A cell that is not valid Python
(nor can it run) is compared as its raw tokens, names as the placeholder. Each token remembers the
lines of the cell it stands for, so that a report can mark them.
"""
from __future__ import annotations

import ast
import builtins
import keyword

from course_lib.pyparse import parse

from .loops import rewrite_loops
from .model import PLACEHOLDER, ROUNDS, Canonical, Variables, Vocabulary
from .names import drop_unused_definitions, imports, rename, resolve_modules
from .order import reorder
from .rewrites import drop_annotations, simplify, split_assignments
from .spellings import sort_operands, spell
from .temporaries import drop_dead_stores, inline_temporaries
from .tokens import emit, lexed
from .tree import bound_at, truncate, walk


# --------------------------------------------------------------------------- what the release gives
def _without_magics(code: str) -> str:
    """IPython's ``%magic`` and ``!shell`` lines blanked (the line numbers stay)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))


def vocabulary(cells: list[str]) -> Vocabulary:
    """The vocabulary of the release's code cells (stubs and given code); cells that do not parse give
    none."""
    names, attributes, modules = set(), set(), []
    for code in cells:
        try:
            tree = parse(_without_magics(code))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        modules += imports(tree)
        names |= bound_at(tree.body)
        for node in walk(tree):
            if isinstance(node, ast.ClassDef):
                names |= bound_at(node.body)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                attributes.add(node.attr)
    return Vocabulary(frozenset(names), frozenset(attributes), tuple(modules))


# --------------------------------------------------------------------------- one student's answers
def canonical_answers(cells: dict[str, str], given: Vocabulary) -> dict[str, Canonical]:
    """Each answer cell of one student (grade id -> code) in canonical form.

    The cells are read together: a helper one cell defines and another calls is used, an import in
    one cell names a module in all of them, and a name a student chose is one placeholder in each.
    """
    trees = {}
    for grade_id, code in cells.items():
        try:
            trees[grade_id] = parse(_without_magics(code))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # compared as raw tokens
    canonical = {}
    try:
        for tree in trees.values():
            truncate(tree)
        resolve_modules(trees, given)
        for tree in trees.values():
            drop_annotations(tree)
            simplify(tree)  # before the unused definitions are found: an inert ``helper`` reads nothing
        drop_unused_definitions(trees, given)
        variables = rename(trees, given)
        for grade_id, tree in trees.items():
            canonical[grade_id] = _normalised_tokens(tree, variables)
    except RecursionError:  # a tree too deep to walk: every cell of this student as raw tokens
        canonical = {}
    return {grade_id: canonical.get(grade_id) or _raw_tokens(code, given) for grade_id, code in cells.items()}


def _normalised_tokens(tree: ast.Module, variables: Variables) -> Canonical:
    for _ in range(ROUNDS):
        before = ast.unparse(tree)
        for stage in STAGES:
            stage(tree, variables)
        if ast.unparse(tree) == before:
            break
    for stage in FINAL_STAGES:
        stage(tree, variables)
    tokens: list[tuple[str, frozenset[int]]] = []
    for statement in tree.body:
        emit(statement, tokens)
    return Canonical(tuple(t for t, _ in tokens), tuple(lines for _, lines in tokens), parsed=True)


def _raw_tokens(code: str, given: Vocabulary) -> Canonical:
    """A cell that is not Python: its tokens, comments dropped, every name not given as the placeholder."""
    literal = given.names | set(dir(builtins))
    tokens, lines, previous = [], [], ""
    for text, line in lexed(code):
        if text[0].isalpha() or text[0] == "_":
            if previous != "." and not keyword.iskeyword(text) and text not in literal:
                text = PLACEHOLDER
        tokens.append(text)
        lines.append(frozenset((line,)))
        previous = text
    return Canonical(tuple(tokens), tuple(lines), parsed=False)


STAGES = (simplify, split_assignments, spell, rewrite_loops, drop_dead_stores, inline_temporaries)
FINAL_STAGES = (sort_operands, reorder)
