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
import copy
import functools
import heapq
import io
import keyword
import operator
import re
import tokenize
from collections import Counter
from dataclasses import dataclass

from course_tools.pyparse import parse

PLACEHOLDER = "ν"  # every name a student chose
ROUNDS = 8  # the stages repeat until nothing changes, at most this often (each round undoes one more layer)
MAX_REORDERED = 400  # statements in one block beyond which its order is kept (the ordering is quadratic)
LOOKAHEAD = 50  # statements a stage looks past for a temporary's reader or a loop's initialisation
# Expressions nest at most this deep (deeper parts are one placeholder, and no temporary is folded in
# deeper): the stages walk trees recursively, and the course's solutions, temporaries folded in, nest
# at most 18 levels.
MAX_DEPTH = 60
# module paths spelled the way the course spells them
SHORT_MODULES = {"torch.nn.functional": "F", "torch.nn": "nn", "numpy": "np"}
MODULES = frozenset({"torch", "F", "np", "math"})  # ``M.f(x, ...)`` is ``x.f(...)`` for these
BINARY_METHODS = {"logical_and": ast.BitAnd, "logical_or": ast.BitOr, "logical_xor": ast.BitXor,
                  "matmul": ast.MatMult, "mm": ast.MatMult, "bmm": ast.MatMult, "dot": ast.MatMult,
                  "__matmul__": ast.MatMult, "mul": ast.Mult, "multiply": ast.Mult, "add": ast.Add,
                  "sub": ast.Sub, "subtract": ast.Sub, "div": ast.Div, "divide": ast.Div, "true_divide": ast.Div,
                  "floor_divide": ast.FloorDiv, "pow": ast.Pow}
COMPARE_METHODS = {"eq": ast.Eq, "ne": ast.NotEq, "lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE}
UNARY_METHODS = {"neg": ast.USub, "negative": ast.USub, "logical_not": ast.Invert, "bitwise_not": ast.Invert}
INFINITE = {"inf": "inf", "+inf": "inf", "infinity": "inf", "-inf": "-inf", "-infinity": "-inf", "nan": "nan"}
SYNONYMS = {"view": "reshape", "swapaxes": "transpose", "swapdims": "transpose", "t": "transpose",
            "clip": "clamp", "absolute": "abs", "arccos": "acos", "arcsin": "asin",
            "arctan": "atan"}
TRANSPOSE_ATTRIBUTES = frozenset({"T", "mT"})
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
MIRRORED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}
COMPARISONS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
               ast.Gt: operator.gt, ast.GtE: operator.ge}
NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
           ast.IsNot: ast.Is}
# builtins whose call, as a statement of its own, changes nothing the answer computes
INERT_CALLS = frozenset({"abs", "all", "any", "bool", "callable", "chr", "dict", "dir", "divmod", "enumerate",
                         "filter", "float", "format", "frozenset", "getattr", "hasattr", "hash", "hex", "id", "int",
                         "isinstance", "issubclass", "len", "list", "map", "max", "min", "oct", "ord", "pow", "print",
                         "range", "repr", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "type", "vars",
                         "zip"})
# methods of a tensor (or of torch, F, math and numpy, which the spelling stage makes methods) that
# compute a new value and change nothing: called as a statement of their own, they are dead code
PURE_METHODS = frozenset({"abs", "all", "amax", "amin", "any", "arange", "argmax", "argmin", "bool", "clamp", "clone",
                          "contiguous", "cos", "cpu", "cumsum", "detach", "dim", "double", "exp", "expand", "flatten",
                          "float", "full", "gather", "half", "int", "item", "log", "log_softmax", "long", "masked_fill",
                          "max", "mean", "min", "norm", "numel", "numpy", "ones", "ones_like", "permute", "prod",
                          "relu", "repeat", "repeat_interleave", "reshape", "rsqrt", "sigmoid", "sin", "size",
                          "softmax", "sqrt", "squeeze", "std", "sum", "tanh", "tolist", "transpose", "tril", "triu",
                          "unsqueeze", "var", "zeros", "zeros_like"})
TERMINAL = (ast.Return, ast.Raise, ast.Continue, ast.Break)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
BLOCK_FIELDS = ("body", "orelse", "finalbody")


@dataclass(frozen=True)
class Vocabulary:
    """What the release gives every student: names that keep their spelling in the canonical tokens."""

    names: frozenset[str]  # bound at the top level or in a class body of a release cell
    attributes: frozenset[str]  # attribute names a release cell assigns (``self.W_q = ...``)
    modules: tuple[tuple[str, str], ...]  # (import alias, module path) of the release's imports


@dataclass(frozen=True)
class Variables:
    """The placeholders of one student's variables that the stages may drop or fold away."""

    local: frozenset[str]  # bound in a function, lambda or comprehension (parameters included)
    parameters: frozenset[str]


@dataclass(frozen=True)
class Canonical:
    """One answer cell in canonical form."""

    tokens: tuple[str, ...]
    lines: tuple[frozenset[int], ...]  # per token: the lines of the cell (from 1) it stands for
    parsed: bool  # False: the cell's raw tokens (it is not valid Python)


# --------------------------------------------------------------------------- what the release gives
def _without_magics(code: str) -> str:
    """IPython's ``%magic`` and ``!shell`` lines blanked (the line numbers stay)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n"))


def _imports(tree: ast.AST) -> list[tuple[str, str]]:
    found = []
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                      for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names if a.name != "*"]
    return found


def vocabulary(cells: list[str]) -> Vocabulary:
    """The vocabulary of the release's code cells (stubs and given code); cells that do not parse give none."""
    names, attributes, modules = set(), set(), []
    for code in cells:
        try:
            tree = parse(_without_magics(code))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        modules += _imports(tree)
        names |= _bound_at(tree.body)
        for node in _walk(tree):
            if isinstance(node, ast.ClassDef):
                names |= _bound_at(node.body)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                attributes.add(node.attr)
    return Vocabulary(frozenset(names), frozenset(attributes), tuple(modules))


def _bound_at(body: list[ast.stmt]) -> set[str]:
    """Names the statements of one block bind (not inside functions or classes they define)."""
    bound = set()
    for statement in body:
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            bound.add(statement.name)
            continue
        for node in _walk_scope(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
            elif isinstance(node, (*FUNCTIONS, ast.ClassDef)) or isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
    return bound


def _walk(node: ast.AST):
    """Every node of ``node``'s tree, ``node`` first (``ast.walk``, in another order, at twice its speed)."""
    return _walk_until(node, ())


def _walk_scope(node: ast.AST):
    """``_walk`` that does not enter functions, lambdas, classes or comprehensions below ``node`` (it
    yields them: a definition binds its name where it stands)."""
    return _walk_until(node, (*SCOPES, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))


def _walk_until(node: ast.AST, stop: tuple[type, ...]):
    """The nodes of ``node``'s tree, depth first, not below a node of a ``stop`` type (but ``node``)."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        if current is not node and isinstance(current, stop):
            continue
        for field in current._fields:
            value = getattr(current, field, None)
            if isinstance(value, list):
                todo += [item for item in value if isinstance(item, ast.AST)]
            elif isinstance(value, ast.AST):
                todo.append(value)


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
            _truncate(tree)
        _resolve_modules(trees, given)
        for tree in trees.values():
            _drop_annotations(tree)
            _simplify(tree)  # before the unused definitions are found: an inert ``helper`` reads nothing
        _drop_unused_definitions(trees, given)
        variables = _rename(trees, given)
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
        _emit(statement, tokens)
    return Canonical(tuple(t for t, _ in tokens), tuple(lines for _, lines in tokens), parsed=True)


def _raw_tokens(code: str, given: Vocabulary) -> Canonical:
    """A cell that is not Python: its tokens, comments dropped, every name not given as the placeholder."""
    literal = given.names | set(dir(builtins))
    tokens, lines, previous = [], [], ""
    for text, line in _lexed(code):
        if text[0].isalpha() or text[0] == "_":
            if previous != "." and not keyword.iskeyword(text) and text not in literal:
                text = PLACEHOLDER
        tokens.append(text)
        lines.append(frozenset((line,)))
        previous = text
    return Canonical(tuple(tokens), tuple(lines), parsed=False)


def _lexed(code: str) -> list[tuple[str, int]]:
    """(token, line) of Python code; past a point where Python's tokenizer gives up, a plain lexer's."""
    found: list[tuple[str, int]] = []
    skipped = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type not in skipped:
                found.append((token.string, token.start[0]))
        return found
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    rest_from = found[-1][1] + 1 if found else 1
    for number, line in enumerate(code.split("\n")[rest_from - 1:], start=rest_from):
        line = line.split("#", 1)[0]
        found += [(match.group(), number) for match in re.finditer(r"[^\W\d]\w*|\d[\w.]*|\S", line)]
    return found


# --------------------------------------------------------------------------- imports and names
def _resolve_modules(trees: dict[str, ast.Module], given: Vocabulary) -> None:
    """Every import alias (the release's and the student's) as the module path it names, spelled short;
    the import statements themselves dropped."""
    aliases = dict(given.modules)
    for tree in trees.values():
        aliases.update(_imports(tree))
    bound = set()
    for tree in trees.values():
        for node in _walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
                bound.add(node.name)
    resolver = _Modules({alias: path for alias, path in aliases.items() if alias not in bound})
    for tree in trees.values():
        resolver.visit(tree)


def _short(path: str) -> str:
    for long, short in SHORT_MODULES.items():  # longest first
        if path == long or path.startswith(long + "."):
            return short + path[len(long):]
    return path


def _dotted(path: str) -> ast.expr:
    first, *rest = path.split(".")
    node: ast.expr = ast.Name(first, ast.Load())
    for attribute in rest:
        node = ast.Attribute(node, attribute, ast.Load())
    return node


def _path(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


class _Modules(ast.NodeTransformer):
    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases

    def visit_Import(self, node):
        return None

    visit_ImportFrom = visit_Import

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            return ast.copy_location(_dotted(_short(self.aliases[node.id])), node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        path = _path(node)
        if path and isinstance(node.ctx, ast.Load) and _short(path) != path:
            return ast.copy_location(_dotted(_short(path)), node)
        return node


def _drop_unused_definitions(trees: dict[str, ast.Module], given: Vocabulary) -> None:
    """Functions, classes and assignments at the top level or in a class body whose names the release
    does not give and no cell reads (as a name or an attribute; special methods are called unseen), and
    assignments to such attributes (``self.spare = x``)."""
    def unused(statement: ast.stmt, read: set[str]) -> bool:
        bound = _bound_at([statement])
        return isinstance(statement, (*FUNCTIONS, ast.ClassDef, ast.Assign)) and bool(bound) \
            and not bound & (read | given.names | given.attributes) \
            and not any(name.startswith("__") and name.endswith("__") for name in bound)

    def unread_attributes(statement: ast.stmt, read: set[str]) -> bool:  # self.spare = ..., never read
        return isinstance(statement, ast.Assign) and all(
            isinstance(t, ast.Attribute) and t.attr not in read | given.attributes | given.names
            for t in statement.targets)

    for _ in range(ROUNDS):
        read = {node.id if isinstance(node, ast.Name) else node.attr
                for tree in trees.values() for node in _walk(tree)
                if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)}
        changed = False
        def without_unread_attributes(block: list[ast.stmt]) -> list[ast.stmt]:
            nonlocal changed
            kept = [statement for statement in block if not unread_attributes(statement, read)]
            changed |= len(kept) != len(block)
            return kept

        for tree in trees.values():
            _rewrite_blocks(tree, without_unread_attributes)
            for owner in [tree, *(node for node in _walk(tree) if isinstance(node, ast.ClassDef))]:
                kept = [statement for statement in owner.body if not unused(statement, read)]
                changed |= len(kept) != len(owner.body)
                owner.body = kept or ([] if owner is tree else [ast.Pass()])
        if not changed:
            return


def _rename(trees: dict[str, ast.Module], given: Vocabulary) -> Variables:
    """Every name a student chose as the placeholder with a number: one number per variable (per scope),
    so that the later stages still tell variables apart; the numbers are dropped from the tokens."""
    chosen_attributes = set()
    module_names = set()
    for tree in trees.values():
        module_names |= _bound_at(tree.body)
        for node in _walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                chosen_attributes.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                chosen_attributes |= _bound_at(node.body)
    renamer = _Renamer(module_names - given.names, chosen_attributes - given.attributes - given.names)
    for tree in trees.values():
        renamer.block(tree.body, [], None)
    return Variables(frozenset(renamer.local), frozenset(renamer.parameters))


class _Renamer:
    """Python's scopes, simplified: function, lambda and comprehension scopes; a class body's names
    are attributes; a name bound in no enclosing scope is the module's."""

    def __init__(self, module_names: set[str], attributes: set[str]):
        self.count = 0
        self.local: set[str] = set()
        self.parameters: set[str] = set()
        self.module = {name: self.fresh() for name in sorted(module_names)}
        self.attributes = {name: self.fresh() for name in sorted(attributes)}

    def fresh(self) -> str:
        self.count += 1
        return f"{PLACEHOLDER}{self.count}"

    def resolve(self, name: str, scopes: list[dict[str, str]], class_names: set[str] | None) -> str:
        for scope in reversed(scopes):
            if name in scope:
                return scope[name]
        if class_names is not None and name in class_names:
            return self.attributes.get(name, name)
        return self.module.get(name, name)

    def block(self, body: list[ast.stmt], scopes: list[dict[str, str]], class_names: set[str] | None) -> None:
        for statement in body:
            self.node(statement, scopes, class_names)

    def node(self, node: ast.AST, scopes: list[dict[str, str]], class_names: set[str] | None) -> None:
        if isinstance(node, (*FUNCTIONS, ast.Lambda)):
            self.function(node, scopes, class_names)
        elif isinstance(node, ast.ClassDef):
            for part in (*node.decorator_list, *node.bases, *node.keywords):
                self.node(part, scopes, class_names)
            node.name = self.resolve(node.name, scopes, class_names)
            self.block(node.body, scopes, _bound_at(node.body))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self.node(node.generators[0].iter, scopes, class_names)
            scope = {n.id: self.fresh() for g in node.generators for n in _walk(g.target) if isinstance(n, ast.Name)}
            self.local |= set(scope.values())
            inner = [*scopes, scope]
            for i, generator in enumerate(node.generators):
                self.node(generator.target, inner, None)
                if i:
                    self.node(generator.iter, inner, None)
                for condition in generator.ifs:
                    self.node(condition, inner, None)
            for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                self.node(part, inner, None)
        elif isinstance(node, ast.Name):
            node.id = self.resolve(node.id, scopes, class_names)
        elif isinstance(node, ast.Attribute):
            node.attr = self.attributes.get(node.attr, node.attr)
            self.node(node.value, scopes, class_names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            node.names = [self.resolve(n, scopes if isinstance(node, ast.Nonlocal) else [], None) for n in node.names]
        elif isinstance(node, ast.ExceptHandler):
            if node.name:
                node.name = self.resolve(node.name, scopes, class_names)
            for child in ast.iter_child_nodes(node):
                self.node(child, scopes, class_names)
        else:
            for child in ast.iter_child_nodes(node):
                self.node(child, scopes, class_names)

    def function(self, node, scopes: list[dict[str, str]], class_names: set[str] | None) -> None:
        arguments = node.args
        for default in (*arguments.defaults, *filter(None, arguments.kw_defaults)):
            self.node(default, scopes, class_names)
        body = node.body if isinstance(node.body, list) else [ast.Expr(node.body)]
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.node(decorator, scopes, class_names)
            node.name = self.resolve(node.name, scopes, class_names)
        parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                      *filter(None, [arguments.vararg, arguments.kwarg])]
        declared = {name for statement in body for n in _walk_scope(statement)
                    if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        local = ({p.arg for p in parameters} | _bound_at(body)) - declared
        scope = {name: self.fresh() for name in sorted(local)}
        self.local |= set(scope.values())
        for parameter in parameters:
            parameter.arg = scope.get(parameter.arg, parameter.arg)
            self.parameters.add(parameter.arg)
        self.block(body, [*scopes, scope], None)


# --------------------------------------------------------------------------- helpers of the stages
def _text(node: ast.AST) -> str:
    """The canonical text of a node: the tokens it prints as, the placeholder's numbers dropped."""
    return re.sub(rf"{PLACEHOLDER}\d+", PLACEHOLDER, ast.unparse(node))


def _lines(node: ast.AST, header_only: bool = False) -> frozenset[int]:
    """The lines of the cell a node stands for: its own, and those of the code folded into it."""
    own = set()
    if getattr(node, "lineno", None):
        last = node.lineno if header_only else (getattr(node, "end_lineno", None) or node.lineno)
        own = set(range(node.lineno, last + 1))
    return frozenset(own | getattr(node, "absorbed", frozenset()))


def _located(new: ast.AST, *sources: ast.AST) -> ast.AST:
    """``new`` at the place of ``sources[0]``, standing for the lines of all of them."""
    ast.copy_location(new, sources[0])
    new.absorbed = frozenset().union(*(_lines(s) for s in sources))
    return new


def _names(node: ast.AST, context=ast.Load) -> set[str]:
    return {n.id for n in _walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, context)}


def _stored(node: ast.AST) -> set[str]:
    return _names(node, (ast.Store, ast.Del))


def _target_names(target: ast.expr) -> list[str] | None:
    """The names a plain assignment target binds; None when it also assigns an attribute or item."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        names = [_target_names(e) for e in target.elts]
        return None if any(n is None for n in names) else [name for n in names for name in n]
    return None


def _as_load(target: ast.expr) -> ast.expr:
    """A copy of an assignment target to read it."""
    node = copy.deepcopy(target)
    for inner in _walk(node):
        if hasattr(inner, "ctx"):
            inner.ctx = ast.Load()
    return node


def _inert(expression: ast.expr) -> bool:
    """Whether evaluating ``expression`` as a statement of its own changes nothing the answer computes."""
    for node in _walk(expression):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return False
        if isinstance(node, ast.Call):
            function = node.func
            if not (isinstance(function, ast.Name) and function.id in INERT_CALLS
                    or isinstance(function, ast.Attribute) and function.attr in PURE_METHODS):
                return False
    return True


def _depth(node: ast.AST) -> int:
    """How deep ``node``'s tree nests (walked without recursion)."""
    deepest, todo = 0, [(node, 1)]
    while todo:
        current, depth = todo.pop()
        deepest = max(deepest, depth)
        todo += [(child, depth + 1) for child in ast.iter_child_nodes(current)]
    return deepest


def _truncate(tree: ast.Module) -> None:
    """Every expression nested deeper than ``MAX_DEPTH`` as the placeholder (walked without recursion)."""
    todo = [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for k, child in enumerate(children):
                if not isinstance(child, ast.AST):
                    continue
                if depth >= MAX_DEPTH and isinstance(child, ast.expr) and any(ast.iter_child_nodes(child)):
                    deep = ast.copy_location(ast.Name(PLACEHOLDER, getattr(child, "ctx", ast.Load())), child)
                    if isinstance(value, list):
                        value[k] = deep
                    else:
                        setattr(node, field, deep)
                else:
                    todo.append((child, depth + 1))


def _rewrite_blocks(node: ast.AST, rewrite) -> None:
    """``rewrite(statements) -> statements`` on every block below ``node``, the innermost first (blocks
    hold statements, and only statements, handlers and match cases hold blocks)."""
    for field in BLOCK_FIELDS:
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for statement in block:
            _rewrite_blocks(statement, rewrite)
        if block or field == "body":
            new = rewrite(block)
            if not new and field == "body" and not isinstance(node, ast.Module):
                new = [ast.Pass()]
            setattr(node, field, new)
    for inner in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
        _rewrite_blocks(inner, rewrite)


def _ends(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], TERMINAL)


# --------------------------------------------------------------------------- stage: dead and inert code
def _drop_annotations(tree: ast.Module) -> None:
    """Type annotations and assertion messages: what a student says about the code, not the code."""
    for node in _walk(tree):
        if isinstance(node, FUNCTIONS):
            node.returns = None
        elif isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.Assert):
            node.msg = None


def _simplify(tree: ast.Module, variables: Variables | None = None) -> None:
    """Docstrings, ``pass``, inert expressions, ``x = x`` dropped; code after a ``return`` (``raise``,
    ``break``, ``continue``) and under a test that is never true dropped; ``else`` after a branch that
    returns flattened; ``return a if c else b`` and ``if not c: A else: B`` turned."""
    _rewrite_blocks(tree, _simplified)


def _simplified(block: list[ast.stmt]) -> list[ast.stmt]:
    todo, kept = list(reversed(block)), []
    while todo:
        statement = todo.pop()
        if isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and _inert(statement.value):
            continue
        if isinstance(statement, ast.AnnAssign):
            if statement.value is not None:
                todo.append(_located(ast.Assign([statement.target], statement.value), statement))
            continue
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Name) \
                and statement.targets[0].id == statement.value.id:
            continue  # x = x
        if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Constant) and statement.test.value:
            continue
        if isinstance(statement, ast.For) and _text(statement.iter) in ("[]", "()", "range(0)"):
            todo += reversed(statement.orelse)
            continue
        if _wrapper(statement):  # try: B except: raise; for _ in range(1): B; while True: B; break
            body = [s for s in statement.body if not isinstance(s, ast.Break)] if isinstance(statement, ast.While) \
                else statement.body
            todo += reversed(body)
            continue
        if isinstance(statement, (ast.If, ast.While)) and isinstance(statement.test, ast.Constant):
            if isinstance(statement, ast.If) or not statement.test.value:
                todo += reversed(statement.body if statement.test.value else statement.orelse)
                continue
        if isinstance(statement, ast.If):
            if statement.orelse and _ends(statement.body):
                todo += reversed(statement.orelse)
                statement.orelse = []
            elif statement.orelse and isinstance(statement.test, ast.UnaryOp) and isinstance(statement.test.op, ast.Not):
                statement.test = statement.test.operand
                statement.body, statement.orelse = statement.orelse, statement.body
            elif [type(s) for s in statement.body] == [ast.Pass] and not statement.orelse and _inert(statement.test):
                continue
        if isinstance(statement, ast.Return) and isinstance(statement.value, ast.IfExp):
            choice = statement.value
            todo.append(_located(ast.Return(choice.orelse), statement))
            todo.append(_located(ast.If(choice.test, [_located(ast.Return(choice.body), statement)], []), statement))
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
        return not statement.orelse and not statement.finalbody and all(
            len(h.body) == 1 and isinstance(h.body[0], ast.Raise) and h.body[0].exc is None for h in statement.handlers)
    inside = ast.Module(statement.body, []) if isinstance(statement, (ast.For, ast.While)) else None
    if isinstance(statement, ast.For):
        return not statement.orelse and _text(statement.iter) == "range(1)" \
            and not _stored(statement.target) & _names(inside)
    if isinstance(statement, ast.While):
        loops = (ast.For, ast.AsyncFor, ast.While)
        jumps = [n for n in _walk_until(inside, (*SCOPES, *loops)) if isinstance(n, (ast.Break, ast.Continue))]
        last = statement.body[-1]
        return not statement.orelse and isinstance(statement.test, ast.Constant) and bool(statement.test.value) \
            and len(jumps) == isinstance(last, ast.Break) and isinstance(last, (ast.Break, ast.Return, ast.Raise))
    return False


# --------------------------------------------------------------------------- stage: assignments
def _split_assignments(tree: ast.Module, variables: Variables) -> None:
    """``x op= y`` as ``x = x op y``; ``a, b = x, y`` as two assignments when no later value reads an
    earlier target (then it means the same); ``a, b = v`` as ``a = v[0]``, ``b = v[1]`` when ``v`` is a
    name or an attribute (``B, T, C = x.shape``)."""
    _rewrite_blocks(tree, _split)


def _split(block: list[ast.stmt]) -> list[ast.stmt]:
    new = []
    for statement in block:
        if isinstance(statement, ast.AugAssign):
            statement = _located(ast.Assign([statement.target], ast.BinOp(_as_load(statement.target), statement.op,
                                                                          statement.value)), statement)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], (ast.Tuple, ast.List)) \
                and isinstance(statement.value, (ast.Tuple, ast.List)):
            targets, values = statement.targets[0].elts, statement.value.elts
            starred = any(isinstance(e, ast.Starred) for e in (*targets, *values))
            written = [_Effects(set(), {_written_path(t)}) for t in targets]
            later = [_Effects(set().union(*(_read_paths(v, set()) for v in values[i + 1:])), set())
                     for i in range(len(values))]
            if not starred and len(targets) == len(values) and len({_text(t) for t in targets}) == len(targets) \
                    and not any(_meet(w.writes, w.write_prefixes, r.reads, r.read_prefixes)
                                for w, r in zip(written, later)):
                new += [_located(ast.Assign([t], v), statement) for t, v in zip(targets, values)]
                continue
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], (ast.Tuple, ast.List)) and _inert(statement.value) \
                and isinstance(statement.value, (ast.Name, ast.Attribute, ast.Subscript)) \
                and not any(isinstance(e, ast.Starred) for e in statement.targets[0].elts) \
                and not _stored(statement.targets[0]) & _names(statement.value):  # B, T, C = x.shape
            new += [_located(ast.Assign([t], ast.Subscript(copy.deepcopy(statement.value), ast.Constant(i),
                                                           ast.Load())), statement)
                    for i, t in enumerate(statement.targets[0].elts)]
            continue
        new.append(statement)
    return new


# --------------------------------------------------------------------------- stage: spellings
def _spell(tree: ast.Module, variables: Variables) -> None:
    """One spelling for each operation that has several (see the module's docstring)."""
    _Spelling().visit(tree)


def _call(receiver: ast.expr, method: str, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
    return ast.Call(ast.Attribute(receiver, method, ast.Load()), args, keywords)


def _constant(node: ast.expr, *values) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value in values


class _Spelling(ast.NodeTransformer):
    def __init__(self):
        self.statement_calls: set[int] = set()  # ``s.add(x)`` as a statement is a call, never ``s + x``

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Call):
            self.statement_calls.add(id(node.value))
        return self.generic_visit(node)

    def visit_Call(self, node):
        statement = id(node) in self.statement_calls
        self.generic_visit(node)
        function = node.func
        if isinstance(function, ast.Name):
            if function.id in ("list", "set") and len(node.args) == 1 and not node.keywords \
                    and isinstance(node.args[0], ast.GeneratorExp):
                made = ast.ListComp if function.id == "list" else ast.SetComp
                return ast.copy_location(made(node.args[0].elt, node.args[0].generators), node)
            if function.id == "abs" and len(node.args) == 1 and not node.keywords:
                return ast.copy_location(_call(node.args[0], "abs", [], []), node)
            if function.id == "len" and len(node.args) == 1 and not node.keywords:  # len(x) is x.shape[0]
                shape = ast.Attribute(node.args[0], "shape", ast.Load())
                return ast.copy_location(ast.Subscript(shape, ast.Constant(0), ast.Load()), node)
            if function.id == "float" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                    and str(node.args[0].value).strip().lower() in INFINITE:
                spelled = INFINITE[str(node.args[0].value).strip().lower()]
                value = _dotted(f"math.{spelled.lstrip('-')}")
                return ast.copy_location(ast.UnaryOp(ast.USub(), value) if spelled.startswith("-") else value, node)
            if function.id == "range" and len(node.args) == 3 and _constant(node.args[2], 1):
                node.args = node.args[:2]
            if function.id == "range" and len(node.args) == 2 and _constant(node.args[0], 0):
                node.args = node.args[1:]
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) \
                and function.value.id in MODULES and node.args and not isinstance(node.args[0], ast.Starred):
            node = ast.copy_location(_call(node.args[0], function.attr, node.args[1:], node.keywords), node)
            function = node.func
        positional = [k.value for k in node.keywords if k.arg in ("dim", "axis")]
        node.args = [ast.Tuple(a.elts, ast.Load()) if isinstance(a, ast.List) else
                     ast.GeneratorExp(a.elt, a.generators) if isinstance(a, ast.ListComp) else a
                     for a in [*node.args, *positional]]
        node.keywords = sorted((k for k in node.keywords if k.arg not in ("dim", "axis")),
                               key=lambda k: (k.arg is None, k.arg or ""))
        if not isinstance(function, ast.Attribute):
            return node
        function.attr = SYNONYMS.get(function.attr, function.attr)
        receiver, method, args = function.value, function.attr, node.args
        if method == "transpose":
            node.args, node.keywords = [], []
        elif method == "size" and not node.keywords and len(args) <= 1:
            shape = ast.Attribute(receiver, "shape", ast.Load())
            return ast.copy_location(ast.Subscript(shape, args[0], ast.Load()) if args else shape, node)
        elif method in UNARY_METHODS and not args and not node.keywords:
            return ast.copy_location(ast.UnaryOp(UNARY_METHODS[method](), receiver), node)
        elif method in COMPARE_METHODS and len(args) == 1 and not node.keywords and not statement:
            return ast.copy_location(ast.Compare(receiver, [COMPARE_METHODS[method]()], args), node)
        elif method in BINARY_METHODS and len(args) == 1 and not node.keywords and not statement \
                and not isinstance(args[0], ast.Starred):
            return ast.copy_location(ast.BinOp(receiver, BINARY_METHODS[method](), args[0]), node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in TRANSPOSE_ATTRIBUTES and isinstance(node.ctx, ast.Load):
            return ast.copy_location(_call(node.value, "transpose", [], []), node)
        if node.attr in ("inf", "nan") and isinstance(node.value, ast.Name) and node.value.id in MODULES:
            node.value.id = "math"
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        identity = {ast.Add: (0, 0), ast.Sub: (None, 0), ast.Mult: (1, 1), ast.Div: (None, 1), ast.Pow: (None, 1)}
        if type(node.op) in identity:  # x + 0, 1 * x, x / 1, x ** 1
            left, right = identity[type(node.op)]
            if right is not None and _constant(node.right, right):
                return node.left
            if left is not None and _constant(node.left, left):
                return node.right
        if isinstance(node.op, ast.Pow) and _constant(node.right, 0.5, -0.5):
            return ast.copy_location(_call(node.left, "sqrt" if node.right.value > 0 else "rsqrt", [], []), node)
        if isinstance(node.op, ast.Div) and _constant(node.left, 1) and isinstance(node.right, ast.Call) \
                and isinstance(node.right.func, ast.Attribute) and node.right.func.attr == "sqrt" \
                and not node.right.args:
            node.right.func.attr = "rsqrt"
            return node.right
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        sides = [node.left, *node.comparators]
        if all(isinstance(side, ast.Constant) and type(side.value) in (int, float, str, bool) for side in sides) \
                and len(node.ops) == 1 and type(node.ops[0]) in COMPARISONS:
            try:
                folded = COMPARISONS[type(node.ops[0])](node.left.value, node.comparators[0].value)
            except TypeError:  # 1 < "a"
                return node
            return ast.copy_location(ast.Constant(folded), node)
        if len(node.ops) == 1 and type(node.ops[0]) in MIRRORED:
            return ast.copy_location(ast.Compare(node.comparators[0], [MIRRORED[type(node.ops[0])]()], [node.left]),
                                     node)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        first = node.values[0]
        if isinstance(first, ast.Constant) and bool(first.value) == isinstance(node.op, ast.Or):
            return first  # True or ..., False and ...
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        operand = node.operand
        if isinstance(node.op, ast.Not) and isinstance(operand, ast.Constant):
            return ast.copy_location(ast.Constant(not operand.value), node)
        if isinstance(node.op, ast.Not) and isinstance(operand, ast.Compare) and len(operand.ops) == 1 \
                and type(operand.ops[0]) in NEGATED:
            operand.ops = [NEGATED[type(operand.ops[0])]()]
            return operand
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not):
            node.test, node.body, node.orelse = node.test.operand, node.orelse, node.body
        return node


def _sort_operands(tree: ast.Module, variables: Variables) -> None:
    """The operands of a chain of ``+`` (``*``, ``&``, ``|``, ``^``) and the two sides of ``==`` and ``!=``
    in one order, whatever order the student wrote them in."""
    _SortedOperands().visit(tree)


class _SortedOperands(ast.NodeTransformer):
    def visit_BinOp(self, node):
        if not isinstance(node.op, COMMUTATIVE):
            return self.generic_visit(node)
        operands, todo = [], [node]
        while todo:  # the chain a + b + c, flattened
            current = todo.pop()
            if isinstance(current, ast.BinOp) and type(current.op) is type(node.op):
                todo += [current.right, current.left]
            else:
                operands.append(self.visit(current))
        operands.sort(key=_text)
        chain = operands[0]
        for operand in operands[1:]:
            chain = ast.BinOp(chain, type(node.op)(), operand)
        return ast.copy_location(chain, node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) \
                and _text(node.comparators[0]) < _text(node.left):
            node.left, node.comparators = node.comparators[0], [node.left]
        return node


# --------------------------------------------------------------------------- stage: loops
def _loops(tree: ast.Module, variables: Variables) -> None:
    """A counting ``while`` as ``for ... in range``; a loop that only appends to a list (adds to a set,
    fills a dict, adds to a sum) started empty just before as the comprehension (``sum``) it spells out."""
    _rewrite_blocks(tree, _loops_in)


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
                made = {"list": lambda: ast.ListComp(parts[0], generators),
                        "set": lambda: ast.SetComp(parts[0], generators),
                        "dict": lambda: ast.DictComp(parts[0], parts[1], generators),
                        "sum": lambda: ast.Call(ast.Name("sum", ast.Load()), [ast.GeneratorExp(parts[0], generators)],
                                                [])}[kind]()
                block[i] = _located(ast.Assign([ast.Name(name, ast.Store())], made), statement, block[start])
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
    if isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 and isinstance(loop.target.elts[0], ast.Name) \
            and isinstance(iterated, ast.Call) and _text(iterated.func) == "enumerate" and len(iterated.args) == 1 \
            and not iterated.keywords and loop.target.elts[0].id not in _names(ast.Module(loop.body, [])):
        loop.target, loop.iter = loop.target.elts[1], iterated.args[0]
        return True
    # range(len(xs)) is range(xs.shape[0]) once spelled
    if not (isinstance(loop.target, ast.Name) and isinstance(iterated, ast.Call) and _text(iterated.func) == "range"
            and len(iterated.args) == 1 and isinstance(iterated.args[0], ast.Subscript)
            and isinstance(iterated.args[0].value, ast.Attribute) and iterated.args[0].value.attr == "shape"
            and _constant(iterated.args[0].slice, 0) and _path(iterated.args[0].value.value)):
        return False
    name, sequence = loop.target.id, _path(iterated.args[0].value.value)
    body = ast.Module(loop.body, [])
    uses = [n for n in _walk(body) if isinstance(n, ast.Name) and n.id == name]
    items = [n for n in _walk(body) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
             and isinstance(n.slice, ast.Name) and n.slice.id == name and _path(n.value) == sequence]
    if len(uses) != len(items) or sequence.split(".")[0] in _stored(body) \
            or any(_written_path(t) == sequence for n in _walk(body) if isinstance(n, ast.Assign) for t in n.targets):
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
        generators[-1] = ast.comprehension(generators[-1].target, generators[-1].iter,
                                           [*generators[-1].ifs, statement.test], 0)
        return _collecting_loop(statement.body[0], generators)
    found = None
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and len(statement.value.args) == 1 \
            and not statement.value.keywords and isinstance(statement.value.func, ast.Attribute) \
            and isinstance(statement.value.func.value, ast.Name) and statement.value.func.attr in ("append", "add"):
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
    if any(name in _names(part) for part in parts) or any(name in _names(g) for g in generators):
        return None
    return kind, name, parts, generators


def _initialised(block: list[ast.stmt], loop: int, kind: str, name: str) -> int | None:
    """The index of ``name = <empty>`` before ``block[loop]`` when nothing in between touches ``name``."""
    for start in range(loop - 1, max(loop - LOOKAHEAD, 0) - 1, -1):
        statement = block[start]
        if name in _stored(statement):
            fresh = isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) and ast.unparse(statement.value) in EMPTY[kind]
            return start if fresh else None
        if name in _names(statement):
            return None
    return None


def _counting_loop(block: list[ast.stmt], i: int) -> tuple[int, ast.For] | None:
    """``v = a`` ... ``while v < b: ...; v = v + s; ...`` as (index of ``v = a``, ``for v in range(a, b, s): ...``),
    when the body reads ``v`` only before its one increment and has no ``continue``."""
    loop = block[i]
    test = loop.test
    if loop.orelse or not isinstance(test, ast.Compare) or len(test.ops) != 1 \
            or not isinstance(test.ops[0], (ast.Lt, ast.LtE)) or not isinstance(test.left, ast.Name):
        return None
    name, stop = test.left.id, test.comparators[0]
    increments = [(k, step) for k, statement in enumerate(loop.body) for step in _increment(statement, name)]
    if len(increments) != 1 or name in _names(stop) or any(isinstance(n, ast.Continue) for n in _walk(loop)):
        return None
    at, step = increments[0]
    body = loop.body[:at] + loop.body[at + 1:]
    if name in _stored(ast.Module(body, [])) or name in _names(ast.Module(loop.body[at + 1:], [])) \
            or name in _names(step):
        return None
    for start in range(i - 1, max(i - LOOKAHEAD, 0) - 1, -1):
        statement = block[start]
        if name in _stored(statement):
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)):
                return None
            if isinstance(test.ops[0], ast.LtE):
                stop = ast.BinOp(stop, ast.Add(), ast.Constant(1))
            bounds = [statement.value, stop] + ([] if _constant(step, 1) else [step])
            counted = ast.For(ast.Name(name, ast.Store()), ast.Call(ast.Name("range", ast.Load()), bounds, []),
                              body or [ast.Pass()], [])
            return start, _located(counted, loop, statement)
        if name in _names(statement):
            return None
    return None


def _increment(statement: ast.stmt, name: str) -> list[ast.expr]:
    """[s] when ``statement`` is ``name = name + s`` (or ``s + name``)."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name
            and isinstance(statement.value, ast.BinOp) and isinstance(statement.value.op, ast.Add)):
        return []
    value = statement.value
    return [other for mine, other in ((value.left, value.right), (value.right, value.left))
            if isinstance(mine, ast.Name) and mine.id == name][:1]


# --------------------------------------------------------------------------- stage: dead stores, temporaries
def _drop_dead_stores(tree: ast.Module, variables: Variables) -> None:
    """Assignments to local variables nobody reads (but to update themselves), or that the next
    assignment overwrites before anybody reads them, and functions defined inside a function nobody calls."""
    loads = Counter(n.id for n in _walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    own = Counter()  # reads of a variable in the value of its own assignment (``x = x + 1``)
    for node in _walk(tree):
        if isinstance(node, ast.Assign):
            for name in _plain_targets(node) or ():
                own[name] += sum(1 for n in _walk(node.value) if isinstance(n, ast.Name) and n.id == name)
    read = {name for name, count in loads.items() if count > own[name]}

    def live(block: list[ast.stmt]) -> list[ast.stmt]:
        assigned = Counter(name for s in block if isinstance(s, ast.Assign) for name in _plain_targets(s) or ())
        overwritten = _overwritten(block) if any(count > 1 for count in assigned.values()) else set()
        kept = []
        for i, statement in enumerate(block):
            names = _plain_targets(statement) if isinstance(statement, ast.Assign) else None
            if names and set(names) <= variables.local and (not set(names) & read or i in overwritten):
                continue
            if isinstance(statement, (*FUNCTIONS, ast.ClassDef)) and statement.name in variables.local \
                    and statement.name not in read:
                continue
            kept.append(statement)
        return kept

    _rewrite_blocks(tree, live)


def _plain_targets(assignment: ast.Assign) -> list[str] | None:
    names = [_target_names(t) for t in assignment.targets]
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
        for name in _stored(statement):
            next_event[name] = "overwritten" if plain and name in plain else "changed"
        for name in _names(statement):  # a statement reads before it assigns
            next_event[name] = "read"
    return found


def _inline_temporaries(tree: ast.Module, variables: Variables) -> None:
    """A local variable that is another under a second name (``a = b``, neither assigned again) is that
    one; one assigned once and read once, later in the same block, is written where it is read (when
    nothing in between changes what its value reads)."""
    loads = Counter(n.id for n in _walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    stores = Counter(n.id for n in _walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))

    def unchanging(name: str) -> bool:
        return stores[name] == 0 if name in variables.parameters else stores[name] <= 1

    aliases = {}  # a = b, with neither assigned anywhere else: every a is b
    for node in _walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Name) and node.targets[0].id in variables.local \
                and node.targets[0].id not in variables.parameters and stores[node.targets[0].id] == 1 \
                and unchanging(node.value.id) and node.value.id != node.targets[0].id:
            aliases[node.targets[0].id] = node.value.id
    if aliases:
        for node in _walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in aliases:
                while node.id in aliases:
                    node.id = aliases[node.id]
        _rewrite_blocks(tree, lambda block: [s for s in block if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                                                      and isinstance(s.targets[0], ast.Name)
                                                                      and s.targets[0].id in aliases)])
        return  # the counts changed: the temporaries wait for the next round

    def inlined(block: list[ast.stmt]) -> list[ast.stmt]:
        block, i = list(block), 0
        while i < len(block):
            statement = block[i]
            name = statement.targets[0].id if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) else None
            if name in variables.local and name not in variables.parameters and stores[name] == 1 \
                    and loads[name] == 1 and not any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
                                                     for n in _walk(statement.value)):
                use = next((j for j in range(i + 1, min(i + 1 + LOOKAHEAD, len(block)))
                            if name in _names(block[j])), None)
                if use is not None and not _changes(block[i + 1:use + 1], statement.value) \
                        and _depth(statement.value) + _depth(block[use]) < MAX_DEPTH:
                    read = next(n for n in _walk(block[use]) if isinstance(n, ast.Name) and n.id == name)
                    _Replace({id(read): statement.value}).visit(block[use])
                    block[use].absorbed = _lines(block[use]) | _lines(statement)
                    del block[i]
                    continue
            i += 1
        return block

    _rewrite_blocks(tree, inlined)


def _changes(statements: list[ast.stmt], value: ast.expr) -> bool:
    """Whether ``statements`` (the last one the statement that reads a temporary) may change what
    ``value`` reads before the last one evaluates it."""
    *between, use = statements
    if not isinstance(use, (ast.Assign, ast.Return, ast.Expr)):
        between.append(use)  # a loop or a branch may assign before it reads
    reads = _read_paths(value, set())
    read_prefixes = _prefixes(reads)
    return any(_meet(e.writes, e.write_prefixes, reads, read_prefixes) for e in map(_effects, between))


# --------------------------------------------------------------------------- stage: order
@dataclass
class _Effects:
    """What a statement reads and writes: names and attribute paths such as ``self.w`` (``self.w`` and
    ``self`` meet, ``self.w`` and ``self.b`` do not), and whether it must keep its place."""

    reads: set[str]
    writes: set[str]
    barrier: bool = False

    def __post_init__(self):
        self.read_prefixes, self.write_prefixes = _prefixes(self.reads), _prefixes(self.writes)


def _meet(paths: set[str], prefixes: set[str], other: set[str], other_prefixes: set[str]) -> bool:
    """Whether a path of one set is a path of the other or a prefix of one."""
    return bool(paths & other_prefixes) or bool(other & prefixes)


WORLD = "<world>"  # what calls made for their effect read and write: they keep their order among themselves


def _prefixes(paths: set[str]) -> set[str]:
    found = set()
    for path in paths:
        parts = path.split(".")
        found |= {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
    return found


def _read_paths(node: ast.AST, found: set[str]) -> set[str]:
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _path(node):
        found.add(_path(node))
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        found.add(node.id)
    else:
        for child in ast.iter_child_nodes(node):
            _read_paths(child, found)
    return found


def _written_path(target: ast.expr) -> str:
    while isinstance(target, (ast.Subscript, ast.Starred)):
        target = target.value
    return _path(target) or WORLD


def _effects(node: ast.AST) -> _Effects:
    if isinstance(node, (*FUNCTIONS, ast.ClassDef)):  # its body runs later: only what the definition evaluates
        evaluated = [*node.decorator_list]
        if isinstance(node, ast.ClassDef):
            evaluated += [*node.bases, *node.keywords, *(s for s in node.body if not isinstance(s, (*FUNCTIONS,)))]
        else:
            evaluated += [*node.args.defaults, *filter(None, node.args.kw_defaults)]
        return _Effects(set().union(*(_read_paths(e, set()) for e in evaluated)), {node.name})
    reads, writes, barrier = _read_paths(node, set()), set(), isinstance(node, (ast.Global, ast.Nonlocal))
    for inner in _walk_scope(node):
        if isinstance(inner, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred)) \
                and isinstance(inner.ctx, (ast.Store, ast.Del)):
            writes.add(_written_path(inner))
        elif isinstance(inner, (*FUNCTIONS, ast.ClassDef)) and inner is not node:
            writes.add(inner.name)
        elif isinstance(inner, ast.Expr):  # a call made for its effect: on its receiver, and on the world
            function = inner.value.func if isinstance(inner.value, ast.Call) else None
            writes |= {WORLD, *([_written_path(function.value)] if isinstance(function, ast.Attribute) else [])}
            reads.add(WORLD)
        elif isinstance(inner, (ast.Assert, ast.With, ast.AsyncWith, ast.Try, ast.Delete)):
            writes.add(WORLD)
            reads.add(WORLD)
    loop = isinstance(node, (ast.For, ast.AsyncFor, ast.While))
    return _Effects(reads, writes, barrier or isinstance(node, TERMINAL) or _escapes(node, loop))


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


def _depends(first: _Effects, second: _Effects) -> bool:
    """Whether ``second`` must stay after ``first``."""
    both = second.reads | second.writes
    return first.barrier or second.barrier \
        or _meet(first.writes, first.write_prefixes, both, second.read_prefixes | second.write_prefixes) \
        or _meet(second.writes, second.write_prefixes, first.reads, first.read_prefixes)


def _order(tree: ast.Module, variables: Variables) -> None:
    """The statements of every block in one canonical order that keeps every dependency: among the
    statements free to go next, the one whose canonical text comes first."""
    _rewrite_blocks(tree, _ordered)


def _ordered(block: list[ast.stmt]) -> list[ast.stmt]:
    if len(block) < 2 or len(block) > MAX_REORDERED:
        return block
    effects, keys = [_effects(s) for s in block], [_text(s) for s in block]
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


# --------------------------------------------------------------------------- the tokens
def _emit(statement: ast.stmt, out: list[tuple[str, frozenset[int]]]) -> None:
    """The canonical tokens of a statement, each with the lines it stands for, appended to ``out``."""
    header = _lines(statement, header_only=True)
    if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
        for decorator in statement.decorator_list:
            _lexed_into(f"@{_text(decorator)}", _lines(decorator), out)
        if isinstance(statement, ast.ClassDef):
            bases = ", ".join(_text(b) for b in [*statement.bases, *statement.keywords])
            _lexed_into(_strip(f"class {statement.name}({bases}):"), header, out)
        else:
            _lexed_into(_strip(f"def {statement.name}({_text(statement.args)}):"), header, out)
        _emit_block(statement.body, header, out)
    elif isinstance(statement, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
        if isinstance(statement, (ast.If, ast.While)):
            text = f"{'if' if isinstance(statement, ast.If) else 'while'} {_text(statement.test)}:"
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            text = f"for {_text(statement.target)} in {_text(statement.iter)}:"
        else:
            text = f"with {', '.join(_text(item) for item in statement.items)}:"
        _lexed_into(text, header, out)
        _emit_block(statement.body, header, out)
        if getattr(statement, "orelse", None):
            _lexed_into("else:", header, out)
            _emit_block(statement.orelse, header, out)
    elif isinstance(statement, ast.Try):
        _lexed_into("try:", header, out)
        _emit_block(statement.body, header, out)
        for handler in statement.handlers:
            caught = f" {_text(handler.type)}" if handler.type else ""
            named = f" as {handler.name}" if handler.name else ""
            _lexed_into(_strip(f"except{caught}{named}:"), _lines(handler, header_only=True), out)
            _emit_block(handler.body, header, out)
        for word, block in (("else:", statement.orelse), ("finally:", statement.finalbody)):
            if block:
                _lexed_into(word, header, out)
                _emit_block(block, header, out)
    else:
        _lexed_into(_text(statement), _lines(statement), out)


def _emit_block(block: list[ast.stmt], lines: frozenset[int], out: list[tuple[str, frozenset[int]]]) -> None:
    out.append(("{", lines))
    for statement in block:
        _emit(statement, out)
    out.append(("}", lines))


def _lexed_into(text: str, lines: frozenset[int], out: list[tuple[str, frozenset[int]]]) -> None:
    out += [(token, lines) for token in statement_tokens(text)]


@functools.lru_cache(maxsize=1 << 16)  # copies of one answer print the same statements
def statement_tokens(text: str) -> tuple[str, ...]:
    """The tokens of one canonical statement's text (cached: ``statement_tokens.cache_clear()`` forgets)."""
    return tuple(token for token, _ in _lexed(text))


def _strip(text: str) -> str:
    return re.sub(rf"{PLACEHOLDER}\d+", PLACEHOLDER, text)


STAGES = (_simplify, _split_assignments, _spell, _loops, _drop_dead_stores, _inline_temporaries)
FINAL_STAGES = (_sort_operands, _order)
