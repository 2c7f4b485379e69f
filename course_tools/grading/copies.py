"""Answers that are course_lib's reference, pasted: a plagiarism check for a person, not a grade.

The grader's sandbox never holds the references, but a student has them (course_lib is installed
with the course) and can paste one's source into an answer cell, renaming a variable or two. That
answer is correct, so it passes; whether it is the student's own work is for a person to judge. An
answer's definition of a graded name is compared with course_lib's definitions of the same name as
token sequences in which comments, docstrings and the names of variables are left out, so renaming
hides nothing; near-identical ones are flagged. An honest answer written from the notebook's
explanation differs in its structure somewhere; even the instructor's own solutions, written beside
the references, stay under the threshold.
"""
from __future__ import annotations

import ast
import builtins
import difflib
import functools
import io
import keyword
import tokenize

from course_lib.pyparse import parse

THRESHOLD = 0.97  # share of matching tokens from which an answer counts as the reference pasted
MIN_TOKENS = 40  # shorter definitions look alike whoever writes them


@functools.lru_cache(maxsize=1024)  # the references' shapes are the same for every student
def shape(code: str) -> tuple[str, ...]:
    """``code`` as tokens with every name of the code's own (variables, functions, arguments) as
    ``ID``: attribute names, keywords and builtins stay, strings become ``S``, comments go."""
    tokens, previous = [], ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                              tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if token.type == tokenize.STRING:
                tokens.append("S")
            elif token.type == tokenize.NAME and previous != "." and not keyword.iskeyword(token.string) \
                    and not hasattr(builtins, token.string):
                tokens.append("ID")
            else:
                tokens.append(token.string)
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return ()
    return tuple(tokens)


def definitions(code: str) -> dict[str, str]:
    """The top-level functions and classes of ``code`` by name, without their docstrings."""
    try:
        tree = parse(code)
    except SyntaxError:
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                        and ast.get_docstring(inner) is not None:
                    inner.body = inner.body[1:] or [ast.Pass()]
            found[node.name] = ast.unparse(node)
    return found


def pasted_references(answers: dict[str, str], references: dict[str, str]) -> list[str]:
    """For each answer cell (grade_id -> code), the definitions that match a reference (dotted name ->
    source) at ``THRESHOLD`` or more: one sentence each, for the instructor."""
    theirs_all = {
        dotted: definitions(source).get(dotted.rsplit(".", 1)[-1], "")
        for dotted, source in references.items()
    }
    flagged = []
    for grade_id, code in answers.items():
        for name, mine in definitions(code).items():
            if len(shape(mine)) < MIN_TOKENS:
                continue
            for dotted, theirs in theirs_all.items():  # under any name: a pasted reference may be renamed
                matcher = difflib.SequenceMatcher(None, shape(mine), shape(theirs), autojunk=False)
                if matcher.real_quick_ratio() < THRESHOLD or matcher.quick_ratio() < THRESHOLD:
                    continue  # upper bounds of ratio(), far cheaper: most pairs stop here
                ratio = matcher.ratio()
                if ratio >= THRESHOLD:
                    flagged.append(
                        f"{grade_id}: {name} matches {dotted} at {ratio:.0%} of its tokens "
                        "(names of variables aside): was the reference pasted? A person should compare them")
    return flagged
