"""The canonical form's spelling stages: one spelling for each operation (methods, operators,
functions), and the operands of commutative operations in one order."""
from __future__ import annotations

import ast

from .model import (
    BINARY_METHODS,
    COMMUTATIVE,
    COMPARE_METHODS,
    COMPARISONS,
    INFINITE,
    MIRRORED,
    MODULES,
    NEGATED,
    SYNONYMS,
    TRANSPOSE_ATTRIBUTES,
    UNARY_METHODS,
    Variables,
)
from .names import dotted
from .tree import source_of


# --------------------------------------------------------------------------- stage: spellings
def spell(tree: ast.Module, variables: Variables) -> None:
    """One spelling for each operation that has several (see the module's docstring)."""
    _Spelling().visit(tree)


def _call(receiver: ast.expr, method: str, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.Call:
    return ast.Call(ast.Attribute(receiver, method, ast.Load()), args, keywords)


def constant(node: ast.expr, *values) -> bool:
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
            if (
                function.id in ("list", "set")
                and len(node.args) == 1
                and not node.keywords
                and isinstance(node.args[0], ast.GeneratorExp)
            ):
                made = ast.ListComp if function.id == "list" else ast.SetComp
                return ast.copy_location(made(node.args[0].elt, node.args[0].generators), node)
            if function.id == "abs" and len(node.args) == 1 and not node.keywords:
                return ast.copy_location(_call(node.args[0], "abs", [], []), node)
            if function.id == "len" and len(node.args) == 1 and not node.keywords:  # len(x) is x.shape[0]
                shape = ast.Attribute(node.args[0], "shape", ast.Load())
                return ast.copy_location(ast.Subscript(shape, ast.Constant(0), ast.Load()), node)
            if (
                function.id == "float"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).strip().lower() in INFINITE
            ):
                spelled = INFINITE[str(node.args[0].value).strip().lower()]
                value = dotted(f"math.{spelled.lstrip('-')}")
                return ast.copy_location(
                    ast.UnaryOp(ast.USub(), value) if spelled.startswith("-") else value, node
                )
            if function.id == "range" and len(node.args) == 3 and constant(node.args[2], 1):
                node.args = node.args[:2]
            if function.id == "range" and len(node.args) == 2 and constant(node.args[0], 0):
                node.args = node.args[1:]
        if (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Name)
            and function.value.id in MODULES
            and node.args
            and not isinstance(node.args[0], ast.Starred)
        ):
            node = ast.copy_location(_call(node.args[0], function.attr, node.args[1:], node.keywords), node)
            function = node.func
        positional = [k.value for k in node.keywords if k.arg in ("dim", "axis")]
        node.args = [
            ast.Tuple(a.elts, ast.Load())
            if isinstance(a, ast.List)
            else ast.GeneratorExp(a.elt, a.generators)
            if isinstance(a, ast.ListComp)
            else a
            for a in [*node.args, *positional]
        ]
        node.keywords = sorted(
            (k for k in node.keywords if k.arg not in ("dim", "axis")),
            key=lambda k: (k.arg is None, k.arg or ""),
        )
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
        elif (
            method in BINARY_METHODS
            and len(args) == 1
            and not node.keywords
            and not statement
            and not isinstance(args[0], ast.Starred)
        ):
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
        identity = {
            ast.Add: (0, 0),
            ast.Sub: (None, 0),
            ast.Mult: (1, 1),
            ast.Div: (None, 1),
            ast.Pow: (None, 1),
        }
        if type(node.op) in identity:  # x + 0, 1 * x, x / 1, x ** 1
            left, right = identity[type(node.op)]
            if right is not None and constant(node.right, right):
                return node.left
            if left is not None and constant(node.left, left):
                return node.right
        if isinstance(node.op, ast.Pow) and constant(node.right, 0.5, -0.5):
            return ast.copy_location(
                _call(node.left, "sqrt" if node.right.value > 0 else "rsqrt", [], []), node
            )
        if (
            isinstance(node.op, ast.Div)
            and constant(node.left, 1)
            and isinstance(node.right, ast.Call)
            and isinstance(node.right.func, ast.Attribute)
            and node.right.func.attr == "sqrt"
            and not node.right.args
        ):
            node.right.func.attr = "rsqrt"
            return node.right
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        sides = [node.left, *node.comparators]
        if (
            all(
                isinstance(side, ast.Constant) and type(side.value) in (int, float, str, bool)
                for side in sides
            )
            and len(node.ops) == 1
            and type(node.ops[0]) in COMPARISONS
        ):
            try:
                folded = COMPARISONS[type(node.ops[0])](node.left.value, node.comparators[0].value)
            except TypeError:  # 1 < "a"
                return node
            return ast.copy_location(ast.Constant(folded), node)
        if len(node.ops) == 1 and type(node.ops[0]) in MIRRORED:
            return ast.copy_location(
                ast.Compare(node.comparators[0], [MIRRORED[type(node.ops[0])]()], [node.left]), node
            )
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
        if (
            isinstance(node.op, ast.Not)
            and isinstance(operand, ast.Compare)
            and len(operand.ops) == 1
            and type(operand.ops[0]) in NEGATED
        ):
            operand.ops = [NEGATED[type(operand.ops[0])]()]
            return operand
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not):
            node.test, node.body, node.orelse = node.test.operand, node.orelse, node.body
        return node


def sort_operands(tree: ast.Module, variables: Variables) -> None:
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
        operands.sort(key=source_of)
        chain = operands[0]
        for operand in operands[1:]:
            chain = ast.BinOp(chain, type(node.op)(), operand)
        return ast.copy_location(chain, node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq))
            and source_of(node.comparators[0]) < source_of(node.left)
        ):
            node.left, node.comparators = node.comparators[0], [node.left]
        return node
