"""What is installed: pyproject.toml and environment.yml name the same packages with the same lower
bounds, and a student's install (`pip install .`, without the [instructor] extra) is enough for the
notebooks and holds none of the tooling's dependencies."""
import ast
import json
import re
import subprocess
import sys
import tomllib

import yaml

from .conftest import ROOT

CONDA_TO_PIP = {"pytorch": "torch"}
CONDA_ONLY = {"python", "pip"}


def _split(requirement: str) -> tuple[str, str]:
    name, spec = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", requirement).groups()
    return name.lower().replace("-", "_"), spec.replace(" ", "")


def _pyproject() -> dict[str, str]:
    """The base dependencies and the instructor's extra: what the course folder's environment holds."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return dict(_split(r) for r in project["dependencies"] + project["optional-dependencies"]["instructor"])


def _environment() -> dict[str, str]:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    names = {}
    for entry in environment["dependencies"]:
        if isinstance(entry, str):
            name, spec = _split(entry)
            if name not in CONDA_ONLY:
                names[CONDA_TO_PIP.get(name, name)] = spec
    return names


def test_environment_and_pyproject_name_the_same_packages_and_bounds():
    assert _environment() == _pyproject()


def test_dependencies_are_lower_bounded_ranges_that_the_cpu_torch_satisfies():
    for name, spec in _pyproject().items():
        assert spec.startswith(">="), f"{name}{spec}: use a lower bound, not an exact pin"
    major, minor = (int(x) for x in _pyproject()["torch"].removeprefix(">=").split(".")[:2])
    assert (major, minor) <= (2, 13)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make build" in readme
    assert ci.strip().splitlines()[-1] == "make test"


# ---------------------------------------------------------------- what a student installs ----
# The tooling's own: `course hub` (jupyterhub, and pamela under it), the gradebook and converters
# (nbgrader), the similarity benchmark's reference (copydetect), and course_tools itself.
INSTRUCTOR_ONLY = ("course_tools", "nbgrader", "jupyterhub", "pamela", "copydetect")


def _notebook_imports() -> set[str]:
    """Every module a code cell of solutions/ imports (the release imports the same)."""
    found = set()
    for notebook in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                             if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Import):
                    found |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    found.add(node.module)
    return found


def _requirement_closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install, with what they require in turn (read from the
    installed distributions' metadata: offline), normalised names."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen, todo = set(), [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = requirement.name.lower().replace("-", "_").replace(".", "_")
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo += [Requirement(r) for r in metadata.requires(requirement.name) or []]
        except metadata.PackageNotFoundError:
            pass
    return seen


def test_a_student_install_does_not_pull_in_the_tooling_dependencies():
    """`pip install .` without the [instructor] extra: none of the hub's, the gradebook's or the
    similarity report's distributions, directly or through another."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = _requirement_closure(project["dependencies"])
    assert {"torch", "numpy", "matplotlib", "jupyterlab"} <= installed
    assert not installed & set(INSTRUCTOR_ONLY), installed & set(INSTRUCTOR_ONLY)


def test_a_student_install_imports_every_module_the_notebooks_import():
    """In a Python where the instructor-only packages cannot be imported, as after `pip install .`,
    every module the notebooks import imports (course_lib's own imports with them)."""
    modules = sorted(_notebook_imports())
    assert "course_lib.attention" in modules and "torch" in modules
    blocker = ("import importlib.abc, sys\n"
               "class Absent(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               f"        if name.split('.')[0] in {INSTRUCTOR_ONLY!r}:\n"
               "            raise ModuleNotFoundError(f'{name} is not installed for a student')\n"
               "sys.meta_path.insert(0, Absent())\n")
    script = blocker + "".join(f"import {module}\n" for module in modules)
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, cwd="/",
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
