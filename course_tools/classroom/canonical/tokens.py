"""The canonical tokens: a tree printed back as tokens, each with the lines of the cell it stands for.
"""
from __future__ import annotations

import ast
import functools
import io
import re
import tokenize

from .model import FUNCTIONS, PLACEHOLDER
from .tree import lines_of, source_of


def lexed(code: str) -> list[tuple[str, int]]:
    """(token, line) of Python code; past a point where Python's tokenizer gives up, a plain lexer's."""
    found: list[tuple[str, int]] = []
    skipped = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENDMARKER)
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


# --------------------------------------------------------------------------- the tokens
def emit(statement: ast.stmt, out: list[tuple[str, frozenset[int]]]) -> None:
    """The canonical tokens of a statement, each with the lines it stands for, appended to ``out``."""
    header = lines_of(statement, header_only=True)
    if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
        for decorator in statement.decorator_list:
            _lexed_into(f"@{source_of(decorator)}", lines_of(decorator), out)
        if isinstance(statement, ast.ClassDef):
            bases = ", ".join(source_of(b) for b in [*statement.bases, *statement.keywords])
            _lexed_into(_strip(f"class {statement.name}({bases}):"), header, out)
        else:
            _lexed_into(_strip(f"def {statement.name}({source_of(statement.args)}):"), header, out)
        _emit_block(statement.body, header, out)
    elif isinstance(statement, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
        if isinstance(statement, (ast.If, ast.While)):
            text = f"{'if' if isinstance(statement, ast.If) else 'while'} {source_of(statement.test)}:"
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            text = f"for {source_of(statement.target)} in {source_of(statement.iter)}:"
        else:
            text = f"with {', '.join(source_of(item) for item in statement.items)}:"
        _lexed_into(text, header, out)
        _emit_block(statement.body, header, out)
        if getattr(statement, "orelse", None):
            _lexed_into("else:", header, out)
            _emit_block(statement.orelse, header, out)
    elif isinstance(statement, ast.Try):
        _lexed_into("try:", header, out)
        _emit_block(statement.body, header, out)
        for handler in statement.handlers:
            caught = f" {source_of(handler.type)}" if handler.type else ""
            named = f" as {handler.name}" if handler.name else ""
            _lexed_into(_strip(f"except{caught}{named}:"), lines_of(handler, header_only=True), out)
            _emit_block(handler.body, header, out)
        for word, block in (("else:", statement.orelse), ("finally:", statement.finalbody)):
            if block:
                _lexed_into(word, header, out)
                _emit_block(block, header, out)
    else:
        _lexed_into(source_of(statement), lines_of(statement), out)


def _emit_block(block: list[ast.stmt], lines: frozenset[int], out: list[tuple[str, frozenset[int]]]) -> None:
    out.append(("{", lines))
    for statement in block:
        emit(statement, out)
    out.append(("}", lines))


def _lexed_into(text: str, lines: frozenset[int], out: list[tuple[str, frozenset[int]]]) -> None:
    out += [(token, lines) for token in statement_tokens(text)]


@functools.lru_cache(maxsize=1 << 16)  # copies of one answer print the same statements
def statement_tokens(text: str) -> tuple[str, ...]:
    """The tokens of one canonical statement's text (cached: ``statement_tokens.cache_clear()`` forgets)."""
    return tuple(token for token, _ in lexed(text))


def _strip(text: str) -> str:
    return re.sub(rf"{PLACEHOLDER}\d+", PLACEHOLDER, text)
