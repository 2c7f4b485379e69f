"""What an answer cell may use: one allowlist of capabilities, read by Validate and by the grader.

An answer is plain code over tensors, numbers and text. It may import the modules of
:data:`ALLOWLIST` (and take from a module listed with ``names`` only those names), call anything they
hold, define functions and classes, and keep its own state (a memo dict, a module-level table). It may
not reach anything else: no other module, however reached (``import``, an attribute of a listed
module such as ``torch.utils``, a module passed around as a value); no access by a name computed at
run time (``getattr``, ``operator.attrgetter``, ``eval``, ``__import__``, a dunder attribute or
string); no private attribute (``_name``) of what it did not define; no change to an object it did
not make (``torch.allclose = ...``); no frames, hooks, seeds, files or processes. Each rule is
something no honest answer needs, so an answer that breaks one goes to a person, who sees the line
and the reason.

The grader's lint (``course_tools.grading.lint``) holds every answer cell to :func:`findings`, and
so does Validate: every graded check of the notebooks calls :func:`review_answer` first, which fails
the check with the same findings, so a student reads them in the notebook, not in a withheld grade.
The students' guide prints :func:`guide_table`.
"""
from __future__ import annotations

import ast
import functools
import importlib
import linecache
import os
import sys
import types
from dataclasses import dataclass

from course_lib import pyparse
from course_lib.grading_errors import GradingError


@dataclass(frozen=True)
class Allowed:
    module: str  # its dotted name: a package's submodules are listed one by one
    purpose: str  # what an answer uses it for (the students' guide prints it)
    names: frozenset[str] | None = None  # the only names an answer may take from it; None: every public one
    withheld: tuple[str, ...] = ()  # with names None: the public names it does not give

    def gives(self, name: str) -> bool:
        return (self.names is None or name in self.names) and name not in self.withheld


def _only(*names: str) -> frozenset[str]:
    return frozenset(names)


ALLOWLIST: tuple[Allowed, ...] = (
    Allowed("torch", "tensors and their operations"),
    Allowed("torch.nn", "layers, modules and parameters"),
    Allowed("torch.nn.functional", "activations, losses, padding"),
    Allowed("torch.nn.init", "initialising parameters"),
    Allowed("torch.nn.utils", "gradient clipping", _only("clip_grad_norm_", "clip_grad_value_", "rnn")),
    Allowed("torch.nn.utils.rnn", "padding sequences"),
    Allowed("torch.linalg", "linear algebra"),
    Allowed("torch.fft", "Fourier transforms"),
    Allowed("torch.special", "special functions"),
    Allowed("torch.distributions", "probability distributions"),
    Allowed("torch.optim", "optimisers"),
    Allowed("torch.optim.lr_scheduler", "learning-rate schedules"),
    Allowed("torch.autograd", "gradients", _only("grad", "Function")),
    Allowed("torch.random", "random numbers", _only("fork_rng")),
    Allowed("torch.cuda", "asking for a GPU", _only("is_available", "device_count")),
    Allowed("numpy", "arrays"),
    Allowed("numpy.linalg", "linear algebra on arrays"),
    Allowed("numpy.random", "random arrays", _only("default_rng", "Generator", "rand", "randn", "randint",
                                                  "choice", "permutation", "shuffle", "normal", "uniform")),
    Allowed("math", "maths"),
    Allowed("cmath", "complex maths"),
    Allowed("fractions", "exact fractions"),
    Allowed("decimal", "decimal numbers"),
    Allowed("numbers", "number types"),
    Allowed("statistics", "statistics"),
    Allowed("random", "random numbers", _only("Random", "random", "randint", "randrange", "choice", "choices",
                                             "sample", "shuffle", "uniform", "gauss")),
    Allowed("collections", "containers (Counter, defaultdict, deque, namedtuple, OrderedDict)"),
    Allowed("collections.abc", "container types"),
    Allowed("itertools", "iteration"),
    Allowed("functools", "caching and composing functions"),
    Allowed("operator", "operators as functions", withheld=("attrgetter", "methodcaller")),
    Allowed("heapq", "heaps"),
    Allowed("bisect", "sorted lists"),
    Allowed("copy", "copying objects"),
    Allowed("dataclasses", "records"),
    Allowed("enum", "enumerations"),
    Allowed("typing", "type hints", withheld=("get_type_hints", "ForwardRef", "get_overloads")),
    Allowed("string", "character sets", _only(
        "ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits", "hexdigits", "octdigits",
        "punctuation", "printable", "whitespace", "capwords")),
    Allowed("re", "regular expressions"),
    Allowed("unicodedata", "Unicode properties"),
    Allowed("textwrap", "wrapping text"),
    Allowed("codecs", "text encodings", _only("encode", "decode", "lookup", "BOM_UTF8", "BOM_UTF16",
                                             "BOM_UTF16_LE", "BOM_UTF16_BE", "utf_8_decode", "utf_8_encode")),
    Allowed("struct", "packing bytes"),
    Allowed("datetime", "dates and times"),
    Allowed("time", "timing code", _only("perf_counter", "monotonic", "process_time", "time")),
    Allowed("json", "JSON text", _only("dumps", "loads", "JSONDecodeError")),
    Allowed("tqdm", "progress bars", _only("tqdm", "trange")),
    Allowed("tqdm.auto", "progress bars", _only("tqdm", "trange")),
    Allowed("course_lib", "the course's library (but its grading machinery)"),
    Allowed("__future__", "annotations", _only("annotations")),
)
ALLOWED = {entry.module: entry for entry in ALLOWLIST}
# course_lib's modules an answer may use: every one but the grading machinery
NOT_FOR_ANSWERS = ("course_lib.grading", "course_lib.grading_errors", "course_lib.guards",
                   "course_lib.allowlist", "course_lib.roles")
# The conventional names of modules in the notebooks, for code checked without its notebook's imports.
CONVENTIONAL = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "np": "numpy", "math": "math",
                "course_lib": "course_lib"}

DYNAMIC_NAMES = {"exec", "eval", "compile", "open", "__import__", "getattr", "setattr", "delattr", "globals",
                 "locals", "vars", "breakpoint", "input", "get_ipython", "memoryview", "exit", "quit",
                 "__builtins__", "seed_everything"}
# Attributes of objects (not modules: those the allowlist decides) that reach the process, its
# random state, its hooks or its files, whatever object an answer holds.
PROCESS_ATTRIBUTES = {
    "manual_seed", "seed", "seed_everything", "set_rng_state", "set_state", "setstate", "settrace",
    "setprofile", "set_custom_exc", "events", "input_transformers_cleanup", "input_transformers_post",
    "ast_transformers", "system", "popen", "fork", "kill", "environ", "_exit", "run_cell", "user_ns", "ops",
    "library", "overrides", "sys", "os", "subprocess", "builtins", "importlib", "ctypes", "threading",
    "multiprocessing", "gc", "inspect", "pickle", "marshal", "mmap", "socket", "signal", "shutil", "pathlib",
    "io", "tempfile", "load", "fromfile", "from_file", "memmap", "loadtxt", "genfromtxt", "hub",
    "serialization", "f_globals", "f_locals", "f_back", "f_builtins", "gi_frame", "cr_frame", "tb_frame",
}
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}  # public, underscore or not
ALLOWED_DUNDERS = {"__init__", "__name__", "__repr__", "__len__", "__getitem__", "__iter__"}


@dataclass(frozen=True)
class Finding:
    line: int
    text: str  # what the line does that no answer needs


def allowed_module(dotted: str) -> Allowed | None:
    """The allowlist's entry for module ``dotted``; course_lib's modules but its grading machinery."""
    if dotted.startswith("course_lib.") and not any(
            dotted == m or dotted.startswith(m + ".") for m in NOT_FOR_ANSWERS):
        return ALLOWED["course_lib"]
    return ALLOWED.get(dotted)


def _reach(module: str, attributes: list[str]) -> str | None:
    """Why ``module.a.b…`` is off the allowlist, or None: each module the chain passes through must
    be listed, and each name taken from a module listed with ``names`` among them. The chain stops
    at the first value that is not a module (a function, a class): the object rules go on from there."""
    entry = allowed_module(module)
    if entry is None:
        return f"reaches module {module}, which is not on the allowlist"
    try:
        value = importlib.import_module(module)
    except ImportError:
        return None  # it fails on its own when it runs
    for attribute in attributes:
        if attribute.startswith("_"):
            return None  # the private-attribute rule says it
        if not entry.gives(attribute):
            return f"uses {module}.{attribute}, which the allowlist does not give from {module}"
        value = getattr(value, attribute, None)
        if not isinstance(value, types.ModuleType):
            return None
        module = value.__name__
        entry = allowed_module(module)
        if entry is None:
            return f"reaches module {module}, which is not on the allowlist"
    return None


def _is_allowed_module(package: str, name: str) -> bool:
    """Whether ``from package import name`` takes a module of the allowlist (``from torch import nn``),
    not a function or a class: only listed modules are imported to tell."""
    if allowed_module(package) is None or allowed_module(f"{package}.{name}") is None:
        return False
    try:
        return isinstance(getattr(importlib.import_module(package), name, None), types.ModuleType)
    except ImportError:
        return False


def _chain(node: ast.Attribute) -> tuple[str | None, list[str]]:
    """``a.b.c`` as ("a", ["b", "c"]); (None, …) when it does not start at a name."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return (node.id if isinstance(node, ast.Name) else None), attributes[::-1]


def findings(source: str, modules: dict[str, str] | None = None, tree: ast.Module | None = None
             ) -> list[Finding]:
    """Every line of answer cell ``source`` that leaves the allowlist. ``modules``: the notebook's
    names of modules (``{"F": "torch.nn.functional"}``), besides the cell's own imports (by default
    the notebooks' conventional names); ``tree``: the cell already parsed (after IPython's
    transformations), where the caller has it."""
    tree = tree or parse(source)
    if tree is None:
        return []  # it fails on its own when it runs
    aliases = dict(CONVENTIONAL if modules is None else modules)
    found: list[Finding] = []

    def add(node: ast.AST, text: str) -> None:
        found.append(Finding(getattr(node, "lineno", 0), text))

    for node in ast.walk(tree):  # the cell's own imports first: a name may be used above its import
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if _is_allowed_module(node.module, alias.name):
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    chained = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    inner = {id(node.value) for node in ast.walk(tree)  # torch.nn in torch.nn.Linear: a chain is judged whole
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)}
    own = bound_anywhere(tree)
    top_level = {name for statement in tree.body for name in bound_anywhere(statement, enter=False)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for depth in range(1, len(parts) + 1):
                    if allowed_module(".".join(parts[:depth])) is None:
                        add(node, f"imports {alias.name}, which is not on the allowlist")
                        break
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                add(node, f"imports {'.' * node.level}{node.module or ''}, a relative import")
            elif allowed_module(node.module or "") is None:
                add(node, f"imports {node.module}, which is not on the allowlist")
            else:
                for alias in node.names:
                    if alias.name == "*":
                        add(node, f"imports * from {node.module}")
                    elif alias.name.startswith("_"):
                        add(node, f"imports {alias.name}, a private name of {node.module}")
                    elif why := _reach(node.module, [alias.name]):
                        add(node, why)
        elif isinstance(node, ast.Name):
            if node.id in DYNAMIC_NAMES or (dunder(node.id) and node.id not in ALLOWED_DUNDERS):
                add(node, f"uses {node.id}")
            elif node.id in aliases and id(node) not in chained and node.id not in own \
                    and isinstance(node.ctx, ast.Load):
                add(node, f"uses the module {aliases[node.id]} as a value: only its names may be used")
        elif isinstance(node, ast.Attribute):
            base, attributes = _chain(node)
            if base in aliases and base not in own and id(node) not in inner:
                if why := _reach(aliases[base], attributes):
                    add(node, why)
            if dunder(node.attr) and node.attr not in ALLOWED_DUNDERS:
                add(node, f"uses .{node.attr}")
            elif node.attr in PROCESS_ATTRIBUTES or "hook" in node.attr.lower():
                add(node, f"uses .{node.attr}")
            elif (node.attr.startswith("_") and not dunder(node.attr) and node.attr not in NAMEDTUPLE_API
                  and base_name(node) not in ("self", "cls")):
                add(node, f"uses .{node.attr}, a private attribute")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if dunder(node.name) and node.name not in ALLOWED_DUNDERS:
                add(node, f"defines {node.name}")
            if isinstance(node, ast.AsyncFunctionDef):
                add(node, f"defines async {node.name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if dunder(node.value) and node.value not in ALLOWED_DUNDERS:
                add(node, f"spells {node.value}")  # type("X", (float,), {"__eq__": ...}) and the like
            elif node.value.startswith("/") and len(node.value) > 1:
                add(node, f"spells the path {node.value[:40]!r}")  # the sandbox's files, /dev/shm, /proc ...
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
                and len(node.args) == 3:
            add(node, "builds a class with type()")
        elif isinstance(node, ast.Global):  # a nonlocal name is always the cell's own
            if foreign := [name for name in node.names if name not in top_level]:
                add(node, f"declares {', '.join(foreign)} global, which this cell does not define")
    found += _changes_of_what_it_did_not_make(tree, own)
    return sorted(set(found), key=lambda f: (f.line, f.text))


def _changes_of_what_it_did_not_make(tree: ast.Module, own: set[str]) -> list[Finding]:
    """``torch.allclose = ...``, ``F.softmax.__code__ = ...``, ``check_close.x = ...``: an attribute
    or item of an object that no statement of the cell binds. A memo dict or a table the cell makes
    may change from anywhere in it."""
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                stored = isinstance(getattr(part, "ctx", None), (ast.Store, ast.Del))
                if isinstance(part, (ast.Attribute, ast.Subscript)) and stored:
                    base = base_name(part)
                    if base is None or base not in own:
                        found.append(Finding(node.lineno, f"changes {ast.unparse(part)}"))
    return found


def bound_anywhere(tree: ast.AST, enter: bool = True) -> set[str]:
    """Every name a statement of the cell binds, at any depth (parameters included), but imports;
    ``enter=False``: not inside functions and classes (the names of the cell's own scope)."""
    names = {"self", "cls"}
    for node in (ast.walk(tree) if enter else walk_scope(tree)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler,)) and node.name:
            names.add(node.name)
    return names


def walk_scope(node: ast.AST):
    """``node`` and what it holds, but the bodies of the functions and classes it defines."""
    yield node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        for child in ast.iter_child_nodes(node):
            yield from walk_scope(child)


def dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def parse(source: str) -> ast.Module | None:
    """A cell's syntax tree after IPython's transformations (magics), or None when it does not parse."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except ImportError:
        pass
    try:
        return pyparse.parse(source)
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=256)
def _findings_of(source: str, modules: tuple[tuple[str, str], ...]) -> tuple[Finding, ...]:
    return tuple(findings(source, dict(modules)))


def review_answer(exercise: str) -> None:
    """Validate's side of the allowlist: fail the check of ``exercise`` with every finding in the
    notebook cell that defines it (a graded function or class of the notebook's namespace), as the
    grader would. A no-op where no such cell is known, and in the grader's sandbox, where the grader's
    own lint has decided already."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return
    namespace = getattr(sys.modules.get("__main__"), "__dict__", {})
    source = _cell_of(namespace.get(exercise.split(".")[0].split("(")[0].strip()))
    if not source:
        return
    modules = {name: value.__name__ for name, value in namespace.items()
               if isinstance(value, types.ModuleType)}
    if found := _findings_of(source, tuple(sorted(modules.items()))):
        lines = "\n".join(f"  line {f.line}: {f.text}" for f in found)
        raise GradingError(
            f"[{exercise}] the cell that defines {exercise} uses what the allowlist of the course does not "
            f"give an answer (the students' guide lists it); the grader sends such an answer to a person "
            f"before it counts:\n{lines}")


def _cell_of(value: object) -> str:
    """The source of the notebook cell that defined ``value`` (a function or a class), from the
    cache IPython keeps of every cell it ran; empty when it did not come from a cell."""
    code = getattr(value, "__code__", None)
    if code is None and isinstance(value, type):
        code = next((getattr(member, "__code__", None) for member in vars(value).values()
                     if hasattr(member, "__code__")), None)
    if code is None or not (code.co_filename.startswith("<ipython-input") or "ipykernel" in code.co_filename):
        return ""
    return "".join(linecache.getlines(code.co_filename))


def guide_table() -> str:
    """The allowlist as a Markdown table, for the students' guide."""
    rows = ["| module | for | names an answer may take |", "|---|---|---|"]
    for entry in ALLOWLIST:
        if entry.names is not None:
            names = ", ".join(sorted(entry.names))
        elif entry.withheld:
            *most, last = entry.withheld
            names = f"all but {', '.join(most)} and {last}" if most else f"all but {last}"
        else:
            names = "every public one"
        rows.append(f"| `{entry.module}` | {entry.purpose} | {names} |")
    return "\n".join(rows)
