"""Stage: imports resolved and dropped, definitions nobody uses dropped, every name a student chose made the
placeholder.
"""
from __future__ import annotations

import ast

from .model import FUNCTIONS, PLACEHOLDER, ROUNDS, SHORT_MODULES, Variables, Vocabulary
from .tree import bound_at, rewrite_blocks, walk, walk_scope


def imports(tree: ast.AST) -> list[tuple[str, str]]:
    found = []
    for node in walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                      for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names if a.name != "*"]
    return found


# --------------------------------------------------------------------------- imports and names
def resolve_modules(trees: dict[str, ast.Module], given: Vocabulary) -> None:
    """Every import alias (the release's and the student's) as the module path it names, spelled short;
    the import statements themselves dropped."""
    aliases = dict(given.modules)
    for tree in trees.values():
        aliases.update(imports(tree))
    bound = set()
    for tree in trees.values():
        for node in walk(tree):
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


def dotted(path: str) -> ast.expr:
    first, *rest = path.split(".")
    node: ast.expr = ast.Name(first, ast.Load())
    for attribute in rest:
        node = ast.Attribute(node, attribute, ast.Load())
    return node


def dotted_path(node: ast.AST) -> str | None:
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
            return ast.copy_location(dotted(_short(self.aliases[node.id])), node)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        path = dotted_path(node)
        if path and isinstance(node.ctx, ast.Load) and _short(path) != path:
            return ast.copy_location(dotted(_short(path)), node)
        return node


def drop_unused_definitions(trees: dict[str, ast.Module], given: Vocabulary) -> None:
    """Functions, classes and assignments at the top level or in a class body whose names the release
    does not give and no cell reads (as a name or an attribute; special methods are called unseen), and
    assignments to such attributes (``self.spare = x``)."""
    def unused(statement: ast.stmt, read: set[str]) -> bool:
        bound = bound_at([statement])
        return isinstance(statement, (*FUNCTIONS, ast.ClassDef, ast.Assign)) and bool(bound) \
            and not bound & (read | given.names | given.attributes) \
            and not any(name.startswith("__") and name.endswith("__") for name in bound)

    def unread_attributes(statement: ast.stmt, read: set[str]) -> bool:  # self.spare = ..., never read
        return isinstance(statement, ast.Assign) and all(
            isinstance(t, ast.Attribute) and t.attr not in read | given.attributes | given.names
            for t in statement.targets)

    for _ in range(ROUNDS):
        read = {node.id if isinstance(node, ast.Name) else node.attr
                for tree in trees.values() for node in walk(tree)
                if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load)}
        changed = False
        def without_unread_attributes(block: list[ast.stmt]) -> list[ast.stmt]:
            nonlocal changed
            kept = [statement for statement in block if not unread_attributes(statement, read)]
            changed |= len(kept) != len(block)
            return kept

        for tree in trees.values():
            rewrite_blocks(tree, without_unread_attributes)
            for owner in [tree, *(node for node in walk(tree) if isinstance(node, ast.ClassDef))]:
                kept = [statement for statement in owner.body if not unused(statement, read)]
                changed |= len(kept) != len(owner.body)
                owner.body = kept or ([] if owner is tree else [ast.Pass()])
        if not changed:
            return


def rename(trees: dict[str, ast.Module], given: Vocabulary) -> Variables:
    """Every name a student chose as the placeholder with a number: one number per variable (per scope),
    so that the later stages still tell variables apart; the numbers are dropped from the tokens."""
    chosen_attributes = set()
    module_names = set()
    for tree in trees.values():
        module_names |= bound_at(tree.body)
        for node in walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                chosen_attributes.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                chosen_attributes |= bound_at(node.body)
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
            self.block(node.body, scopes, bound_at(node.body))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self.node(node.generators[0].iter, scopes, class_names)
            scope = {
                n.id: self.fresh()
                for g in node.generators
                for n in walk(g.target) if isinstance(n, ast.Name)
            }
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
            node.names = [
                self.resolve(n, scopes if isinstance(node, ast.Nonlocal) else [], None) for n in node.names
            ]
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
        declared = {name for statement in body for n in walk_scope(statement)
                    if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        local = ({p.arg for p in parameters} | bound_at(body)) - declared
        scope = {name: self.fresh() for name in sorted(local)}
        self.local |= set(scope.values())
        for parameter in parameters:
            parameter.arg = scope.get(parameter.arg, parameter.arg)
            self.parameters.add(parameter.arg)
        self.block(body, [*scopes, scope], None)
