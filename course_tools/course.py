"""Where the course lives, which assignments it has, and nbgrader configured the course's way."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

CONFIG_FILE = "nbgrader_config.py"
# Per student and assignment, nbgrader's layout: submitted/<student>/<id>/ what they handed in,
# autograded/<student>/<id>/ the grader's record and graded copy, feedback/<student>/<id>/ their page
SUBMITTED, AUTOGRADED, FEEDBACK = "submitted", "autograded", "feedback"


class CourseError(Exception):
    """A problem the user can fix; the CLI prints it on one line and exits non-zero."""


@dataclass(frozen=True)
class Assignment:
    """One assignment: ``solutions/<id>/<id>.ipynb`` is its source, ``notebooks/<id>/<id>.ipynb`` its
    release."""

    id: str
    root: Path

    @property
    def source(self) -> Path:
        return self.root / "solutions" / self.id / f"{self.id}.ipynb"

    @property
    def release(self) -> Path:
        return self.root / "notebooks" / self.id / f"{self.id}.ipynb"

    def submitted(self, student: str) -> Path:
        """The student's submission folder (its notebook is named as :attr:`release` is)."""
        return self.root / SUBMITTED / student / self.id

    def autograded(self, student: str) -> Path:
        """The grader's record and graded copy of the student's submission."""
        return self.root / AUTOGRADED / student / self.id

    def feedback(self, student: str) -> Path:
        """The student's feedback page."""
        return self.root / FEEDBACK / student / self.id / f"{self.id}.html"

    @property
    def submitted_root(self) -> Path:
        """``submitted/``, every student's submissions: a submission is checked for links inside it."""
        return self.root / SUBMITTED

    @property
    def autograded_root(self) -> Path:
        """``autograded/``, every student's graded copies and records."""
        return self.root / AUTOGRADED

    def submitted_students(self) -> list[str]:
        """The students with a submission folder of this assignment, by name."""
        return _students(self.root / SUBMITTED, self.id)

    def autograded_students(self) -> list[str]:
        """The students with a grading folder of this assignment, by name."""
        return _students(self.root / AUTOGRADED, self.id)

    def feedback_students(self) -> list[str]:
        """The students with a feedback folder of this assignment, by name."""
        return _students(self.root / FEEDBACK, self.id)


def _students(folder: Path, assignment: str) -> list[str]:
    return sorted(path.parent.name for path in folder.glob(f"*/{assignment}") if path.is_dir())


def students_with_folders(root: Path) -> set[str]:
    """Everyone with a folder under ``submitted/`` or ``autograded/``, whatever the assignment."""
    return {
        path.name
        for folder in (SUBMITTED, AUTOGRADED)
        for path in (root / folder).glob("*") if path.is_dir()
    }


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the cwd) that holds ``nbgrader_config.py``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
    raise CourseError(f"no {CONFIG_FILE} in {here} or any folder above it: run course from the course folder")


def assignments(root: Path, only: list[str] | None = None) -> list[Assignment]:
    """The assignments under ``solutions/`` in course order, or just ``only`` (checked to exist)."""
    solutions = root / "solutions"
    if not solutions.is_dir():
        raise CourseError(f"{solutions}: folder not found")
    found = sorted(p.name for p in solutions.iterdir() if (p / f"{p.name}.ipynb").is_file())
    if not only:
        return [Assignment(name, root) for name in found]
    unknown = [name for name in only if name not in found]
    if unknown:
        raise CourseError(
            f"unknown assignment {', '.join(unknown)}: solutions/ has {', '.join(found) or 'none'}")
    return [Assignment(name, root) for name in only]


def nbgrader_config(root: Path, **overrides: dict) -> Config:
    """The course's ``nbgrader_config.py`` as a traitlets Config, with per-section ``overrides``.

    nbgrader's Python API does not read the file by itself; every tool of the course goes through
    this function so that timeouts, the kernel's sys.path guard and ``add_missing_cells`` always apply.
    """
    config = PyFileConfigLoader(CONFIG_FILE, path=str(root)).load_config()
    for section, values in overrides.items():
        for key, value in values.items():
            config[section][key] = value
    return config
