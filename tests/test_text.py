import random

import pytest
import torch

from course_lib import seed_everything
from course_lib.text import (BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, BucketedBatches,
                             TranslationData, Vocab, detokenize, pad_batch, tokenize)

PAIRS = [
    ("the man eats .", "l'homme mange ."),
    ("the woman does not like the dog .", "la femme n'aime pas le chien ."),
    ("he says that he sleeps .", "il dit qu'il dort ."),
    ("the big dog , the small cat .", "le grand chien , le petit chat ."),
    ("does he sleep ?", "dort-il ?"),
    ("today the children play !", "aujourd'hui les enfants jouent !"),
]


def synthetic_pairs(n, seed=0):
    """Pairs of widely varying length (1 to 40 words) from a tiny word list."""
    rng = random.Random(seed)
    words = "a b c d e f g h".split()
    pairs = []
    for _ in range(n):
        length = rng.randint(1, 40)
        src = " ".join(rng.choice(words) for _ in range(length)) + " ."
        tgt = " ".join(rng.choice(words).upper() for _ in range(length + rng.randint(0, 3))) + " ."
        pairs.append((src, tgt))
    return pairs


def test_special_ids():
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    vocab = Vocab.build([["x", "y"]])
    assert vocab.itos[:4] == list(SPECIALS)
    assert [vocab.stoi[s] for s in SPECIALS] == [0, 1, 2, 3]


def test_tokenize_splits_elision_and_punctuation():
    assert tokenize("qu'il n'aime pas l'homme.") == ["qu'", "il", "n'", "aime", "pas", "l'", "homme", "."]
    assert tokenize("Hello, world!") == ["Hello", ",", "world", "!"]
    # Not French elision: these stay whole.
    assert tokenize("aujourd'hui don't") == ["aujourd'hui", "don't"]


@pytest.mark.parametrize("pair", PAIRS)
def test_round_trip(pair):
    for sentence in pair:
        assert detokenize(tokenize(sentence)) == sentence


def test_vocab_order_is_deterministic():
    vocab = Vocab.build([["b", "a", "c", "a"], ["c", "d", "a"]])
    assert vocab.itos[4:] == ["a", "c", "b", "d"]  # by count, ties alphabetical
    assert Vocab.build([["c", "d", "a"], ["b", "a", "c", "a"]]) == vocab
    assert len(Vocab.build([["a", "a", "b"]], min_freq=2)) == 5
    assert len(Vocab.build([["a", "b", "c"]], max_size=6)) == 6


def test_encode_decode_and_unknown():
    vocab = Vocab.build([tokenize("le chat dort .")])
    ids = vocab.encode(["le", "chien", "dort"], add_bos=True, add_eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID and ids[2] == UNK_ID
    assert vocab.decode(ids) == ["le", "<unk>", "dort"]
    assert vocab.decode(ids, strip_special=False)[0] == "<bos>"


def test_decode_stops_at_first_eos():
    vocab = Vocab.build([["a", "b"]])
    a, b = vocab.stoi["a"], vocab.stoi["b"]
    assert vocab.decode(torch.tensor([BOS_ID, a, EOS_ID, b, PAD_ID])) == ["a"]
    assert vocab.decode([a, PAD_ID, b]) == ["a", "b"]


def test_vocab_state_dict_round_trip():
    vocab = Vocab.build([["x", "y", "y"]])
    assert Vocab.from_state_dict(vocab.state_dict()) == vocab
    assert vocab != Vocab.build([["x"]])


def test_pad_batch():
    out = pad_batch([[5, 6, 7], [8], []])
    assert out.dtype == torch.long and out.shape == (3, 3)
    assert out.tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0]]
    assert pad_batch([[1]], pad_id=9).tolist() == [[1]]


def test_translation_batch_layout():
    data = TranslationData.from_pairs(PAIRS)
    batch = data.batch([0, 1])
    assert batch.src.shape == (2, 8) and batch.tgt_in.shape == batch.tgt_out.shape
    assert batch.src_lengths.tolist() == [4, 8]
    assert (batch.tgt_in[:, 0] == BOS_ID).all()
    assert batch.tgt_in[0, 1:4].tolist() == batch.tgt_out[0, :3].tolist()  # shifted by one
    assert batch.tgt_out[0].tolist()[:5] == data.tgt[0] + [EOS_ID]
    assert batch.n_target_tokens == len(data.tgt[0]) + len(data.tgt[1]) + 2
    assert data.tgt_vocab.decode(batch.tgt_out[1]) == tokenize(PAIRS[1][1])
    assert batch.to("cpu").index.tolist() == [0, 1]


def test_reuses_given_vocabs():
    train = TranslationData.from_pairs(PAIRS[:3])
    test = TranslationData.from_pairs(PAIRS[3:], train.src_vocab, train.tgt_vocab)
    assert test.src_vocab is train.src_vocab
    assert UNK_ID in test.src[0]  # "big" was never seen in training


@pytest.mark.parametrize("limit", [{"batch_size": 7}, {"max_tokens": 200}])
def test_every_example_exactly_once(limit):
    data = TranslationData.from_pairs(synthetic_pairs(300))
    batches = BucketedBatches(data, seed=1, **limit)
    for _ in range(2):
        seen = [i for batch in batches for i in batch.index.tolist()]
        assert sorted(seen) == list(range(300))
    assert batches.epoch == 2


def test_max_tokens_budget_respected():
    data = TranslationData.from_pairs(synthetic_pairs(300))
    for batch in BucketedBatches(data, max_tokens=200):
        assert len(batch) * max(batch.src.shape[1], batch.tgt_in.shape[1]) <= 200


def pad_fraction(batches):
    pads = total = 0
    for batch in batches:
        pads += int((batch.src == PAD_ID).sum())
        total += batch.src.numel()
    return pads / total


def test_bucketing_reduces_padding():
    seed_everything(0)
    data = TranslationData.from_pairs(synthetic_pairs(1000))
    bucketed = pad_fraction(BucketedBatches(data, batch_size=16, chunk_batches=20))
    unsorted = pad_fraction(BucketedBatches(data, batch_size=16, shuffle=False))
    assert bucketed < 0.1 < 0.3 < unsorted


def test_deterministic_for_seed_and_reshuffled_per_epoch():
    data = TranslationData.from_pairs(synthetic_pairs(200))
    a, b = BucketedBatches(data, batch_size=8, seed=3), BucketedBatches(data, batch_size=8, seed=3)
    assert a.plan(0) == b.plan(0)
    assert a.plan(0) != a.plan(1)
    assert a.plan(0) != BucketedBatches(data, batch_size=8, seed=4).plan(0)
    assert len(a) == 25


def test_unshuffled_keeps_dataset_order():
    data = TranslationData.from_pairs(synthetic_pairs(50))
    order = [i for batch in BucketedBatches(data, batch_size=8, shuffle=False) for i in batch.index.tolist()]
    assert order == list(range(50))


def test_needs_one_size_limit():
    data = TranslationData.from_pairs(PAIRS)
    with pytest.raises(ValueError):
        BucketedBatches(data)
    with pytest.raises(ValueError):
        BucketedBatches(data, batch_size=2, max_tokens=10)
