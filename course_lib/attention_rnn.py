"""The RNN encoder-decoder with Bahdanau attention (notebook 02).

A bidirectional GRU encodes the source into one annotation per token, ``memory[:, j]``. At each
target step the decoder compares its previous state ``s_{i-1}`` with every annotation (additive
attention), takes the weighted average ``c_i`` (the *context*) and feeds it, with the previous
target word, into its GRU cell (Bahdanau, Cho & Bengio 2015). The decoder is no longer limited to
one fixed-size summary of the source: it can look at the word it needs now.

The model offers the ``encode(src)`` / ``decode(tokens, state)`` interface of
``course_lib.rnn.Seq2SeqRNN``, so ``course_lib.rnn.greedy_decode`` decodes it unchanged; its
``forward`` also returns the attention weights, to draw alignments.

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``H`` = ``d_hidden``, ``V`` vocabulary.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course_lib.attention import AdditiveAttention
from course_lib.text import PAD_ID


@dataclass
class AttentionRNNConfig:
    """Size of the attention encoder-decoder."""

    src_vocab_size: int = 0   # source (English) vocabulary size, set from the data
    tgt_vocab_size: int = 0   # target (French) vocabulary size, set from the data
    d_emb: int = 128          # width of the token embeddings (encoder and decoder)
    d_hidden: int = 256       # width of the decoder state and of each encoder direction
    d_attn: int = 256         # width of the additive attention's hidden layer (v · tanh(...))
    dropout: float = 0.0      # dropout on embeddings and before the output layer

    def with_vocab(self, src_vocab_size: int, tgt_vocab_size: int) -> "AttentionRNNConfig":
        """A copy with the vocabulary sizes filled in."""
        return dataclasses.replace(self, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


ATTENTION_RNN_PRESETS: dict[str, AttentionRNNConfig] = {
    "smoke": AttentionRNNConfig(d_emb=32, d_hidden=64, d_attn=64),
    # small enough for ~1000 updates in about 3 minutes on 2 CPU cores: enough for BLEU > 95
    "laptop": AttentionRNNConfig(d_emb=64, d_hidden=128, d_attn=128),
    "gpu": AttentionRNNConfig(d_emb=256, d_hidden=512, d_attn=512, dropout=0.1),
}


class AttentionState(NamedTuple):
    """What the decoder carries from step to step (``greedy_decode`` passes it along unopened)."""

    hidden: torch.Tensor  # (B, H) the decoder's GRU state s_{i-1}
    memory: torch.Tensor  # (B, S, 2H) the encoder's annotations: the values of the attention
    keys: torch.Tensor  # (B, S, d_attn) W_k memory, projected once per sentence
    mask: torch.Tensor  # (B, 1, S) True at real source tokens


class Seq2SeqAttentionRNN(nn.Module):
    """Bidirectional GRU encoder, GRU-cell decoder with additive attention over the encoder states.

    Attributes: ``src_embedding``, ``encoder`` (bidirectional ``nn.GRU``), ``bridge`` (encoder's
    final states -> s_0), ``attention`` (``AdditiveAttention``), ``tgt_embedding``, ``decoder``
    (``nn.GRUCell`` reading [y_{i-1}; c_i]), ``pre_out`` and ``out`` (the output layer reads
    [s_i; c_i; y_{i-1}]), ``drop``.
    """

    def __init__(self, cfg: AttentionRNNConfig):
        super().__init__()
        if cfg.src_vocab_size <= 0 or cfg.tgt_vocab_size <= 0:
            raise ValueError("set the vocabulary sizes first: cfg.with_vocab(len(src_vocab), len(tgt_vocab))")
        self.cfg = cfg
        H, E = cfg.d_hidden, cfg.d_emb
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, E, padding_idx=PAD_ID)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * H, H)
        self.attention = AdditiveAttention(d_query=H, d_key=2 * H, d_attn=cfg.d_attn)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, E, padding_idx=PAD_ID)
        self.decoder = nn.GRUCell(E + 2 * H, H)
        self.pre_out = nn.Linear(H + 2 * H + E, H)
        self.out = nn.Linear(H, cfg.tgt_vocab_size)
        self.drop = nn.Dropout(cfg.dropout)

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor | None = None) -> AttentionState:
        """src: (B, S) right-padded with PAD_ID -> the decoder's initial ``AttentionState``."""
        if src_lengths is None:
            src_lengths = (src != PAD_ID).sum(dim=1)  # (B,)
        emb = self.drop(self.src_embedding(src))  # (B, S, E)
        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, h_n = self.encoder(packed)  # h_n: (2, B, H), forward then backward direction
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B, S, 2H)
        # s_0 from the forward state after the last word and the backward state after the first.
        hidden = torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=-1)))  # (B, H)
        mask = (src != PAD_ID).unsqueeze(1)  # (B, 1, S): broadcast over the queries
        return AttentionState(hidden, memory, self.attention.project_keys(memory), mask)

    def decode(self, tgt_in: torch.Tensor, state: AttentionState, return_weights: bool = False):
        """Run the decoder over ``tgt_in`` (B, T) from ``state``, one step per target token.

        Returns ``(logits (B, T, V), new state)``, and the attention weights (B, T, S) as a third
        item with ``return_weights=True``.
        """
        emb = self.drop(self.tgt_embedding(tgt_in))  # (B, T, E)
        s = state.hidden  # (B, H)
        states, contexts, weights = [], [], []
        for t in range(tgt_in.shape[1]):
            # The query is the state *before* this step: it decides where to look for word t.
            context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
            context = context.squeeze(1)  # (B, 2H)
            s = self.decoder(torch.cat([emb[:, t], context], dim=-1), s)  # (B, H)
            states.append(s)
            contexts.append(context)
            weights.append(w.squeeze(1))  # (B, S)
        states, contexts = torch.stack(states, dim=1), torch.stack(contexts, dim=1)  # (B, T, H), (B, T, 2H)
        # The output layer runs once over all steps: it is outside the recurrence.
        features = torch.tanh(self.pre_out(torch.cat([states, contexts, emb], dim=-1)))  # (B, T, H)
        logits = self.out(self.drop(features))  # (B, T, V)
        new_state = state._replace(hidden=s)
        if return_weights:
            return logits, new_state, torch.stack(weights, dim=1)  # (B, T, S)
        return logits, new_state

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor,
                src_lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher forcing. src: (B, S), tgt_in: (B, T) -> logits (B, T, V), as every translation model
        of the course; the attention weights come from ``decode(tgt_in, state, return_weights=True)``."""
        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits


__all__ = ["ATTENTION_RNN_PRESETS", "AttentionRNNConfig", "AttentionState", "Seq2SeqAttentionRNN"]
