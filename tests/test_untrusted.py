"""course_tools.untrusted: reading what a student controls, and writing what a student wrote.

Fast: no sandbox, no notebook. Every read that could block runs under ``signal.alarm``, so a
regression fails in seconds instead of hanging the suite.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
from pathlib import Path

import pytest

from course_tools.untrusted import (ENTRY_BYTES, TOO_DEEP, Missing, Unreadable, csv_cell, no_links,
                                    open_regular, read_bytes, read_range, safe_data, safe_text, tree_bytes)


@contextlib.contextmanager
def within(seconds: int = 5):
    """Fail instead of hanging: SIGALRM interrupts a blocking open or read."""
    def alarm(signum, frame):
        raise TimeoutError(f"blocked for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_bytes(b"hello")
    assert read_bytes(tmp_path / "a" / "f.txt", 100, root=tmp_path) == b"hello"
    assert read_bytes(tmp_path / "a" / "f.txt", 5) == b"hello"
    assert read_range(tmp_path / "a" / "f.txt", -3, 3, root=tmp_path) == b"llo"
    assert read_range(tmp_path / "a" / "f.txt", 1, 2, root=tmp_path) == b"el"
    assert read_range(tmp_path / "a" / "f.txt", 10, 2, root=tmp_path) == b""


def test_a_fifo_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "events.jsonl")
    with within(5), pytest.raises(Unreadable, match="events.jsonl is a FIFO"):
        read_bytes(tmp_path / "events.jsonl", 1 << 20, root=tmp_path)
    with within(5), pytest.raises(Unreadable, match="FIFO"):
        read_range(tmp_path / "events.jsonl", 0, 100)


def test_links_are_never_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the solution")
    outbox = tmp_path / "out"
    (outbox / "replay").mkdir(parents=True)
    (outbox / "replay" / "0.pt").symlink_to(secret)
    with pytest.raises(Unreadable, match="replay/0.pt is a symbolic link"):
        read_bytes(outbox / "replay" / "0.pt", 1 << 20, root=outbox)
    # A link anywhere below the trusted root: the folder itself swapped for a link to a classmate's.
    classmate = tmp_path / "classmate" / "replay"
    classmate.mkdir(parents=True)
    (classmate / "1.pt").write_bytes(b"their answer")
    os.rename(outbox / "replay", tmp_path / "moved")
    (outbox / "replay").symlink_to(classmate)
    with pytest.raises(Unreadable, match="^replay is a symbolic link"):
        read_bytes(outbox / "replay" / "1.pt", 1 << 20, root=outbox)
    with pytest.raises(Unreadable, match="symbolic link"):
        no_links(outbox / "replay" / "1.pt", outbox)
    # A link to a device or to the grader's own stdin is refused the same way, without opening it.
    (outbox / "stdin.pt").symlink_to("/dev/stdin")
    with within(5), pytest.raises(Unreadable, match="symbolic link"):
        read_bytes(outbox / "stdin.pt", 100, root=outbox)


def test_missing_files_and_folders_are_missing(tmp_path):
    with pytest.raises(Missing):
        read_bytes(tmp_path / "nothing", 10)
    with pytest.raises(Missing):
        read_bytes(tmp_path / "no" / "folder", 10, root=tmp_path)
    with pytest.raises(Missing):
        no_links(tmp_path / "no" / "folder", tmp_path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(Unreadable, match="folder is a folder"):
        read_bytes(tmp_path / "folder", 10, root=tmp_path)
    assert no_links(tmp_path / "folder", tmp_path).st_mode
    with pytest.raises(ValueError):
        read_bytes(Path("/etc/passwd"), 10, root=tmp_path)


def test_the_size_is_checked_before_reading(tmp_path):
    sparse = tmp_path / "notebook.ipynb"
    with open(sparse, "wb") as stream:
        stream.truncate(3 << 30)  # 3 GiB that take no space
    with within(5), pytest.raises(Unreadable, match="notebook.ipynb is 3 GiB, over the 20 MiB limit"):
        read_bytes(sparse, 20 << 20, root=tmp_path)
    fd, info = open_regular(sparse, root=tmp_path)  # no cap: opened, not read
    os.close(fd)
    assert info.st_size == 3 << 30
    assert read_range(sparse, -10, 10) == bytes(10)


def test_tree_bytes_counts_without_following_links(tmp_path):
    assert tree_bytes(tmp_path / "absent") == 0
    out = tmp_path / "out"
    (out / "replay").mkdir(parents=True)
    (out / "replay" / "0.pt").write_bytes(bytes(10_000))
    (out / "root").symlink_to("/")  # a link to / is one entry, not the whole disk
    os.mkfifo(out / "fifo")
    assert 10_000 + 4 * ENTRY_BYTES <= tree_bytes(
        out) <= 16_384 + 4 * ENTRY_BYTES  # size or blocks, the larger
    with open(out / "sparse", "wb") as stream:
        stream.truncate(1 << 30)
    assert tree_bytes(out) >= 1 << 30
    assert tree_bytes(out, stop_above=1 << 20) > 1 << 20
    deep = out / "d"
    deep.mkdir()
    for _ in range(70):
        deep = deep / "d"
        deep.mkdir()
    assert tree_bytes(out) == TOO_DEEP


def test_many_empty_files_count(tmp_path):
    for i in range(300):
        (tmp_path / str(i)).touch()
    assert tree_bytes(tmp_path) == 300 * ENTRY_BYTES
    assert tree_bytes(tmp_path, stop_above=10 * ENTRY_BYTES) <= 12 * ENTRY_BYTES


def test_safe_text():
    assert safe_text("grade\ud800id") == "grade\ufffdid"
    assert safe_text("a\x1b[2Jb\x00c\u202ed\r") == "a[2Jbcd"  # the escape character goes: nothing to run
    assert safe_text("line one\n\tline two") == "line one\n\tline two"
    assert safe_text("line one\nline two\u2028three", one_line=True) == "line one line two three"
    assert safe_text(3.5) == "3.5"
    safe_text("\udcff").encode("utf-8")  # every result encodes
    assert safe_data({"k\ud800": ["v\ud800\x07", 1, None, {"x": "\udfff"}]}) == {
        "k\ufffd": ["v\ufffd", 1, None, {"x": "\ufffd"}]}
    assert safe_data({"code": "a\tb\x0c\ud800"}, strip_controls=False) == {"code": "a\tb\x0c\ufffd"}


@pytest.mark.parametrize("value, cell", [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("+1+2", "'+1+2"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "' =1"),  # the tab becomes a space, the formula is still neutralised
    ("  =1", "'  =1"),
    ("\uff1d1", "'\uff1d1"),
    ("-1.5", "-1.5"),
    ("8", "8"),
    ("", ""),
    ("failed to grade (x = 1)", "failed to grade (x = 1)"),
    ("two\nlines\ud800", "two lines\ufffd"),
])
def test_csv_cell(value, cell):
    assert csv_cell(value) == cell


def test_a_page_prints_safe_text_escaped(tmp_path):
    """course_tools.pages: whatever a template prints is safe text, escaped, without the template
    asking; markup the template made itself (a macro's) stays markup; an undefined name is an error."""
    import jinja2

    from course_tools.pages import render

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "t.html.j2").write_text(
        "{% macro bold(x) %}<b>{{ x }}</b>{% endmacro %}"
        "<p title='{{ value }}'>{{ value }}</p>{{ bold(value) }}")
    page = render(str(tmp_path / "module.py"), "t.html.j2", value="<script>alert('x')</script>\ud800\x1b[2J")
    escaped = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\ufffd[2J"
    assert page == f"<p title='{escaped}'>{escaped}</p><b>{escaped}</b>"
    with pytest.raises(jinja2.UndefinedError):
        render(str(tmp_path / "module.py"), "t.html.j2")


# ------------------------------------------------------- the writers that use them ----

HOSTILE = "=cmd|' /C calc'!A0 \ud800\x1b[2J<script>"


def _record(student: str, status: str, score: float | None = None, **extra):
    from course_tools.grading.records import Result

    return Result(student, "toy", status, score, 8.0, seconds=1.0, **extra)


def test_summary_survives_hostile_text():
    from course_tools.grading.autograde import summary
    from course_tools.grading.records import Check, Result

    results = [Result("a\ud800", "toy", "needs manual review", 6.0, 8.0, reasons=[HOSTILE], notes=[HOSTILE],
                      checks=[Check("test_x", 1.0, 0.0, "review", HOSTILE, True)]),
               Result("b", "toy", "graded", 8.0, 8.0, notes=[HOSTILE])]
    text = summary(results)
    text.encode("utf-8")
    assert "\x1b" not in text and "b " in text


def test_grades_csv_survives_hostile_records(tmp_path):
    from course_tools.course import Assignment
    from course_tools.classroom.grades import export
    from course_tools.grading.records import Check, record_data

    root = tmp_path
    (root / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.db_url = "
                                             f"'sqlite:///{root / 'none.db'}'\n")
    students = {"01_hostile": _record("01_hostile", "failed to grade", reasons=[HOSTILE]),
                "02_review": _record("02_review", "needs manual review", reasons=[HOSTILE],
                                     checks=[Check("t\ud800", 1.0, 0.0, "review", "", True)]),
                "=03_formula": _record("=03_formula", "failed to grade", reasons=["x"]),
                "04_corrupt": None,
                "05_after": _record("05_after", "failed to grade", reasons=["the last one"])}
    for student, record in students.items():
        folder = root / "autograded" / student / "toy"
        folder.mkdir(parents=True)
        text = json.dumps(record_data(record)) if record else '{"student": '
        (folder / "grading.json").write_text(text, encoding="utf-8")
    assignment = Assignment("toy", root)
    path = tmp_path / "grades.csv"
    out = io.StringIO()
    assert export(root, [assignment], str(path), out=out) == 1
    rows = {row["student"]: row for row in csv.DictReader(path.open(encoding="utf-8"))}
    assert sorted(rows) == ["'=03_formula", "01_hostile", "02_review", "04_corrupt", "05_after"]
    for row in rows.values():
        for value in row.values():
            assert not value.startswith(
                ("=", "+", "-", "@")) and "\x1b" not in value and "\ud800" not in value
    assert rows["01_hostile"]["why"].startswith("'=cmd|")
    assert rows["01_hostile"]["status"].startswith("failed to grade (=cmd|")
    assert rows["02_review"]["status"].startswith("needs manual review (=cmd|")
    assert rows["04_corrupt"]["status"].startswith("failed to grade (")
    assert "grading record" in rows["04_corrupt"]["why"]
    assert rows["05_after"]["why"] == "the last one"
    assert "\x1b" not in out.getvalue()


def test_feedback_page_escapes_hostile_text():
    from course_tools.grading.feedback import page

    from course_tools.grading.records import Check

    record = _record("s\ud800", "needs manual review", score=6.0, notes=[HOSTILE],
                     checks=[Check("test_x", 1.0, 0.0, "review\"><script>", HOSTILE, True)])
    text = page(record, {"test_x": "check(1)"}, None)
    text.encode("utf-8")
    assert "<script" not in text and "\x1b" not in text and "\ud800" not in text


SCRIPT = "<script>alert(1)</script>"
STUDENT_SAYS = f"{SCRIPT}\ud800\x1b[2J"  # in a student's id, a message, their code or its output


def _feedback_page(tmp_path: Path) -> str:
    from course_tools.grading.feedback import LateNote, page
    from course_tools.grading.records import Check

    record = _record(STUDENT_SAYS, "graded", score=1.0, notes=[STUDENT_SAYS],
                     checks=[Check(STUDENT_SAYS, 1.0, 1.0, "passed", STUDENT_SAYS, True)])
    return page(record, {STUDENT_SAYS: "check(1)"}, None, {STUDENT_SAYS: (STUDENT_SAYS, ["answer"])},
                {"answer": f"x = {STUDENT_SAYS!r}"}, LateNote(0.5, STUDENT_SAYS, STUDENT_SAYS))


def _explain_page(tmp_path: Path) -> str:
    from course_tools.grading.explain import page
    from course_tools.grading.records import Check, Probe

    probe = Probe(STUDENT_SAYS, 1, STUDENT_SAYS, True, "the submission's run", "failed", True, STUDENT_SAYS,
                  STUDENT_SAYS, "1.0", STUDENT_SAYS)
    return page(_record(STUDENT_SAYS, "graded", score=0.0, findings=[STUDENT_SAYS], probes=[probe],
                        checks=[Check(STUDENT_SAYS, 1.0, 0.0, "failed", STUDENT_SAYS, True)]))


def _similarity_page(tmp_path: Path) -> str:
    from types import SimpleNamespace

    from course_tools.classroom.similarity import compare_fingerprints, fingerprinted, write_report

    code = "def f(w, v, b):\n    t = 0\n" + "".join(f"    t = t + w[{i}] * v[{i}] - b / {i + 1}\n"
                                                   for i in range(12)) + "    return t\n"
    prints = fingerprinted({STUDENT_SAYS: {"answer": f"{code}NOTE = {STUDENT_SAYS!r}\n"},
                            "bob": {"answer": code}}, ["def f(w, v, b):\n    raise NotImplementedError\n"])
    pairs = compare_fingerprints(prints)
    assert pairs[0].flagged(0.5)  # the page shows the two cells side by side
    return write_report(tmp_path, SimpleNamespace(id=STUDENT_SAYS), prints, pairs, 0.5,
                        [STUDENT_SAYS]).read_text(encoding="utf-8")


def _slide_index(tmp_path: Path) -> str:
    from course_tools.publishing.slide_index import write_index

    return write_index(tmp_path, [("01_a", STUDENT_SAYS, 3, [STUDENT_SAYS])]).read_text(encoding="utf-8")


@pytest.mark.parametrize("build", [_feedback_page, _explain_page, _similarity_page, _slide_index])
def test_every_page_escapes_what_a_student_wrote(tmp_path, build):
    """Each HTML page (course_tools.pages' templates) shows a student's ``<script>`` as text, whether it
    came in a name, a message, a cell's code or a call's output, without control characters."""
    page = build(tmp_path)
    assert "<script" not in page and "\x1b" not in page and "\ud800" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;\ufffd[2J") >= 2


def test_a_students_error_text_loses_every_hidden_value():
    """course_tools.grading.scrub: numbers that show a hidden value (rounded, cut, scaled, as a
    float32 prints or as it was written), small numbers equal to one, hidden strings and their
    words, and long encoded runs are replaced; what is also a visible value stays."""
    import torch

    from course_tools.grading.scrub import Scrubber

    scrub = Scrubber(hidden=[torch.tensor([0.48172913, 8505.0, 16.0]), -1.5, "the hidden sentence here"],
                     visible=[torch.tensor([3.0, 4.0, 0.25, 0.4817999]), "visible words"])
    text = scrub("ValueError: [0.48172913, 0.481729, 4817291, 481.729] 8505 -1.5 in shape (3, 4), 16 rows; "
                 "the hidden sentence here; sentence; aGVsbG8gd29ybGQ0ODE3MjkxMw== 0.25 0.4817")
    for gone in ("0.48172913", "0.481729", "4817291", "481.729", "8505", "-1.5", "16 rows", "sentence",
                 "aGVsbG8"):
        assert gone not in text, (gone, text)
    for kept in ("ValueError", "(3, 4)", "0.25", "0.4817"):  # visible values (0.4817 shows one of them too)
        assert kept in text, (kept, text)
