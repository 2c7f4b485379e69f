"""A task that cannot be solved without word order, and a tiny encoder to try position encodings on
(notebook 04's ablation).

The task, *copy with offset*: the input is a sequence of random tokens, the target at position t
is the input token at position t - offset (nothing to predict for the first ``offset`` positions).
The set of tokens is the same whichever way they are shuffled, so a model that cannot tell
positions apart cannot do better than guessing among the tokens it sees.

    cfg = OrderTaskConfig(positional="rope")
    model = OrderEncoder(cfg)
    inputs, targets = shift_batch(64, 32, cfg.vocab_size, cfg.offset)   # (B, T) each
    accuracy(model, length=64)                                          # longer than trained

The encoder is bidirectional (no causal mask): with a causal mask a model can count how many
tokens it sees and so find positions without any encoding, which would blur the comparison.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.positional import make_positional
from course_lib.train import eval_mode

IGNORE = -100  # target of the first ``offset`` positions: F.cross_entropy's default ignore_index


@dataclass
class OrderTaskConfig:
    """The task and the model of the ablation."""

    positional: str = "sinusoidal"  # "none" | "sinusoidal" | "learned" | "rope"
    vocab_size: int = 16  # random tokens 0 .. vocab_size-1
    offset: int = 3  # target[t] = input[t - offset]
    min_len: int = 8  # training lengths are drawn uniformly from min_len .. max_train_len
    max_train_len: int = 32
    max_len: int = 128  # positions the model supports (the learned table has this many rows)
    d_model: int = 64  # width of the residual stream
    n_heads: int = 4  # attention heads (RoPE rotates each head's d_model // n_heads dimensions)
    n_layers: int = 2  # encoder layers
    d_ff: int = 128  # hidden width of the feed-forward sublayer


def shift_batch(batch_size: int, length: int, vocab_size: int, offset: int,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Random tokens and their copy shifted right by ``offset``.

    Returns (inputs: (B, T) int64, targets: (B, T) int64 with ``IGNORE`` in the first ``offset`` columns).
    """
    inputs = torch.randint(0, vocab_size, (batch_size, length), generator=generator)  # (B, T)
    targets = torch.full_like(inputs, IGNORE)
    targets[:, offset:] = inputs[:, : length - offset]
    return inputs, targets


class ShiftBatches:
    """``n_batches`` random batches per pass (one epoch for ``course_lib.train.train``), each with its
    own length drawn from ``min_len .. max_len``; epoch e uses seed ``seed + e`` so runs repeat."""

    def __init__(self, cfg: OrderTaskConfig, batch_size: int, n_batches: int = 1000, seed: int = 0):
        self.cfg, self.batch_size, self.n_batches, self.seed = cfg, batch_size, n_batches, seed
        self.epoch = 0

    def __len__(self) -> int:
        return self.n_batches

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        for _ in range(self.n_batches):
            length = int(torch.randint(self.cfg.min_len, self.cfg.max_train_len + 1, (), generator=generator))
            yield shift_batch(self.batch_size, length, self.cfg.vocab_size, self.cfg.offset, generator)


class _Layer(nn.Module):
    """Pre-norm encoder layer: x + attention(LN x), then x + FFN(LN x)."""

    def __init__(self, cfg: OrderTaskConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ffn = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(),
                                 nn.Linear(cfg.d_ff, cfg.d_model))

    def attention(self, x: torch.Tensor, rotate: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """x: (B, T, d_model) -> (B, T, d_model), bidirectional; ``rotate`` (RoPE or the identity) on q and
        k."""
        B, T, d = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.n_heads, d // self.n_heads)  # (B, T, 3, h, d_head)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (3, B, h, T, d_head): each (B, h, T, d_head)
        q, k = rotate(q), rotate(k)
        out = F.scaled_dot_product_attention(q, k, v)  # (B, h, T, d_head)
        return self.proj(out.transpose(1, 2).reshape(B, T, d))  # (B, T, h, d_head) -> (B, T, d_model)

    def forward(self, x: torch.Tensor, rotate: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        x = x + self.attention(self.ln1(x), rotate)
        return x + self.ffn(self.ln2(x))


class OrderEncoder(nn.Module):
    """Token embedding -> positional encoding (``cfg.positional``) -> n_layers encoder layers -> logits.

    ``forward(tokens)``: tokens (B, T) int64 -> logits (B, T, vocab_size).
    ``self.positional`` is a ``course_lib.positional.PositionalEncoding``, shared by every layer.
    """

    def __init__(self, cfg: OrderTaskConfig):
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.positional = make_positional(cfg.positional, cfg.d_model, cfg.max_len, n_heads=cfg.n_heads)
        self.layers = nn.ModuleList(_Layer(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.positional(self.embedding(tokens))  # (B, T, d_model); unchanged for "none" and "rope"
        for layer in self.layers:
            x = layer(x, self.positional.rotate)  # RoPE for "rope", the identity otherwise
        return self.head(self.ln_f(x))  # (B, T, vocab_size)


def shift_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy over the positions that have a target (for ``course_lib.train.train``)."""
    inputs, targets = batch
    logits = model(inputs)  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


@torch.no_grad()
def accuracy_by_position(model: OrderEncoder, length: int, n: int = 512, batch_size: int = 256,
                         seed: int = 1234, device: torch.device | str | None = None) -> torch.Tensor:
    """Fraction of ``n`` fresh sequences of ``length`` tokens whose target at position t is predicted
    exactly: (length,) float, NaN at the first ``offset`` positions (they have no target)."""
    cfg = model.cfg
    device = device or next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    correct = torch.zeros(length)
    with eval_mode(model):
        for start in range(0, n, batch_size):
            inputs, targets = shift_batch(min(batch_size, n - start), length, cfg.vocab_size, cfg.offset,
                                          generator)
            predicted = model(inputs.to(device)).argmax(dim=-1).cpu()  # (B, T)
            correct += (predicted == targets).sum(dim=0)  # (T,); never true where the target is IGNORE
    result = correct / n
    result[: cfg.offset] = float("nan")
    return result


def accuracy(model: OrderEncoder, length: int, n: int = 512, **kwargs) -> float:
    """Fraction of the target tokens of ``n`` fresh sequences of ``length`` tokens predicted exactly."""
    return float(accuracy_by_position(model, length, n, **kwargs).nanmean())


__all__ = ["IGNORE", "OrderEncoder", "OrderTaskConfig", "ShiftBatches", "accuracy", "accuracy_by_position",
           "shift_batch", "shift_loss"]
