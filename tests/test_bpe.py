"""course_lib.bpe, notebook 07's byte-level BPE: the rules of section 15, exact round trips, and parity
with Hugging Face ``tokenizers`` where its rules coincide with the course's.

Where the rules coincide. ``tokenizers``' BPE trainer with a ``ByteLevel`` pre-tokenizer that neither
splits (``use_regex=False``) nor adds a prefix space reads each input text as one sequence of bytes, as
the course does (rule 1), counts overlapping pairs (rule 2) and merges left to right (rule 4). Its tie
rule differs in one way: among equally frequent pairs it takes the smallest by *its* token ids, which
order the 256 bytes by the code point of GPT-2's printable stand-in for each byte (space is "Ġ", after
every letter), not by the byte's value. Merged tokens are numbered in order of creation by both. So
the merges are equal up to the first step at which the most frequent pairs are tied and the two orders
pick different ones. The parity test checks that no such step comes in its first 150 merges of
50,000 characters of the training plays (the first comes at merge 175), then that the merges and the
encodings are equal.
"""
from __future__ import annotations

import collections
import json
import random

import pytest

from course_lib.bpe import bpe_decode, bpe_encode, merge_sequence, token_bytes, train_bpe
from course_lib.shakespeare import DataMissingError, load_corpus, sample_corpus


def merge_pair(ids: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """``pair``'s occurrences in ``ids`` replaced by ``new``, left to right without overlap (rule 4)."""
    merged, j = [], 0
    while j < len(ids):
        if j + 1 < len(ids) and (ids[j], ids[j + 1]) == pair:
            merged.append(new)
            j += 2
        else:
            merged.append(ids[j])
            j += 1
    return merged


def plain_bpe(text: str, n_merges: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Section 15's rules as the plain loop the exercise asks for: the merges and the final sequence."""
    ids, merges = list(text.encode("utf-8")), []
    for i in range(n_merges):
        counts = collections.Counter(zip(ids, ids[1:]))
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], pair))
        ids = merge_pair(ids, best, 256 + i)
        merges.append(best)
    return merges, ids


def random_unicode(rng: random.Random, n: int) -> str:
    """``n`` characters from every plane that encodes (no surrogates): ASCII to emoji and beyond."""
    chars = []
    for _ in range(n):
        low, high = rng.choice([(0x20, 0x7E), (0x09, 0x0D), (0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF),
                                (0x10000, 0x10FFFF)])
        chars.append(chr(rng.randint(low, high)))
    return "".join(chars)


def test_the_worked_example():
    assert train_bpe("aaabdaaabac", 3) == [(97, 97), (97, 98), (256, 257)]
    assert bpe_encode("aaabdaaabac", [(97, 97), (97, 98), (256, 257)]) == [258, 100, 258, 97, 99]


@pytest.mark.parametrize("text, n_merges, expected", [
    ("aaa", 1, [(97, 97)]),                      # (a, a) twice: overlapping pairs count
    ("abcabc zzzz", 1, [(122, 122)]),            # (z, z) three times beats (a, b) and (b, c) twice
    ("aaaaa", 2, [(97, 97), (256, 97)]),         # left to right: [Z, Z, a]; then (Z, a) < (Z, Z), each once
    ("ba ab", 1, [(32, 97)]),                    # every pair once: the smallest
    ("ab", 5, [(97, 98)]),                       # no pair left: stop early
    ("", 3, []),
])
def test_the_rules(text, n_merges, expected):
    assert train_bpe(text, n_merges) == expected


def test_the_reference_is_the_plain_loop():
    rng = random.Random(0)
    for _ in range(300):
        alphabet = rng.choice(["ab", "abc", "a", "ab é€😀", "xyz\n "])
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        n_merges = rng.randint(0, 30)
        merges, ids = plain_bpe(text, n_merges)
        assert merge_sequence(text.encode("utf-8"), n_merges=n_merges) == (ids, merges), (text, n_merges)
        assert bpe_encode(text, merges) == ids  # the training text encodes to training's last sequence
    text = sample_corpus().train
    assert train_bpe(text, 80) == plain_bpe(text, 80)[0]


def test_round_trip_is_exact_on_random_unicode():
    rng = random.Random(1)
    merges = train_bpe(random_unicode(rng, 400) + sample_corpus().train, 120)
    for n in [0, 1, 2, 5, 30, 200] * 20:
        text = random_unicode(rng, n)
        ids = bpe_encode(text, merges)
        assert all(0 <= t < 256 + len(merges) for t in ids)
        assert bpe_decode(ids, merges) == text


def test_decode_joins_the_bytes_before_reading_utf8():
    merges = [(110, 195)]                                     # 'n' + the first byte of 'é'
    assert bpe_encode("né", merges) == [256, 169]
    assert bpe_decode([256, 169], merges) == "né"
    assert bpe_decode([255], []) == "\ufffd"                  # not UTF-8: replaced, not an error
    assert token_bytes(merges)[256] == b"n\xc3"
    with pytest.raises(UnicodeEncodeError):
        bpe_encode("\ud800", merges)                          # a lone surrogate has no UTF-8 encoding


# ----------------------------------------------------------------------------- parity with tokenizers

def _gpt2_byte_of_char() -> dict[str, int]:
    """GPT-2's printable stand-in for each byte (``tokenizers``' ByteLevel alphabet) -> the byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + k): b for k, b in enumerate(others)}}


def _tokenizers_merges(text: str, n_merges: int):
    """``tokenizers``' byte-level BPE trained on ``text`` as one sequence: its merges as the course's
    id pairs, the trained tokenizer, and its token id -> the course's token id."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    tokenizer = tokenizers.Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=256 + n_merges, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([text], trainer)
    model = json.loads(tokenizer.to_str())["model"]
    byte_of = _gpt2_byte_of_char()
    ours = {bytes([b]): b for b in range(256)}                # the bytes of a token -> the course's id
    merges = []
    for k, merge in enumerate(model["merges"]):
        left, right = merge if isinstance(merge, list) else merge.split(" ")
        left, right = bytes(byte_of[c] for c in left), bytes(byte_of[c] for c in right)
        merges.append((ours[left], ours[right]))
        ours[left + right] = 256 + k
    course_id = {i: ours[bytes(byte_of[c] for c in token)] for token, i in model["vocab"].items()}
    return merges, tokenizer, course_id


def _first_diverging_tie(text: str, merges: list[tuple[int, int]]) -> int:
    """The first step at which the most frequent pairs are tied and the two tie rules pick differently
    (len(merges) if none): ``tokenizers`` orders bytes by their stand-ins' code points."""
    byte_of = _gpt2_byte_of_char()
    rank = {b: r for r, b in enumerate(byte_of[c] for c in sorted(byte_of))}  # merged tokens: ids in both
    ids = list(text.encode("utf-8"))
    for step, pair in enumerate(merges):
        counts = collections.Counter(zip(ids, ids[1:]))
        top = max(counts.values())
        tied = [p for p, count in counts.items() if count == top]
        if min(tied) != min(tied, key=lambda p: tuple(rank.get(t, t) for t in p)):
            return step
        ids = merge_pair(ids, pair, 256 + step)
    return len(merges)


@pytest.fixture(scope="module")
def training_text() -> str:
    try:
        return load_corpus().train
    except DataMissingError as error:
        pytest.skip(f"the Shakespeare data is not here: {error}")


def test_merges_and_encodings_equal_tokenizers_where_the_rules_coincide(training_text):
    text, n_merges = training_text[:50_000], 150
    ours = train_bpe(text, n_merges)
    theirs, tokenizer, course_id = _tokenizers_merges(text, n_merges)
    agree_until = _first_diverging_tie(text, ours)
    assert agree_until == n_merges, f"the tie rules part at merge {agree_until}: choose another text"
    assert ours == theirs
    # the same encodings, of text neither trained on, Unicode included
    sample = training_text[-3_000:] + "\nné 😀 日本語"
    assert [course_id[i] for i in tokenizer.encode(sample).ids] == bpe_encode(sample, ours)
