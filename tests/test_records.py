"""The grading record (course_tools/grading/records.py): one model, one reader, for every command."""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from course_tools.course import Assignment
from course_tools.grading.records import (EXPLANATION, RECORD, REVIEW, BadRecord, Check, Probe, Result,
                                          read_explanation, read_record, write_record)

from .conftest import ROOT


def _result() -> Result:
    return Result("ada", "toy", REVIEW, 6.0, 8.0, checks=[Check("test_x", 2.0, 0.0, "review", "why", True)],
                  reasons=["test_x: why"], notes=["a note"], findings=["a finding"], seconds=1.5,
                  submission="abc", grader="def")


PROBE = Probe("test_x", 2, "f", True, "the submission's run", "failed", True, "values differ: 0.25 vs 0.5",
              "(0.125,)", "0.25", "0.5")


def test_a_record_reads_back_as_it_was_written(tmp_path):
    folder = Assignment("toy", tmp_path).autograded("ada")
    folder.mkdir(parents=True)
    written = _result()
    written.probes = [PROBE]
    write_record(folder, written)
    assert read_record(Assignment("toy", tmp_path), "ada") == _result()  # the probes are not in the record
    assert "0.125" not in (folder / RECORD).read_text()
    assert read_explanation(Assignment("toy", tmp_path), "ada") == [PROBE]
    assert read_record(Assignment("toy", tmp_path), "bob") is None
    assert read_explanation(Assignment("toy", tmp_path), "bob") == []
    assert sorted(p.name for p in folder.iterdir()) == sorted([EXPLANATION, RECORD])  # no partial file left


def test_a_record_written_before_variants_reads_as_variant_0_of_1(tmp_path):
    """Recorded grades are never lost to a new field: the record of an earlier version lacks
    ``variant`` and ``variants``, and was graded on the one set of hidden inputs there was."""
    old = {k: v for k, v in asdict(_result()).items() if k not in ("variant", "variants", "probes")}
    _written(tmp_path, data=old)
    assert read_record(Assignment("toy", tmp_path), "ada") == _result()


@pytest.mark.parametrize("data", [{"x": 1}, [{"grade_id": "x"}], [{**asdict(PROBE), "number": True}],
                                  [{**asdict(PROBE), "hidden": "yes"}]])
def test_an_explanation_of_another_shape_is_a_bad_record(tmp_path, data):
    folder = Assignment("toy", tmp_path).autograded("ada")
    folder.mkdir(parents=True)
    (folder / EXPLANATION).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BadRecord):
        read_explanation(Assignment("toy", tmp_path), "ada")


def _written(tmp_path: Path, text: str | None = None, data: dict | None = None) -> Path:
    folder = Assignment("toy", tmp_path).autograded("ada")
    folder.mkdir(parents=True)
    (folder / RECORD).write_text(text if text is not None else json.dumps(data), encoding="utf-8")
    return folder / RECORD


def _changed(**fields) -> dict:
    return {**asdict(_result()), **fields}


@pytest.mark.parametrize("data", [
    [1, 2], _changed(status="perfect"), _changed(score="8"), _changed(max_score=True),
    _changed(reasons="not a list"), _changed(notes=[1]), _changed(checks=[{"grade_id": "test_x"}]),
    {k: v for k, v in asdict(_result()).items() if k != "grader"}, _changed(extra=1),
    _changed(checks=[{**asdict(_result().checks[0]), "points": "2"}]),
], ids=["a list", "an unknown status", "a string score", "a bool max score", "reasons not a list",
        "a note not text", "a partial check", "a field missing", "a field more", "a check's points as text"])
def test_what_is_not_a_record_of_this_version_is_said_so(tmp_path, data):
    _written(tmp_path, data=data)
    with pytest.raises(BadRecord):
        read_record(Assignment("toy", tmp_path), "ada")


def test_a_record_that_is_not_a_file_or_not_json_is_refused_without_blocking(tmp_path):
    path = _written(tmp_path, text='{"student": ')
    with pytest.raises(BadRecord, match="not JSON"):
        read_record(Assignment("toy", tmp_path), "ada")
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(BadRecord):
        read_record(Assignment("toy", tmp_path), "ada")
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps(asdict(_result())))
    with pytest.raises(BadRecord):
        read_record(Assignment("toy", tmp_path), "ada")


def test_only_the_record_model_reads_or_writes_the_record():
    """autograde, grades, feedback and the LMS export all go through records.py."""
    others = [path.name for path in (ROOT / "course_lib").rglob("*.py") if path.name != "records.py"
              and any(text in path.read_text(encoding="utf-8") for text in ("/ RECORD", '"grading.json"'))]
    assert others == []


def test_only_the_course_directory_model_spells_the_per_student_folders():
    """submitted/, autograded/ and feedback/ are named in course.py only (Assignment.submitted, ...)."""
    spelled = [
        path.name for path in (ROOT / "course_lib").rglob("*.py")
        if path.name != "course.py" and any(joined in path.read_text(encoding="utf-8")
                                            for name in ("submitted", "autograded", "feedback")
                                            for joined in (f'/ "{name}"', f'"{name}" /', f'"{name}/'))
    ]
    assert spelled == []
