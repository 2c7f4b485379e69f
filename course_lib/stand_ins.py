"""Stand-in translators with known behaviour: the models the graded checks of a decoder feed it.

A decoding exercise (``greedy_decode`` in notebooks 01 and 05) is checked with models whose answers
are known rather than with the course's own translators: those are the answers to other exercises
of the same notebook, and the autograder never lets a student's process hold them. The scripted
models answer from a table and count their calls (a decoder must stop once every row has ended);
the random ones are small fixed functions of the whole prefix, so a decoder that feeds the wrong
tokens, or forgets earlier ones, gets other answers.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .grading import check
from .text import BOS_ID, EOS_ID, PAD_ID, UNK_ID


class ScriptedStepModel(nn.Module):
    """01's interface: ``encode(src) -> state``, ``decode(tokens (B, 1), state) -> (logits (B, 1, V),
    state)``.

    Row b answers ``script[b][t]`` at step t when it was fed its own previous answer (<bos> at step
    0), and <unk> otherwise. ``calls`` counts the decode calls.
    """

    def __init__(self, script, vocab_size: int = 12):
        super().__init__()
        self.script, self.vocab_size, self.calls = torch.as_tensor(script, dtype=torch.long), vocab_size, 0
        self.dummy = nn.Parameter(torch.zeros(1))  # so that model.parameters() is not empty

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor | None = None) -> torch.Tensor:
        return torch.zeros(src.shape[0], dtype=torch.long)  # the state: a step counter per row, (B,)

    def decode(self, tokens: torch.Tensor, step: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.calls += 1
        B = self.script.shape[0]
        check("greedy_decode", tuple(tokens.shape) == (B, 1),
              f"feed the decoder one token per row and step, shape (B, 1); got shape {tuple(tokens.shape)}")
        rows, last = torch.arange(
            B), self.script.shape[1] - 1  # past its end, the script repeats its last token
        previous = torch.where(step == 0, BOS_ID, self.script[rows, (step - 1).clamp(0, last)])        # (B,)
        answer = torch.where(tokens[:, 0].cpu() == previous, self.script[rows, step.clamp(max=last)], UNK_ID)
        return F.one_hot(answer, self.vocab_size).float().unsqueeze(1), step + 1                # (B, 1, V)


class ScriptedPrefixModel(nn.Module):
    """05's interface: ``encode(src) -> memory (B, S, d)``, ``decode(tgt_in (B, t), memory, src_mask) ->
    logits (B, t, V)``.

    Row b answers ``script[b][t-1]`` when fed <bos> and its own first t-1 answers (a row that has
    already produced <eos> may be fed anything after it), and <unk> otherwise. ``calls`` counts the
    decode calls; ``src_mask`` must be ``padding_mask(src)``, shape (B, 1, 1, S).
    """

    def __init__(self, script, vocab_size: int = 12):
        super().__init__()
        # padded with <pad> past its end: room for decoders that run on
        self.script = F.pad(torch.as_tensor(script, dtype=torch.long), (0, 64), value=PAD_ID)
        self.vocab_size, self.calls = vocab_size, 0
        self.dummy = nn.Parameter(torch.zeros(1))

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return torch.zeros(src.shape[0], src.shape[1], 4)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        B, t = tgt_in.shape
        check("greedy_decode", tuple(src_mask.shape) == (B, 1, 1, memory.shape[1]),
              f"pass padding_mask(src), shape (B, 1, 1, S), as src_mask; got {tuple(src_mask.shape)}")
        expected_prefix = torch.cat([torch.full((B, 1), BOS_ID), self.script[:, : t - 1]], dim=1)  # (B, t)
        done = (expected_prefix[:, 1:] == EOS_ID).any(1) if t > 1 else torch.zeros(B, dtype=torch.bool)
        answer = torch.where((tgt_in.cpu() == expected_prefix).all(1) | done, self.script[:, t - 1], UNK_ID)
        logits = torch.full((B, t, self.vocab_size), -5.0)
        logits[:, -1] = F.one_hot(answer, self.vocab_size).float() * 10  # only the last position matters
        return logits


class RandomStepModel(nn.Module):
    """01's interface with fixed random weights: the state is a running mix of what it was fed.

    ``forward(src, tgt_in) -> logits (B, T, V)`` runs the same steps with teacher forcing.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d: int = 8, seed: int = 0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.src_table = nn.Parameter(torch.randn(src_vocab, d, generator=generator))
        self.tgt_table = nn.Parameter(torch.randn(tgt_vocab, d, generator=generator))
        self.out = nn.Parameter(torch.randn(d, tgt_vocab, generator=generator) * 2)

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor | None = None) -> torch.Tensor:
        return torch.tanh(self.src_table[src].mean(dim=1))  # (B, d)

    def decode(self, tokens: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = torch.tanh(0.8 * state + self.tgt_table[tokens[:, 0]])  # (B, d)
        return (state @ self.out).unsqueeze(1), state  # (B, 1, V)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        state, steps = self.encode(src), []
        for t in range(tgt_in.shape[1]):
            logits, state = self.decode(tgt_in[:, t:t + 1], state)
            steps.append(logits)
        return torch.cat(steps, dim=1)  # (B, T, V)


class RandomPrefixModel(nn.Module):
    """05's interface with fixed random weights: each position's logits depend on the mean of the
    prefix up to it and on the unmasked source positions. ``forward(src, tgt_in)`` = ``decode`` of
    ``encode``, with ``padding_mask(src)``."""

    def __init__(self, src_vocab: int, tgt_vocab: int, d: int = 8, seed: int = 0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.src_table = nn.Parameter(torch.randn(src_vocab, d, generator=generator))
        self.tgt_table = nn.Parameter(torch.randn(tgt_vocab, d, generator=generator))
        self.out = nn.Parameter(torch.randn(d, tgt_vocab, generator=generator) * 2)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return self.src_table[src]  # (B, S, d)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        keep = src_mask.reshape(memory.shape[0], memory.shape[1], 1).to(memory.dtype)          # (B, S, 1)
        source = (memory * keep).sum(1) / keep.sum(1).clamp_min(1.0)                           # (B, d)
        steps = torch.arange(1, tgt_in.shape[1] + 1, dtype=memory.dtype).reshape(1, -1, 1)     # (1, t, 1)
        prefix = self.tgt_table[tgt_in].cumsum(dim=1) / steps                                  # (B, t, d)
        return torch.tanh(prefix + source.unsqueeze(1)) @ self.out                             # (B, t, V)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt_in, self.encode(src), (src != PAD_ID).reshape(src.shape[0], 1, 1, -1))


def greedy_reference(model: nn.Module, src: torch.Tensor, max_len: int) -> torch.Tensor:
    """What greedy decoding must give with a stand-in: the prefix re-run with teacher forcing at
    each step, <eos> kept, <pad> after it, at most ``max_len`` tokens. -> (B, L)."""
    B = src.shape[0]
    prefix = torch.full((B, 1), BOS_ID)
    finished = torch.zeros(B, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(max_len):
            nxt = model(src, prefix)[:, -1].argmax(-1).masked_fill(finished, PAD_ID)  # (B,)
            prefix = torch.cat([prefix, nxt.unsqueeze(1)], dim=1)
            finished |= nxt == EOS_ID
            if finished.all():
                break
    return prefix[:, 1:]
