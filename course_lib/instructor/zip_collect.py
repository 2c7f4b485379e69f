"""``course collect --zip FILE ASSIGNMENT``: a submissions archive downloaded from Canvas or Moodle
into ``submitted/<student>/<assignment>/``, through nbgrader's ``zip_collect``.

nbgrader extracts the archive and hands every file name to a collector plugin; this module's
collector knows the two download layouts and the roster (:mod:`.roster`):

- Canvas ("Download Submissions"): ``<lastfirst>_[LATE_]<canvas user id>_<attachment id>_<file>``,
  where ``<lastfirst>`` is the sortable name in lower case without spaces or punctuation, and a
  re-uploaded file gets ``-1``, ``-2`` ... before its extension.
- Moodle ("Download all submissions"): ``<Full Name>_<participant id>_assignsubmission_file_<file>``,
  or, with "download submissions in folders", the same name as a folder holding ``<file>``.

A file is placed when its student is found in the roster (``students.csv``, :mod:`.roster`: by
``canvas_id`` or ``moodle_identifier``, else by a name exactly one student has) and it is the
assignment's notebook. Every other file is reported with the reason,
never dropped silently.
"""
from __future__ import annotations

import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TextIO

from nbgrader.plugins import FileNameCollectorPlugin
from traitlets import Dict, List, Unicode

from .course import CourseError, assignments, nbgrader_config
from .lms import read_roster
from .roster import ROSTER

MOODLE = re.compile(r"(?:.*/)?(?P<name>[^/]+?)_(?P<lms_id>\d+)_assignsubmission_file_?/?(?P<file>[^/]+)")
CANVAS = re.compile(r"(?:.*/)?(?P<name>[^/_]+)_(?:LATE_)?(?P<lms_id>\d+)_\d+_(?P<file>[^/]+)")
CANVAS_REUPLOAD = re.compile(r"-\d+(?=\.ipynb$)")


def _name_keys(name: str) -> set[str]:
    """A roster name as Canvas ("lastfirst") or Moodle ("First Last", "Last First") may write it,
    compared case-folded on letters and digits only."""
    words = name.split()
    return {_key("".join(words[i:] + words[:i])) for i in range(len(words))}


def _key(text: str) -> str:
    return re.sub(r"[\W_]", "", text.casefold())


class RosterCollector(FileNameCollectorPlugin):
    """nbgrader's file-name collector for Canvas and Moodle downloads, placing files by the roster."""

    students = List(Dict(), help="the roster: one dict per student, as lms.read_roster reads it").tag(config=True)
    notebooks = List(Unicode(), help="the assignment's notebook file names").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.unplaced: dict[str, str] = {}  # absolute path -> why it was not placed
        self.placed: dict[tuple[str, str], str] = {}  # (student, notebook) -> absolute path

    def collect(self, submitted_file: str) -> dict | None:
        path = Path(submitted_file).as_posix()
        moodle, canvas = MOODLE.fullmatch(path), CANVAS.fullmatch(path)
        if not (moodle or canvas):
            return self._unplaced(submitted_file, "its name is in neither Canvas's nor Moodle's download pattern")
        match = moodle or canvas
        student, problem = self._student(match["lms_id"], match["name"], "moodle_identifier" if moodle else "canvas_id")
        if student is None:
            return self._unplaced(submitted_file, problem)
        notebook = match["file"] if moodle else CANVAS_REUPLOAD.sub("", match["file"])
        if notebook not in self.notebooks:
            return self._unplaced(submitted_file, f"{student}'s file {notebook!r} is not the assignment's notebook "
                                                  f"({', '.join(self.notebooks)}): rename it and collect again")
        if (student, notebook) in self.placed:
            return self._unplaced(submitted_file, f"a second {notebook} of {student} (kept: "
                                                  f"{Path(self.placed[student, notebook]).name})")
        self.placed[student, notebook] = submitted_file
        return {"student_id": student, "file_id": notebook}

    def _unplaced(self, path: str, why: str) -> None:
        self.unplaced[path] = why
        return None

    def _student(self, lms_id: str, name: str, column: str) -> tuple[str | None, str]:
        # Moodle's worksheet writes the participant id as "Participant 5003"; its downloads, 5003
        by_id = [s["student_id"] for s in self.students if re.sub(r"\D", "", s.get(column, "")) == lms_id]
        if by_id:
            return by_id[0], ""
        by_name = [s["student_id"] for s in self.students if _key(name) in _name_keys(s.get("name", ""))]
        if len(by_name) == 1:
            return by_name[0], ""
        if by_name:
            return None, f"{len(by_name)} students of the roster are called {name!r}; give them their {column}"
        return None, f"no student of the roster has {column} {lms_id} or the name {name!r}"


def collect_zip(root: Path, assignment_id: str, archive: Path, out: TextIO | None = None) -> int:
    """Place the archive's submissions; 0 when every file found its student, 1 when some did not."""
    from nbgrader.apps import ZipCollectApp
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    out = out or sys.stdout
    assignment = assignments(root, [assignment_id])[0]
    students = read_roster(root / ROSTER)
    if not zipfile.is_zipfile(archive):
        raise CourseError(f"{archive}: not a zip archive")
    notebooks = sorted(p.name for p in assignment.release.parent.glob("*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="course-zip-collect-") as downloaded:
        # nbgrader's layout, in a scratch folder so that no extracted copy stays behind in the course
        inbox = Path(downloaded) / assignment.id / "archive"
        inbox.mkdir(parents=True)
        shutil.copy(archive, inbox / archive.name)
        config = nbgrader_config(
            root, ZipCollectApp={"collect_directory_structure": str(Path(downloaded, "{assignment_id}", "{collect_step}")),
                                 "collector_plugin": RosterCollector,
                                 "force": True,  # an import replaces the student's earlier submission
                                 "log_level": "ERROR"},  # the report below says what its warnings would
            ExtractorPlugin={"force": True},
            RosterCollector={"students": students, "notebooks": notebooks})
        app = ZipCollectApp(config=config)
        # what ZipCollectApp.initialize would do, without re-reading config files from the cwd
        app.coursedir = CourseDirectory(parent=app, assignment_id=assignment.id)
        result = capture_log(app)
        if not result["success"]:
            errors = [line for line in result.get("log", "").splitlines() if line.startswith("[ERROR]")]
            raise CourseError(f"{archive}: nbgrader's zip_collect stopped: "
                              f"{errors[-1] if errors else result['error'].strip().splitlines()[-1]}")
        collector = app.collector_plugin_inst
        extracted = Path(downloaded) / assignment.id / "extracted"
        unplaced = {str(Path(path).relative_to(extracted)): why for path, why in collector.unplaced.items()}
    placed = sorted(student for student, _ in collector.placed)
    print(f"placed {len(placed)} submission(s) of {assignment.id} under submitted/: {', '.join(placed) or 'none'}",
          file=out)
    if unplaced:
        print(f"could not place {len(unplaced)} file(s):", file=out)
        for path, why in sorted(unplaced.items()):
            print(f"  {path}: {why}", file=out)
    return 1 if unplaced else 0
