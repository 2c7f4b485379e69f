import pytest
import sacrebleu

from course_lib.bleu import LENGTH_BUCKETS, BleuResult, bleu, bleu_by_length

HYPS = ["le chat dort sur le tapis .", "un chien mange une pomme rouge .", "la femme n'aime pas le vin ."]
REFS_A = [
    "le chat dort sur le tapis .", "le chien mange une pomme rouge .", "la femme n'aime pas le vin blanc ."
]
REFS_B = ["le chat sommeille sur le tapis .", "un chien mange une pomme .", "la dame n'aime pas le vin ."]


def test_single_reference_matches_sacrebleu():
    result = bleu(HYPS, [[r] for r in REFS_A])
    expected = sacrebleu.corpus_bleu(HYPS, [REFS_A])
    assert isinstance(result, BleuResult)
    assert result.score == pytest.approx(expected.score)
    assert result.precisions == pytest.approx(expected.precisions)
    assert (result.bp, result.sys_len, result.ref_len) == (expected.bp, expected.sys_len, expected.ref_len)
    assert result.n_sentences == 3
    assert "nrefs:1" in result.signature and "tok:13a" in result.signature


def test_two_references_match_sacrebleu():
    result = bleu(HYPS, [[a, b] for a, b in zip(REFS_A, REFS_B)])
    assert result.score == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS_A, REFS_B]).score)
    assert result.score > bleu(HYPS, [[r] for r in REFS_A]).score  # more references, more matches


def test_variable_number_of_references():
    refs = [[REFS_A[0], REFS_B[0]], [REFS_A[1]], [REFS_A[2], REFS_B[2]]]
    result = bleu(HYPS, refs)
    expected = sacrebleu.corpus_bleu(HYPS, [REFS_A, [REFS_B[0], None, REFS_B[2]]])
    assert result.score == pytest.approx(expected.score)
    assert "nrefs:var" in result.signature



def test_missing_reference_is_not_an_empty_one():
    # sacrebleu drops None but scores "" as a zero-length reference: for a short hypothesis that
    # becomes the closest reference length and hides the brevity penalty.
    hyps, refs = ["le chat .",
                  "le chien dort ."], [["le chat dort sur le tapis ."], ["le chien dort .", "x y"]]
    result = bleu(hyps, refs)
    as_none = sacrebleu.corpus_bleu(hyps, [[refs[0][0], refs[1][0]], [None, refs[1][1]]])
    as_empty = sacrebleu.corpus_bleu(hyps, [[refs[0][0], refs[1][0]], ["", refs[1][1]]])
    assert (result.ref_len, result.bp) == (as_none.ref_len, as_none.bp)
    assert as_empty.ref_len < result.ref_len and result.bp < as_empty.bp == 1.0


def test_perfect_and_bad_input():
    assert bleu(["a b c d e ."], [["a b c d e ."]]).score == pytest.approx(100.0)
    with pytest.raises(ValueError):
        bleu(HYPS, [[r] for r in REFS_A[:2]])
    with pytest.raises(ValueError):
        bleu(HYPS, [[REFS_A[0]], [], [REFS_A[2]]])


def test_bleu_by_length_buckets():
    sources = ["a b c .", " ".join(["w"] * 15) + " .", " ".join(["w"] * 40) + " ."]
    refs = [[r] for r in REFS_A]
    rows = bleu_by_length(sources, HYPS, refs)
    assert [r["bucket"] for r in rows] == ["1–10", "11–20", "21–30", "31+"]
    assert [r["n"] for r in rows] == [1, 1, 0, 1]
    assert rows[2]["bleu"] is None  # empty bucket
    assert rows[0]["bleu"] == pytest.approx(bleu(HYPS[:1], refs[:1]).score)
    assert rows[3]["bleu"] == pytest.approx(bleu(HYPS[2:], refs[2:]).score)
    assert len(LENGTH_BUCKETS) == 4


def test_bleu_by_length_custom_buckets():
    rows = bleu_by_length(["a .", "a b c d ."], HYPS[:2], [[r] for r in REFS_A[:2]],
                          buckets=((1, 3), (4, None)))
    assert [(r["bucket"], r["n"]) for r in rows] == [("1–3", 1), ("4+", 1)]


# --------------------------------------------------------------------------- the from-scratch reference
import math
import random
from collections import Counter

from course_lib.bleu import (brevity_penalty, closest_reference_length, corpus_bleu, modified_precision,
                             ngrams, reference_streams, sentence_bleu, tokenize_13a)

REF1, REF2 = "the cat is on the mat".split(), "there is a cat on the mat".split()


def _random_corpus(seed, n_sentences=25, punctuation=False):
    """Random vocabularies, 0–60 tokens, 1–4 references (some empty), and hypotheses of every kind:
    noisy copies, empty, with no match, longer than every reference, random."""
    rng = random.Random(seed)
    vocab = sorted(
        {"".join(rng.choices("abcdef", k=rng.randint(1, 3)))
         for _ in range(rng.choice([3, 12, 80, 500]))})
    if punctuation:  # attached punctuation and symbols that 13a splits off (or keeps, like "3.5")
        vocab += ["le.", "chat,", "(x)", "a-b", "3.5", "&amp;", "l'homme", "dort!", '"q"']
    hyps, refs = [], []
    for _ in range(n_sentences):
        sentence_refs = [rng.choices(vocab, k=rng.randint(0, 60)) for _ in range(rng.randint(1, 4))]
        kind = rng.random()
        if kind < 0.1:
            hyp = []
        elif kind < 0.2:
            hyp = [w.upper() + "Z" for w in rng.choices(vocab, k=rng.randint(1, 30))]
        elif kind < 0.3:
            hyp = max(sentence_refs, key=len) + rng.choices(vocab, k=rng.randint(1, 10))
        elif kind < 0.75:
            hyp = [w for w in rng.choice(sentence_refs) if rng.random() > 0.15]
            hyp = [rng.choice(vocab) if rng.random() < 0.1 else w for w in hyp]
        else:
            hyp = rng.choices(vocab, k=rng.randint(0, 60))
        hyps.append(" ".join(hyp) + " " * rng.randint(0, 1))  # sacreBLEU strips trailing spaces
        refs.append([" ".join(r) for r in sentence_refs])
    return hyps, refs


def test_ngrams_counts_a_sliding_window():
    assert ngrams("the cat the cat on the mat".split(), 2) == Counter(
        {("the", "cat"): 2, ("cat", "the"): 1, ("cat", "on"): 1, ("on", "the"): 1, ("the", "mat"): 1})
    assert ngrams(["a", "b"], 2) == Counter({("a", "b"): 1})
    assert ngrams(["a", "b"], 3) == Counter()
    assert sum(ngrams(list("abcdefg"), 3).values()) == 5  # L - n + 1
    with pytest.raises(ValueError):
        ngrams(["a"], 0)


def test_modified_precision_on_the_lecture_examples():
    assert modified_precision("the the the the the the".split(), [REF1, REF2], 1) == (2, 6)
    assert modified_precision("the cat the cat on the mat".split(), [REF1, REF2], 2) == (4, 6)
    # the slide's reference 2 lacks "cat": then nothing credits "cat on"
    slide_ref2 = "there is a on the mat".split()
    assert modified_precision("the cat the cat on the mat".split(), [REF1, slide_ref2], 2) == (3, 6)
    # the max over references, not the sum: "a" occurs twice in one reference, never three times
    assert modified_precision("a a a".split(), [["a", "a"], ["a"]], 1) == (2, 3)
    assert modified_precision(["x"], [REF1], 2) == (0, 0)


def test_brevity_penalty_matches_sacrebleu():
    for c, r in [(0, 0), (0, 5), (1, 100), (5, 10), (9, 10), (10, 10), (11, 10), (300, 7)]:
        expected = sacrebleu.BLEU.compute_bleu([1] * 4, [1] * 4, sys_len=c, ref_len=r).bp
        assert brevity_penalty(c, r) == expected
    assert brevity_penalty(5, 10) == pytest.approx(math.exp(-1))


def test_closest_reference_length_prefers_the_shorter_on_ties():
    assert closest_reference_length(7, [6, 8]) == 6
    assert closest_reference_length(7, [8, 6]) == 6
    assert closest_reference_length(8, [4, 9]) == 9  # closest, not shortest
    assert closest_reference_length(0, [3, 0]) == 0


@pytest.mark.parametrize("seed", range(12))
def test_corpus_bleu_equals_sacrebleu_on_random_corpora(seed):
    hyps, refs = _random_corpus(seed)
    expected = sacrebleu.corpus_bleu(hyps, reference_streams(refs), tokenize="none", force=True).score
    assert abs(corpus_bleu(hyps, refs) - expected) <= 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_corpus_bleu_13a_equals_sacrebleu_default(seed):
    hyps, refs = _random_corpus(100 + seed, punctuation=True)
    expected = sacrebleu.corpus_bleu(hyps, reference_streams(refs), force=True).score
    assert abs(corpus_bleu(hyps, refs, tokenize="13a") - expected) <= 1e-9
    assert corpus_bleu(hyps, refs, tokenize="13a") == corpus_bleu(
        [tokenize_13a(h) for h in hyps], [[tokenize_13a(r) for r in rs] for rs in refs])


@pytest.mark.parametrize("max_n", [1, 2, 3, 5, 6])
def test_corpus_bleu_other_orders(max_n):
    hyps, refs = _random_corpus(200 + max_n)
    metric = sacrebleu.BLEU(tokenize="none", max_ngram_order=max_n, force=True)
    assert abs(
        corpus_bleu(hyps, refs, max_n=max_n) -
        metric.corpus_score(hyps, reference_streams(refs)).score) <= 1e-9


@pytest.mark.parametrize("hyps, refs", [
    (["", ""], [["a b"], ["c"]]),                               # empty hypotheses: 0
    (["q r s t"], [["a b c"]]),                                  # no match at all: 0
    (["x y z", "p q"], [["x y z w"], ["p q r s"]]),              # no 4-gram in any hypothesis: 0
    (["a b a b a b a b", "c d c d"], [["a b c d a"], ["c d e"]]),  # orders without matches: smoothed
    (["a b c d e f g"], [["a b c d e f", "a b c d e f g h"]]),  # length tie
    (["a b c"], [["", "a b c d"]]),                              # an empty string is a zero-length reference
])
def test_corpus_bleu_edge_cases(hyps, refs):
    expected = sacrebleu.corpus_bleu(hyps, reference_streams(refs), tokenize="none", force=True).score
    assert abs(corpus_bleu(hyps, refs) - expected) <= 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_sentence_bleu_equals_sacrebleu(seed):
    hyps, refs = _random_corpus(300 + seed, n_sentences=40)
    for hyp, rs in zip(hyps, refs):
        for tokenize in ("none", "13a"):
            expected = sacrebleu.sentence_bleu(hyp, rs, tokenize=tokenize).score
            assert abs(sentence_bleu(hyp, rs, tokenize=tokenize) - expected) <= 1e-9, (hyp, rs)


def test_sentence_bleu_uses_the_effective_order():
    # two tokens: judged on unigrams and bigrams only, so a perfect short match is 100, not 0
    assert sentence_bleu("le chat", ["le chat"]) == pytest.approx(100.0)
    assert corpus_bleu(["le chat"], [["le chat"]]) == 0.0


def test_reference_streams_pad_with_none():
    streams = reference_streams([["a", "b"], ["c"], ["d", "e", "f"]])
    assert streams == [["a", "c", "d"], ["b", None, "e"], [None, None, "f"]]


def test_corpus_bleu_rejects_bad_input():
    with pytest.raises(ValueError):
        corpus_bleu(["a"], [["a"], ["b"]])
    with pytest.raises(ValueError):
        corpus_bleu(["a"], ["a"])  # a string instead of a list of references
    with pytest.raises(ValueError):
        corpus_bleu(["a"], [["a"]], tokenize="intl")
