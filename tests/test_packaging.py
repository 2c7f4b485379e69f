"""pyproject.toml and environment.yml name the same packages with the same lower bounds."""
import re
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
