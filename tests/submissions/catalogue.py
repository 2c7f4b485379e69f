"""Submissions of the toy assignment that ``course autograde`` must survive, each with its expected outcome.

Each fixture builds the files of one submission folder from the course root (some attacks need the
course's absolute paths). Answers not named keep the honest solution. The toy's points: double 1,
softmax 2, attention 2, rnn_step 1, affine 1, dropout 1 (8 in all). ``test_dropout`` is stochastic:
the grader compares the distribution of its results over several seeds with the solution's. No test
cell runs where the student's code does, so tampering with the checks earns nothing: a wrong answer
fails the grader's own comparison.
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
class Link:
    """Not a file: a symbolic link to ``target`` (relative to the course root, or absolute). Under the
    name :data:`FOLDER` it replaces the whole submission folder."""

    target: str


@dataclass(frozen=True)
class Fifo:
    """Not a file: a named pipe, whose reader waits for a writer that never comes."""


@dataclass(frozen=True)
class Sparse:
    """A file of ``size`` bytes that takes no disk space (all of it a hole)."""

    size: int


FOLDER = "."  # the name under which a Link is the submission folder itself


@dataclass(frozen=True)
class Fixture:
    name: str
    description: str
    build: Callable[[Path], dict[str, bytes | Link | Fifo | Sparse]]  # file name -> content (see _submit)
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


def _hostile_text(root: Path) -> dict[str, bytes]:
    """Text no writer accepts and cells a spreadsheet would run: a lone surrogate (JSON allows
    "\\ud800") in a grade_id, in a comment and in an error message; cells that start with "=cmd|"."""
    formula = "=cmd|' /C calc'!A0"
    notebook = answered(root, double=f"# a note \ud800\ndef double(x):\n    raise ValueError({formula!r} + chr(0xD800))")
    cell = cells_where(notebook, "answer_softmax")[0]
    cell.metadata["nbgrader"]["grade_id"] = formula + "\ud800"
    cell.id = "hostile-cell"
    cell.source = formula + "\n" + cell.source
    return {f"{ASSIGNMENT}.ipynb": json.dumps(notebook).encode("ascii")}  # "\ud800" as JSON writes it


def _pasted_softmax() -> str:
    """course_lib's softmax as a student would paste it: its source with the variables renamed."""
    import inspect

    import course_lib.attention

    source = inspect.getsource(course_lib.attention.softmax)
    return "import torch\n\n" + source.replace("shifted", "z").replace(" e ", " ex ").replace("e.sum", "ex.sum")


def _path(root: Path, *parts: str) -> str:
    return str(root.joinpath(*parts))


# ------------------------------------------------------------------ answers, honest and otherwise ----

IDENTITY_DOUBLE = "def double(x):\n    return x"
IDENTITY_RNN_STEP = "def rnn_step(x_t, h_prev, W_e, W_h, b):\n    return h_prev  # wrong on purpose"
WRONG_SOFTMAX = "def softmax(x, dim=-1):\n    return x"
UNSTABLE_SOFTMAX = "def softmax(x, dim=-1):\n    e = x.exp()  # overflows for large scores\n    return e / e.sum(dim=dim, keepdim=True)"
WRONG_AXIS_SOFTMAX = ("def softmax(x, dim=-1):\n    e = (x - x.amax(dim=dim, keepdim=True)).exp()\n"
                      "    return e / e.sum(dim=0, keepdim=True)")
# The visible checks' answers, and 2.5 x for the rest: a hidden check that showed what it expected
# (a planted value of the toy's) would put a hidden value on the page.
HARDCODED_DOUBLE = ("def double(x):\n    if isinstance(x, (int, float)) and x in (2, 3.0):  # the visible checks\n"
                    "        return 2 * x\n    return 2.5 * x")
WRONG_ATTENTION = "def attention(q, k, v):\n    return v[:, :q.shape[1]]"
WRONG_AFFINE = ANSWERS["affine"].replace("return x * self.weight + self.bias", "return x")
HONEST_AFFINE_BODY = ANSWERS["affine"]
OUTBOX = "/sandbox/out"  # the sandbox's outbox, where the runner writes events.jsonl
EVENTS_FIFO = (f"import os\nos.remove('{OUTBOX}/events.jsonl')\nos.mkfifo('{OUTBOX}/events.jsonl')\n\n"
               + ANSWERS["double"])
# FIFOs where the replayed results once went, each with a reader in a thread so that the runner's
# writes succeed: results now go to the grader over the channel, and no thread starts in a run.
REPLAY_FIFOS = f"""import os, threading, time
os.makedirs('{OUTBOX}/replay', exist_ok=True)
_readers = []
for _k in range(256):
    os.mkfifo(f'{OUTBOX}/replay/{{_k}}.pt')
    _readers.append(os.open(f'{OUTBOX}/replay/{{_k}}.pt', os.O_RDONLY | os.O_NONBLOCK))

def _drain():
    while True:
        for _fd in _readers:
            try:
                os.read(_fd, 1 << 20)
            except BlockingIOError:
                pass
        time.sleep(0.002)

threading.Thread(target=_drain, daemon=True).start()

""" + ANSWERS["double"]
# Links where the replayed results once went: inside the sandbox /dev/stdin is /dev/null; outside, it
# is the grader's own stdin (in a terminal, a read that waits for a key), which nothing reads now.
REPLAY_LINKS = (f"import os\nos.makedirs('{OUTBOX}/replay', exist_ok=True)\nfor _k in range(256):\n"
                f"    os.symlink('/dev/stdin', f'{OUTBOX}/replay/{{_k}}.pt')\n\n" + ANSWERS["double"])
# 200 MiB of results in 4 MiB files, each under the per-file limit; slowly enough to be caught mid-step.
OUTBOX_FLOOD = f"""import time

def double(x):
    for _i in range(50):
        with open(f'{OUTBOX}/junk-{{_i}}.bin', 'wb') as _out:
            _out.write(bytes(4 << 20))
        time.sleep(0.05)
    return 2 * x"""


# Everything the sandbox's inbox holds, in the error message of every call: hidden test code would
# reach the feedback this way if it were ever in the sandbox.
LEAK_INBOX = """import os

def double(x):
    seen = []
    for folder, _, names in os.walk("/sandbox/in"):
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb") as stream:
                    seen.append(name + ": " + stream.read(20000).decode("utf-8", "replace"))
            except OSError:
                pass
    raise ValueError("\\n".join(seen))"""
# Four routes to course_lib's reference of rnn_step (rnn_cell_step, which its test forbids): in the
# grader's sandbox that reference is a stub that raises, so each earns nothing.
REFERENCE_BY_STRINGS = """import importlib, operator

_reference = operator.attrgetter("rnn" + "_cell_" + "step")(importlib.import_module("course_lib." + "rnn"))

def rnn_step(x_t, h_prev, W_e, W_h, b):
    return _reference(x_t, h_prev, W_e, W_h, b)"""
# Issue 40's determined students. The probes' channel is a socket in the answer cell's own process:
# ask it for every hidden check's input (named in the inbox's probes.json) before any check starts.
READ_AHEAD = """import json, os, stat, struct
from multiprocessing.connection import Connection

_STASH = []
_calls = json.load(open('/sandbox/in/probes.json'))
for _fd in range(3, 256):
    try:
        if not stat.S_ISSOCK(os.fstat(_fd).st_mode):
            continue
    except OSError:
        continue
    _channel = Connection(os.dup(_fd))
    for _k, _call in enumerate(_calls):
        if _call.get('segment') == 'hidden':
            _channel.send_bytes(struct.pack('<Bq', 1, _k))
            for _ in range(struct.unpack('<I', _channel.recv_bytes())[0]):
                _channel.recv_bytes()
                _STASH.append(_channel.recv_bytes())

""" + ANSWERS["double"]
STASH_IN_MESSAGE = ("def softmax(x, dim=-1):\n"
                    "    raise ValueError(''.join('abcdefghij'[b % 10] for blob in _STASH for b in blob))")
# Results go to the grader over the same channel: softmax sends a forged result for every probe each
# time it runs, its visible checks' before the seal and its hidden checks' after it.
FORGED_RESULTS = """import os, stat, struct
from multiprocessing.connection import Connection

def softmax(x, dim=-1):
    for fd in range(3, 256):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                channel = Connection(os.dup(fd))
                for k in range(2000):
                    channel.send_bytes(struct.pack('<Bq', 2, k) + b'forged')
        except OSError:
            continue
    return torch.softmax(x, dim=dim)"""
# torch's softmax in a thread, whose torch functions no TorchFunctionMode of the checking thread sees;
# threading reached as getattr by string, which `operator` hands out
THREAD_KERNEL = """import operator

_threading = operator.attrgetter("thread" + "ing")(torch)

def softmax(x, dim=-1):
    out = []
    worker = _threading.Thread(target=lambda: out.append(torch.softmax(x, dim=dim)))
    worker.start()
    worker.join()
    return out[0]"""
# torch.nn's activations imported again: a Softmax class no forbid() has touched, the guarded module
# put back
FRESH_IMPORT = """import operator

_sys = operator.attrgetter("sy" + "s")(torch)
_importlib = operator.attrgetter("import" + "lib")(torch)
_guarded = _sys.modules.pop("torch.nn.modules.activation")
try:
    _fresh = _importlib.import_module("torch.nn.modules.activation")
finally:
    _sys.modules["torch.nn.modules.activation"] = _guarded

def softmax(x, dim=-1):
    return _fresh.Softmax(dim=dim)(x)"""
# Honest answers that reach only what the allowlist gives: the standard library's numbers, dates and
# codecs, a memo dict written from a nested function, a module-level table of results
HONEST_STDLIB = """import codecs
import datetime
from fractions import Fraction

_STARTED = datetime.date(2026, 1, 1)
_NAME = codecs.decode(b"double", "utf-8")

def double(x):
    return x * int(Fraction(4, 2))"""
HONEST_MEMO = """_TABLE = {}

def rnn_step(x_t, h_prev, W_e, W_h, b):
    memo = {}

    def project(key, a, w):
        if key not in memo:
            memo[key] = a @ w
        return memo[key]

    h = torch.tanh(project("x", x_t, W_e) + project("h", h_prev, W_h) + b)
    _TABLE[len(_TABLE)] = tuple(h.shape)
    return h"""
# uses `statistics`, which only the check cell below its answer imports
CHECK_CELL_IMPORT = "def double(x):\n    return x * len(statistics.multimode([1, 2]))"
REFERENCE_CODE_COPY = """import types
import course_lib.rnn

_original = course_lib.rnn.rnn_cell_step
_copy = types.FunctionType(_original.__code__, _original.__globals__, "copy", _original.__defaults__)

def rnn_step(x_t, h_prev, W_e, W_h, b):
    return _copy(x_t, h_prev, W_e, W_h, b)"""
GUARD_DISABLED = """import contextlib
import torch
import course_lib.rnn

_grading = torch.sys.modules["course_lib.grading"]
_grading.resolve_dotted = lambda dotted: (type("Nothing", (), {"x": None}), "x")
_grading.forbid = lambda *names, **kwargs: contextlib.nullcontext()

def rnn_step(x_t, h_prev, W_e, W_h, b):
    return course_lib.rnn.rnn_cell_step(x_t, h_prev, W_e, W_h, b)"""
REFERENCE_SOURCE = """import ast, inspect
import course_lib.rnn

_tree = ast.parse(inspect.getsource(course_lib.rnn))
_code = next(n for n in _tree.body if getattr(n, "name", "") == "rnn_cell_step")
_space = dict(vars(course_lib.rnn))
exec(compile(ast.Module([_code], []), "reference", "exec"), _space)

def rnn_step(x_t, h_prev, W_e, W_h, b):
    return _space["rnn_cell_step"](x_t, h_prev, W_e, W_h, b)"""


ALL_CHECKS = ("test_double", "test_softmax", "test_attention", "test_rnn_step", "test_rnn_forward", "test_affine",
              "test_dropout")
# The batch's limits (tests/test_autograde.py's LIMITS), which the resource fixtures are built
# against: CPU seconds of one step and of all of one student's runs together, and --memory. The
# times are small so that the fixtures that run into them cost seconds of the suite, not minutes.
STEP_CPU_S, STUDENT_CPU_S, MEMORY_LIMIT = 8, 12, 4 << 30

# --- issue 24: credit needs the student's own code ---
# The answers read every probe's input, hidden ones included, wherever the sandbox holds them, and
# compute the results with what their exercises forbid, fetched by strings; then answer from a table.
LOOKUP_TABLE = {
    "softmax": """import glob, pickle

_TABLE = {}
_reference = getattr(torch, "soft" + "max")
for _path in glob.glob("/sandbox/in/**/*.pkl", recursive=True):
    try:
        with open(_path, "rb") as _stream:
            _args = pickle.load(_stream)["args"]
        _x = _args[0]
        for _dim in range(-_x.dim(), _x.dim()):
            _TABLE[(tuple(_x.flatten().tolist()), tuple(_x.shape), _dim)] = _reference(_x, dim=_dim)
    except Exception:
        pass

def softmax(x, dim=-1):
    return _TABLE.get((tuple(x.flatten().tolist()), tuple(x.shape), dim), x)""",
    "rnn_step": """import glob, pickle

_TABLE = {}
for _path in glob.glob("/sandbox/in/**/*.pkl", recursive=True):
    try:
        with open(_path, "rb") as _stream:
            _x, _h, _W_e, _W_h, _b = pickle.load(_stream)["args"]
        _cell = getattr(nn, "RNN" + "Cell")(_x.shape[1], _h.shape[1])
        with torch.no_grad():
            _cell.weight_ih.copy_(_W_e.T)
            _cell.weight_hh.copy_(_W_h.T)
            _cell.bias_ih.copy_(_b)
            _cell.bias_hh.zero_()
            _TABLE[(tuple(_x.flatten().tolist()), tuple(_h.flatten().tolist()))] = _cell(_x, _h)
    except Exception:
        pass

def rnn_step(x_t, h_prev, W_e, W_h, b):
    return _TABLE.get((tuple(x_t.flatten().tolist()), tuple(h_prev.flatten().tolist())), h_prev)""",
}
# The kernel behind nn.RNNCell under its other names; and a softmax through log_softmax.
KERNEL = "def rnn_step(x_t, h_prev, W_e, W_h, b):\n    return {}(x_t, h_prev, W_e.T, W_h.T, b)"
CAPTURED_KERNEL = "_cell = torch.rnn_tanh_cell  # taken in another exercise's answer cell\n\n" + ANSWERS["double"]
LOG_SOFTMAX = "def softmax(x, dim=-1):\n    return x.log_softmax(dim).exp()"
CAPTURED_SDPA = "_attend = F.scaled_dot_product_attention  # taken in another exercise's answer cell\n\n" + ANSWERS["double"]
# Two students, one channel: the writer's rnn_step is wrong on purpose, so rnn_forward's check runs
# again in a sandbox that keeps course_lib's rnn_cell_step; there it computes every rnn_step input it
# finds (before the inputs were handed over one check at a time: all of them, in /sandbox/in) and
# leaves the table wherever the next run could find it. The reader has no rnn_step of its own.
CHANNEL_PLACES = ("/channel.pkl", "/etc/channel.pkl", "/dev/channel.pkl", "/dev/shm/channel.pkl",
                  "/sandbox/channel.pkl", "/sandbox/work/channel.pkl", "/tmp/channel.pkl")
CHANNEL_KEY = 0x5EED24
SYSV = f"""import ctypes

_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_KEY, _SIZE, _PLACES = {CHANNEL_KEY}, 8 << 20, {CHANNEL_PLACES!r}

def _segment(create):
    shm = _libc.shmget(_KEY, _SIZE, 0o1666 if create else 0)
    address = _libc.shmat(shm, None, 0) if shm >= 0 else None
    return None if address in (None, ctypes.c_void_p(-1).value) else address
"""
CHANNEL_WRITER = SYSV + """
import glob, pickle
import course_lib.rnn

try:
    _table = {}
    for _path in glob.glob("/sandbox/in/**/*.pkl", recursive=True):
        with open(_path, "rb") as _stream:
            _args = pickle.load(_stream)["args"]
        if len(_args) == 5 and _args[0].dim() == 2:
            _key = (tuple(_args[0].flatten().tolist()), tuple(_args[1].flatten().tolist()))
            _table[_key] = course_lib.rnn.rnn_cell_step(*_args)
    if _table:
        _data = pickle.dumps(_table)
        _address = _segment(True)
        if _address:
            ctypes.memmove(_address, len(_data).to_bytes(8, "little") + _data, 8 + len(_data))
        for _place in _PLACES:
            try:
                with open(_place, "wb") as _out:
                    _out.write(_data)
            except OSError:
                pass
except Exception:
    pass

""" + ANSWERS["double"]
CHANNEL_READER = SYSV + """
import pickle

def _table():
    address = _segment(False)
    if address:
        size = int.from_bytes(ctypes.string_at(address, 8), "little")
        if 0 < size < _SIZE:
            return pickle.loads(ctypes.string_at(address + 8, size))
    for place in _PLACES:
        try:
            with open(place, "rb") as stream:
                return pickle.load(stream)
        except (OSError, pickle.UnpicklingError, EOFError):
            pass
    return {}

def rnn_step(x_t, h_prev, W_e, W_h, b):
    key = (tuple(x_t.flatten().tolist()), tuple(h_prev.flatten().tolist()))
    return _table().get(key, torch.zeros_like(h_prev))"""
# Memory held where no process's resident memory shows it, more than the whole limit: SysV segments
# (touched, then detached), files in /dev/shm, memory files, a tmpfs of a new mount namespace.
# double is right only when none of it could be held.
MEMORY_OUTSIDE = f"""import ctypes, os

_LIMIT, _CHUNK = {MEMORY_LIMIT} + (512 << 20), 512 << 20
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]

def _sysv():
    held = 0
    while held < _LIMIT:
        shm = _libc.shmget(0, _CHUNK, 0o1600)  # IPC_PRIVATE, IPC_CREAT
        address = _libc.shmat(shm, None, 0) if shm >= 0 else None
        if address in (None, ctypes.c_void_p(-1).value):
            return held
        ctypes.memset(address, 1, _CHUNK)
        _libc.shmdt(ctypes.c_void_p(address))
        held += _CHUNK
    return held

def _files(folder):
    held = 0
    try:
        for i in range(_LIMIT // _CHUNK + 1):
            with open(f"{{folder}}/held-{{i}}", "wb") as out:
                for _ in range(_CHUNK >> 20):
                    out.write(bytes(1 << 20))
            held += _CHUNK
    except OSError:
        pass
    return held

def _memfd():
    held, kept = 0, []
    try:
        while held < _LIMIT:
            fd = os.memfd_create("held")
            for _ in range(32):
                os.write(fd, bytes(1 << 20))
            kept.append(fd)
            held += 32 << 20
    except OSError:
        pass
    return held

def _tmpfs():
    if _libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
        return 0
    os.makedirs("/sandbox/work/mnt", exist_ok=True)
    if _libc.mount(b"none", b"/sandbox/work/mnt", b"tmpfs", 0, None) != 0:
        return 0
    return _files("/sandbox/work/mnt")

_HELD = max(_sysv(), _files("/dev/shm"), _memfd(), _tmpfs())

def double(x):
    return 2 * x if _HELD < _LIMIT else x"""
# --- issue 24: no hidden value on any page ---
# Every input double is called with (the hidden checks' too, each in a process of its own) is kept
# where a later call finds it; softmax, whose visible check runs after double's hidden ones, raises
# them all in its message. And a double that raises every probe input it can find.
STASH_HIDDEN = {
    "double": """def double(x):
    for folder in ("/sandbox/work", "/dev/shm"):
        try:
            with open(folder + "/stash.txt", "a") as out:
                out.write(repr(x.tolist() if isinstance(x, torch.Tensor) else x) + "; ")
        except OSError:
            pass
    return 2 * x""",
    "softmax": """def softmax(x, dim=-1):
    seen = []
    for folder in ("/sandbox/work", "/dev/shm"):
        try:
            with open(folder + "/stash.txt") as stream:
                seen.append(stream.read())
        except OSError:
            pass
    raise ValueError("HIDDEN " + " ".join(seen))""",
}
RAISE_PROBES = """import glob, pickle

def double(x):
    seen = []
    for path in glob.glob("/sandbox/**/*.pkl", recursive=True):
        try:
            with open(path, "rb") as stream:
                seen.append(repr(pickle.load(stream)["args"]))
        except Exception:
            pass
    raise ValueError("HIDDEN " + " ".join(seen))"""
# --- issue 24: one time limit for all of a student's runs ---
# 6.5 s of CPU in an answer cell (under the 8 s of one step) and a wrong rnn_step: the main run and
# the cascade regrade of rnn_forward each run the cell again, 13 s against the student's 12 s.
CPU_IN_EVERY_RUN = f"""import time

_start = time.process_time()
while time.process_time() - _start < {STEP_CPU_S - 1.5}:
    pass

""" + ANSWERS["double"]


def _fixtures() -> list[Fixture]:
    f = Fixture
    full = Expected(GRADED, POINTS)
    return [
        # --- honest and wrong ---
        f("honest", "the solution", submission(), full),
        f("blank", "the release as handed out", lambda root: files(release(root)),
          Expected(GRADED, 0, failed=ALL_CHECKS, why="NotImplementedError")),
        f("unstable_softmax", "softmax without subtracting the max: NaN on the hidden large scores",
          submission(softmax=UNSTABLE_SOFTMAX), Expected(GRADED, 7, failed=("test_softmax",), why="NaN")),
        f("wrong_axis", "softmax normalised over the wrong axis", submission(softmax=WRONG_AXIS_SOFTMAX),
          Expected(GRADED, 7, failed=("test_softmax",), why="values differ")),
        f("hardcoded", "double is right on the visible checks' inputs only", submission(double=HARDCODED_DOUBLE),
          Expected(GRADED, 8, failed=("test_double",), why="hidden check 3 of 5 (double): return value: values differ")),
        # --- resources ---
        f("infinite_loop", "softmax never returns", submission(softmax="def softmax(x, dim=-1):\n    while True:\n        pass"),
          Expected(GRADED, 7, failed=("test_softmax",), why=f"{STEP_CPU_S} s CPU time limit of one step")),
        f("sigint_ignored", "attention loops forever and ignores SIGINT",
          submission(attention="import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n\n"
                               "def attention(q, k, v):\n    while True:\n        pass"),
          Expected(REVIEW, 7, failed=("test_attention",), why=f"{STEP_CPU_S} s CPU time limit of one step")),
        f("os_exit", "rnn_step ends the process with os._exit",
          submission(rnn_step="import os\n\ndef rnn_step(x_t, h_prev, W_e, W_h, b):\n    os._exit(3)"),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="exit status 3")),
        f("segfault", "softmax dereferences a null pointer",
          submission(softmax="import ctypes\n\ndef softmax(x, dim=-1):\n    return ctypes.string_at(0)"),
          Expected(REVIEW, 7, failed=("test_softmax",), why="segmentation fault")),
        f("memory_50gb", "attention allocates 50 GB",
          submission(attention="def attention(q, k, v):\n    big = torch.empty(50 * 2**30, dtype=torch.uint8)\n"
                               "    big.fill_(1)\n    return v"),
          Expected(GRADED, 7, failed=("test_attention",), why="RuntimeError")),
        f("fork_bomb", "the rnn_step answer cell forks until the process limit",
          submission(rnn_step="import os\nwhile True:\n    os.fork()\n\n" + ANSWERS["rnn_step"]),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="NameError")),
        f("detached_process", "starts a background process that would outlive the grading (no program "
                              "can be executed in the sandbox: the cell stops there, before double)",
          submission(double="import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                            f"'import time; time.sleep(600)  # {MARKER}'], start_new_session=True)\n\n"
                            + ANSWERS["double"]),
          Expected(REVIEW, POINTS - 1, failed=("test_double",), why="imports subprocess")),
        f("huge_output", "softmax prints 1 GB on one line",
          submission(softmax="def softmax(x, dim=-1):\n    for _ in range(1024):\n"
                             "        print('x' * 2**20, end='')\n    return x"),
          Expected(GRADED, 7, failed=("test_softmax",), why="MiB of output")),
        f("big_file", "attention writes a 1 GB file",
          submission(attention="def attention(q, k, v):\n    with open('big.bin', 'wb') as out:\n"
                               "        for _ in range(1024):\n            out.write(bytes(2**20))\n    return v"),
          Expected(REVIEW, 7, failed=("test_attention",), why="File too large")),
        # --- the notebook's structure ---
        f("test_edited", "the softmax test cell replaced by `pass`, with a wrong softmax",
          submission(_edit_test("test_softmax", source="pass"), softmax=WRONG_SOFTMAX),
          Expected(GRADED, 7, failed=("test_softmax",), why="values differ")),
        f("test_deleted", "two test cells deleted", submission(_delete("test_double", "test_softmax")), full),
        f("test_markdown", "the attention test cell turned into markdown, with a wrong attention",
          submission(_to_markdown("test_attention"), attention=WRONG_ATTENTION),
          Expected(GRADED, 7, failed=("test_attention",), why="values differ")),
        f("metadata_stripped", "every cell's metadata removed", submission(_strip_metadata),
          Expected(GRADED, POINTS, note="found by its cell id")),
        f("duplicated_grade_id", "a wrong copy of the softmax answer cell, and a copy of a test cell",
          submission(_duplicate), Expected(GRADED, POINTS, note="appears 2 times")),
        f("renamed_grade_id", "the softmax answer cell's grade_id renamed", submission(_rename()),
          Expected(GRADED, POINTS, note="grade_id changed")),
        f("renamed_cell", "the softmax answer cell's grade_id and cell id renamed", submission(_rename("my-cell")),
          Expected(REVIEW, 7, failed=("test_softmax",), why="answer_softmax is missing")),
        f("tags", "skip-execution and other tags on the test cells, with a wrong double",
          submission(_tag_tests, double=IDENTITY_DOUBLE),
          Expected(GRADED, 8, failed=("test_double",), why="values differ")),
        # --- IPython hooks ---
        f("input_transformer", "an input transformer turns every check into `pass`; double is wrong",
          submission(double="def _skip(lines):\n    return ['pass\\n'] if any('check' in l for l in lines) else lines\n"
                            "get_ipython().input_transformers_cleanup.append(_skip)\n\n" + IDENTITY_DOUBLE),
          Expected(REVIEW, 8, failed=("test_double",), why="values differ")),
        f("events_hook", "a post_run_cell hook erases every error; softmax is wrong",
          submission(softmax="get_ipython().events.register('post_run_cell', "
                             "lambda result: setattr(result, 'error_in_exec', None))\n\n" + WRONG_SOFTMAX),
          Expected(REVIEW, 7, failed=("test_softmax",), why="values differ")),
        f("custom_exception_handler", "a custom exception handler swallows errors; attention is wrong",
          submission(attention="get_ipython().set_custom_exc((Exception,), lambda *args, **kwargs: None)\n\n"
                               + WRONG_ATTENTION),
          Expected(REVIEW, 7, failed=("test_attention",), why="values differ")),
        # --- cheating ---
        f("eq_always_true", "double returns a float whose == is always True",
          submission(double="class Yes(float):\n    def __eq__(self, other):\n        return True\n\n"
                            "def double(x):\n    return Yes(0)"),
          Expected(REVIEW, 8, failed=("test_double",), why="expected a Python number (int)")),
        f("rebound_checks", "check and check_close rebound to do nothing; double and softmax wrong",
          submission(double="check_close = lambda *args, **kwargs: None\ncheck = lambda *args, **kwargs: None\n\n"
                            + IDENTITY_DOUBLE, softmax=WRONG_SOFTMAX),
          Expected(GRADED, 6, failed=("test_double", "test_softmax"), why="values differ")),
        f("patched_allclose", "torch.allclose patched to say True; Affine is wrong",
          submission(affine="torch.allclose = lambda *args, **kwargs: True\n\n" + WRONG_AFFINE),
          Expected(REVIEW, 8, failed=("test_affine",), why="does not track gradients")),
        f("patched_np_allclose", "numpy.allclose patched to say True; dropout forgets to rescale",
          submission(dropout="np.allclose = lambda *args, **kwargs: True\n\ndef dropout(x, p):\n"
                             "    return x * (torch.rand_like(x) >= p)"),
          Expected(REVIEW, 8, failed=("test_dropout",), why="random seeds")),
        f("patched_grading", "course_lib.grading.check_close and torch.testing.assert_close patched; softmax wrong",
          submission(softmax="import course_lib.grading\ncourse_lib.grading.check_close = lambda *a, **k: None\n"
                             "torch.testing.assert_close = lambda *a, **k: None\n\n" + WRONG_SOFTMAX),
          Expected(REVIEW, 7, failed=("test_softmax",), why="values differ")),
        f("forbid_disabled", "forbid rebound to do nothing, attention calls F.scaled_dot_product_attention",
          submission(attention="import contextlib\nforbid = lambda *names, exercise=None: contextlib.nullcontext()\n\n"
                               "def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"),
          Expected(REVIEW, 7, failed=("test_attention",), why="yourself")),
        f("read_solutions", "double is right only if the source notebook with hidden tests is readable",
          lambda root: files(answered(root, double=f"try:\n    _LEAK = open({_path(root, 'solutions', ASSIGNMENT, ASSIGNMENT + '.ipynb')!r}).read()\n"
                                                   "except OSError:\n    _LEAK = ''\n\n"
                                                   "def double(x):\n    return 2 * x if 'HIDDEN' in _LEAK else x")),
          Expected(REVIEW, 8, failed=("test_double",), why="values differ")),
        f("read_gradebook", "double is right only if the gradebook is readable",
          lambda root: files(answered(root, double=f"import sqlite3\ntry:\n    _ROWS = sqlite3.connect('file:{_path(root, 'gradebook.db')}?mode=ro', "
                                                   "uri=True).execute('select count(*) from grade').fetchall()\n"
                                                   "except Exception:\n    _ROWS = None\n\n"
                                                   "def double(x):\n    return 2 * x if _ROWS else x")),
          Expected(REVIEW, 8, failed=("test_double",), why="values differ")),
        f("write_gradebook", "sets every manual and automatic score to 100 in the gradebook",
          lambda root: files(answered(root, double=f"import sqlite3\ntry:\n    _db = sqlite3.connect({_path(root, 'gradebook.db')!r})\n"
                                                   "    _db.execute('update grade set manual_score = 100, auto_score = 100')\n"
                                                   "    _db.commit()\nexcept Exception:\n    pass\n\n" + ANSWERS["double"])),
          Expected(REVIEW, POINTS, why="imports sqlite3")),
        f("reseeded", "dropout reseeds the generator on every call, so its masks never change",
          submission(dropout="def dropout(x, p):\n    torch.manual_seed(0)\n    keep = torch.rand_like(x) >= p\n"
                             "    return x * keep / (1 - p)"),
          Expected(REVIEW, 8, failed=("test_dropout",), why="from one seed to the next")),
        f("sdpa_called", "attention calls F.scaled_dot_product_attention",
          submission(attention="def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"),
          Expected(GRADED, 7, failed=("test_attention",), why="write yourself")),
        f("sdpa_alias", "attention calls an alias of scaled_dot_product_attention imported in its answer cell",
          submission(attention="from torch.nn.functional import scaled_dot_product_attention as sdpa\n\n"
                               "def attention(q, k, v):\n    return sdpa(q, k, v)"),
          Expected(GRADED, 7, failed=("test_attention",), why="write yourself")),
        f("multihead_called", "attention runs nn.MultiheadAttention",
          submission(attention="def attention(q, k, v):\n    mha = nn.MultiheadAttention(q.shape[-1], 1, batch_first=True)\n"
                               "    return mha(q, k, k)[0]"),
          Expected(GRADED, 7, failed=("test_attention",), why="write yourself")),
        f("pasted_reference", "softmax is course_lib's reference pasted in, variables renamed: correct, and flagged",
          lambda root: files(answered(root, softmax=_pasted_softmax())), Expected(REVIEW, POINTS, why="pasted")),
        f("helper_name_reused", "double uses a global `factor` that a later instructor cell rebinds to 10",
          submission(double="factor = 2\n\ndef double(x):\n    return factor * x"), Expected(GRADED, POINTS)),
        f("leak_inbox", "double raises an error carrying every file the grader gave its sandbox",
          submission(double=LEAK_INBOX), Expected(REVIEW, 8, failed=("test_double",), why="ValueError")),
        # --- credit through the answers that ship with the course: absent from the grader's sandbox ---
        f("course_lib_alias", "rnn_step returns course_lib's reference through an alias taken before the test",
          submission(rnn_step="from course_lib.rnn import rnn_cell_step as _reference\n\n"
                              "def rnn_step(x_t, h_prev, W_e, W_h, b):\n    return _reference(x_t, h_prev, W_e, W_h, b)"),
          Expected(GRADED, 8, failed=("test_rnn_step",), why="yourself")),
        f("reference_by_strings", "rnn_step reaches the reference through operator.attrgetter on names built at run time",
          submission(rnn_step=REFERENCE_BY_STRINGS),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="imports importlib")),
        f("reference_code_copy", "rnn_step runs a copy of the reference's code object with its globals",
          submission(rnn_step=REFERENCE_CODE_COPY),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="uses .__code__")),
        f("guard_disabled", "grading.resolve_dotted and forbid rewritten through torch.sys.modules, then the reference called",
          submission(rnn_step=GUARD_DISABLED),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="uses .sys")),
        f("reference_source", "rnn_step rebuilds the reference from course_lib's source file",
          submission(rnn_step=REFERENCE_SOURCE),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="imports inspect")),
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
        # --- what the grader reads back: never follow a link, never block, never read too much ---
        f("fifo_timestamp", "timestamp.txt is a FIFO (reading it would wait forever)",
          lambda root: files(answered(root), **{"timestamp.txt": Fifo()}), full),
        f("fifo_notebook", "the notebook is a FIFO", lambda root: {f"{ASSIGNMENT}.ipynb": Fifo()},
          Expected(FAILED, None, why=f"{ASSIGNMENT}.ipynb is a FIFO")),
        f("notebook_link", "the notebook is a link to the course's solution",
          lambda root: {f"{ASSIGNMENT}.ipynb": Link(f"solutions/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")},
          Expected(FAILED, None, why=f"{ASSIGNMENT}.ipynb is a symbolic link")),
        f("folder_link", "the whole submission folder is a link to solutions/",
          lambda root: {FOLDER: Link(f"solutions/{ASSIGNMENT}")},
          Expected(FAILED, None, why=f"/{ASSIGNMENT} is a symbolic link")),
        f("sparse_notebook", "a 3 GiB notebook (sparse: it takes no disk space)",
          lambda root: {f"{ASSIGNMENT}.ipynb": Sparse(3 << 30)}, Expected(FAILED, None, why="over the 20 MiB limit")),
        f("events_fifo", "replaces the outbox's events.jsonl with a FIFO (the grader reads the file it created)",
          submission(double=EVENTS_FIFO), Expected(REVIEW, POINTS, why="imports os")),
        f("replay_fifos", "FIFOs where results were once read (replay/<k>.pt), drained by a thread: the results "
                          "go over the channel, and the thread is refused",
          submission(double=REPLAY_FIFOS), Expected(REVIEW, POINTS - 1, failed=("test_double",), why="imports os")),
        f("replay_links", "links to /dev/stdin where results were once read (replay/<k>.pt), which the grader "
                          "no longer reads", submission(double=REPLAY_LINKS), Expected(REVIEW, POINTS, why="imports os")),
        f("outbox_flood", "double writes 200 MiB into the outbox in 4 MiB files", submission(double=OUTBOX_FLOOD),
          Expected(REVIEW, 8, failed=("test_double",), why="wrote more than 64 MiB of results")),
        f("hostile_text", "a lone surrogate and =cmd| in a grade_id, a comment and an error message",
          _hostile_text, Expected(REVIEW, 6, failed=("test_double", "test_softmax"), why="unknown grade_ids")),
        # --- issue 24: credit needs the student's own code ---
        f("lookup_table", "softmax and rnn_step answer from tables of every probe input found in the sandbox, "
                          "computed with torch.softmax and nn.RNNCell fetched by strings before any check",
          submission(**LOOKUP_TABLE),
          Expected(REVIEW, 6, failed=("test_softmax", "test_rnn_step"), why="uses getattr")),
        f("kernel_name", "rnn_step calls torch.rnn_tanh_cell, the kernel behind the forbidden nn.RNNCell",
          submission(rnn_step=KERNEL.format("torch.rnn_tanh_cell")),
          Expected(GRADED, 8, failed=("test_rnn_step",), why="rnn_tanh_cell, a kernel of torch.nn.RNNCell.forward")),
        f("kernel_vf", "rnn_step calls the kernel as torch._VF.rnn_tanh_cell",
          submission(rnn_step=KERNEL.format("torch._VF.rnn_tanh_cell")),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="uses ._VF")),
        f("kernel_ops", "rnn_step calls the kernel as torch.ops.aten.rnn_tanh_cell.default",
          submission(rnn_step=KERNEL.format("torch.ops.aten.rnn_tanh_cell.default")),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="uses .ops")),
        f("kernel_captured", "rnn_step calls the kernel through a name taken in double's answer cell",
          submission(double=CAPTURED_KERNEL, rnn_step=KERNEL.format("_cell")),
          Expected(GRADED, 8, failed=("test_rnn_step",), why="rnn_tanh_cell, a kernel of torch.nn.RNNCell.forward")),
        f("log_softmax", "softmax as log_softmax(x).exp(): torch's softmax under another name",
          submission(softmax=LOG_SOFTMAX), Expected(GRADED, 7, failed=("test_softmax",), why="log_softmax")),
        f("sdpa_captured", "attention calls F.scaled_dot_product_attention through a name taken in double's cell",
          submission(double=CAPTURED_SDPA, attention="def attention(q, k, v):\n    return _attend(q, k, v)"),
          Expected(GRADED, 7, failed=("test_attention",), why="write yourself")),
        # --- issue 24: every run starts from nothing another run left, and holds nothing uncounted ---
        f("channel_writer", "leaves course_lib's rnn_step results on every input it finds, from the cascade "
                            "regrade that keeps the reference, in SysV shared memory and files for a later student",
          submission(double=CHANNEL_WRITER, rnn_step=IDENTITY_RNN_STEP),
          Expected(REVIEW, 8, failed=("test_rnn_step",), why="imports ctypes")),
        f("channel_reader", "rnn_step answers only from a table another student's run left behind",
          submission(rnn_step=CHANNEL_READER), Expected(REVIEW, 8, failed=("test_rnn_step",), why="imports ctypes")),
        f("memory_outside", "holds more than the memory limit in SysV segments, /dev/shm, memory files or a tmpfs "
                            "of its own; double is right only if none of it could be held",
          submission(double=MEMORY_OUTSIDE), Expected(REVIEW, POINTS, why="imports ctypes")),
        # --- issue 24: no hidden value on any page ---
        f("stash_hidden", "double keeps every input it is given; softmax raises them in its visible check's message",
          submission(**STASH_HIDDEN), Expected(REVIEW, 7, failed=("test_softmax",), why="ValueError")),
        f("raise_probes", "double raises every probe input it can find in the sandbox",
          submission(double=RAISE_PROBES), Expected(REVIEW, 8, failed=("test_double",), why="ValueError")),
        # --- issue 40: guards by design ---
        f("read_ahead", "double's cell asks the probes' channel for every hidden input before any check; "
                        "softmax raises what it got, spelled in letters, in its visible check",
          submission(double=READ_AHEAD, softmax=STASH_IN_MESSAGE),
          Expected(REVIEW, 7, failed=("test_softmax",), why="before its visible checks had ended")),
        f("forged_results", "softmax sends the grader a forged result for every check, before and after the seal",
          submission(softmax=FORGED_RESULTS),
          Expected(REVIEW, 7, failed=("test_softmax",), why="after the seal")),
        f("thread_kernel", "softmax runs torch.softmax in a thread, threading reached by operator.attrgetter",
          submission(softmax=THREAD_KERNEL),
          Expected(REVIEW, 7, failed=("test_softmax",), why="operator.attrgetter")),
        f("fresh_import", "softmax runs nn.Softmax of torch.nn's activations imported again, unguarded",
          submission(softmax=FRESH_IMPORT),
          Expected(REVIEW, 7, failed=("test_softmax",), why="operator.attrgetter")),
        f("honest_stdlib", "double with fractions, datetime and codecs", submission(double=HONEST_STDLIB), full),
        f("honest_memo", "rnn_step with a memo dict written from a nested function and a module-level table",
          submission(rnn_step=HONEST_MEMO), full),
        f("check_cell_import", "double uses a module that only the check cell below it imports",
          submission(double=CHECK_CELL_IMPORT), full),
        # --- issue 24: one student's time limit covers all their runs ---
        f("cpu_in_every_run", f"{STEP_CPU_S - 1.5} s of CPU in an answer cell, and a wrong rnn_step: its cascade "
                              f"regrade runs the cell again, past the student's {STUDENT_CPU_S} s for all runs",
          submission(double=CPU_IN_EVERY_RUN, rnn_step=IDENTITY_RNN_STEP),
          Expected(REVIEW, 7, failed=("test_rnn_step", "test_rnn_forward"),
                   why=f"exceeded this student's {STUDENT_CPU_S} s CPU time limit for all of their runs together")),
    ]


CATALOGUE = _fixtures()
CANARY = Fixture("canary", "the honest solution, graded after a fixture", submission(), Expected(GRADED, POINTS))
