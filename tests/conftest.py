import os
from pathlib import Path

import pytest

from course_tools.course import assignments

from .notebook_session import close_sessions
from .shared import group_by_shared_fixture
from .system import require_bwrap

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = assignments(ROOT)

# Tests never train for real and never write into the course's runs/ folder.
os.environ["COURSE_PROFILE"] = "smoke"
# The suite runs two pytest workers on two cores and each starts kernels: one thread per process
# avoids the oversubscription under which torch's thread pool slows down several-fold.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _isolated_runs(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))


@pytest.fixture(scope="session", autouse=True)
def _kernels_closed_at_the_end():
    yield
    close_sessions()


@pytest.fixture
def bwrap() -> None:
    """The autograder's sandbox (tests/system.py's ``needs_bwrap`` asks for it)."""
    require_bwrap()


def assignment_params():
    return [pytest.param(a, id=a.id) for a in ASSIGNMENTS]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    group_by_shared_fixture(config, items)
