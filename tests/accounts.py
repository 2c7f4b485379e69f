"""Real Unix accounts for the tests of the class workflow, made the way ``course hub`` makes them
(:func:`course_tools.classroom.hub.create_accounts`), and students acting as them.

Identity on the hub is the Unix account: the exchange's inbox is told apart by who owns an entry,
the course folder by who may read it. So these tests need root (as ``course hub`` does, and as CI
runs), and the accounts they make are removed, with their homes, when the test session ends.

A student's actions (:func:`act_as_students`) run in one Python process of a Python the students
can run: it imports nbgrader once, then forks one child per step, which drops to the student's
account before it acts: nbgrader's own ``submit`` command, or a few lines of Python (a hostile
student's). Steps run in order, or all at once.
"""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from course_tools.classroom.hub import create_accounts, reachable_by_others

ROOT = Path(__file__).resolve().parents[1]
STUDENTS = ROOT / "tests" / "class_inputs" / "students.py"


def require_root() -> None:
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("real student accounts are made with useradd and acted as with setuid: run as root")


def student_python(folder: Path) -> Path:
    """A Python the students can run that imports this environment's packages.

    The environment's own Python, when they can run it; otherwise (a pyenv Python under /root, as on
    the machine this was written on) a virtual environment of the system's Python of the same
    version whose site-packages adds this environment's, and whose Jupyter paths are this one's.
    """
    if reachable_by_others(Path(sys.executable)):
        return Path(sys.executable)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = Path("/usr/bin") / version
    if not system.is_file():
        pytest.skip(
            f"{sys.executable} is private to root and there is no {system} to run the students' Python")
    site_packages = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    if not reachable_by_others(site_packages):
        pytest.skip(f"{site_packages} cannot be read by other users")
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(folder)], check=True)
    (folder / "lib" / version / "site-packages" / "course_environment.pth").write_text(
        f"import site; site.addsitedir({str(site_packages)!r})\n")
    for shared in ("etc", "share"):  # JupyterLab's extensions and nbgrader's server extensions
        (folder / shared).symlink_to(Path(sys.prefix) / shared)
    return folder / "bin" / "python"


class Accounts:
    """Makes accounts named ``<prefix><tag><n>`` for the session and removes them all at its end."""

    def __init__(self) -> None:
        self.prefix = f"ct{secrets.token_hex(2)}"
        self.made: list[str] = []
        self.folder = Path(tempfile.mkdtemp(prefix="course-test-accounts-"))
        self.folder.chmod(0o755)  # the students' Python lives here
        self._python: Path | None = None

    def make(self, tag: str, count: int) -> list[str]:
        logins = [f"{self.prefix}{tag}{n}" for n in range(count)]
        made = create_accounts(logins, self.folder / "passwords.csv")
        self.made += made
        return logins

    @property
    def python(self) -> Path:
        if self._python is None:
            self._python = student_python(self.folder / "python")
        return self._python

    def remove(self) -> None:
        for login in self.made:
            try:
                pwd.getpwnam(login)
            except KeyError:
                continue
            subprocess.run(["userdel", "--remove", login], capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def accounts():
    require_root()
    made = Accounts()
    try:
        yield made
    finally:
        made.remove()


@dataclass(frozen=True)
class Step:
    """One student's action: nbgrader's ``submit`` of ``assignment`` with their notebook holding
    ``notebook`` (JSON text), or ``code`` run as them (with ``inbound``, ``course``, ``login`` and
    ``home`` defined)."""

    login: str
    assignment: str = ""
    notebook: str = ""
    code: str = ""


@dataclass(frozen=True)
class Done:
    login: str
    status: int
    log: str


def start_students(python: Path, course: Path, steps: list[Step], together: bool = False,
                   released: Path | None = None) -> subprocess.Popen:
    """Start ``steps`` as their students (see the module's docstring): in order, or all released at
    once (and then the file ``released`` created); :func:`finish_students` waits for them."""
    from course_tools.course import nbgrader_config
    from course_tools.classroom.exchange import exchange_root

    inbound = exchange_root(course) / nbgrader_config(course).CourseDirectory.course_id / "inbound"
    plan = {"course": str(course), "inbound": str(inbound), "together": together,
            "released": str(released) if released else None, "steps": [asdict(step) for step in steps]}
    with tempfile.NamedTemporaryFile("w", prefix="course-students-", suffix=".json", delete=False) as handle:
        json.dump(plan, handle)
    return subprocess.Popen([str(python), str(STUDENTS), handle.name], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish_students(process: subprocess.Popen) -> list[Done]:
    output, errors = process.communicate(timeout=600)
    os.unlink(process.args[-1])
    assert process.returncode == 0, errors[-3000:]
    return [Done(**result) for result in json.loads(output)]


def act_as_students(python: Path, course: Path, steps: list[Step], together: bool = False) -> list[Done]:
    return finish_students(start_students(python, course, steps, together))
