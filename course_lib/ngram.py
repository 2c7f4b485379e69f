"""Count-based character n-gram models: the baselines notebook 07's experiments are read against.

    baselines = ngram_baselines(train_ids, valid_ids, vocab_size=V)   # unigram, bigram, trigram
    baselines.bigram                                                  # nats per token on valid_ids

An order-n model predicts token t from the n - 1 tokens before it by counting, on the training
ids, how often each continuation followed that context: add-α (Lidstone) smoothing,

    p(x_t | context) = (count(context, x_t) + α) / (count(context) + α·V),

so a continuation never seen still gets a little probability. The score is the mean negative log
probability, in nats per token, of every validation token that has n - 1 tokens before it. A neural
model that has not gone below the bigram line has learnt less than a table of character pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

MAX_TABLE = 10 ** 8  # V ** order counts, as int64: 800 MB at most


def _ngram_index(ids: torch.Tensor, order: int, vocab_size: int) -> torch.Tensor:
    """Each window of ``order`` consecutive ids as one number in base V. ids (N,) -> (N - order + 1,)"""
    count = len(ids) - order + 1
    index = torch.zeros(count, dtype=torch.long)
    for k in range(order):
        index = index * vocab_size + ids[k:k + count].long()
    return index


def ngram_nats_per_token(train_ids: torch.Tensor, valid_ids: torch.Tensor, order: int, vocab_size: int,
                         alpha: float = 0.1) -> float:
    """The add-α order-``order`` model counted on ``train_ids``: its mean cross-entropy on ``valid_ids``
    (nats per token, every token with ``order - 1`` tokens before it). ids: 1-D integer tensors < V."""
    if order < 1 or alpha <= 0:
        raise ValueError(f"need order >= 1 and alpha > 0, got order={order}, alpha={alpha}")
    if vocab_size ** order > MAX_TABLE:
        raise ValueError(
            f"V ** order = {vocab_size ** order:,} counts is too large a table (at most {MAX_TABLE:,})")
    if len(valid_ids) < order:
        raise ValueError(f"{len(valid_ids)} validation tokens cannot fill one {order}-gram")
    train_ids, valid_ids = train_ids.cpu(), valid_ids.cpu()
    counts = torch.bincount(_ngram_index(train_ids, order, vocab_size), minlength=vocab_size ** order)
    counts = counts.double().view(-1, vocab_size)                          # (V ** (order - 1), V)
    context_counts = counts.sum(dim=1)                                     # (V ** (order - 1),)
    seen = _ngram_index(valid_ids, order, vocab_size)                      # (M,)
    p = (counts.view(-1)[seen] + alpha) / (context_counts[seen // vocab_size] + alpha * vocab_size)
    return float(-p.log().mean())


@dataclass(frozen=True)
class NgramBaselines:
    unigram: float  # nats per token: character frequencies alone
    bigram: float   # the previous character as context
    trigram: float  # the two previous characters
    alpha: float    # the add-α smoothing they were counted with


def ngram_baselines(train_ids: torch.Tensor, valid_ids: torch.Tensor, vocab_size: int,
                    alpha: float = 0.1) -> NgramBaselines:
    """The unigram, bigram and trigram lines of ``ngram_nats_per_token`` on one split."""
    unigram, bigram, trigram = (ngram_nats_per_token(train_ids, valid_ids, n, vocab_size, alpha)
                                for n in (1, 2, 3))
    return NgramBaselines(unigram, bigram, trigram, alpha)


__all__ = ["NgramBaselines", "ngram_baselines", "ngram_nats_per_token"]
