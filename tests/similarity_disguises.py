"""Cheap disguises a copier applies to someone else's answer cell: each a function ``code -> code``.

The adversary of ``course similarity`` (tests/test_similarity.py): every disguise keeps the answer
valid Python that computes what the original computes (checked on notebooks 02 and 06), and is
written here independently of the normaliser in course_tools/classroom/canonical/, as a student
would write it: a few lines of ``ast`` each, applied to every answer cell of a real solution.
"""
from __future__ import annotations

import ast
import copy
import itertools
from typing import Callable

Disguise = Callable[[str], str]

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = (*FUNCTIONS, ast.Lambda, ast.ClassDef)


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, FUNCTIONS)]


def _blocks(tree: ast.AST):
    """Every statement list of ``tree`` (bodies, else branches, handlers' bodies), outermost first."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _names(node: ast.AST, context: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, context)}


def _written(statement: ast.stmt) -> set[str]:
    """Names and attribute roots a statement assigns."""
    targets = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    roots = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                roots.add(node.id)
    return roots | _names(statement, ast.Store)


# --------------------------------------------------------------------------- renaming
def renamed(code: str) -> str:
    """Every local variable of every function, comprehension and lambda variables included, renamed (the
    parameters stay: they are the stub's signature, which the tests may call by keyword)."""
    tree = ast.parse(code)
    fresh = (f"{word}_{i}" for i in itertools.count() for word in ("tmp", "val", "thing", "aux"))
    for function in _functions(tree):
        arguments = function.args
        parameters = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                      *filter(None, [arguments.vararg, arguments.kwarg])]}
        local = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
            elif isinstance(node, ast.Global | ast.Nonlocal):
                local -= set(node.names)
            elif isinstance(node, ast.Lambda):
                local |= {a.arg for a in node.args.args}
        mapping = {name: next(fresh) for name in sorted(local - parameters)}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and node.id in mapping:
                node.id = mapping[node.id]
            elif isinstance(node, ast.arg) and node.arg in mapping:
                node.arg = mapping[node.arg]
    return ast.unparse(tree)


# --------------------------------------------------------------------------- dead code
def _after_every_statement(code: str, make: Callable[[int, ast.stmt], list[ast.stmt]]) -> str:
    tree = ast.parse(code)
    counter = itertools.count()
    for block in list(_blocks(tree)):
        new = []
        for statement in block:
            new.append(statement)
            if not isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                new.extend(make(next(counter), statement))
        block[:] = new
    return ast.unparse(ast.fix_missing_locations(tree))


def _defined_by(statement: ast.stmt) -> list[str]:
    """Names a simple statement reads or assigns: all bound once it has run (those of a loop may not be)."""
    if not isinstance(statement, (ast.Assign, ast.AugAssign, ast.Expr)):
        return []
    inner = {n.id for c in ast.walk(statement) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)
             if isinstance(n, ast.Name)}
    inner |= {a.arg for n in ast.walk(statement) if isinstance(n, ast.Lambda) for a in n.args.args}
    return sorted((_names(statement, ast.Store) | _names(statement, ast.Load)) - inner -
                  {"self", "super", "print"})


def dead_stores(code: str) -> str:
    """An assignment nobody reads after every statement: constants, and values computed from live
    variables."""
    def make(i: int, statement: ast.stmt) -> list[ast.stmt]:
        live = _defined_by(statement)
        value = f"len(str({live[0]}))" if live and i % 2 else "None"
        return ast.parse(f"_unused_{i} = {value}").body
    return _after_every_statement(code, make)


def issue_renamed_and_unused(code: str) -> str:
    """The issue's first copy: renamed locals and ``_unused = None`` after every statement."""
    return _after_every_statement(renamed(code), lambda i, s: ast.parse("_unused = None").body)


def no_op_statements(code: str) -> str:
    """``pass``, bare constants, strings, names, and calls that compute a value nobody keeps."""
    forms = ("pass", "None", "0", "'why not'", "...", "math.sqrt(2.0)", "print()")

    def make(i: int, statement: ast.stmt) -> list[ast.stmt]:
        read = _defined_by(statement)
        if read and i % 3 == 2:
            return ast.parse(read[0] if i % 2 else f"len(str({read[0]}))").body
        return ast.parse(forms[i % len(forms)]).body
    return _after_every_statement(code, make)


def unreachable_code(code: str) -> str:
    """Code after every ``return``; blocks under tests that are never true (``if False:``, ``while 0:``,
    ``if 1 > 2:``, ``if not True:``, ``for _ in []:``) holding copies of statements."""
    never = ("if False:", "if 1 > 2:", "if not True:", "while 0:", "for _ in []:")
    tree = ast.parse(code)
    counter = itertools.count()
    for block in list(_blocks(tree)):
        new = []
        for statement in block:
            if isinstance(statement, ast.Return):
                new.append(statement)
                new.extend(ast.parse("print('done')\nreturn None").body)
                break
            if isinstance(statement, (ast.Assign, ast.Expr)):
                dead = ast.parse(f"{never[next(counter) % len(never)]}\n    pass").body[0]
                dead.body = [copy.deepcopy(statement)]
                new.append(dead)
            new.append(statement)
        block[:] = new
    return ast.unparse(ast.fix_missing_locations(tree))


def no_op_wrappers(code: str) -> str:
    """Statements wrapped in blocks that run them once: ``if True:``, ``for _once in range(1):``,
    ``try:`` ... ``except Exception: raise``, ``while True:`` ... ``break``."""
    wrappers = ("if True:\n    pass", "for _once in range(1):\n    pass",
                "try:\n    pass\nexcept Exception:\n    raise", "while True:\n    pass\n    break")
    tree = ast.parse(code)
    counter = itertools.count()
    for block in list(_blocks(tree)):
        for k, statement in enumerate(block):
            turn = next(counter) if isinstance(statement, (ast.Assign, ast.Expr, ast.Return)) else 1
            if turn % 2 == 0:  # every other statement, each wrapper in turn
                wrapper = ast.parse(wrappers[turn // 2 % len(wrappers)]).body[0]
                wrapper.body[0] = statement
                block[k] = wrapper
    return ast.unparse(ast.fix_missing_locations(tree))


HELPER = '''
def {name}(values, scale=2):
    total = 0
    for value in values:
        if value > scale:
            total = total + value * scale
        else:
            total = total - value
    return [total, scale, len(values)]
'''


def unused_helpers(code: str) -> str:
    """A helper function nobody calls inside every function, and two beside the cell's definitions."""
    tree = ast.parse(code)
    for i, function in enumerate(_functions(tree)):
        position = 1 if len(function.body) > 1 else 0
        function.body[position:position] = ast.parse(HELPER.format(name=f"_helper_{i}")).body
    tree.body[1:1] = ast.parse(HELPER.format(name="unused_module_helper")).body
    tree.body.extend(ast.parse(HELPER.format(name="another_unused_helper")).body)
    return ast.unparse(ast.fix_missing_locations(tree))


def comments_and_docstrings(code: str) -> str:
    """Docstrings rewritten, a comment at the end of every line and between the statements."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, (*FUNCTIONS, ast.ClassDef)) and ast.get_docstring(node) is not None:
            node.body[0] = ast.Expr(ast.Constant(f"My own take on {node.name}, written from scratch."))
    lines = []
    for i, line in enumerate(ast.unparse(ast.fix_missing_locations(tree)).splitlines()):
        indent = line[:len(line) - len(line.lstrip())]
        if line.strip() and not line.rstrip().endswith(
            ("\\", ",")) and '"""' not in line and "'''" not in line:
            lines.append(f"{indent}# step {i}: see the lecture")
            lines.append(f"{line}  # {'why' if i % 2 else 'this works'}")
        else:
            lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------- order and temporaries
def _independent(first: ast.stmt, second: ast.stmt) -> bool:
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign)
    if not isinstance(first, simple) or not isinstance(second, simple):
        return False
    one, two = _written(first), _written(second)
    reads_one, reads_two = _names(first, ast.Load), _names(second, ast.Load)
    return not (one & (two | reads_two)) and not (two & reads_one)


def reordered(code: str) -> str:
    """Independent statements swapped pairwise, the functions of the cell and the methods of a class
    reversed."""
    tree = ast.parse(code)
    for block in list(_blocks(tree)):
        i = 0
        while i + 1 < len(block):
            if _independent(block[i], block[i + 1]):
                block[i], block[i + 1] = block[i + 1], block[i]
                i += 2
            else:
                i += 1
    definitions = (*FUNCTIONS, ast.ClassDef)
    for owner in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        places = [i for i, s in enumerate(owner.body) if isinstance(s, definitions)]
        moved = [owner.body[i] for i in reversed(places)]
        for place, statement in zip(places, moved):
            owner.body[place] = statement
    return ast.unparse(tree)


class _Hoist(ast.NodeTransformer):
    """Moves the arguments of a statement's outermost call, or the operands of its outermost
    operator, into temporaries assigned just before it."""

    def __init__(self):
        self.counter = itertools.count()

    def hoisted(self, expression: ast.expr, before: list[ast.stmt]) -> ast.expr:
        def temporary(value: ast.expr) -> ast.expr:
            if not isinstance(value, (ast.Call, ast.BinOp, ast.Attribute, ast.Subscript)) or \
                    any(isinstance(n, (ast.Lambda, ast.comprehension, ast.NamedExpr, ast.Starred))
                        for n in ast.walk(value)):
                return value
            name = f"part_{next(self.counter)}"
            before.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value))
            return ast.Name(name, ast.Load())

        if isinstance(expression, ast.Call):
            expression.args = [temporary(a) for a in expression.args]
            for keyword in expression.keywords:
                if keyword.arg is not None:
                    keyword.value = temporary(keyword.value)
        elif isinstance(expression, ast.BinOp):
            expression.left, expression.right = temporary(expression.left), temporary(expression.right)
        elif isinstance(expression, ast.Tuple):
            expression.elts = [temporary(e) for e in expression.elts]
        return expression

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        new = []
        for statement in statements:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(statement, field, self.block(inner))
            before: list[ast.stmt] = []
            if isinstance(statement, (ast.Assign, ast.Return, ast.Expr)) and statement.value is not None:
                statement.value = self.hoisted(statement.value, before)
            new.extend(before)
            new.append(statement)
        return new


def temporaries_introduced(code: str) -> str:
    """Each statement's arguments and operands computed into temporaries first; a parameter read twice
    read through a second name; ``B, T, C = x.shape`` as one assignment per dimension."""
    tree = ast.parse(code)
    for function in _functions(tree):
        arguments = [a.arg for a in function.args.args if a.arg != "self"]
        reads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        twice = [a for a in arguments if sum(n.id == a for n in reads) >= 2
                 and a not in _names(function, ast.Store)]
        if twice:
            for node in reads:
                if node.id == twice[0]:
                    node.id = f"{twice[0]}_again"
            function.body.insert(0, ast.parse(f"{twice[0]}_again = {twice[0]}").body[0])
    for block in list(_blocks(tree)):
        new = []
        for statement in block:
            if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Tuple) \
                    and isinstance(statement.value, ast.Attribute) and statement.value.attr == "shape":
                shape = ast.unparse(statement.value)
                new += [ast.parse(f"{ast.unparse(t)} = {shape}[{i}]").body[0]
                        for i, t in enumerate(statement.targets[0].elts)]
            else:
                new.append(statement)
        block[:] = new
    tree.body = _Hoist().block(tree.body)
    return ast.unparse(ast.fix_missing_locations(tree))


def temporaries_inlined(code: str) -> str:
    """Every variable assigned once and read once, in the next statement, written into that statement."""
    tree = ast.parse(code)
    for function in _functions(tree):
        for block in list(_blocks(function)):
            i = 0
            while i + 1 < len(block):
                statement = block[i]
                loads = [
                    n for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                ]
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                        and isinstance(statement.targets[0], ast.Name):
                    name = statement.targets[0].id
                    stores = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
                              and not isinstance(n.ctx, ast.Load)]
                    uses = [n for n in loads if n.id == name]
                    in_next = [n for n in ast.walk(block[i + 1]) if isinstance(n, ast.Name) and n.id == name]
                    simple_next = isinstance(block[i + 1], (ast.Assign, ast.Return, ast.Expr))
                    if len(stores) == 1 and len(uses) == 1 and in_next == uses and simple_next:
                        _replace(block[i + 1], uses[0], statement.value)
                        del block[i]
                        continue
                i += 1
    return ast.unparse(ast.fix_missing_locations(tree))


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
            elif isinstance(value, list):
                parent.__dict__[field] = [new if v is old else v for v in value]


# --------------------------------------------------------------------------- spelling and loops
class _Spelling(ast.NodeTransformer):
    """``@`` as ``torch.matmul`` or ``.matmul``, ``.transpose(-2, -1)`` as ``.mT``, methods as torch
    functions and back, ``math.sqrt(x)`` as ``x ** 0.5``, ``.view`` as ``.reshape``, ``x += y`` as
    ``x = x + y``, ``dim=`` keywords as positions, comparisons mirrored, ``x.shape[0]`` as ``len(x)``,
    ``~m`` as ``m.logical_not()``, ``float('-inf')`` as ``-math.inf``, a returned sum times one."""

    def __init__(self):
        self.counter = itertools.count()

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            if next(self.counter) % 2:
                return ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), "matmul", ast.Load()),
                                [node.left, node.right], [])
            return ast.Call(ast.Attribute(node.left, "matmul", ast.Load()), [node.right], [])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        function = node.func
        if isinstance(function, ast.Attribute):
            module = isinstance(function.value, ast.Name) and function.value.id in ("torch", "F", "math")
            if function.attr == "transpose" and not module and [ast.unparse(a)
                                                                for a in node.args] == ["-2", "-1"]:
                return ast.Attribute(function.value, "mT", ast.Load())
            if function.attr == "transpose" and not module and len(node.args) == 2:
                return ast.Call(ast.Attribute(function.value, "swapaxes", ast.Load()), node.args,
                                node.keywords)
            if function.attr == "sqrt" and module and function.value.id == "math" and len(node.args) == 1:
                return ast.BinOp(node.args[0], ast.Pow(), ast.Constant(0.5))
            if function.attr in ("softmax", "exp", "tanh", "log_softmax") and not module:
                return ast.Call(ast.Attribute(ast.Name("torch", ast.Load()), function.attr, ast.Load()),
                                [function.value, *node.args], node.keywords)
            if function.attr in ("exp", "log", "relu") and module and function.value.id in ("torch", "F") \
                    and node.args:
                return ast.Call(ast.Attribute(node.args[0], function.attr, ast.Load()), node.args[1:],
                                node.keywords)
            if function.attr == "view":
                function.attr = "reshape"
        if isinstance(function, ast.Name) and function.id == "float" \
                and [ast.unparse(a) for a in node.args] == ["'-inf'"]:
            return ast.UnaryOp(ast.USub(), ast.Attribute(ast.Name("math", ast.Load()), "inf", ast.Load()))
            if not module and not node.args and [k.arg for k in node.keywords] == ["dim"]:
                node.args, node.keywords = [node.keywords[0].value], []
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if (
            isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
            and isinstance(node.ctx, ast.Load)
            and ast.unparse(node.slice) == "0"
        ):
            return ast.Call(ast.Name("len", ast.Load()), [node.value.value], [])
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Invert):
            return ast.Call(ast.Attribute(node.operand, "logical_not", ast.Load()), [], [])
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.BinOp):
            node.value = ast.BinOp(node.value, ast.Mult(), ast.Constant(1))
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            return ast.Compare(node.comparators[0], node.ops, [node.left])
        mirror = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
        if len(node.ops) == 1 and type(node.ops[0]) in mirror:
            return ast.Compare(node.comparators[0], [mirror[type(node.ops[0])]()], [node.left])
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            return ast.Assign(
                [node.target], ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            )
        return node


def operator_spelling(code: str) -> str:
    tree = _Spelling().visit(ast.parse(code))
    return ast.unparse(ast.fix_missing_locations(tree))


class _Loops(ast.NodeTransformer):
    """``for i in range(a, b)`` as a ``while`` loop, ``for x in xs`` by index or with ``enumerate``, list
    comprehensions and ``sum`` of a generator as loops."""

    def __init__(self):
        self.counter = itertools.count()

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        new = []
        for statement in statements:
            for field in ("body", "orelse"):
                inner = getattr(statement, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(statement, field, self.block(inner))
            new.extend(self.rewritten(statement))
        return new

    def rewritten(self, statement: ast.stmt) -> list[ast.stmt]:
        if (
            isinstance(statement, ast.For)
            and isinstance(statement.target, ast.Name)
            and isinstance(statement.iter, ast.Name)
            and not statement.orelse
        ):
            index = f"index_{next(self.counter)}"
            if next(self.counter) % 2:
                loop = ast.parse(
                    f"for {index} in range(len({statement.iter.id})):\n"
                    f"    {statement.target.id} = {statement.iter.id}[{index}]"
                ).body[0]
                loop.body += statement.body
                return [loop]
            statement.target = ast.Tuple([ast.Name(index, ast.Store()), statement.target], ast.Store())
            statement.iter = ast.Call(ast.Name("enumerate", ast.Load()), [statement.iter], [])
            return [statement]
        if (
            isinstance(statement, ast.For)
            and isinstance(statement.target, ast.Name)
            and not statement.orelse
            and isinstance(statement.iter, ast.Call)
            and ast.unparse(statement.iter.func) == "range"
            and 1 <= len(statement.iter.args) <= 2
            and not any(isinstance(n, ast.Continue) for n in ast.walk(statement))
        ):
            variable = statement.target.id
            start, stop = (["0", *map(ast.unparse, statement.iter.args)])[-2:]
            loop = ast.parse(
                f"{variable} = {start}\nwhile {variable} < {stop}:\n    pass\n    {variable} += 1"
            ).body
            loop[1].body = [*statement.body, loop[1].body[1]]
            return loop
        if isinstance(statement, (ast.Assign, ast.Return)) and statement.value is not None:
            value = statement.value
            if isinstance(value, ast.ListComp) and len(value.generators) == 1 and not value.generators[0].ifs:
                name = f"items_{next(self.counter)}"
                generator = value.generators[0]
                loop = ast.parse(f"{name} = []\nfor _ in _:\n    {name}.append(_)").body
                loop[1].target, loop[1].iter, loop[1].body[0].value.args = (
                    generator.target,
                    generator.iter,
                    [value.elt],
                )
                statement.value = ast.Name(name, ast.Load())
                return [*loop, statement]
            if (
                isinstance(value, ast.Call)
                and ast.unparse(value.func) == "sum"
                and len(value.args) == 1
                and isinstance(value.args[0], ast.GeneratorExp)
                and len(value.args[0].generators) == 1
                and not value.args[0].generators[0].ifs
            ):
                name = f"total_{next(self.counter)}"
                generator = value.args[0].generators[0]
                loop = ast.parse(f"{name} = 0\nfor _ in _:\n    {name} += _").body
                loop[1].target, loop[1].iter = generator.target, generator.iter
                loop[1].body[0].value = value.args[0].elt
                statement.value = ast.Name(name, ast.Load())
                return [*loop, statement]
        return [statement]


def loop_forms(code: str) -> str:
    tree = ast.parse(code)
    tree.body = _Loops().block(tree.body)
    return ast.unparse(ast.fix_missing_locations(tree))


def _chain(*disguises: Disguise) -> Disguise:
    def disguise(code: str) -> str:
        for step in disguises:
            code = step(code)
        return code

    return disguise


# kind -> disguise, each applied to every answer cell of a real solution
DISGUISES: dict[str, Disguise] = {
    "renamed": renamed,
    "dead-stores": dead_stores,
    "no-op-statements": no_op_statements,
    "unreachable-code": unreachable_code,
    "no-op-wrappers": no_op_wrappers,
    "unused-helpers": unused_helpers,
    "comments-and-docstrings": comments_and_docstrings,
    "reordered": reordered,
    "temporaries-introduced": temporaries_introduced,
    "temporaries-inlined": temporaries_inlined,
    "operator-spelling": operator_spelling,
    "loop-forms": loop_forms,
    # the issue's two copies
    "issue-renamed-and-unused": issue_renamed_and_unused,
    "issue-reordered-temporaries-matmul": _chain(reordered, temporaries_introduced, operator_spelling),
    "all-at-once": _chain(
        renamed,
        loop_forms,
        temporaries_introduced,
        reordered,
        operator_spelling,
        dead_stores,
        no_op_statements,
        unreachable_code,
        no_op_wrappers,
        unused_helpers,
        comments_and_docstrings,
    ),
}
