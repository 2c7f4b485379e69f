"""A copy of course_lib in which the answers to one assignment are absent: what a student's sandbox imports.

course_lib keeps a reference of every exercise so that notebook N+1 can build on a correct notebook
N. While notebook N is graded, those references are exactly the answers: a student's process that
can reach them (an alias taken before a check, a copy of their code, a module rebuilt from their
source) could earn credit for code it did not write. So the grader never mounts the real course_lib
into a student's sandbox. It mounts this copy instead, in which every top-level function, class and
method named like one of the assignment's graded definitions, and every course_lib definition its
test cells forbid (``forbid("course_lib.rnn.rnn_cell_step")``), is replaced by a stub that raises. The
copy holds ``.py`` files only (a ``__pycache__`` would keep the compiled originals), and everything
else in course_lib (the earlier notebooks' references) stays as it is. The grader's runner is not
in course_lib: the sandbox mounts it from course_tools.grading.sandboxed.
"""
from __future__ import annotations

import ast
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

from course_lib.pyparse import parse

MESSAGE = "is not available while this assignment is graded: the grader runs your own code"


def _stub(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, where: str) -> ast.stmt:
    """The same name without the implementation: a function that raises NotImplementedError, or a
    class whose construction does."""
    message = f"{where}.{node.name} {MESSAGE}"
    if isinstance(node, ast.ClassDef):
        code = (f"class {node.name}:\n    def __init__(self, *args, **kwargs):\n        raise "
                f"NotImplementedError({message!r})")
    else:
        code = f"def {node.name}(*args, **kwargs):\n    raise NotImplementedError({message!r})"
    return parse(code).body[0]


def redact_source(source: str, names: set[str], where: str) -> tuple[str, list[str]]:
    """``source`` (module ``where``) with every definition named in ``names`` stubbed, by its bare
    name (``softmax``: wherever it is defined, methods too) or its dotted one
    (``course_lib.rnn.rnn_cell_step``); the dotted names it stubbed."""
    tree = parse(source)
    removed: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> list[ast.stmt]:
        kept = []
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                    (node.name in names or f"{prefix}.{node.name}" in names):
                kept.append(_stub(node, prefix))
                removed.append(f"{prefix}.{node.name}")
                continue
            if isinstance(node, ast.ClassDef):
                node.body = visit(node.body, f"{prefix}.{node.name}") or [ast.Pass()]
            kept.append(node)
        return kept

    tree.body = visit(tree.body, where)
    if not removed:
        return source, removed
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", removed


def _package() -> Path:
    import course_lib

    return Path(course_lib.__file__).resolve().parent


def _module_name(relative: Path) -> str:
    return ".".join(("course_lib", *relative.with_suffix("").parts)).removesuffix(".__init__")


def reference_sources(names: Iterable[str]) -> dict[str, str]:
    """Dotted name -> source text of each top-level course_lib definition named in ``names`` (the
    references a redacted build removes; the grader compares answers with them: :mod:`.copies`)."""
    wanted, package, found = set(names), _package(), {}
    for path in sorted(package.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        module = _module_name(path.relative_to(package))
        for node in parse(text).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                    (node.name in wanted or f"{module}.{node.name}" in wanted):
                found[f"{module}.{node.name}"] = ast.get_source_segment(text, node) or ""
    return found


def redacted_course_lib(names: Iterable[str], cache: Path) -> tuple[Path, list[str]]:
    """A copy of the installed course_lib with ``names`` (bare or dotted: see :func:`redact_source`)
    stubbed, cached under ``cache`` by content.

    Returns the copy's package folder (to mount over the real one) and the dotted names it stubbed.
    """
    package = _package()
    wanted = set(names)
    sources = {
        path.relative_to(package): path.read_text(encoding="utf-8")
        for path in sorted(package.rglob("*.py"))
    }
    digest = hashlib.sha256(repr(sorted(wanted)).encode())
    for relative, text in sources.items():
        digest.update(str(relative).encode() + b"\0" + text.encode())
    folder = cache / f"course_lib-{digest.hexdigest()[:16]}"
    listing = folder / ".removed"  # written last: a folder without it is someone's unfinished build
    if listing.is_file():
        return folder, listing.read_text(encoding="utf-8").split()
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=cache))  # graders of a batch may race here
    removed: list[str] = []
    for relative, text in sources.items():
        module = _module_name(relative)
        text, gone = redact_source(text, wanted, module)
        removed += gone
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.parent.chmod(0o755)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o644)  # read by the sandbox's slot user, whatever the umask of `course` (077)
    (staging / ".removed").write_text("\n".join(removed), encoding="utf-8")
    (staging / ".removed").chmod(0o644)
    staging.chmod(0o755)
    if folder.exists() and not listing.is_file():  # left half-built by a grader that was stopped
        shutil.rmtree(folder, ignore_errors=True)
    try:
        staging.rename(folder)  # atomic; fails when another grader finished the same build first
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not listing.is_file():
            raise
    return folder, removed
