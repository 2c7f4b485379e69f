"""Submissions of the toy assignment that ``course autograde`` must survive, each with its expected outcome.

Each fixture builds the files of one submission folder from the course root (some attacks need the
course's absolute paths). Answers not named keep the honest solution. The toy's points: double 1,
softmax 2, attention 2, rnn_step 1, affine 1, dropout 1 (8 in all). ``test_dropout`` is stochastic,
so the grader cannot re-check it with a probe: a submission whose code tampers gets it flagged.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat

from .toy import ANSWERS, ASSIGNMENT, POINTS

GRADED, REVIEW, FAILED = "graded", "needs manual review", "failed to grade"
MARKER = "detached-marker-7f3a9c"  # in the command line of the detached process that must not survive


@dataclass(frozen=True)
class Expected:
    status: str
    score: float | None
    failed: tuple[str, ...] = ()  # checks that score nothing with status "failed"
    review: tuple[str, ...] = ()  # checks flagged for a person
    why: str = ""  # text in the reasons (flagged, failed to grade) or in the failed/flagged checks' messages
    note: str = ""  # text in the notes to the student


@dataclass(frozen=True)
class Fixture:
    name: str
    description: str
    build: Callable[[Path], dict[str, bytes]]
    expected: Expected
    isolation: bool = True  # needs bubblewrap's isolation to be safe or to give this outcome


def release(root: Path) -> nbformat.NotebookNode:
    return nbformat.read(root / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


def answered(root: Path, edit: Callable[[nbformat.NotebookNode], None] | None = None, **answers: str) -> nbformat.NotebookNode:
    """The release with every answer cell filled in: the honest solution unless ``answers`` says otherwise."""
    notebook = release(root)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("answer_"):
            cell.source = answers.get(grade_id[len("answer_"):], ANSWERS[grade_id[len("answer_"):]])
    if edit:
        edit(notebook)
    return notebook


def files(notebook: nbformat.NotebookNode, name: str = f"{ASSIGNMENT}.ipynb", **extra: bytes) -> dict[str, bytes]:
    return {name: nbformat.writes(notebook).encode(), **extra}


def submission(edit=None, **answers: str) -> Callable[[Path], dict[str, bytes]]:
    return lambda root: files(answered(root, edit, **answers))


def cells_where(notebook, grade_id: str) -> list:
    return [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]


def _edit_test(grade_id: str, **changes) -> Callable:
    def edit(notebook):
        for cell in cells_where(notebook, grade_id):
            for key, value in changes.items():
                setattr(cell, key, value) if key != "metadata" else cell.metadata.update(value)
    return edit


def _delete(*grade_ids: str) -> Callable:
    def edit(notebook):
        notebook.cells = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in grade_ids]
    return edit


def _to_markdown(grade_id: str) -> Callable:
    def edit(notebook):
        for i, cell in enumerate(notebook.cells):
            if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
                markdown = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)
                markdown.id = cell.id
                notebook.cells[i] = markdown
    return edit


def _strip_metadata(notebook):
    for cell in notebook.cells:
        cell.metadata = {}


def _duplicate(notebook):
    wrong = WRONG_SOFTMAX
    for i, cell in enumerate(list(notebook.cells)):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer_softmax":
            first = nbformat.from_dict(json.loads(json.dumps(cell)))
            first.source, first.id = wrong, "copy-of-answer"
            notebook.cells.insert(i, first)  # the wrong copy first: the honest one, run after it, wins
            break
    test = cells_where(notebook, "test_double")[0]
    copy = nbformat.from_dict(json.loads(json.dumps(test)))
    copy.id = "copy-of-test"
    notebook.cells.insert(notebook.cells.index(test) + 1, copy)


def _rename(new_id: str | None = None) -> Callable:
    def edit(notebook):
        cell = cells_where(notebook, "answer_softmax")[0]
        cell.metadata["nbgrader"]["grade_id"] = "my_softmax"
        if new_id:
            cell.id = new_id
    return edit


def _tag_tests(notebook):
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata["tags"] = ["skip-execution", "raises-exception", "remove-input"]


def _kernel(notebook):
    notebook.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}


def _version_3(root: Path) -> dict[str, bytes]:
    old = nbformat.convert(answered(root), 3)
    return {f"{ASSIGNMENT}.ipynb": nbformat.writes(old, version=3).encode()}


def _latin1(root: Path) -> dict[str, bytes]:
    notebook = answered(root)
    notebook.cells[0].source += "\n\nRésumé"
    return {f"{ASSIGNMENT}.ipynb": nbformat.writes(notebook).encode("latin-1")}


def _path(root: Path, *parts: str) -> str:
    return str(root.joinpath(*parts))


# ------------------------------------------------------------------ answers, honest and otherwise ----

IDENTITY_DOUBLE = "def double(x):\n    return x"
WRONG_SOFTMAX = "def softmax(x, dim=-1):\n    return x"
UNSTABLE_SOFTMAX = "def softmax(x, dim=-1):\n    e = x.exp()  # overflows for large scores\n    return e / e.sum(dim=dim, keepdim=True)"
WRONG_AXIS_SOFTMAX = ("def softmax(x, dim=-1):\n    e = (x - x.amax(dim=dim, keepdim=True)).exp()\n"
                      "    return e / e.sum(dim=0, keepdim=True)")
HARDCODED_DOUBLE = "def double(x):\n    return {2: 4, 3.0: 6.0}.get(x, 0)  # the visible checks' answers"
WRONG_ATTENTION = "def attention(q, k, v):\n    return v[:, :q.shape[1]]"
WRONG_AFFINE = ANSWERS["affine"].replace("return x * self.weight + self.bias", "return x")
HONEST_AFFINE_BODY = ANSWERS["affine"]


def _fixtures() -> list[Fixture]:
    f = Fixture
    full = Expected(GRADED, POINTS)
    tamper_flags_dropout = ("test_dropout",)  # tampering code: the unverifiable stochastic check is not credited
    return [
        # --- honest and wrong ---
        f("honest", "the solution", submission(), full),
        f("blank", "the release as handed out", lambda root: files(release(root)),
          Expected(GRADED, 0, failed=("test_double", "test_softmax", "test_attention", "test_rnn_step",
                                      "test_affine", "test_dropout"), why="NotImplementedError")),
        f("unstable_softmax", "softmax without subtracting the max: NaN on the hidden large scores",
          submission(softmax=UNSTABLE_SOFTMAX), Expected(GRADED, 6, failed=("test_softmax",), why="NaN")),
        f("wrong_axis", "softmax normalised over the wrong axis", submission(softmax=WRONG_AXIS_SOFTMAX),
          Expected(GRADED, 6, failed=("test_softmax",), why="values differ")),
        f("hardcoded", "double returns the visible checks' answers only", submission(double=HARDCODED_DOUBLE),
          Expected(GRADED, 7, failed=("test_double",))),
        # --- resources ---
        f("infinite_loop", "softmax never returns", submission(softmax="def softmax(x, dim=-1):\n    while True:\n        pass"),
          Expected(GRADED, 6, failed=("test_softmax",), why="time limit")),
        f("sigint_ignored", "attention loops forever and ignores SIGINT",
          submission(attention="import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n\n"
                               "def attention(q, k, v):\n    while True:\n        pass"),
          Expected(REVIEW, 5, failed=("test_attention",), review=tamper_flags_dropout, why="time limit")),
        f("os_exit", "rnn_step ends the process with os._exit",
          submission(rnn_step="import os\n\ndef rnn_step(x_t, h_prev, W_e, W_h, b):\n    os._exit(3)"),
          Expected(REVIEW, 6, failed=("test_rnn_step",), review=tamper_flags_dropout, why="exit status 3")),
        f("segfault", "softmax dereferences a null pointer",
          submission(softmax="import ctypes\n\ndef softmax(x, dim=-1):\n    return ctypes.string_at(0)"),
          Expected(REVIEW, 5, failed=("test_softmax",), review=tamper_flags_dropout, why="segmentation fault")),
        f("memory_50gb", "attention allocates 50 GB",
          submission(attention="def attention(q, k, v):\n    big = torch.empty(50 * 2**30, dtype=torch.uint8)\n"
                               "    big.fill_(1)\n    return v"),
          Expected(GRADED, 6, failed=("test_attention",), why="RuntimeError")),
        f("fork_bomb", "the rnn_step answer cell forks until the process limit",
          submission(rnn_step="import os\nwhile True:\n    os.fork()\n\n" + ANSWERS["rnn_step"]),
          Expected(REVIEW, 6, failed=("test_rnn_step",), review=tamper_flags_dropout, why="NameError")),
        f("detached_process", "starts a background process that would outlive the grading",
          submission(double="import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                            f"'import time; time.sleep(600)  # {MARKER}'], start_new_session=True)\n\n"
                            + ANSWERS["double"]),
          Expected(REVIEW, 7, review=tamper_flags_dropout)),
        f("huge_output", "softmax prints 1 GB on one line",
          submission(softmax="def softmax(x, dim=-1):\n    for _ in range(1024):\n"
                             "        print('x' * 2**20, end='')\n    return x"),
          Expected(GRADED, 6, failed=("test_softmax",), why="MiB of output")),
        f("big_file", "attention writes a 1 GB file",
          submission(attention="def attention(q, k, v):\n    with open('big.bin', 'wb') as out:\n"
                               "        for _ in range(1024):\n            out.write(bytes(2**20))\n    return v"),
          Expected(REVIEW, 5, failed=("test_attention",), review=tamper_flags_dropout, why="File too large")),
        # --- the notebook's structure ---
        f("test_edited", "the softmax test cell replaced by `pass`, with a wrong softmax",
          submission(_edit_test("test_softmax", source="pass"), softmax=WRONG_SOFTMAX),
          Expected(GRADED, 6, failed=("test_softmax",))),
        f("test_deleted", "two test cells deleted", submission(_delete("test_double", "test_softmax")), full),
        f("test_markdown", "the attention test cell turned into markdown, with a wrong attention",
          submission(_to_markdown("test_attention"), attention=WRONG_ATTENTION),
          Expected(GRADED, 6, failed=("test_attention",))),
        f("metadata_stripped", "every cell's metadata removed", submission(_strip_metadata),
          Expected(GRADED, POINTS, note="found by its cell id")),
        f("duplicated_grade_id", "a wrong copy of the softmax answer cell, and a copy of a test cell",
          submission(_duplicate), Expected(GRADED, POINTS, note="appears 2 times")),
        f("renamed_grade_id", "the softmax answer cell's grade_id renamed", submission(_rename()),
          Expected(GRADED, POINTS, note="grade_id changed")),
        f("renamed_cell", "the softmax answer cell's grade_id and cell id renamed", submission(_rename("my-cell")),
          Expected(REVIEW, 6, failed=("test_softmax",), why="answer_softmax is missing")),
        f("tags", "skip-execution and other tags on the test cells, with a wrong double",
          submission(_tag_tests, double=IDENTITY_DOUBLE), Expected(GRADED, 7, failed=("test_double",))),
        # --- IPython hooks ---
        f("input_transformer", "an input transformer turns every check into `pass`; double is wrong",
          submission(double="def _skip(lines):\n    return ['pass\\n'] if any('check' in l for l in lines) else lines\n"
                            "get_ipython().input_transformers_cleanup.append(_skip)\n\n" + IDENTITY_DOUBLE),
          Expected(REVIEW, 6, review=("test_double", "test_dropout"), why="re-check")),
        f("events_hook", "a post_run_cell hook erases every error; softmax is wrong",
          submission(softmax="get_ipython().events.register('post_run_cell', "
                             "lambda result: setattr(result, 'error_in_exec', None))\n\n" + WRONG_SOFTMAX),
          Expected(REVIEW, 5, review=("test_softmax", "test_dropout"), why="re-check")),
        f("custom_exception_handler", "a custom exception handler swallows errors; attention is wrong",
          submission(attention="get_ipython().set_custom_exc((Exception,), lambda *args, **kwargs: None)\n\n"
                               + WRONG_ATTENTION),
          Expected(REVIEW, 5, failed=("test_attention",), review=tamper_flags_dropout)),
        # --- cheating ---
        f("eq_always_true", "double returns a float whose == is always True",
          submission(double="class Yes(float):\n    def __eq__(self, other):\n        return True\n\n"
                            "def double(x):\n    return Yes(0)"),
          Expected(REVIEW, 6, failed=("test_double",), review=tamper_flags_dropout)),
        f("rebound_checks", "check and check_close rebound to do nothing; double and softmax wrong",
          submission(double="check_close = lambda *args, **kwargs: None\ncheck = lambda *args, **kwargs: None\n\n"
                            + IDENTITY_DOUBLE, softmax=WRONG_SOFTMAX),
          Expected(REVIEW, 4, review=("test_double", "test_softmax", "test_dropout"), why="re-check")),
        f("patched_allclose", "torch.allclose patched to say True; Affine is wrong",
          submission(affine="torch.allclose = lambda *args, **kwargs: True\n\n" + WRONG_AFFINE),
          Expected(REVIEW, 6, review=("test_affine", "test_dropout"), why="re-check")),
        f("patched_np_allclose", "numpy.allclose patched to say True; dropout forgets to rescale",
          submission(dropout="np.allclose = lambda *args, **kwargs: True\n\ndef dropout(x, p):\n"
                             "    return x * (torch.rand_like(x) >= p)"),
          Expected(REVIEW, 7, review=("test_dropout",), why="cannot re-check")),
        f("patched_grading", "course_lib.grading.check_close and torch.testing.assert_close patched; softmax wrong",
          submission(softmax="import course_lib.grading\ncourse_lib.grading.check_close = lambda *a, **k: None\n"
                             "torch.testing.assert_close = lambda *a, **k: None\n\n" + WRONG_SOFTMAX),
          Expected(REVIEW, 5, failed=("test_softmax",), review=tamper_flags_dropout)),
        f("forbid_disabled", "forbid rebound to do nothing, attention calls F.scaled_dot_product_attention",
          submission(attention="import contextlib\nforbid = lambda *names, exercise=None: contextlib.nullcontext()\n\n"
                               "def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"),
          Expected(REVIEW, 5, review=("test_attention", "test_dropout"), why="yourself")),
        f("read_solutions", "double is right only if the source notebook with hidden tests is readable",
          lambda root: files(answered(root, double=f"try:\n    _LEAK = open({_path(root, 'solutions', ASSIGNMENT, ASSIGNMENT + '.ipynb')!r}).read()\n"
                                                   "except OSError:\n    _LEAK = ''\n\n"
                                                   "def double(x):\n    return 2 * x if 'HIDDEN' in _LEAK else x")),
          Expected(REVIEW, 6, failed=("test_double",), review=tamper_flags_dropout)),
        f("read_gradebook", "double is right only if the gradebook is readable",
          lambda root: files(answered(root, double=f"import sqlite3\ntry:\n    _ROWS = sqlite3.connect('file:{_path(root, 'gradebook.db')}?mode=ro', "
                                                   "uri=True).execute('select count(*) from grade').fetchall()\n"
                                                   "except Exception:\n    _ROWS = None\n\n"
                                                   "def double(x):\n    return 2 * x if _ROWS else x")),
          Expected(REVIEW, 6, failed=("test_double",), review=tamper_flags_dropout)),
        f("write_gradebook", "sets every manual and automatic score to 100 in the gradebook",
          lambda root: files(answered(root, double=f"import sqlite3\ntry:\n    _db = sqlite3.connect({_path(root, 'gradebook.db')!r})\n"
                                                   "    _db.execute('update grade set manual_score = 100, auto_score = 100')\n"
                                                   "    _db.commit()\nexcept Exception:\n    pass\n\n" + ANSWERS["double"])),
          Expected(REVIEW, 7, review=tamper_flags_dropout)),
        f("reseeded", "dropout reseeds the generator on every call, so its masks never change",
          submission(dropout="def dropout(x, p):\n    torch.manual_seed(0)\n    keep = torch.rand_like(x) >= p\n"
                             "    return x * keep / (1 - p)"),
          Expected(GRADED, 7, failed=("test_dropout",), why="different entries")),
        f("sdpa_called", "attention calls F.scaled_dot_product_attention",
          submission(attention="def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"),
          Expected(GRADED, 6, failed=("test_attention",), why="write yourself")),
        f("sdpa_alias", "attention calls an alias of scaled_dot_product_attention taken before the test",
          submission(attention="from torch.nn.functional import scaled_dot_product_attention as sdpa\n\n"
                               "def attention(q, k, v):\n    return sdpa(q, k, v)"),
          Expected(REVIEW, POINTS, review=("test_attention",), why="forbids")),
        f("multihead_called", "attention runs nn.MultiheadAttention",
          submission(attention="def attention(q, k, v):\n    mha = nn.MultiheadAttention(q.shape[-1], 1, batch_first=True)\n"
                               "    return mha(q, k, k)[0]"),
          Expected(GRADED, 6, failed=("test_attention",), why="write yourself")),
        f("course_lib_alias", "rnn_step returns course_lib's reference through an alias taken before the test",
          submission(rnn_step="from course_lib.rnn import rnn_cell_step as _reference\n\n"
                              "def rnn_step(x_t, h_prev, W_e, W_h, b):\n    return _reference(x_t, h_prev, W_e, W_h, b)"),
          Expected(REVIEW, 7, review=("test_rnn_step",), why="yourself")),
        # --- files ---
        f("invalid_json", "a truncated notebook", lambda root: {f"{ASSIGNMENT}.ipynb": b'{"cells": ['},
          Expected(FAILED, None, why="not valid JSON")),
        f("non_utf8", "a notebook saved as Latin-1", _latin1, Expected(FAILED, None, why="not UTF-8")),
        f("format_3", "a notebook in format 3", _version_3, Expected(GRADED, POINTS, note="format 3")),
        f("wrong_kernel", "a notebook that asks for an R kernel", submission(_kernel), Expected(GRADED, POINTS, note="'ir'")),
        f("extra_notebooks", "two more notebooks and a wrong copy beside the right one",
          lambda root: files(answered(root), **{"scratch.ipynb": nbformat.writes(release(root)).encode(),
                                                f"{ASSIGNMENT}-Copy1.ipynb": nbformat.writes(release(root)).encode()}),
          Expected(GRADED, POINTS, note="ignored")),
        f("missing_notebook", "the notebook renamed by a browser download",
          lambda root: files(answered(root), name=f"{ASSIGNMENT} (1).ipynb"),
          Expected(FAILED, None, why=f"no {ASSIGNMENT}.ipynb in the submission (it holds {ASSIGNMENT} (1).ipynb)")),
        f("bad_timestamp", "a timestamp.txt that is not a date",
          lambda root: files(answered(root), **{"timestamp.txt": b"yesterday, honestly"}), full),
        f("shadow_modules", "torch.py, numpy.py and course_lib.py beside the notebook",
          lambda root: files(answered(root), **{name: b"raise SystemExit('shadowed')\n"
                                                for name in ("torch.py", "numpy.py", "course_lib.py")}),
          Expected(GRADED, POINTS, note="ignored")),
    ]


CATALOGUE = _fixtures()
CANARY = Fixture("canary", "the honest solution, graded after a fixture", submission(), Expected(GRADED, POINTS))
