"""Count-based character n-gram models: the baselines notebook 07's experiments are read against.

    baselines = ngram_baselines(train_ids, valid_ids, vocab_size=V)   # unigram, bigram, trigram
    baselines.bigram                                                  # nats per token on valid_ids

An order-n model predicts token t from the n - 1 tokens before it by counting, on the training
ids, how often each continuation followed that context: add-α (Lidstone) smoothing,

    p(x_t | context) = (count(context, x_t) + α) / (count(context) + α·V),

so a continuation never seen still gets a little probability. The score is the mean negative log
probability, in nats per token, of every validation token that has n - 1 tokens before it. A neural
model that has not gone below the bigram line has learnt less than a table of character pairs.

The strong count-based baseline is interpolated Kneser–Ney (Chen & Goodman, 1998): each order
subtracts a discount D from every count it saw and hands the mass it freed to the next lower order,

    p_k(x | h) = max(c_k(h, x) - D_k, 0) / c_k(h) + D_k · N1+(h ·) / c_k(h) · p_{k-1}(x | h'),

where h' is h without its oldest token, c_k(h) the total over x and N1+(h ·) the number of
distinct continuations of h; a context never seen passes p_{k-1} on unchanged, and below order 1
stands the uniform 1/V. The highest order counts occurrences; every lower order counts *distinct
left neighbours* (how many contexts a continuation completes, not how often it occurs: "Francisco"
is frequent but follows only "San").
D_k = n1 / (n1 + 2 n2), from the number of k-grams seen once and twice (Ney, Essen & Kneser, 1994).

    model = KneserNey.fit(train_ids, order=5, vocab_size=V)
    model.nats_per_token(valid_ids)                 # every token with order - 1 tokens before it
    model.next_token_probs(context)                 # (V,), sums to 1; context: the last order - 1 ids
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

MAX_TABLE = 10 ** 8  # V ** order counts, as int64: 800 MB at most
MAX_KEY = 2 ** 62    # a Kneser–Ney n-gram is one int64 number in base V


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


def _lookup(keys: torch.Tensor, values: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """values[i] where keys[i] == query, 0 where the query is absent. keys sorted (K,), queries (M,)."""
    if len(keys) == 0:
        return torch.zeros(len(queries), dtype=values.dtype)
    at = torch.searchsorted(keys, queries).clamp(max=len(keys) - 1)
    return torch.where(keys[at] == queries, values[at], torch.zeros((), dtype=values.dtype))


@dataclass(frozen=True)
class KneserNeyLevel:
    """The counts of one order k: every k-gram seen, and every (k - 1)-token context, as base-V numbers."""
    keys: torch.Tensor              # (K,) sorted k-grams
    counts: torch.Tensor            # (K,) float64: occurrences (top order) or distinct left neighbours
    context_keys: torch.Tensor      # (C,) sorted contexts: keys // V
    context_totals: torch.Tensor    # (C,) c_k(h): the counts of each context summed over continuations
    context_types: torch.Tensor     # (C,) N1+(h ·): how many distinct continuations each context has
    discount: float                 # D_k

    @classmethod
    def from_counts(cls, keys: torch.Tensor, counts: torch.Tensor, vocab_size: int) -> KneserNeyLevel:
        n1, n2 = int((counts == 1).sum()), int((counts == 2).sum())
        discount = n1 / (n1 + 2 * n2) if n1 + n2 else 0.5             # no rare k-gram: any D works
        context_keys, where = torch.unique_consecutive(keys // vocab_size, return_inverse=True)
        totals = torch.zeros(len(context_keys), dtype=torch.float64).index_add_(0, where, counts)
        types = torch.bincount(where, minlength=len(context_keys)).double()
        return cls(keys, counts, context_keys, totals, types, min(max(discount, 1e-3), 1.0))


@dataclass(frozen=True)
class KneserNey:
    """Interpolated Kneser–Ney over token ids: ``levels[k - 1]`` holds order k's counts."""
    vocab_size: int
    order: int
    levels: tuple[KneserNeyLevel, ...]

    @classmethod
    def fit(cls, train_ids: torch.Tensor, order: int, vocab_size: int) -> KneserNey:
        """Count every order 1..``order`` on ``train_ids`` (1-D integer ids < V) with Ney's discounts."""
        if order < 1 or vocab_size ** order >= MAX_KEY:
            raise ValueError(f"need 1 <= order and V ** order < 2 ** 62, got order={order}, V={vocab_size}")
        if len(train_ids) < order:
            raise ValueError(f"{len(train_ids)} training tokens cannot fill one {order}-gram")
        ids = train_ids.cpu()
        keys, counts = torch.unique(_ngram_index(ids, order, vocab_size), return_counts=True)
        levels = [KneserNeyLevel.from_counts(keys, counts.double(), vocab_size)]
        for k in range(order - 1, 0, -1):              # continuation counts: distinct left neighbours
            seen = torch.unique(_ngram_index(ids, k + 1, vocab_size))          # (k+1)-grams, each once
            keys, counts = torch.unique(seen % vocab_size ** k, return_counts=True)
            levels.append(KneserNeyLevel.from_counts(keys, counts.double(), vocab_size))
        return cls(vocab_size, order, tuple(reversed(levels)))

    def log_probs(self, windows: torch.Tensor) -> torch.Tensor:
        """log p(last token | the order - 1 before it), in nats. windows (M, order) -> (M,) float64."""
        V = self.vocab_size
        windows = windows.cpu().long()
        p = torch.full((len(windows),), 1.0 / V, dtype=torch.float64)               # order 0: uniform
        key = torch.zeros(len(windows), dtype=torch.long)
        for k, level in enumerate(self.levels, start=1):
            key = key + windows[:, -k] * V ** (k - 1)                           # the last k tokens
            count = _lookup(level.keys, level.counts, key)
            total = _lookup(level.context_keys, level.context_totals, key // V)
            types = _lookup(level.context_keys, level.context_types, key // V)
            mixed = ((count - level.discount).clamp(min=0) + level.discount * types * p) / total.clamp(min=1)
            p = torch.where(total > 0, mixed, p)                                # unseen context: p_{k-1}
        return p.log()

    def next_token_probs(self, context: torch.Tensor) -> torch.Tensor:
        """p(x | context) for every x: context (order - 1,) ids -> (V,) float64, summing to 1."""
        if context.shape != (self.order - 1,):
            raise ValueError(f"the context of an order-{self.order} model is {self.order - 1} ids, "
                             f"got shape {tuple(context.shape)}")
        every = torch.arange(self.vocab_size)
        windows = torch.cat([context.long().expand(self.vocab_size, -1), every[:, None]], dim=1)  # (V, order)
        return self.log_probs(windows).exp()

    def nats_per_token(self, ids: torch.Tensor) -> float:
        """Mean cross-entropy on ``ids`` of every token with order - 1 tokens before it."""
        if len(ids) < self.order:
            raise ValueError(f"{len(ids)} tokens cannot fill one {self.order}-gram")
        windows = ids.cpu().long().unfold(0, self.order, 1)                    # (N - order + 1, order)
        return float(-self.log_probs(windows).mean())


def best_kneser_ney(train_ids: torch.Tensor, valid_ids: torch.Tensor, vocab_size: int,
                    orders: range = range(2, 9)) -> tuple[KneserNey, dict[int, float]]:
    """The order whose Kneser–Ney model scores best on ``valid_ids``, and every order's score (nats/token)."""
    scores, models = {}, {}
    for order in orders:
        models[order] = KneserNey.fit(train_ids, order, vocab_size)
        scores[order] = models[order].nats_per_token(valid_ids)
    best = min(scores, key=scores.get)
    return models[best], scores


__all__ = ["KneserNey", "KneserNeyLevel", "NgramBaselines", "best_kneser_ney", "ngram_baselines",
           "ngram_nats_per_token"]
