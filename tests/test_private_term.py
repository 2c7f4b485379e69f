"""Private stays private, all term (course_tools.classroom.access): a student's account tries to
read every path of the course folder. What it can read must be public (access.PUBLIC), and all that
is public and meant to be read all the way down must be readable.

- After a whole term on a scratch course: git, release to the exchange, real students submitting,
  collect from the exchange and from a Canvas download, build, sample, autograde twice (the second
  backs the gradebook up), feedback released
  (the student fetches theirs), grades in every format, similarity, and git again as the very last
  step, when no `course` command runs after it.
- Quickly, on a folder laid out as a term leaves it, made readable by all before one `course`
  command; then files that other tools make after it, at its top and in build/.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest

from course_tools.classroom.access import Kind, public_entry_of

from .accounts import Step, accounts, act_as_students  # noqa: F401 (accounts: the session's fixture)
from .conftest import ROOT
from .system import needs_bwrap
from .toy_course import make_toy_course

COURSE = [str(Path(sys.executable).parent / "course")]
ASSIGNMENT = "toy"

# Run as the student: for each path of the course (listed by root, who can see them all), whether
# this account can read it: list a folder, read a byte of anything else (following a link, as any
# program would; without blocking on a FIFO).
TRY_EVERY_PATH = """
import json, os, sys
readable = []
for path in json.load(open(sys.argv[1])):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.listdir(path)
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
        readable.append(path)
    except OSError:
        pass
json.dump(readable, sys.stdout)
"""


def course(*arguments: str, cwd: Path) -> str:
    done = subprocess.run(COURSE + list(arguments), cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0,
                               1), f"course {' '.join(arguments)}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done.stdout


def git(*arguments: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Instructor", "-c", "user.email=instructor@uni.example", *arguments], cwd=cwd,
        check=True, capture_output=True)


def every_path(folder: Path) -> list[str]:
    paths = [str(folder)]
    for parent, folders, files in os.walk(folder):
        paths += [os.path.join(parent, name) for name in folders + files]
    return paths


def readable_by(login: str, python: Path, paths: list[str], scratch: Path) -> set[str]:
    """The paths ``login`` can read (:data:`TRY_EVERY_PATH`, run as that account)."""
    listing = scratch / "paths.json"
    listing.write_text(json.dumps(paths))
    listing.chmod(0o644)
    walked = subprocess.run(["runuser", "-u", login, "--", str(python), "-c", TRY_EVERY_PATH, str(listing)],
                            capture_output=True, text=True, timeout=300, cwd="/")
    assert walked.returncode == 0, walked.stderr[-3000:]
    return set(json.loads(walked.stdout))


def check_only_public_is_readable(root: Path, paths: list[str], readable: set[str]) -> None:
    public = {path: public_entry_of(root, Path(path)) for path in paths}
    private_but_readable = sorted(path for path in readable if public[path] is None)
    assert not private_but_readable, f"{len(private_but_readable)} private paths readable by a student: " \
                                     f"{private_but_readable[:20]}"
    # what students need, all the way down (the exchange keeps nbgrader's own modes inside: checked apart)
    public_but_unreadable = sorted(
        path for path, entry in public.items()
        if entry and entry.kind is not Kind.EXCHANGE and path not in readable and not os.path.islink(path))
    assert not public_but_unreadable, f"public but unreadable: {public_but_unreadable[:20]}"


LAID_OUT = ("solutions/a1/a1.ipynb", "notebooks/a1/a1.ipynb", "course_lib/__init__.py", "course_tools/x.py",
            "build/data/corpus.txt", "build/sample/solutions/a1/a1.ipynb", "build/autograde/a1/probes/0.pkl",
            "build/executed/a1.ipynb", "deploy/jupyterhub_config.py",
            "deploy/jupyter/student/nbgrader_config.py", "gradebook.db", "gradebook-backups/gradebook.db.1",
            "students.csv", "submitted/s1/a1/a1.ipynb", "autograded/s1/a1/grading.json",
            "feedback/s1/a1/a1.html", ".venv/bin/python", "tests/bugs/a1.py")


def test_after_one_command_and_other_tools_a_student_reads_only_what_is_public(accounts):
    (student,) = accounts.make("q", 1)
    root = Path(tempfile.mkdtemp(prefix="course-access-"))
    try:
        shutil.copy(ROOT / "nbgrader_config.py", root)
        for name in LAID_OUT:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(name)
        git("init", "-q", cwd=root)
        subprocess.run(["chmod", "-R", "a+rwX", str(root)], check=True)  # as careless as can be
        course("grades", cwd=root)
        # other tools, after the last `course` command: new files at the top and in build/ are private from
        # birth
        git("add", "-A", cwd=root)
        git("commit", "-q", "-m", "everything", cwd=root)
        (root / "gradebook.db.bak").write_text("a copy")
        (root / "build" / "slides").mkdir()
        (root / "build" / "slides" / "a1.html").write_text("solutions in slides")
        (root / "notebooks" / "a2").mkdir()  # inside a public entry: its creator's umask, readable
        (root / "notebooks" / "a2" / "a2.ipynb").write_text("a new release")
        paths = every_path(root)
        readable = readable_by(student, accounts.python, paths, accounts.folder)
        check_only_public_is_readable(root, paths, readable)
        assert str(root / "notebooks" / "a2" / "a2.ipynb") in readable and str(
            root / "course_lib") in readable
        assert str(
            root / "nbgrader_config.py") in readable and str(root) not in readable  # passable, not listable
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.notebook  # the autograder and `course build` execute the toy notebook
@needs_bwrap
@pytest.mark.skipif(shutil.which("git") is None, reason="the term uses git")
def test_after_a_whole_term_a_student_reads_only_what_is_public(accounts):
    alice, bob = accounts.make("t", 2)
    root = Path(tempfile.mkdtemp(prefix="course-term-"))
    try:
        make_toy_course(root)
        shutil.copytree(ROOT / "deploy", root / "deploy")
        shutil.copytree(ROOT / "course_lib", root / "course_lib",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (root / "build" / "data").mkdir(parents=True)
        (root / "build" / "data" / "corpus.txt").write_text("to be or not to be\n")
        (root / "students.csv").write_text(f"student_id,name,canvas_id\n{alice},Alice,1001\n{bob},Bob,1002\n"
                                           "carol,Carol Lms,1003\n")
        git("init", "-q", cwd=root)
        git("add", "-A", cwd=root)
        git("commit", "-q", "-m", "the course", cwd=root)

        course("release", "--exchange", ASSIGNMENT, cwd=root)
        release = nbformat.read(root / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
        answered = nbformat.from_dict(json.loads(nbformat.writes(release)))
        for cell in answered.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "double":
                cell.source = "def double(x):\n    return 2 * x"
        act_as_students(accounts.python, root, [Step(alice, ASSIGNMENT, nbformat.writes(answered)),
                                                Step(bob, ASSIGNMENT, nbformat.writes(release))])
        assert f"{alice}, {bob}" in course("collect", ASSIGNMENT, cwd=root)
        download = root.parent / f"{root.name}-canvas.zip"
        with zipfile.ZipFile(download, "w") as handle:
            handle.writestr(f"lmscarol_1003_1_{ASSIGNMENT}.ipynb", nbformat.writes(answered))
        assert "carol" in course("collect", "--zip", str(download), ASSIGNMENT, cwd=root)
        download.unlink()
        (root / ".venv" / "bin").mkdir(
            parents=True)  # an environment installed mid-term, under the private default
        (root / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
        course("build", "--profile", "smoke", ASSIGNMENT, cwd=root)
        course("sample", ASSIGNMENT, cwd=root)
        course("autograde", ASSIGNMENT, cwd=root)
        course("autograde", ASSIGNMENT, "--regrade", cwd=root)  # backs the gradebook up first
        assert "for 2 student(s)" in course("feedback", ASSIGNMENT, "--release", cwd=root)
        course("grades", "--csv", "build/grades.csv", cwd=root)
        course("grades", "--format", "canvas", cwd=root)
        course("grades", "--format", "moodle", ASSIGNMENT, cwd=root)
        course("similarity", ASSIGNMENT, cwd=root)
        git("add", "-A",
            cwd=root)  # the scratch course has no .gitignore: the gradebook and roster go into .git
        git("commit", "-q", "-m", "the term", cwd=root)  # after the last `course` command: nothing re-applies

        # alice fetches her feedback, as the Assignments tab does
        fetched = act_as_students(accounts.python, root, [Step(alice, code=(
            "from nbgrader.apps.nbgraderapp import NbGraderApp\n"
            f"try:\n    NbGraderApp.launch_instance(argv=['fetch_feedback', {ASSIGNMENT!r}])\n"
            "except SystemExit as exit:\n    assert not exit.code\n"))])
        assert fetched[0].status == 0, fetched[0].log
        home = Path(os.path.expanduser(f"~{alice}"))
        assert list((home / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html")), fetched[0].log

        paths = every_path(root)
        readable = readable_by(bob, accounts.python, paths, accounts.folder)
        check_only_public_is_readable(root, paths, readable)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    # What the term wrote that no student may read, in each of its forms: the test walks them all.
    for secret in ("solutions/toy/toy.ipynb", ".git/HEAD", "gradebook.db", "students.csv",
                   f"submitted/{alice}/toy/toy.ipynb", f"feedback/{alice}/toy/toy.html",
                   f"autograded/{alice}/toy/grading.json", "build/sample/solutions/toy/toy.ipynb",
                   "build/sample/gradebook.db", "build/grades.csv", "build/similarity/toy/index.html"):
        assert str(root / secret) in paths, f"the term left no {secret}"
    assert any("/gradebook-backups/" in path
               for path in paths) and any("/build/autograde/" in path for path in paths)

    exchange = root / "build" / "exchange" / "attention-transformers"
    assert str(exchange / "outbound" / "toy" / "toy.ipynb") in readable
    # the inbox and the feedback folder cannot be listed; what is in them is read only by a name that
    # ends with nbgrader's random part (a submission) or is a hash of the submission's secret (feedback)
    assert str(exchange / "inbound") not in readable and str(exchange / "feedback") not in readable
