"""The course command on a toy course: release, check, build, and clear errors on bad input."""
import subprocess
import sys

import nbformat
import pytest

from course_tools.cli import main

from .toy_course import cell, make_toy_course, toy_notebook


@pytest.fixture
def course(tmp_path, monkeypatch):
    make_toy_course(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_help_lists_every_step():
    out = subprocess.run([sys.executable, "-m", "course_tools.cli", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for step in ("release", "check", "build"):
        assert step in out


def test_release_generates_and_is_byte_identical_when_run_twice(course, capsys):
    assert main(["release"]) == 0
    release = course / "notebooks" / "toy" / "toy.ipynb"
    first = release.read_bytes()
    stub = nbformat.reads(first.decode(), as_version=4)
    assert "raise NotImplementedError()" in stub.cells[2].source
    assert "HIDDEN" not in first.decode() and "-1.5" not in first.decode()
    assert main(["release"]) == 0
    assert release.read_bytes() == first
    assert "0 file(s) changed" in capsys.readouterr().out


def test_release_strips_outputs_from_solutions(course):
    source = course / "solutions" / "toy" / "toy.ipynb"
    notebook = nbformat.read(source, as_version=4)
    notebook.cells[2].outputs = [nbformat.v4.new_output("stream", text="hello")]
    notebook.cells[2].execution_count = 7
    notebook.cells[2].metadata["scrolled"] = True
    nbformat.write(notebook, source)
    assert main(["release"]) == 0
    text = source.read_text()
    assert "hello" not in text and '"execution_count": null' in text and "scrolled" not in text


def test_bad_json_is_one_clear_line_and_changes_nothing(course, capsys):
    assert main(["release"]) == 0
    release = course / "notebooks" / "toy" / "toy.ipynb"
    before = release.read_bytes()
    source = course / "solutions" / "toy" / "toy.ipynb"
    source.write_text('{"cells": [', encoding="utf-8")
    assert main(["release"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("course: error: ") and str(source) in error and "not valid JSON" in error
    assert len(error.splitlines()) == 1
    assert release.read_bytes() == before and source.read_text() == '{"cells": ['


@pytest.mark.parametrize("damage, message", [
    (lambda nb: nb.cells[3].metadata["nbgrader"].update(grade_id="double"), "duplicated grade_id double"),
    (lambda nb: nb.cells[3].metadata["nbgrader"].update(points=0), "must be locked and worth points"),
    (lambda nb: setattr(nb.cells[2], "source", "def double(x:\n"), "does not parse"),
])
def test_broken_source_notebooks_are_refused(course, capsys, damage, message):
    source = course / "solutions" / "toy" / "toy.ipynb"
    notebook = nbformat.read(source, as_version=4)
    damage(notebook)
    nbformat.write(notebook, source)
    assert main(["release"]) == 2
    assert message in capsys.readouterr().err
    assert not (course / "notebooks").exists()


def test_missing_folder_and_unknown_assignment(course, capsys):
    assert main(["release", "nope"]) == 2
    assert "unknown assignment nope" in capsys.readouterr().err
    (course / "solutions" / "toy" / "toy.ipynb").unlink()
    (course / "solutions" / "toy").rmdir()
    (course / "solutions").rmdir()
    assert main(["check"]) == 2
    assert "solutions: folder not found" in capsys.readouterr().err


@pytest.mark.notebook
def test_check_passes_then_flags_a_stale_release(course, capsys):
    assert main(["release"]) == 0
    assert main(["check"]) == 0
    assert "1/1" in capsys.readouterr().out
    release = course / "notebooks" / "toy" / "toy.ipynb"
    release.write_text(release.read_text().replace("Toy assignment", "Toy"), encoding="utf-8")
    assert main(["check"]) == 1
    assert "out of sync" in capsys.readouterr().out


@pytest.mark.notebook
def test_build_prints_the_table(course, capsys):
    assert main(["build", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "solution tests passed" in out and "score 42" in out
    row = next(line for line in out.splitlines() if line.startswith("toy "))
    assert row.split()[1:3] == ["1/1", "1/1"]
    assert (course / "build" / "executed" / "toy" / "toy.ipynb").is_file()


def _add_assignment(course, name, extra_cell, position):
    notebook = toy_notebook()
    notebook.cells.insert(position, extra_cell)
    path = course / "solutions" / name / f"{name}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(notebook, path)


@pytest.mark.notebook
def test_build_reports_a_notebook_that_times_out_or_fails_and_goes_on(course, capsys):
    """A slow machine: one notebook passes the cell limit, another raises; each is its own row, the
    other assignment is still built, and the build exits non-zero at the end."""
    # Sleeps only when executed by `course build` (nbgrader's validation of the release sets
    # NBGRADER_EXECUTION),
    # far longer than the limit; the limit is far longer than any other cell takes, even on a busy machine
    # (importing torch there can take seconds), so which notebook times out does not depend on the load.
    sleep = cell("code",
                 "import os, time\nif not os.environ.get('NBGRADER_EXECUTION'):\n    time.sleep(3600)",
                 "sleep")
    _add_assignment(course, "a_slow", sleep, position=1)  # cell 2, before anything imports torch
    _add_assignment(course, "b_broken", cell("code", "1 / 0", "broken"), position=4)  # cell 5, after the test
    assert main(["build", "--profile", "smoke", "--cell-timeout", "30"]) == 1
    out = capsys.readouterr().out
    rows = {
        line.split()[0]: line
        for line in out.splitlines()
        if line.split()[:1] in (["a_slow"], ["b_broken"], ["toy"]) and "  " in line
    }
    assert "timed out in cell 2 after 30 s" in rows["a_slow"]
    assert "failed in cell 5: ZeroDivisionError: division by zero" in rows["b_broken"]
    assert rows["toy"].split()[1:3] == ["1/1", "1/1"] and "score 42" in rows["toy"]
    assert "--cell-timeout" in out  # says what to do about it
    executed = course / "build" / "executed"
    assert (executed / "toy" / "toy.ipynb").is_file() and not (executed / "a_slow").exists()


@pytest.mark.notebook
def test_a_course_lib_beside_the_notebook_never_shadows_the_installed_one(course):
    from course_tools.publishing.execute import validate

    folder = course / "solutions" / "toy"
    (folder / "course_lib.py").write_text("raise SystemExit('shadowed')\n")
    (folder / "torch.py").write_text("raise SystemExit('shadowed')\n")
    result = validate(course, folder / "toy.ipynb")
    assert result.passed == ["test_double"] and not result.failed


@pytest.mark.notebook  # the autograder executes the toy notebooks
def test_sample_grades_the_solution_full_and_the_release_zero(course, capsys):
    """`course sample` in build/sample/, leaving the course's own gradebook and submissions alone."""
    assert main(["release"]) == 0
    assert main(["sample"]) == 0
    out = capsys.readouterr().out
    assert out.count(" ok") == 2 and "WRONG" not in out
    assert "sample-solution" in out and "sample-release" in out
    assert not (course / "submitted").exists() and not (course / "gradebook.db").exists()
    assert (course / "build" / "sample" / "gradebook.db").is_file()


@pytest.mark.notebook  # the autograder executes the toy notebooks
def test_sample_says_which_grade_is_wrong(course, capsys):
    """A release that still holds the solution gets full marks where it must get none."""
    assert main(["release"]) == 0
    (course / "notebooks" / "toy" / "toy.ipynb").write_bytes(
        (course / "solutions" / "toy" / "toy.ipynb").read_bytes())
    assert main(["sample"]) == 1
    out = capsys.readouterr().out
    assert "sample-release" in out and "WRONG" in out and "some grades are WRONG" in out
