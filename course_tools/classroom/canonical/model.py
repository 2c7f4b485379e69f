"""The canonical form's records and the tables its stages read: what the release gives, the names a student
chose, and one answer's tokens.
"""
from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

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
BINARY_METHODS = {
    "logical_and": ast.BitAnd, "logical_or": ast.BitOr, "logical_xor": ast.BitXor, "matmul": ast.MatMult,
    "mm": ast.MatMult, "bmm": ast.MatMult, "dot": ast.MatMult, "__matmul__": ast.MatMult, "mul": ast.Mult,
    "multiply": ast.Mult, "add": ast.Add, "sub": ast.Sub, "subtract": ast.Sub, "div": ast.Div,
    "divide": ast.Div, "true_divide": ast.Div, "floor_divide": ast.FloorDiv, "pow": ast.Pow
}
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
INERT_CALLS = frozenset({
    "abs", "all", "any", "bool", "callable", "chr", "dict", "dir", "divmod", "enumerate", "filter", "float",
    "format", "frozenset", "getattr", "hasattr", "hash", "hex", "id", "int", "isinstance", "issubclass",
    "len", "list", "map", "max", "min", "oct", "ord", "pow", "print", "range", "repr", "reversed", "round",
    "set", "sorted", "str", "sum", "tuple", "type", "vars", "zip"
})


# methods of a tensor (or of torch, F, math and numpy, which the spelling stage makes methods) that
# compute a new value and change nothing: called as a statement of their own, they are dead code
PURE_METHODS = frozenset({
    "abs", "all", "amax", "amin", "any", "arange", "argmax", "argmin", "bool", "clamp", "clone", "contiguous",
    "cos", "cpu", "cumsum", "detach", "dim", "double", "exp", "expand", "flatten", "float", "full", "gather",
    "half", "int", "item", "log", "log_softmax", "long", "masked_fill", "max", "mean", "min", "norm", "numel",
    "numpy", "ones", "ones_like", "permute", "prod", "relu", "repeat", "repeat_interleave", "reshape",
    "rsqrt", "sigmoid", "sin", "size", "softmax", "sqrt", "squeeze", "std", "sum", "tanh", "tolist",
    "transpose", "tril", "triu", "unsqueeze", "var", "zeros", "zeros_like"
})
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
