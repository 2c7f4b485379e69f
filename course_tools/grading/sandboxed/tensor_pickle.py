"""Pickles whose tensors are raw bytes: a probe's recorded inputs, and a hidden part's calls.

``pickle`` stores a tensor the way ``torch.save``'s legacy format does: every storage is a small
``torch.load`` of its own when the pickle is read, and a grading run reads one probe's input before
each check it replays. Here a plain CPU tensor is its storage's bytes, its dtype, size, stride and
offset instead, rebuilt with :func:`rebuild` around those bytes without a copy. Tensors that share a
storage in the value share one again after loading (a view and its base stay a view and its base).
Any other tensor (a subclass is reduced by its own class and its data comes back here; sparse,
quantized, conjugate and negative-bit tensors; one in an autograd graph) is pickled as before.

The trusted grader's restricted unpicklers (:mod:`course_tools.grading.scrub`) accept
:func:`rebuild`: it builds a tensor from bytes and runs no other code.
"""
from __future__ import annotations

import io
import pickle
from typing import Any

import torch

PROTOCOL = 4


def rebuild(
    data: bytearray, dtype: torch.dtype, size: tuple[int, ...], stride: tuple[int, ...], offset: int,
    requires_grad: bool,
) -> torch.Tensor:
    """The tensor :class:`Pickler` reduced: a leaf over ``data`` (shared, not copied)."""
    if not isinstance(data, bytearray) or not isinstance(dtype, torch.dtype):
        raise pickle.UnpicklingError("a tensor's bytes and dtype were not a bytearray and a torch.dtype")
    storage = torch.frombuffer(data, dtype=torch.uint8).untyped_storage() if data else torch.UntypedStorage(0)
    tensor = torch.empty(0, dtype=dtype).set_(storage, offset, size, stride)
    tensor.requires_grad = requires_grad
    return tensor


class Pickler(pickle.Pickler):
    def __init__(self, stream: io.BytesIO):
        super().__init__(stream, protocol=PROTOCOL)
        # storage -> its bytes, one object per storage, which pickle's memo then writes once
        self.storages: dict[tuple[int, int], bytearray] = {}

    def reducer_override(self, obj: Any) -> Any:
        if not _plain_tensor(obj):
            return NotImplemented
        storage = obj.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        data = self.storages.get(key)
        if data is None:
            raw = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (storage.nbytes(),), (1,))
            data = self.storages[key] = bytearray(raw.numpy()) if storage.nbytes() else bytearray()
        return rebuild, (data, obj.dtype, tuple(obj.shape), obj.stride(), obj.storage_offset(),
                         obj.requires_grad)


def _plain_tensor(obj: Any) -> bool:
    return (
        type(obj) is torch.Tensor
        and obj.layout == torch.strided
        and obj.device.type == "cpu"
        and not obj.is_quantized
        and not obj.is_conj()
        and not obj.is_neg()
        and obj.grad_fn is None
        and not obj._backward_hooks
    )


def dumps(value: Any) -> bytes:
    stream = io.BytesIO()
    Pickler(stream).dump(value)
    return stream.getvalue()
