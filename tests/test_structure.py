"""The shape of the code base: what imports what, and where each constant is defined.

These read the source (ast), so a shortcut that creeps back in fails here rather than in review.
"""
import ast
import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

PACKAGES = ("course_lib", "course_tools", "benchmarks", "tests")


def _modules(*packages: str):
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node.module or "", [alias.name for alias in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno


def test_no_private_name_is_imported_from_another_module():
    found = [f"{path.relative_to(ROOT)}:{line}: from {module} import {', '.join(names)}"
             for path, tree in _modules(*PACKAGES)
             for module, names, line in _imports(tree)
             if any(name.startswith("_") and not name.startswith("__") for name in names)]
    assert not found, "\n".join(found)


MAX_MODULE_LINES = 400  # about one screenful per concept; a longer module holds two concerns


@pytest.mark.parametrize("package", ["course_lib", "course_tools"])
def test_no_module_is_longer_than_the_guide(package):
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in sorted((ROOT / package).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, "\n".join(long)


def test_the_installed_package_imports_nothing_that_is_not_installed():
    """course_lib and course_tools are installed; benchmarks/ and tests/ live only in the repository."""
    found = [f"{path.relative_to(ROOT)}:{line}: {module}"
             for path, tree in _modules("course_lib", "course_tools")
             for module, _, line in _imports(tree)
             if module.split(".")[0] in ("benchmarks", "tests")]
    assert not found, "\n".join(found)


def test_benchmark_scripts_do_not_edit_sys_path():
    """They run as `python -m benchmarks.<name>` from the course folder (or through `course bench`)."""
    found = [str(path.relative_to(ROOT)) for path in (ROOT / "benchmarks").glob("*.py")
             if "sys.path" in path.read_text(encoding="utf-8")]
    assert not found


def test_benchmark_scripts_with_a_main_run_it_as_python_m():
    """`python -m benchmarks.<name>` calls main(): the call sits in an ``if __name__ == "__main__"``
    block at the end (not, say, left inside main's body, where it never runs)."""
    silent = []
    package_main = (ROOT / "benchmarks" / "__main__.py").read_text(encoding="utf-8")
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if f"from benchmarks.{path.stem} import main" in package_main:  # `python -m benchmarks` calls it
            continue
        if not any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body):
            continue
        last = tree.body[-1]
        guarded = isinstance(last, ast.If) and "__main__" in ast.unparse(
            last.test) and "main()" in ast.unparse(last)
        if not guarded:
            silent.append(str(path.relative_to(ROOT)))
    assert not silent, f"these never call main() when run: {silent}"


@pytest.mark.parametrize("name", ["PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID"])
def test_each_special_token_id_has_one_definition(name):
    definitions = [str(path.relative_to(ROOT)) for path, tree in _modules("course_lib")
                   for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   for target in node.targets
                   for assigned in (target.elts if isinstance(target, ast.Tuple) else [target])
                   if isinstance(assigned, ast.Name) and assigned.id == name]
    assert definitions == ["course_lib/text.py"]


@pytest.mark.parametrize("module, must_not_load", [
    ("course_lib.train", "course_lib.recipes"),       # the training loop knows no recipe
    ("course_tools.classroom.grades", "torch"),        # exporting grades needs no torch
    ("course_tools.grading.feedback", "torch"),
])
def test_import_graph(module, must_not_load):
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; print({must_not_load!r} in sys.modules)"],
        capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
    assert loaded == "False"


def test_the_grader_parses_python_through_pyparse_only():
    """``course autograde`` parses in several threads, and CPython 3.11's ast.parse is not safe there
    (test_autograde.py::test_parses_in_threads_never_fail): every parse of the instructor's tooling
    goes through course_lib.pyparse (which the allowlist of Validate shares), which makes them take turns."""
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}" for path, tree in _modules("course_lib", "course_tools")
        if path.relative_to(ROOT).as_posix() != "course_lib/pyparse.py" for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
        node.func.attr == "parse" and isinstance(node.func.value, ast.Name) and node.func.value.id == "ast"
    ]
    assert not found, "ast.parse outside course_lib/pyparse.py: " + ", ".join(found)


def test_what_the_suite_needs_of_the_machine_is_checked_in_one_place():
    """Only tests/system.py looks for bubblewrap, so that every sandboxed test fails in CI without it."""
    looks = [
        path.name for path in (ROOT / "tests").glob("*.py")
        if path.name not in ("system.py",
                             "test_structure.py") and 'which("bwrap")' in path.read_text(encoding="utf-8")
    ]
    assert looks == []


@pytest.mark.parametrize("ci, outcome", [("", "skipped"), ("true", "error")])
def test_without_bubblewrap_a_sandboxed_test_skips_here_and_fails_in_ci(tmp_path, ci, outcome):
    """A sandboxed test (tests/test_zygote.py's first) with no bwrap on the PATH: skipped on a
    developer's machine, an error in CI (its fixture fails) with a one-line reason."""
    import os
    import shutil

    bin_folder = tmp_path / "bin"  # the interpreter's folder without bwrap
    bin_folder.mkdir()
    (bin_folder / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_folder}:{os.path.dirname(sys.executable)}", "CI": ci}
    assert shutil.which("bwrap", path=env["PATH"]) is None
    first = next(line for line in (ROOT / "tests" / "test_zygote.py").read_text(encoding="utf-8").splitlines()
                 if line.startswith("def test_")).split("(")[0][len("def "):]
    done = subprocess.run([
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs",
        f"tests/test_zygote.py::{first}"
    ], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert f"1 {outcome}" in done.stdout and (done.returncode != 0) == bool(ci), done.stdout[-2000:]
    reason = next(line for line in done.stdout.splitlines() if "bubblewrap (bwrap) is not installed" in line)
    assert "CI's setup step should have" in reason if ci else "make setup does" in reason


def test_the_protocol_is_read_on_both_sides_and_imports_only_the_standard_library():
    """protocol.py is imported inside the sandbox, before any student code: nothing of the grader."""
    from course_tools.grading.sandboxed.protocol import Plan

    tree = ast.parse(
        (ROOT / "course_tools" / "grading" / "sandboxed" / "protocol.py").read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {(node.module or "").split(".")[0]
                 for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    plan = Plan("grade", [{"kind": "other"}], {"processes": 8}, [3, 5], {3: 0, 5: 1}, [5], True,
                {2: "a limit"})
    assert Plan.loads(plan.dumps()) == plan
    with pytest.raises(ValueError, match="mode"):
        Plan("run", [], {})


# ------------------------------------------------------------- the tooling's trust boundary ----
TOOLING, SANDBOXED = "course_tools", "course_tools.grading.sandboxed"


def _module_name(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def _imported_modules(path, tree: ast.AST) -> set[str]:
    """Every module ``path`` imports, by absolute dotted name (relative imports resolved); a name
    imported from a package counts as its module too (``from course_tools.grading import records``)."""
    package = _module_name(path).split(".")[:None if path.name == "__init__.py" else -1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            found |= {source, *(f"{source}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_what_runs_in_the_sandbox_imports_nothing_of_the_trusted_side():
    """grading/sandboxed/ runs as the student's code: of the tooling it may import only itself (the
    sandbox mounts nothing else of course_tools, so a trusted import would fail there, or hand the
    student's code the grader's)."""
    found = [f"{path.relative_to(ROOT)}: {name}"
             for path, tree in _modules("course_tools/grading/sandboxed")
             for name in sorted(_imported_modules(path, tree))
             if _inside(name, TOOLING) and not _inside(name, SANDBOXED)
             and name not in ("course_tools", "course_tools.grading")]
    assert not found, "\n".join(found)


def test_course_lib_imports_nothing_of_the_tooling():
    """A student installs course_lib without the [instructor] extra: it never needs course_tools."""
    found = [f"{path.relative_to(ROOT)}: {name}" for path, tree in _modules("course_lib")
             for name in sorted(_imported_modules(path, tree)) if _inside(name, TOOLING)]
    assert not found, "\n".join(found)


def _code_strings(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module but its docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and
        node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def _spells(modules, constant: str, names: tuple[str, ...]) -> list[str]:
    """Where a module writes ``constant`` as a string or imports one of ``names``."""
    found = []
    for path, tree in modules:
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}" for node in _code_strings(tree)
                  if constant in node.value]
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: imports {alias.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) for alias in node.names if alias.name in names]
    return found


def test_only_the_record_model_reads_the_grading_record():
    """grading.json is read and written by course_tools/grading/records.py alone (read_record,
    write_record, recorded_students): every command gets the same checks."""
    modules = [(path, tree) for path, tree in _modules("course_lib", "course_tools", "benchmarks")
               if path != ROOT / "course_tools" / "grading" / "records.py"]
    found = _spells(modules, "grading.json", ("RECORD",))
    assert not found, "\n".join(found)


COURSE_FOLDER = re.compile(r"^(submitted|autograded)$|(^|/)(submitted|autograded|feedback)/")


def test_only_the_course_directory_model_spells_a_submission_path():
    """submitted/, autograded/ and feedback/ are named by course_tools/course.py alone (Assignment's
    submitted(), autograded(), feedback() and the folders of every student); words for people
    (messages, help) may name them."""
    modules = [(path, tree) for path, tree in _modules("course_lib", "course_tools", "benchmarks")
               if path != ROOT / "course_tools" / "course.py"]
    found = [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}" for path, tree in modules
             for node in _code_strings(tree) if " " not in node.value and COURSE_FOLDER.search(node.value)]
    found += [f"{path.relative_to(ROOT)}:{node.lineno}: imports {alias.name}" for path, tree in modules
              for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
              for alias in node.names if alias.name in ("SUBMITTED", "AUTOGRADED", "FEEDBACK")]
    assert not found, "\n".join(found)


def test_a_group_of_tests_runs_on_one_xdist_worker(tmp_path):
    """``--dist loadgroup`` (make test) keeps an ``xdist_group``, and every test that uses a once-built
    fixture of tests/shared.py's GROUPS, on one worker: with pytest 9 and xdist 3.8 it did not."""
    (tmp_path / "conftest.py").write_text(
        "import pytest\nfrom tests.shared import group_by_shared_fixture\n\n"
        "@pytest.fixture\ndef batch():\n    return 1\n\n"
        "def pytest_collection_modifyitems(config, items):\n    group_by_shared_fixture(config, items)\n")
    (tmp_path / "test_groups.py").write_text(
        "import pytest\n\n@pytest.mark.xdist_group('g')\n@pytest.mark.parametrize('i', range(3))\n"
        "def test_marked(i):\n    pass\n\n@pytest.mark.parametrize('i', range(3))\n"
        "def test_with_the_fixture(i, batch):\n    pass\n\n@pytest.mark.parametrize('i', range(3))\n"
        "def test_free(i):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                           "no:cacheprovider", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    passed = re.findall(r"\[(gw\d)\].*PASSED \S*::(\w+)\[\d\](@\w+)?", done.stdout)
    assert len(passed) == 9, done.stdout + done.stderr
    workers = {(test, group): {w for w, t, g in passed if (t, g) == (test, group)}
               for _, test, group in passed}
    assert set(workers) == {("test_marked", "@g"), ("test_with_the_fixture", "@batch"), ("test_free", "")}
    assert len(workers["test_marked", "@g"]) == len(workers["test_with_the_fixture", "@batch"]) == 1


# --------------------------------------------------------------- one way into the sandbox ----
def _uses(tree: ast.AST, attribute: str) -> list[int]:
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == attribute]


def test_one_way_into_the_sandbox():
    """A run's settings are one frozen RunSpec: Sandbox.run takes nothing else, only runs.run_plan calls
    it, and only protocol.runner_arguments writes the runner's command line (read by argparse)."""
    import dataclasses
    import inspect

    from course_tools.grading.sandbox import Sandbox
    from course_tools.grading.spec import RunSpec

    assert dataclasses.is_dataclass(RunSpec) and RunSpec.__dataclass_params__.frozen
    assert list(inspect.signature(Sandbox.run).parameters) == ["self", "spec", "watch", "channel"]
    tooling = list(_modules("course_tools"))
    callers = {path.name for path, tree in tooling for line in _uses(tree, "run")
               if "sandbox.run(" in path.read_text(encoding="utf-8").splitlines()[line - 1]}
    assert callers == {"runs.py"}, callers
    spelled = [f"{path.relative_to(ROOT)}:{node.lineno}" for path, tree in tooling
               for node in _code_strings(tree) if node.value in ("--channel-fd", "--drop-to")
               and path.name != "protocol.py"]
    assert not spelled, spelled


def test_one_reader_of_a_runs_results():
    """The results a run sent are read and interpreted in runs.py alone (Run.result, Run.outcomes),
    for the grading stages and the reference build alike; the probe server (channel.py) keeps them.
    (Inside the sandbox, the recorder's own ``results`` are the solution's, written, not read.)"""
    trusted = [(path, tree) for path, tree in _modules("course_tools", "benchmarks")
               if "sandboxed" not in path.parts and path.name not in ("runs.py", "channel.py")]
    found = [f"{path.relative_to(ROOT)}:{line}" for path, tree in trusted
             for attribute in ("results", "refused") for line in _uses(tree, attribute)
             if path.parent.name == "grading"
             or "run" in path.read_text(encoding="utf-8").splitlines()[line - 1]]
    assert not found, "\n".join(found)


# Functions of the grading path longer than LONGEST lines or with more than MOST_PARAMETERS parameters,
# and why each stays so: a new one fails here, and so does an entry that no longer needs its reason.
LONGEST, MOST_PARAMETERS = 80, 6
ALLOWED = {
    "autograde.py:autograde": "the `course autograde` command's options, all but three keyword-only",
    "autograde.py:batch": "three keyword-only options of the batch (jobs, isolation, variants, key)",
    "autograde.py:grade_all": "the batch's shared state for its progress loop; one caller, in this module",
    "compare.py:_compare": "a recursive walk: two of its parameters are its accumulator and path",
    "gradebook.py:save": "the gradebook row nbgrader's API takes, field by field",
    "isolation.py:bwrap_command": "bubblewrap's command line for both a run and a zygote, which differ in "
                                  "their shared folder",
    "probe_report.py:probe_reports": "the explanation joins each test cell's calls, texts, outcomes and "
                                     "verdicts",
    "reference.py:build_references": "keyword-free public API of the reference build, called by autograde "
                                     "and the benchmarks",
    "reference.py:_save_variant": "one variant's part of the record, written from the build's locals",
    "reference.py:_what_the_release_passes": "a step of build_references with its locals",
    "reference.py:make_plan": "every field of a Plan, most of them keyword options with defaults",
    "replay.py:replay": "inside the sandbox: the runner binds everything before student code runs, so "
                        "the replay takes its tools as arguments instead of looking them up",
}


def test_functions_of_the_grading_path_are_short_and_take_few_parameters():
    over = {}
    for path, tree in _modules("course_tools/grading"):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                count = len([a for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
                             if a.arg not in ("self", "cls")])
                lines = node.end_lineno - node.lineno + 1
                if lines > LONGEST or count > MOST_PARAMETERS:
                    over[f"{path.name}:{node.name}"] = f"{lines} lines, {count} parameters"
    assert set(over) - set(ALLOWED) == set(), {k: v for k, v in over.items() if k not in ALLOWED}
    assert set(ALLOWED) - set(over) == set(), f"no longer over the limits: {set(ALLOWED) - set(over)}"


# ------------------------------------------------------------ which way the imports go ----
def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (module -> the modules it imports): each strongly connected
    component of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in sorted(graph[module]):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_course_lib_has_no_import_cycle():
    """No two modules of course_lib import each other, directly or not, not even inside a function:
    what several of them share (the errors a check raises: grading_errors) sits in a module below."""
    modules = dict(_modules("course_lib"))
    names = {_module_name(path) for path in modules}
    graph = {_module_name(path): (_imported_modules(path, tree) & names) - {_module_name(path), "course_lib"}
             for path, tree in modules.items()}
    assert _cycles(graph) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # it sees one


# The tooling's layers, lowest first; a top-level module of course_tools (course, notebooks,
# untrusted, pages) is below them all.
TOOLING_LAYERS = {"grading": 1, "classroom": 2, "publishing": 2, "cli": 3}


def _layer(module: str) -> tuple[str, int]:
    """(the part of the tooling ``module`` belongs to, its layer): ("", 0) for the shared modules."""
    part = module.split(".")[1] if module.count(".") else ""
    return (part, TOOLING_LAYERS[part]) if part in TOOLING_LAYERS else ("", 0)


def test_no_import_of_the_tooling_climbs_a_layer():
    """grading imports nothing of classroom or publishing (the two import neither each other), and
    nothing but the CLI imports the CLI: what a lower part needs from a higher one is handed down by
    the caller (``course feedback`` gives grading/feedback.py its late notes from classroom/late.py)."""
    found = []
    for path, tree in _modules("course_tools"):
        part, layer = _layer(_module_name(path))
        for name in sorted(_imported_modules(path, tree)):
            their_part, their_layer = _layer(name)
            if _inside(name, TOOLING) and their_part != part and their_layer >= layer:
                found.append(f"{path.relative_to(ROOT)}: {name}")
    assert not found, "\n".join(found)


def test_every_html_page_comes_from_an_escaping_template():
    """No module of the tooling writes an HTML page by hand (course_tools/pages.py renders every
    one from a template, escaped by default), and every folder of templates is package data, so that
    an installed copy has them."""
    import tomllib

    by_hand = [f"{path.relative_to(ROOT)}:{node.lineno}" for path, tree in _modules("course_tools")
               for node in _code_strings(tree) if re.search(r"<!DOCTYPE|<html\b", node.value, re.IGNORECASE)]
    assert not by_hand, "\n".join(by_hand)
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    folders = sorted({path.parent for path in (ROOT / "course_tools").rglob("templates/*.j2")})
    assert folders
    for folder in folders:
        package = ".".join(folder.parent.relative_to(ROOT).parts)
        assert "templates/*.j2" in package_data.get(package, []), f"{package}: not package data"
