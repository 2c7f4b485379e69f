"""course_tools.grading.sandboxed.tensor_pickle: a probe's input comes back as pickle would bring it,
and the trusted grader's restricted unpickler reads it (the scrubber sees every hidden number)."""
from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn

from course_tools.grading.sandboxed import tensor_pickle
from course_tools.grading.scrub import probe_input

TENSORS = {
    "float32": torch.randn(3, 4),
    "float64": torch.randn(5, dtype=torch.float64),
    "bfloat16": torch.randn(2, 3).to(torch.bfloat16),
    "float16": torch.randn(4).half(),
    "int64": torch.arange(7),
    "uint8": torch.arange(250, 256, dtype=torch.uint8),
    "bool": torch.tensor([True, False, True]),
    "complex64": torch.randn(3, dtype=torch.complex64),
    "scalar": torch.tensor(2.5),
    "empty": torch.empty(0, 3),
    "transposed": torch.randn(3, 5).t(),
    "a slice with an offset": torch.randn(6, 4)[2:5, 1::2],
    "expanded (stride 0)": torch.randn(3, 1).expand(3, 4),
    "requires grad": torch.randn(2, 2, requires_grad=True),
    "conjugate (pickled as before)": torch.randn(3, dtype=torch.complex64).conj(),
    "sparse (pickled as before)": torch.eye(3).to_sparse(),
    "in a graph (pickled as before)": torch.ones(2, requires_grad=True) * 2,
}


def _same(a: torch.Tensor, b: torch.Tensor) -> None:
    assert type(a) is type(b) and a.dtype == b.dtype and a.layout == b.layout
    assert a.shape == b.shape and a.requires_grad == b.requires_grad
    if a.layout == torch.strided:
        assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
    torch.testing.assert_close(a.detach().to_dense(), b.detach().to_dense(), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", TENSORS)
def test_a_tensor_comes_back_as_pickle_brings_it(name):
    tensor = TENSORS[name]
    blob = tensor_pickle.dumps(tensor)
    assert (b"torch._utils" in blob) == ("as before" in name)  # pickle's own way, or its bytes
    fast, plain = pickle.loads(blob), pickle.loads(pickle.dumps(tensor, protocol=4))
    _same(fast, tensor)
    _same(fast, plain)
    assert fast.grad_fn is None  # a leaf, as pickle's


def test_tensors_that_share_storage_share_it_again():
    base = torch.zeros(4, 3)
    value = {"base": base, "row": base[1], "view": base.view(12), "other": torch.zeros(4, 3)}
    back = pickle.loads(tensor_pickle.dumps(value))
    back["row"][0] = 7.0  # written through one name, seen through the others: as before pickling
    assert back["base"][1, 0] == 7.0 and back["view"][3] == 7.0
    assert back["other"].abs().sum() == 0  # an equal tensor with its own storage stays apart
    back["base"].add_(1.0)  # the rebuilt tensor owns writable memory
    assert back["view"][0] == 1.0


def test_a_parameter_and_a_module_come_back_whole():
    torch.manual_seed(0)
    layer = nn.Linear(3, 2)
    back = pickle.loads(tensor_pickle.dumps({"layer": layer, "weight": layer.weight}))
    assert isinstance(back["layer"].weight, nn.Parameter) and back["layer"].weight.requires_grad
    torch.testing.assert_close(back["layer"](torch.ones(1, 3)), layer(torch.ones(1, 3)))
    assert back["weight"] is back["layer"].weight  # one object, as pickle's memo keeps it


def test_the_graders_safe_unpickler_reads_it(tmp_path):
    """scrub's unpickler builds no class outside its list, so a rebuilder it did not accept would
    leave the scrubber without the hidden numbers it must remove."""
    value = {"args": (torch.tensor([0.48172913, 8505.0]), torch.arange(3)), "kwargs": {}}
    (tmp_path / "0.pkl").write_bytes(tensor_pickle.dumps(value))
    (found,) = probe_input(tmp_path, 0)
    torch.testing.assert_close(found["args"][0], value["args"][0])


@pytest.mark.parametrize("data, dtype", [(b"\0" * 4, torch.float32), (bytearray(4), "float32")])
def test_the_rebuilder_takes_only_bytes_and_a_dtype(data, dtype):
    with pytest.raises(pickle.UnpicklingError):
        tensor_pickle.rebuild(data, dtype, (1,), (1,), 0, False)
