"""``course release``: regenerate ``notebooks/`` from ``solutions/`` with nbgrader.

nbgrader runs in a throw-away course folder, so the course's own gradebook is never touched, and
nothing is written to ``notebooks/`` unless every assignment generated cleanly.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from course_tools.course import Assignment, CourseError, nbgrader_config
from course_tools.notebooks import check_source_notebook, dumps, normalised, read_notebook, write_if_changed

IGNORED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")


@dataclass
class ReleasePlan:
    """What the sources and the release folders should hold: text per path."""

    files: dict[Path, str | bytes] = field(default_factory=dict)
    # release folders and the file names each must contain, so that stale files can be found
    folders: dict[Path, set[str]] = field(default_factory=dict)

    def out_of_sync(self) -> list[Path]:
        stale = [folder / name for folder, names in self.folders.items() if folder.is_dir()
                 for name in _listing(folder) if name not in names]
        differing = [path for path, content in self.files.items() if _read(path) != content]
        return sorted(differing + stale)

    def apply(self) -> list[Path]:
        changed = []
        for path, content in self.files.items():
            if isinstance(content, str):
                written = write_if_changed(path, content)
            else:
                written = _read(path) != content
                if written:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(content)
            if written:
                changed.append(path)
        for folder, names in self.folders.items():
            for name in _listing(folder):
                if name not in names:
                    stale = folder / name
                    shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
                    changed.append(stale)
        return sorted(changed)


def _listing(folder: Path) -> list[str]:
    return [str(p.relative_to(folder)) for p in sorted(folder.rglob("*"))
            if p.is_file() and ".ipynb_checkpoints" not in p.parts and "__pycache__" not in p.parts]


def _read(path: Path) -> str | bytes | None:
    if not path.is_file():
        return None
    data = path.read_bytes()
    if path.suffix == ".ipynb":
        return data.decode("utf-8", errors="replace")
    return data


def plan_release(selected: list[Assignment]) -> ReleasePlan:
    """Generate every selected assignment into a temporary course and return what should be on disk."""
    plan = ReleasePlan()
    sources = {}
    for assignment in selected:
        notebook = read_notebook(assignment.source)
        check_source_notebook(assignment.source, notebook)
        sources[assignment] = dumps(normalised(notebook))
        plan.files[assignment.source] = sources[assignment]
    if not selected:
        return plan
    root = selected[0].root
    with tempfile.TemporaryDirectory(prefix="course-release-") as scratch:
        scratch = Path(scratch)
        config = nbgrader_config(root, CourseDirectory={
            "root": str(scratch), "db_url": f"sqlite:///{scratch / 'gradebook.db'}"})
        from nbgrader.apps import NbGraderAPI

        api = NbGraderAPI(config=config)
        for assignment in selected:
            source_folder = scratch / "solutions" / assignment.id
            shutil.copytree(assignment.source.parent, source_folder, ignore=IGNORED)
            (source_folder / assignment.source.name).write_text(sources[assignment], encoding="utf-8")
            result = api.generate_assignment(assignment.id, force=True, create=True)
            if not result["success"]:
                reason = (result.get("error") or result.get("log") or "").strip().splitlines()
                raise CourseError(f"{assignment.source}: nbgrader could not generate the release: "
                                  f"{reason[-1] if reason else 'no reason given'}")
            generated = scratch / "notebooks" / assignment.id
            names = set()
            for path in sorted(generated.rglob("*")):
                if not path.is_file():
                    continue
                name = str(path.relative_to(generated))
                names.add(name)
                target = assignment.release.parent / name
                if path.suffix == ".ipynb":
                    plan.files[target] = dumps(normalised(read_notebook(path)))
                else:
                    plan.files[target] = path.read_bytes()
            plan.folders[assignment.release.parent] = names
    return plan
