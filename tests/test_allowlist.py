"""Validate's side of the allowlist (course_lib.allowlist): a graded check of an answer cell that
leaves the allowlist fails in the notebook with the grader's own findings, line by line; an answer
inside it is checked as before; in the grader's sandbox the check says nothing (its lint decides)."""
from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def shell(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    shell = InteractiveShell.instance()
    shell.run_cell("from course_lib.grading import check, check_close, forbid, GradingError\nimport torch")
    yield shell
    shell.reset()
    InteractiveShell.clear_instance()  # another test makes a shell of its own kind


def _error(shell, code: str):
    result = shell.run_cell(code)
    return result.error_in_exec


def test_validate_shows_each_finding_of_an_answer_cell_with_its_line(shell):
    shell.run_cell("import operator\n\n_m = operator.attrgetter('sy' + 's')(torch)\n\n"
                   "def double(x):\n    return 2 * x")
    error = _error(shell, "check('double', double(2) == 4, 'double(2) should be 4')")
    assert type(error).__name__ == "GradingError"
    assert "line 3: uses operator.attrgetter" in str(error) and "a person" in str(error)
    # forbid() says the same, before the student's code runs
    error = _error(shell, "with forbid('torch.softmax', exercise='double'):\n    double(2)")
    assert "line 3: uses operator.attrgetter" in str(error)


def test_validate_passes_what_the_allowlist_gives(shell):
    shell.run_cell("from fractions import Fraction\nimport codecs\n_TABLE = {}\n\n"
                   "def double(x):\n    _TABLE[x] = x * int(Fraction(4, 2))\n    return _TABLE[x]")
    assert _error(shell, "check('double', double(2) == 4, 'double(2) should be 4')") is None
    assert _error(shell, "check_close('double', double(torch.ones(2)), 2 * torch.ones(2))") is None


def test_the_grader_sandbox_leaves_it_to_the_lint(shell, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    shell.run_cell("import threading\n\ndef double(x):\n    return 2 * x")
    assert _error(shell, "check('double', double(2) == 4, 'double(2) should be 4')") is None


def test_a_check_runs_the_answer_in_one_thread(shell):
    shell.run_cell("def softmax(x, dim=-1):\n    return x.exp() / x.exp().sum(dim, keepdim=True)")
    error = _error(shell, "import threading\nwith forbid('torch.softmax', exercise='softmax'):\n"
                          "    threading.Thread(target=print).start()")
    assert "started a thread" in str(error)


def test_the_students_guide_prints_the_allowlist_as_it_is():
    from pathlib import Path

    from course_lib.allowlist import guide_table

    page = (Path(__file__).resolve().parents[1] / "docs" / "allowlist.md").read_text(encoding="utf-8")
    assert page.rstrip().endswith(guide_table()), "docs/allowlist.md must end with guide_table()"
