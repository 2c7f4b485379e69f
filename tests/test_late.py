"""Due dates, extensions and the late policy through the real commands: `course due`, `course extend`,
`course grades` (table, Canvas, Moodle) and `course feedback`.

A one-assignment course (test_x 2 + test_y 3 points) whose gradebook is written as `course autograde`
writes it, each submission's time being the one the collector put in timestamp.txt. The policy is
10 % of the score per day begun late, at most 50 %; a1 is due 2026-12-01 17:00 +01:00 (16:00 UTC).

=================  ==================================  =========  ====================
student            submitted (UTC)                     extension  score
=================  ==================================  =========  ====================
ontime             an hour before the due date                    5
late               3 h after                                      5 − 10 % = 4.5
extended           2 d 1 h after                       2 d        5 − 10 % = 4.5 (30 % without it)
extended_after     20 h after                          1 d, granted after grading: 5
very_late          10 d after                                     5 − 50 % (the cap) = 2.5
waiting            (nothing yet)                       3 d        not submitted, never a graded 0
=================  ==================================  =========  ====================
"""
from __future__ import annotations

import csv
import datetime as dt
import shutil
from pathlib import Path

import nbformat
import pytest

from course_tools.classroom.late import LatePolicy, parse_duration
from course_tools.cli import main
from course_tools.grading.records import GRADED, NOT_SUBMITTED

from .toy_course import ROOT, answer_notebook, graded_submission

DUE = dt.datetime(2026, 12, 1, 16, 0)
POINTS = {"test_x": 2.0, "test_y": 3.0}
SUBMITTED = {"ontime": -dt.timedelta(hours=1), "late": dt.timedelta(hours=3),
             "extended": dt.timedelta(days=2, hours=1), "extended_after": dt.timedelta(hours=20),
             "very_late": dt.timedelta(days=10)}
EXPECTED = {
    "ontime": ("5", ""), "late": ("4.5", "0.5"), "extended": ("4.5", "0.5"), "extended_after": ("5", ""),
    "very_late": ("2.5", "2.5")
}
POLICY = '\nc.LatePolicy.penalty_method = "per_day"\nc.LatePolicy.percent = 10\nc.LatePolicy.cap = 50\n'


def _course(where: Path, monkeypatch) -> Path:
    root = where / "course"
    (root / "solutions" / "a1").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    with open(root / "nbgrader_config.py", "a") as config:
        config.write(POLICY)
    nbformat.write(answer_notebook(POINTS), root / "solutions" / "a1" / "a1.ipynb")
    monkeypatch.chdir(root)
    return root


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


@pytest.fixture
def term(tmp_path, monkeypatch, capsys) -> Path:
    root = _course(tmp_path, monkeypatch)
    assert main(["due", "a1", "2026-12-01T17:00+01:00"]) == 0
    assert "a1: due 2026-12-01 16:00 UTC; late policy: 10 % of the score per day begun late, at most 50 %" \
        in capsys.readouterr().out
    assert main(["extend", "extended", "a1", "2d"]) == 0
    assert main(["extend", "waiting", "a1", "3d"]) == 0  # before anything was submitted or graded
    for student, delay in SUBMITTED.items():
        graded_submission(root, "a1", student, POINTS, (DUE + delay).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    assert main(["extend", "extended_after", "a1", "1d"]) == 0  # after grading: no regrade needed
    capsys.readouterr()
    return root


def test_grades_apply_the_policy_with_extensions(term, capsys):
    assert main(["grades", "a1", "--csv", str(term / "grades.csv")]) == 0
    rows = {r["student"]: r for r in _read(term / "grades.csv")}
    for student, (score, penalty) in EXPECTED.items():
        assert (rows[student]["status"], rows[student]["score"], rows[student]["penalty"]) == (
            GRADED,
            score,
            penalty,
        ), rows[student]
    assert rows["late"]["late"] == "3 h after 2026-12-01 16:00 UTC"
    assert rows["extended"]["late"] == "1 h after 2026-12-03 16:00 UTC"  # the due date with the extension
    assert rows["ontime"]["late"] == rows["extended_after"]["late"] == ""
    assert (rows["waiting"]["status"], rows["waiting"]["score"]) == (NOT_SUBMITTED, "")
    table = capsys.readouterr().out
    assert "3 h after 2026-12-01 16:00 UTC: −0.5 points" in table


def test_both_lms_sheets_carry_the_penalised_grade_and_say_why(term, capsys):
    main(["grades", "a1", "--format", "canvas", "--out", str(term / "canvas.csv")])
    canvas = {r["SIS Login ID"]: r["a1"] for r in _read(term / "canvas.csv") if r["SIS Login ID"]}
    assert {s: canvas[s] for s in EXPECTED} == {s: score for s, (score, _) in EXPECTED.items()}
    said = capsys.readouterr().out
    assert (
        "late · a1: late: submitted 3 h after 2026-12-01 16:00 UTC: −0.5 points, already taken off the grade"
    ) in said
    roster = "student_id,email,moodle_identifier\n" + "".join(
        f"{s},{s}@uni.example,Participant {i}\n" for i, s in enumerate([*EXPECTED, "waiting"], 1)
    )
    (term / "students.csv").write_text(roster)
    main(["grades", "a1", "--format", "moodle", "--out", str(term / "moodle")])
    moodle = {r["Email address"].split("@")[0]: r for r in _read(term / "moodle" / "a1.csv")}
    assert {s: moodle[s]["Grade"] for s in EXPECTED} == {s: score for s, (score, _) in EXPECTED.items()}
    assert (
        moodle["very_late"]["Feedback comments"]
        == "late: submitted 10 d after 2026-12-01 16:00 UTC: −2.5 points, already taken off the grade"
    )
    assert moodle["ontime"]["Feedback comments"] == ""


def test_feedback_shows_the_lateness_and_the_policy(term):
    assert main(["feedback", "a1"]) == 0
    page = (term / "feedback" / "late" / "a1" / "a1.html").read_text()
    assert "Score: <b>4.5 / 5</b>" in page
    assert "submitted 3 h after 2026-12-01 16:00 UTC: −0.5 points" in page and "5 before the penalty" in page
    assert "10 % of the score per day begun late, at most 50 %" in page
    assert "Late" not in (term / "feedback" / "ontime" / "a1" / "a1.html").read_text()


def test_withdrawing_an_extension_and_clearing_the_due_date(term):
    assert main(["extend", "extended", "a1", "none"]) == 0
    main(["grades", "a1", "--csv", str(term / "grades.csv")])
    assert {r["student"]: r["score"] for r in _read(term / "grades.csv")}["extended"] == "3.5"  # 3 days begun
    assert main(["due", "a1", "none"]) == 0
    main(["grades", "a1", "--csv", str(term / "grades.csv")])
    assert {r["score"] for r in _read(term / "grades.csv") if r["student"] != "waiting"} == {"5"}


@pytest.mark.parametrize(
    "arguments, why",
    [
        (["extend", "bob", "a1", "2d"], "a1 has no due date to extend: set one with `course due a1 WHEN`"),
        (["due", "a1", "next friday"], "'next friday' is not a date and time like 2026-12-01 17:00"),
        (["due", "nosuch", "2026-12-01 17:00"], "nosuch"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, monkeypatch, capsys, arguments, why):
    _course(tmp_path, monkeypatch)
    assert main(arguments) == 2
    assert why in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, seconds", [("2d", 172800), ("36h", 129600), ("1d 12h", 129600), ("90min", 5400)]
)
def test_durations(text, seconds):
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "2 weeks", "0h", "-1d", "2d and more"])
def test_bad_durations(text):
    with pytest.raises(Exception, match="duration|longer than zero"):
        parse_duration(text)


@pytest.mark.parametrize(
    "method, late_s, penalty",
    [
        ("none", 3600, None),
        ("zero", 1, 8.0),
        ("per_hour", 1, 0.8),
        ("per_hour", 3601, 1.6),
        ("per_day", 86400 * 3, 2.4),
        ("per_day", 86400 * 30, 4.0),
        ("per_day", 0, None),
    ],
)
def test_policy_methods(method, late_s, penalty):
    plugin = LatePolicy(penalty_method=method, percent=10, cap=50)
    assert plugin.late_submission_penalty("s", 8.0, late_s) == pytest.approx(penalty)


def test_a_claimed_time_never_moves_the_due_date():
    """An exchange entry named a few minutes before its files changed, the two around the due date:
    the later counts, and the collector says so, so it is as late as an honest entry received then; a
    claim within the clock skew on one side of the due date is taken as it is."""
    from course_tools.classroom.exchange import Collected, InboxEntry, choose_latest

    due = dt.datetime(2026, 11, 20, 23, 59)
    claimed, received = due - dt.timedelta(minutes=2), due + dt.timedelta(minutes=2)
    straddling = InboxEntry("mallory+a1+stamp", "mallory", claimed, received=received, due=due)
    assert straddling.straddles and straddling.time == received
    honest = InboxEntry("alice+a1+stamp", "alice", received - dt.timedelta(seconds=3), received=received,
                        due=due)
    assert not honest.straddles and honest.time == received - dt.timedelta(seconds=3)
    # a claim later than the file system's, across the due date: the later again
    late_claim = InboxEntry("bob+a1+stamp", "bob", received, received=claimed, due=due)
    assert late_claim.time == received
    # no due date (none set yet): the claim within the skew stands
    assert InboxEntry("carol+a1+stamp", "carol", claimed, received=received).time == claimed
    collected = Collected.__new__(Collected)
    collected.entries, collected.notes, collected.latest = [straddling, honest], [], {}
    choose_latest(collected)
    assert len(collected.notes) == 1 and "on two sides of its due date" in collected.notes[0]
    assert "mallory+a1+stamp" in collected.notes[0]
