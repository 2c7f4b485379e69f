"""course_lib.ngram's interpolated Kneser–Ney model (notebook 07's strongest count-based baseline):
a case computed by hand, a dictionary-and-loops reference on random ids, and normalisation."""
import math
from collections import Counter, defaultdict

import pytest
import torch

from course_lib.ngram import KneserNey, best_kneser_ney


def test_kneser_ney_by_hand():
    # train a b a b c b (ids 0 1 0 1 2 1), V = 3, order 2.
    # unigram continuation counts (distinct left neighbours): a 1, b 2 (after a, c), c 1; n1 = 2, n2 = 1, so
    # D1 = 2 / (2 + 2) = 0.5 and p1 = ((1 - .5) + .5·3/3)/4, (1.5 + .5)/4, ... = 1/4, 1/2, 1/4.
    # bigram counts ab 2, ba 1, bc 1, cb 1: n1 = 3, n2 = 1, D2 = 3/5; after a (total 2, one type):
    # p(b|a) = (2 - .6 + .6·1·1/2)/2 = .85, p(a|a) = p(c|a) = .6·1/4/2 = .075.
    model = KneserNey.fit(torch.tensor([0, 1, 0, 1, 2, 1]), order=2, vocab_size=3)
    assert [level.discount for level in model.levels] == pytest.approx([0.5, 0.6])
    want = {0: [0.075, 0.85, 0.075], 1: [0.35, 0.3, 0.35], 2: [0.15, 0.7, 0.15]}
    for context, probs in want.items():
        torch.testing.assert_close(model.next_token_probs(torch.tensor([context])),
                                   torch.tensor(probs, dtype=torch.float64))
    nats = -(math.log(0.85) + math.log(0.35) + math.log(0.7)) / 3               # windows ab, bc, cb
    assert model.nats_per_token(torch.tensor([0, 1, 2, 1])) == pytest.approx(nats, rel=1e-12)


def _kneser_ney_by_hand(train, order, V):
    """p(x | context) by dictionaries and loops, the textbook recursion written out."""
    levels = []
    for k in range(1, order + 1):
        grams = Counter(tuple(train[i:i + k]) for i in range(len(train) - k + 1))
        if k < order:                                       # distinct left neighbours of each k-gram
            longer = {tuple(train[i:i + k + 1]) for i in range(len(train) - k)}
            grams = Counter(gram[1:] for gram in longer)
        counts_of_counts = Counter(grams.values())
        n1, n2 = counts_of_counts[1], counts_of_counts[2]
        discount = min(max(n1 / (n1 + 2 * n2) if n1 + n2 else 0.5, 1e-3), 1.0)
        totals, types = defaultdict(int), defaultdict(int)
        for gram, count in grams.items():
            totals[gram[:-1]] += count
            types[gram[:-1]] += 1
        levels.append((grams, totals, types, discount))

    def prob(context, x):
        p = 1 / V
        for k, (grams, totals, types, D) in enumerate(levels, start=1):
            h = tuple(context[len(context) - k + 1:]) if k > 1 else ()
            if totals[h]:
                p = (max(grams[h + (x,)] - D, 0) + D * types[h] * p) / totals[h]
        return p
    return prob


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_kneser_ney_equals_the_recursion_by_hand(order):
    g = torch.Generator().manual_seed(order)
    train, valid = torch.randint(0, 5, (400,), generator=g), torch.randint(0, 6, (60,), generator=g)
    prob = _kneser_ney_by_hand(train.tolist(), order, 6)
    v = valid.tolist()
    want = -sum(math.log(prob(v[i:i + order - 1], v[i + order - 1])) for i in range(len(v) - order + 1))
    assert KneserNey.fit(train, order, 6).nats_per_token(valid) == pytest.approx(want / (len(v) - order + 1),
                                                                                rel=1e-12)


@pytest.mark.parametrize("order", [1, 3, 5])
def test_kneser_ney_probabilities_sum_to_one(order):
    g = torch.Generator().manual_seed(10 + order)
    model = KneserNey.fit(torch.randint(0, 7, (500,), generator=g), order, vocab_size=9)  # 7, 8 never seen
    for _ in range(20):
        probs = model.next_token_probs(torch.randint(0, 9, (order - 1,), generator=g))
        assert probs.shape == (9,) and bool((probs > 0).all())
        assert float(probs.sum()) == pytest.approx(1.0, abs=1e-12)


def test_best_kneser_ney_picks_the_order_validation_prefers_and_refuses_bad_input():
    cycle = torch.arange(4).repeat(50)
    periodic = torch.cat([cycle, torch.tensor([0, 0, 1, 1, 2, 2, 3, 3]).repeat(25)])     # needs 2 of context
    model, scores = best_kneser_ney(periodic, periodic[:120], 4, orders=range(1, 5))
    assert model.order == min(scores, key=scores.get) and scores[3] < scores[1]
    with pytest.raises(ValueError):
        KneserNey.fit(cycle, 40, 4)                                         # 4 ** 40 overflows a key
    with pytest.raises(ValueError):
        KneserNey.fit(cycle[:2], 3, 4)                                      # no trigram to count
    with pytest.raises(ValueError):
        KneserNey.fit(cycle, 3, 4).next_token_probs(torch.tensor([1]))     # context of the wrong length
