"""Positional information for attention (notebook 04): sinusoidal encodings, their relative
rotation, learned position embeddings and rotary embeddings (RoPE).

Self-attention without positions is permutation-equivariant: shuffle the tokens and the outputs
are shuffled the same way. These are the reference versions of notebook 04's graded exercises;
``PositionalEncoding`` / ``make_positional`` bundle them behind one interface for notebook 05.

Pairing convention, the same everywhere in the course: dimensions ``(2i, 2i+1)`` form pair ``i``,
with angular frequency ``ω_i = base^(-2i/d)`` (``base`` = 10000 as in the paper).

* sinusoidal: ``PE[pos, 2i] = sin(pos·ω_i)``, ``PE[pos, 2i+1] = cos(pos·ω_i)``;
* ``relative_rotation(k, d) @ PE[pos] == PE[pos + k]`` for every ``pos``: block ``i`` is
  ``[[cos kω_i, sin kω_i], [-sin kω_i, cos kω_i]]`` (the pair is (sin, cos), so a shift forward
  turns it clockwise);
* RoPE (RoFormer's interleaved form): pair ``i`` of a query/key at position ``m`` is turned
  counter-clockwise by ``m·ω_i``: ``(x_2i, x_2i+1) -> (x_2i cos - x_2i+1 sin, x_2i sin + x_2i+1 cos)``,
  i.e. ``apply_rope(x, m) == relative_rotation(-m, d) @ x``. Then
  ``<apply_rope(q, m), apply_rope(k, n)>`` depends on ``m - n`` only.
"""
from __future__ import annotations

import math

import torch
from torch import nn

KINDS = ("none", "sinusoidal", "learned", "rope")


def _check_even(d: int, what: str) -> None:
    if d <= 0 or d % 2:
        raise ValueError(
            f"{what} must be a positive even number (dimensions come in (sin, cos) pairs), got {d}")


def _frequencies(d: int, base: float = 10000.0) -> torch.Tensor:
    """ω_i = base^(-2i/d) for i = 0 .. d/2 - 1, in float64 on the CPU (callers move it): (d/2,)."""
    two_i = torch.arange(0, d, 2, dtype=torch.float64, device="cpu")  # (d/2,): 0, 2, 4, ...
    return torch.exp(-math.log(base) * two_i / d)


def sinusoidal_positional_encoding(max_len: int, d_model: int,
                                   dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The paper's table: PE[pos, 2i] = sin(pos·ω_i), PE[pos, 2i+1] = cos(pos·ω_i), ω_i = 10000^(-2i/d_model).

    Returns PE: (max_len, d_model); row ``pos`` encodes position ``pos`` (counting from 0).
    Computed in float64, then cast to ``dtype``, so that large positions keep their precision.
    """
    _check_even(d_model, "d_model")
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * _frequencies(d_model)  # (max_len, d/2)
    pe = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (max_len, d/2, 2): (sin, cos) pairs
    return pe.reshape(max_len, d_model).to(dtype)  # (max_len, d_model), interleaved sin, cos, sin, ...


def relative_rotation(k: int | float, d_model: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The block-diagonal R^k with ``R^k @ PE[pos] == PE[pos + k]`` for every pos (k may be negative).

    Block i (rows and columns 2i, 2i+1) is [[cos kω_i, sin kω_i], [-sin kω_i, cos kω_i]].
    Returns R: (d_model, d_model). For a whole table (rows = positions): ``PE @ R.T``.
    """
    _check_even(d_model, "d_model")
    angle = float(k) * _frequencies(d_model)  # (d/2,)
    cos, sin = angle.cos(), angle.sin()
    blocks = torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)  # (d/2, 2, 2)
    return torch.block_diag(*blocks).to(dtype)  # (d_model, d_model)


def rope_angles(positions: torch.Tensor, d: int, base: float = 10000.0,
                dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of m·ω_i for every position m: each (*positions.shape, d/2), in ``dtype``.

    Worth caching when the same positions are used by every layer (as ``PositionalEncoding`` does).
    """
    _check_even(d, "the rotated dimension")
    if not isinstance(positions, torch.Tensor):  # as_tensor would also move a tensor to the default device
        positions = torch.as_tensor(positions)
    # float64 keeps m·ω_i accurate for large positions; Apple's MPS has no float64
    work = torch.float32 if positions.device.type == "mps" else torch.float64
    omega = _frequencies(d, base).to(work).to(positions.device)  # (d/2,)
    angles = positions.to(work)[..., None] * omega  # (..., d/2)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Turn each pair (x_2i, x_2i+1) of x (..., d) counter-clockwise by the angle whose cos/sin
    (broadcastable to (..., d/2)) are given. Returns the same shape and dtype as x."""
    work = torch.promote_types(x.dtype, cos.dtype)  # float32 for half-precision inputs, float64 for float64
    pairs = x.unflatten(-1, (-1, 2))  # (..., d/2, 2)
    even, odd = pairs[..., 0].to(work), pairs[..., 1].to(work)  # (..., d/2) each
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., d/2, 2)
    return rotated.flatten(-2).to(x.dtype)  # (..., d)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding, interleaved pairs (2i, 2i+1) turned by ``positions·base^(-2i/d)``.

    x: (..., T, d) with d even; positions: (T,) or anything broadcastable to x.shape[:-1]
    (e.g. (B, 1, T) for x of shape (B, h, T, d_head)); integer or float positions.
    Returns a tensor of x's shape and dtype; norms are unchanged, and
    ``<apply_rope(q, m), apply_rope(k, n)>`` depends on m - n only.
    """
    positions = torch.as_tensor(positions, device=x.device)
    cos, sin = rope_angles(positions, x.shape[-1], base, dtype=torch.promote_types(x.dtype, torch.float32))
    return rotate_pairs(x, cos, sin)  # cos, sin: (..., T, d/2)


def _last_position(T: int, positions: torch.Tensor | None) -> int:
    """The largest position used; no device sync for the default ``arange(T)``."""
    if positions is None:
        return T - 1
    return int(positions.max()) if positions.numel() else -1


class LearnedPositionalEmbedding(nn.Module):
    """A trainable vector per position 0 .. max_len-1, added to the token embeddings.

    ``forward(x, positions=None)``: x (B, T, d_model) -> x + P[positions], (B, T, d_model);
    positions (T,) or (B, T) int64, default ``arange(T)`` (pass an offset range when decoding
    step by step). Positions >= max_len raise ``ValueError``: no vector was ever learned for them.
    The table is ``self.embedding.weight`` (max_len, d_model), the module's only parameter.
    """

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        last = _last_position(x.shape[-2], positions)
        if positions is None:
            positions = torch.arange(x.shape[-2], device=x.device)  # (T,)
        if last >= self.max_len:
            raise ValueError(f"position {last} has no learned embedding: the table covers "
                             f"0..{self.max_len - 1} (max_len={self.max_len})")
        return x + self.embedding(positions)  # (B, T, d_model)


class PositionalEncoding(nn.Module):
    """One of the four choices of notebook 04 behind one interface, for the Transformer of 05.

    kind: "none" | "sinusoidal" | "learned" | "rope".
    ``forward(x, positions=None)``: x (B, T, d_model) -> (B, T, d_model); adds the encoding for
    "sinusoidal" and "learned", returns x unchanged for "none" and "rope".
    ``rotate(t, positions=None)``: t (..., T, d_head) -> the same shape; RoPE for "rope", the
    identity otherwise. Attention calls it on queries and keys (never on values).
    ``positions`` (T,) default to ``arange(T)``. Sinusoidal and RoPE work at any position;
    "learned" raises ``ValueError`` past ``max_len``.
    """

    def __init__(self, kind: str, d_model: int, max_len: int, d_head: int | None = None,
                 base: float = 10000.0):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.kind, self.max_len, self.base = kind, max_len, base
        self.d_head = d_head or d_model
        if kind == "learned":
            self.learned = LearnedPositionalEmbedding(max_len, d_model)
        if kind == "sinusoidal":  # not saved in checkpoints: it is a formula
            self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)
        if kind == "rope":
            _check_even(self.d_head, "d_head")
            cos, sin = rope_angles(torch.arange(max_len), self.d_head, base)  # (max_len, d_head/2) each
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        if self.kind == "learned":
            return self.learned(x, positions)
        if self.kind != "sinusoidal":
            return x
        last = _last_position(x.shape[-2], positions)
        table = self.pe if last < len(self.pe) else sinusoidal_positional_encoding(last + 1, x.shape[-1]).to(
            x.device)
        return x + (table[:x.shape[-2]] if positions is None else table[positions]).to(
            x.dtype)  # (B, T, d_model)

    def rotate(self, t: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        if self.kind != "rope":
            return t
        T = t.shape[-2]
        if positions is None and T <= len(self.rope_cos):  # the common case: no index, no device sync
            return rotate_pairs(t, self.rope_cos[:T], self.rope_sin[:T])
        if positions is None:
            positions = torch.arange(T, device=t.device)  # (T,)
        return apply_rope(t, positions, self.base)  # angles computed afresh (any position, any offset)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, max_len={self.max_len}, d_head={self.d_head}"


def make_positional(kind: str, d_model: int, max_len: int, *, n_heads: int = 1, base: float = 10000.0
                    ) -> PositionalEncoding:
    """``PositionalEncoding(kind, ...)`` for a model with ``n_heads`` heads (RoPE rotates each head's
    d_head = d_model // n_heads dimensions)."""
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
    return PositionalEncoding(kind, d_model, max_len, d_head=d_model // n_heads, base=base)


__all__ = [
    "KINDS", "LearnedPositionalEmbedding", "PositionalEncoding", "apply_rope", "make_positional",
    "relative_rotation", "rope_angles", "rotate_pairs", "sinusoidal_positional_encoding",
]
