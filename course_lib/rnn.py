"""Recurrent baselines (notebook 01): the Elman cell, an RNN language model and an
attention-free GRU encoder-decoder.

These are the reference versions of notebook 01's graded exercises, so that notebook 02 (and the
BLEU capstone) can build on a correct implementation even when a student's notebook 01 is wrong.
``rnn_forward`` equals ``torch.nn.RNN(batch_first=True)`` when the weights are copied as
``W_e = weight_ih_l0.T``, ``W_h = weight_hh_l0.T``, ``b = bias_ih_l0 + bias_hh_l0``.

Shapes: ``B`` batch, ``T`` time (``S`` source length, ``T`` target length), ``V`` vocabulary.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from course_lib.text import BOS_ID, EOS_ID, PAD_ID
from course_lib.train import eval_mode


# --------------------------------------------------------------------------- the Elman RNN
def rnn_cell_step(x_t: torch.Tensor, h_prev: torch.Tensor, W_e: torch.Tensor, W_h: torch.Tensor,
                  b: torch.Tensor) -> torch.Tensor:
    """One Elman step ``h_t = tanh(x_t @ W_e + h_prev @ W_h + b)``.

    x_t: (B, d_in), h_prev: (B, d_h), W_e: (d_in, d_h), W_h: (d_h, d_h), b: (d_h,) -> h_t: (B, d_h)
    """
    return torch.tanh(x_t @ W_e + h_prev @ W_h + b)


def rnn_forward(xs: torch.Tensor, h0: torch.Tensor, W_e: torch.Tensor, W_h: torch.Tensor,
                b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the Elman cell over a whole sequence.

    xs: (B, T, d_in), h0: (B, d_h) -> (hs: (B, T, d_h) with hs[:, t] = h_{t+1}, h_T: (B, d_h))
    """
    h = h0
    states = []
    for t in range(xs.shape[1]):
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)  # (B, d_h)
        states.append(h)
    if not states:  # T = 0: no step, the final state is h0
        return xs.new_zeros(xs.shape[0], 0, h0.shape[-1]), h0
    return torch.stack(states, dim=1), h  # (B, T, d_h), (B, d_h)


class ElmanRNNLM(nn.Module):
    """Embedding -> Elman RNN (tanh) -> linear layer to the vocabulary.

    Attributes ``embedding``, ``rnn`` (``nn.RNN``, batch_first) and ``out`` (``nn.Linear``).
    """

    def __init__(self, vocab_size: int, d_emb: int, d_hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_emb)
        self.rnn = nn.RNN(d_emb, d_hidden, batch_first=True)
        self.out = nn.Linear(d_hidden, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens: (B, T) -> logits: (B, T, V); position t predicts token t+1."""
        hs, _ = self.rnn(self.embedding(tokens))  # (B, T, d_hidden)
        return self.out(hs)  # (B, T, V)


def perplexity(logits: torch.Tensor, targets: torch.Tensor, pad_id: int = PAD_ID) -> float:
    """exp(mean cross-entropy over the targets that are not padding).

    logits: (B, T, V), targets: (B, T) -> float
    """
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),  # (B*T, V)
                         targets.reshape(-1), ignore_index=pad_id)
    return float(torch.exp(ce))


# --------------------------------------------------------------------------- seq2seq
@dataclass
class Seq2SeqConfig:
    """Size of the attention-free encoder-decoder."""

    src_vocab_size: int = 0   # source (English) vocabulary size, set from the data
    tgt_vocab_size: int = 0   # target (French) vocabulary size, set from the data
    d_emb: int = 128          # width of the token embeddings (encoder and decoder)
    d_hidden: int = 256       # width of the recurrent state: the whole source must fit in it
    n_layers: int = 1         # stacked recurrent layers in the encoder and in the decoder
    dropout: float = 0.0      # dropout on embeddings and decoder outputs (and between layers)
    cell: str = "gru"         # recurrent cell: "gru" or "rnn" (Elman, tanh)

    def with_vocab(self, src_vocab_size: int, tgt_vocab_size: int) -> "Seq2SeqConfig":
        """A copy with the vocabulary sizes filled in."""
        return dataclasses.replace(self, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


SEQ2SEQ_PRESETS: dict[str, Seq2SeqConfig] = {
    "smoke": Seq2SeqConfig(d_emb=32, d_hidden=64, n_layers=1, dropout=0.0),
    "laptop": Seq2SeqConfig(d_emb=128, d_hidden=256, n_layers=1, dropout=0.0),
    "gpu": Seq2SeqConfig(d_emb=256, d_hidden=512, n_layers=2, dropout=0.1),
}


def _cell(cfg: Seq2SeqConfig, d_in: int) -> nn.Module:
    if cfg.cell not in ("gru", "rnn"):
        raise ValueError(f"Seq2SeqConfig.cell must be 'gru' or 'rnn', not {cfg.cell!r}")
    kind = nn.GRU if cfg.cell == "gru" else nn.RNN
    return kind(d_in, cfg.d_hidden, num_layers=cfg.n_layers, batch_first=True,
                dropout=cfg.dropout if cfg.n_layers > 1 else 0.0)


class Seq2SeqRNN(nn.Module):
    """Attention-free encoder-decoder (Sutskever et al. 2014 / Cho et al. 2014 style).

    The encoder reads the source; its final state, a fixed-size vector per layer, is the decoder's
    initial state and the decoder's only view of the source. Attributes: ``src_embedding``,
    ``encoder``, ``tgt_embedding``, ``decoder``, ``out``.
    """

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        if cfg.src_vocab_size <= 0 or cfg.tgt_vocab_size <= 0:
            raise ValueError("set the vocabulary sizes first: cfg.with_vocab(len(src_vocab), len(tgt_vocab))")
        self.cfg = cfg
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.encoder = _cell(cfg, cfg.d_emb)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.decoder = _cell(cfg, cfg.d_emb)
        self.out = nn.Linear(cfg.d_hidden, cfg.tgt_vocab_size)
        self.drop = nn.Dropout(cfg.dropout)

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor | None = None) -> torch.Tensor:
        """src: (B, S) right-padded with PAD_ID -> final state (n_layers, B, d_hidden).

        Packing makes the final state the one after each sentence's last real token.
        """
        if src_lengths is None:
            src_lengths = (src != PAD_ID).sum(dim=1)  # (B,)
        emb = self.drop(self.src_embedding(src))  # (B, S, d_emb)
        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True,
                                      enforce_sorted=False)
        _, h = self.encoder(packed)  # (n_layers, B, d_hidden), back in the batch's order
        return h

    def decode(self, tgt_in: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """tgt_in: (B, T) starting with BOS, state: (n_layers, B, d_hidden)
        -> (logits: (B, T, V), new state: (n_layers, B, d_hidden))."""
        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state)  # (B, T, d_hidden)
        return self.out(self.drop(hs)), state  # (B, T, V)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor,
                src_lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher forcing. src: (B, S), tgt_in: (B, T) = <bos> y_1 ... y_{T-1} -> logits (B, T, V)."""
        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits


@torch.no_grad()
def greedy_decode(model: nn.Module, src: torch.Tensor, max_len: int) -> torch.Tensor:
    """Greedy decoding with any model offering ``encode(src)`` and ``decode(tokens, state)``.

    src: (B, S) -> ys: (B, L) with L <= max_len: the predicted ids without <bos>; a row holds its
    <eos> and PAD_ID after it. Decoding stops as soon as every row has produced <eos>.
    """
    with eval_mode(model):
        B = src.shape[0]
        state = model.encode(src)
        token = torch.full((B, 1), BOS_ID, dtype=torch.long, device=src.device)  # (B, 1)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
        out = []
        for _ in range(max_len):
            logits, state = model.decode(token, state)  # (B, 1, V)
            nxt = logits[:, -1].argmax(dim=-1)  # (B,)
            nxt = nxt.masked_fill(finished, PAD_ID)
            out.append(nxt)
            finished |= nxt == EOS_ID
            token = nxt.unsqueeze(1)  # (B, 1)
            if bool(finished.all()):
                break
    if not out:
        return torch.zeros(B, 0, dtype=torch.long, device=src.device)
    return torch.stack(out, dim=1)  # (B, L)


__all__ = ["ElmanRNNLM", "SEQ2SEQ_PRESETS", "Seq2SeqConfig", "Seq2SeqRNN", "greedy_decode",
           "perplexity", "rnn_cell_step", "rnn_forward"]
