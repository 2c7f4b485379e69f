"""A small assignment for the autograder's tests: seven graded exercises that run in about a second.

It has what makes grading hard in the real notebooks: tensor answers compared with torch's own
functions, forbidden references (torch's softmax, scaled_dot_product_attention and
MultiheadAttention, nn.RNNCell, course_lib's rnn_cell_step), an exercise whose check binds an
earlier one to course_lib's reference (``rnn_forward`` calls ``rnn_step``: a wrong ``rnn_step``
sends ``rnn_forward`` to the cascade regrade), an ``nn.Module`` exercise, a stochastic one, checks
written with ``==``, ``torch.allclose`` and ``np.allclose``, hidden tests with distinctive values
(:data:`HIDDEN_INPUT`, :data:`HIDDEN_EXPECTED`: no feedback page may ever show them), and a plain
cell that runs the student's code between graded cells.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from ..toy_course import ROOT, cell

ASSIGNMENT = "toy"

SETUP = """import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import course_lib.rnn
from course_lib import seed_everything
from course_lib.grading import MULTIHEAD, SDPA, SOFTMAX, bind, check, check_close, check_shape, forbid"""
HIDDEN_INPUT = 0.4817291  # double's hidden check: its input and what it must return
HIDDEN_EXPECTED = 0.9634582

ANSWERS = {
    "double": '''def double(x):
    """Twice x (a number or a tensor)."""
    ### BEGIN SOLUTION
    return 2 * x
    ### END SOLUTION''',
    "softmax": '''def softmax(x, dim=-1):
    """Numerically stable softmax along dim. x: (..., n) -> the same shape."""
    ### BEGIN SOLUTION
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)
    ### END SOLUTION''',
    "attention": '''def attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v. q: (B, T_q, d), k: (B, T_k, d), v: (B, T_k, d_v) -> (B, T_q, d_v)."""
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (B, T_q, T_k)
    return torch.softmax(scores, dim=-1) @ v  # (B, T_q, d_v)
    ### END SOLUTION''',
    "rnn_step": '''def rnn_step(x_t, h_prev, W_e, W_h, b):
    """h_t = tanh(x_t W_e + h_prev W_h + b). x_t: (B, d_in), h_prev: (B, d_h) -> (B, d_h)."""
    ### BEGIN SOLUTION
    return torch.tanh(x_t @ W_e + h_prev @ W_h + b)
    ### END SOLUTION''',
    "rnn_forward": '''def rnn_forward(xs, h0, W_e, W_h, b):
    """rnn_step over the sequence. xs: (B, T, d_in), h0: (B, d_h) -> the last state (B, d_h)."""
    ### BEGIN SOLUTION
    h = h0
    for t in range(xs.shape[1]):
        h = rnn_step(xs[:, t], h, W_e, W_h, b)  # (B, d_h)
    return h
    ### END SOLUTION''',
    "affine": '''class Affine(nn.Module):
    """y = x * weight + bias, elementwise. Attributes: weight (d,), bias (d,), both nn.Parameter."""

    def __init__(self, d):
        super().__init__()
        ### BEGIN SOLUTION
        self.weight = nn.Parameter(torch.randn(d))
        self.bias = nn.Parameter(torch.zeros(d))
        ### END SOLUTION

    def forward(self, x):
        """x: (..., d) -> (..., d)."""
        ### BEGIN SOLUTION
        return x * self.weight + self.bias
        ### END SOLUTION''',
    "dropout": '''def dropout(x, p):
    """Zero each entry with probability p and scale the others by 1 / (1 - p)."""
    ### BEGIN SOLUTION
    keep = torch.rand_like(x) >= p
    return x * keep / (1 - p)
    ### END SOLUTION''',
}

TESTS = {
    "double": (1, '''import statistics  # an answer may use what its check cell imports, in Validate and in the grade

check("double", double(2) == 4, "double(2) should be 4")
check_close("double", double(3.0), 6.0)
### BEGIN HIDDEN TESTS
seed_everything(1)
_x = torch.randn(5)
check_close("double", double(_x), _x + _x)
check_close("double", double(-1.5), -3.0)
check_close("double", double(%r), %r)
### END HIDDEN TESTS''' % (HIDDEN_INPUT, HIDDEN_EXPECTED)),
    "softmax": (2, '''def _softmax_case(shape, scale, dim, seed):
    seed_everything(seed)
    x = scale * torch.randn(*shape)
    expected = torch.softmax(x, dim=dim)
    with forbid(*SOFTMAX, exercise="softmax"):
        got = softmax(x, dim=dim)
    check_shape("softmax", got, tuple(shape))
    check_close("softmax", got, expected, atol=1e-6, rtol=1e-5)

_softmax_case((2, 3), 1.0, -1, 0)
### BEGIN HIDDEN TESTS
_softmax_case((4, 5), 100.0, -1, 1)
_softmax_case((3, 2, 4), 1.0, 0, 2)
### END HIDDEN TESTS'''),
    "attention": (2, '''def _attention_case(B, T_q, T_k, d, d_v, seed):
    seed_everything(seed)
    q, k, v = torch.randn(B, T_q, d), torch.randn(B, T_k, d), torch.randn(B, T_k, d_v)
    weights = torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1)  # (B, T_q, T_k)
    with forbid(*SDPA, *MULTIHEAD, exercise="attention"):
        got = attention(q, k, v)
    check_shape("attention", got, (B, T_q, d_v))
    check_close("attention", got, weights @ v)

_attention_case(1, 2, 3, 4, 2, 0)
### BEGIN HIDDEN TESTS
_attention_case(2, 5, 7, 8, 3, 1)
### END HIDDEN TESTS'''),
    "rnn_step": (1, '''def _rnn_case(B, d_in, d_h, seed):
    seed_everything(seed)
    x, h = torch.randn(B, d_in), torch.randn(B, d_h)
    W_e, W_h, b = torch.randn(d_in, d_h), torch.randn(d_h, d_h), torch.randn(d_h)
    with forbid("course_lib.rnn.rnn_cell_step", "torch.nn.RNNCell.forward", exercise="rnn_step"):
        got = rnn_step(x, h, W_e, W_h, b)
    check_close("rnn_step", got, torch.tanh(x @ W_e + h @ W_h + b))

_rnn_case(2, 3, 4, 0)
### BEGIN HIDDEN TESTS
_rnn_case(3, 5, 2, 1)
### END HIDDEN TESTS'''),
    "rnn_forward": (1, '''def _forward_case(B, T, d_in, d_h, seed):
    seed_everything(seed)
    xs, h = torch.randn(B, T, d_in), torch.randn(B, d_h)
    W_e, W_h, b = torch.randn(d_in, d_h), torch.randn(d_h, d_h), torch.randn(d_h)
    expected = h
    for t in range(T):
        expected = torch.tanh(xs[:, t] @ W_e + expected @ W_h + b)
    with bind(globals(), rnn_step=course_lib.rnn.rnn_cell_step), forbid("torch.nn.RNN.forward", exercise="rnn_forward"):
        got = rnn_forward(xs, h, W_e, W_h, b)
    check_close("rnn_forward", got, expected)

_forward_case(2, 3, 3, 4, 0)
### BEGIN HIDDEN TESTS
_forward_case(3, 5, 2, 3, 1)
### END HIDDEN TESTS'''),
    "affine": (1, '''seed_everything(0)
_m = Affine(4)
check("Affine", isinstance(getattr(_m, "weight", None), nn.Parameter), "self.weight should be an nn.Parameter")
_x = torch.randn(3, 4)
check("Affine", torch.allclose(_m(_x), _x * _m.weight + _m.bias), "forward should compute x * weight + bias")
### BEGIN HIDDEN TESTS
with torch.no_grad():
    _m.bias.fill_(0.5)
_x = torch.randn(2, 5, 4)
check("Affine", torch.allclose(_m(_x), _x * _m.weight + 0.5), "forward should add the bias")
### END HIDDEN TESTS'''),
    "dropout": (1, '''def _dropout_case(p, seed):
    seed_everything(seed)
    y = dropout(torch.ones(20_000), p)
    zeros = float((y == 0).float().mean())
    check("dropout", abs(zeros - p) < 0.02, f"about {p:.0%} of the entries should be zero, got {zeros:.1%}")
    check("dropout", np.allclose(y[y != 0].numpy(), 1 / (1 - p)), "kept entries should be scaled by 1 / (1 - p)")
    check("dropout", not torch.equal(dropout(torch.ones(100), 0.5), dropout(torch.ones(100), 0.5)),
          "two calls should drop different entries")

_dropout_case(0.25, 0)
### BEGIN HIDDEN TESTS
_dropout_case(0.5, 3)
### END HIDDEN TESTS'''),
}

POINTS = sum(points for points, _ in TESTS.values())


def toy_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}})
    locked = {"grade": False, "solution": False, "locked": True}
    cells = [cell("markdown", "# Toy assignment for the autograder", "intro", slide="slide"),
             cell("code", SETUP, "setup", {**locked, "grade_id": "setup"})]
    for name, answer in ANSWERS.items():
        points, test = TESTS[name]
        cells.append(cell("code", answer, f"answer-{name}",
                           {"grade": False, "solution": True, "locked": False, "grade_id": f"answer_{name}"}))
        cells.append(cell("code", test, f"test-{name}", {"grade": True, "solution": False, "locked": True,
                                                         "points": points, "grade_id": f"test_{name}"}, slide="skip"))
        if name == "double":
            experiment = 'print("double(21) =", double(21))\nfactor = 10  # the instructor\'s name; a student may use it too'
            cells.append(cell("code", experiment, "experiment", {**locked, "grade_id": "experiment"}))
    notebook.cells = cells
    return notebook


def make_course(folder: Path) -> Path:
    """``folder`` with the course's nbgrader_config.py, the toy source and its release."""
    from course_tools.course import assignments
    from course_tools.publishing.release import plan_release

    shutil.copy(ROOT / "nbgrader_config.py", folder / "nbgrader_config.py")
    source = folder / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    source.parent.mkdir(parents=True)
    nbformat.write(toy_notebook(), source)
    plan_release(assignments(folder, [ASSIGNMENT])).apply()
    return folder
