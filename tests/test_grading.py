"""course_lib.grading: the checks fail with messages that teach, and forbid() restores everything."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import course_lib.grading as grading
from course_lib.grading import ForbiddenCallError, GradingError, check, check_close, check_shape, forbid


def test_check_shape_accepts_and_wildcards():
    check_shape("ex", torch.zeros(2, 3), (2, 3))
    check_shape("ex", torch.zeros(2, 7), (2, None))


@pytest.mark.parametrize("got, message", [
    (torch.zeros(3, 2), "[ex] output: expected shape (2, 3), got shape (3, 2)"),
    (torch.zeros(2, 3, 1), "expected shape (2, 3), got shape (2, 3, 1)"),
    (None, "expected a tensor of shape (2, 3), got NoneType None"),
])
def test_check_shape_messages(got, message):
    with pytest.raises(GradingError) as info:
        check_shape("ex", got, (2, 3))
    assert message in str(info.value)


def test_check_close_passes_within_tolerance():
    x = torch.randn(4, 5)
    check_close("ex", x + 1e-7, x)
    check_close("ex", x.numpy(), x)
    check_close("ex", 2.0, torch.tensor(2.0))
    check_close("ex", (x, x), (x, x))


def test_check_close_reports_worst_entry():
    expected = torch.zeros(2, 3)
    got = expected.clone()
    got[1, 2] = 0.5
    with pytest.raises(GradingError) as info:
        check_close("softmax", got, expected, name="weights")
    text = str(info.value)
    assert text.startswith("[softmax] weights: values differ")
    assert "max abs error 0.5 at index (1, 2)" in text and "expected 0, got 0.5" in text
    assert "1 of 6 entries" in text


def test_check_close_reports_nan_shape_type_and_dtype():
    with pytest.raises(GradingError, match=r"got NaN at index \(0, 1\)"):
        check_close("ex", torch.tensor([[0.0, float("nan")]]), torch.zeros(1, 2))
    with pytest.raises(GradingError, match=r"expected shape \(2,\), got shape \(3,\)"):
        check_close("ex", torch.zeros(3), torch.zeros(2))
    with pytest.raises(GradingError, match="expected a tensor or a number, got str"):
        check_close("ex", "0.5", torch.zeros(()))
    with pytest.raises(GradingError, match="expected dtype torch.float32, got dtype torch.float64"):
        check_close("ex", torch.zeros(2, dtype=torch.float64), torch.zeros(2), check_dtype=True)
    with pytest.raises(GradingError, match="expected a sequence of 2 items"):
        check_close("ex", torch.zeros(2), (torch.zeros(2), torch.zeros(2)))


def test_check_close_matches_infinities_and_rejects_wrong_ones():
    check_close("ex", torch.tensor([float("-inf"), 1.0]), torch.tensor([float("-inf"), 1.0]))
    with pytest.raises(GradingError):
        check_close("ex", torch.tensor([float("inf")]), torch.tensor([float("-inf")]))


def test_check_requires_a_true_condition():
    check("ex", True, "never shown")
    check("ex", np.bool_(True), "never shown")
    with pytest.raises(GradingError, match=r"^\[ex\] weights must sum to 1$"):
        check("ex", torch.tensor([1.0]).sum() == 2, "weights must sum to 1")
    with pytest.raises(GradingError):
        check("ex", "truthy but not a bool", "a string is not an answer")


def test_forbid_blocks_every_spelling_of_softmax_and_restores_them():
    x = torch.randn(3, 4)
    expected = torch.softmax(x, dim=-1)
    with forbid(*grading.SOFTMAX, exercise="softmax"):
        for call in (lambda: torch.softmax(x, -1), lambda: x.softmax(-1), lambda: F.softmax(x, -1),
                     lambda: torch.nn.Softmax(dim=-1)(x)):
            with pytest.raises(ForbiddenCallError, match=r"\[softmax\] your code called"):
                call()
        manual = x.exp() / x.exp().sum(-1, keepdim=True)  # the honest route still works
    torch.testing.assert_close(manual, expected)
    torch.testing.assert_close(x.softmax(-1), expected)
    torch.testing.assert_close(F.softmax(x, -1), expected)
    assert "softmax" not in torch.Tensor.__dict__


def test_forbid_restores_after_an_exception_and_blocks_module_methods():
    rnn = torch.nn.RNN(2, 3, batch_first=True)
    with pytest.raises(ZeroDivisionError):
        with forbid("torch.nn.RNN.forward", exercise="rnn_forward"):
            with pytest.raises(ForbiddenCallError):
                rnn(torch.zeros(1, 2, 2))
            1 / 0
    out, _ = rnn(torch.zeros(1, 2, 2))
    assert out.shape == (1, 2, 3)


def test_a_warning_of_the_code_checked_goes_to_stdout_not_to_stderr(capsys):
    """nbgrader's Validator fails a test cell that wrote anything on stderr: a correct train_step
    returning float(loss) of a loss that requires grad (a UserWarning) was red in Validate and full
    marks in the grade (issue 25, benchmarks.validate_agreement on 07)."""
    loss = torch.tensor(1.5, requires_grad=True) * 2
    with forbid("torch.softmax", exercise="train_step"):
        value = float(loss)
    out, err = capsys.readouterr()
    assert value == 3.0 and "UserWarning from the code checked" in out and err == ""


def test_forbid_rejects_unknown_names():
    with pytest.raises(AttributeError, match="does not exist"):
        with forbid("torch.no_such_function"):
            pass


def test_bind_binds_names_for_the_block_and_restores_or_deletes_them():
    from course_lib.grading import bind

    def wrong_softmax(x, dim=-1):
        return x

    namespace = {"softmax": wrong_softmax}
    code = compile("def masked_softmax(x):\n    return softmax(x)\n", "<cell>", "exec")
    exec(code, namespace)  # a notebook function: it looks softmax up in the notebook's globals
    x = torch.randn(2, 3)
    with bind(namespace, softmax=grading_reference_softmax, helper=42):
        assert torch.allclose(namespace["masked_softmax"](x), torch.softmax(x, dim=-1))
        assert namespace["helper"] == 42
    assert namespace["softmax"] is wrong_softmax and "helper" not in namespace
    with pytest.raises(ZeroDivisionError), bind(namespace, softmax=grading_reference_softmax, other=1):
        1 / 0
    assert namespace["softmax"] is wrong_softmax and "other" not in namespace


def grading_reference_softmax(x, dim=-1):
    return torch.softmax(x, dim=dim)


def test_check_close_keeps_python_floats_in_float64():
    # torch.as_tensor(0.0001) is float32: two floats 1e-12 apart compared equal at atol=1e-12, rtol=1e-9
    check_close("ex", np.float64(1e-4), 1e-4, atol=1e-12, rtol=1e-9)
    with pytest.raises(GradingError, match="values differ"):
        check_close("ex", 1e-4 * (1 + 1e-7), 1e-4, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("got, kind, ok", [
    (3, int, True),
    (True, int, False),
    (3.0, int, False),
    (np.int64(3), int, False),
    (torch.tensor(3), int, False),
    (0.5, float, True),
    (2, float, True),
    (np.float64(0.5), float, True),
    (np.float32(0.5), float, False),
    (torch.tensor(0.5), float, False),
    (False, float, False),
    (np.int64(2), float, False),
    ("0.5", float, False),
])
def test_check_number_takes_exactly_the_python_type_the_contract_names(got, kind, ok):
    if ok:
        grading.check_number("ex", got, kind)
        return
    with pytest.raises(GradingError) as info:
        grading.check_number("ex", got, kind, name="lr")
    assert f"[ex] lr: expected a Python {kind.__name__}, got " in str(info.value)
    assert ("float(" if kind is float else "int(") in str(info.value)


def test_check_number_rejects_other_kinds():
    with pytest.raises(ValueError):
        grading.check_number("ex", 3, complex)


def test_check_dtype_names_the_expected_dtype():
    grading.check_dtype("ex", torch.zeros(3, dtype=torch.long), torch.long)
    with pytest.raises(GradingError, match=r"tokens: expected dtype torch.int64, got dtype torch.int32"):
        grading.check_dtype("ex", torch.zeros(3, dtype=torch.int32), torch.long, name="tokens")
    with pytest.raises(GradingError, match="expected a tensor of dtype torch.int64, got list"):
        grading.check_dtype("ex", [1, 2], torch.long)


def _scale_in_place(x):
    x /= 2


def _assign_into(x):
    x[0][0, 1] = float("nan")


def _append(x):
    x.append(1)


def _rekey(x):
    x["b"] = 2


def _write_array(x):
    x["a"][0] = 7.0


@pytest.mark.parametrize("change, argument, where", [
    (_scale_in_place, torch.ones(2, 3), "x[0, 0] was 1, it is now 0.5"),
    (_assign_into, [torch.zeros(2, 2)], "x[0][0, 1] was 0, it is now nan"),
    (_append, [1, 2], "x had 2 items, it now has 3"),
    (_rekey, {"a": 1}, "x's keys changed"),
    (_write_array, {"a": np.zeros(3)}, "x['a']'s values changed"),
])
def test_unchanged_names_the_argument_and_the_first_change(change, argument, where):
    with pytest.raises(GradingError) as info:
        with grading.unchanged("ex", x=argument):
            change(argument)
    assert f"changed its argument x in place ({where})" in str(info.value)


def test_unchanged_accepts_new_objects_and_nan_in_place():
    x = torch.tensor([1.0, float("nan")])
    batch = (x, [x.clone()], {"k": np.ones(2)}, "text", 3)
    with grading.unchanged("ex", x=x, batch=batch):
        y = x / 2  # a new tensor: the argument is untouched
        y += 1
    assert torch.isnan(x[1])


@pytest.mark.parametrize("n, p", [(100, 0.5), (8000, 0.05), (8000, 0.999), (10**6, 0.3)])
def test_frequency_tolerance_bounds_the_false_failure_rate(n, p):
    # Bernstein's bound is never below the exact tail: check against a simulation of many honest runs
    t = grading.frequency_tolerance(n, p, 1e-3)
    torch.manual_seed(0)
    freq = torch.distributions.Binomial(n, torch.tensor(p)).sample((20_000,)) / n
    assert float(((freq - p).abs() >= t).double().mean()) <= 1e-3
    assert t < grading.frequency_tolerance(n // 4, p, 1e-3)  # more draws, a tighter bound
    assert t < grading.frequency_tolerance(n, p, 1e-6)  # a smaller false-failure rate, a looser bound


def test_check_frequencies_passes_honest_draws_and_names_what_differs():
    generator = torch.Generator().manual_seed(0)
    p = torch.tensor([0.5, 0.3, 0.2, 0.0])
    draws = torch.multinomial(p, 8000, replacement=True, generator=generator)
    grading.check_frequencies("ex", draws, p.tolist())
    with pytest.raises(
            GradingError,
            match=r"token 0 was drawn with frequency 0\.[45]\d+ in 8000 draws, expected probability 0\.6"):
        grading.check_frequencies("ex", draws, [0.6, 0.2, 0.2, 0.0])
    banned = draws.clone()
    banned[:3] = 3
    with pytest.raises(GradingError, match=r"tokens \[3\] have probability 0 .* drawn 3 times in 8000"):
        grading.check_frequencies("ex", banned, p.tolist())
    for wrong, message in ((draws.float(), "expected a 1-d tensor of token ids"),
                           (draws.view(2, -1), "1-d tensor"), (torch.full(
                               (5, ), 4), r"token ids must be in 0\.\.3, got \[4\]")):
        with pytest.raises(GradingError, match=message):
            grading.check_frequencies("ex", wrong, p.tolist())


def test_forbid_blocks_the_kernels_behind_a_name_however_they_are_reached():
    """The kernels behind nn.RNNCell and torch.softmax, by any name: torch.X, torch._VF.X,
    torch.ops.aten.X (and an overload), a name taken before the block; a base class's constructor
    called on an object made with __new__; and honest code still runs."""
    x, h, W_e, W_h, b = torch.randn(2, 3), torch.randn(2, 4), torch.randn(4, 3), torch.randn(
        4, 4), torch.randn(4)
    captured, base_init = torch.rnn_tanh_cell, torch.nn.RNNBase.__init__
    kernels = [
        lambda: torch.rnn_tanh_cell(x, h, W_e, W_h, b), lambda: torch._VF.rnn_tanh_cell(x, h, W_e, W_h, b),
        lambda: torch.ops.aten.rnn_tanh_cell(x, h, W_e, W_h, b),
        lambda: torch.ops.aten.rnn_tanh_cell.default(x, h, W_e, W_h, b), lambda: captured(x, h, W_e, W_h, b),
        lambda: torch.nn.RNNCell(3, 4)(x, h)
    ]
    with forbid("torch.nn.RNNCell.forward", exercise="rnn_step"):
        for call in kernels:
            with pytest.raises(ForbiddenCallError, match=r"\[rnn_step\] your code called"):
                call()
        torch.tanh(x @ W_e.T + h @ W_h.T + b)  # the honest route
    with forbid(*grading.SOFTMAX, exercise="softmax"):
        for call in (lambda: torch._softmax(x, -1, False), lambda: x.log_softmax(-1),
                     lambda: torch.ops.aten._softmax(x, -1, False)):
            with pytest.raises(ForbiddenCallError, match="a kernel of"):
                call()
    with forbid("torch.nn.RNN.__init__", exercise="count"):
        with pytest.raises(ForbiddenCallError):
            base_init(torch.nn.RNN.__new__(torch.nn.RNN), "RNN_TANH", 3, 4)
        with pytest.raises(ForbiddenCallError):
            torch.nn.GRU(3, 4)  # built by the same base class's constructor
    # all restored
    assert captured(x, h, W_e, W_h, b).shape == (2, 4) and torch.nn.RNN(3, 4).hidden_size == 4
    assert torch.ops.aten._softmax(x, -1, False).shape == (2, 3)
