import pytest
import sacrebleu

from course_lib.bleu import LENGTH_BUCKETS, BleuResult, bleu, bleu_by_length

HYPS = ["le chat dort sur le tapis .", "un chien mange une pomme rouge .", "la femme n'aime pas le vin ."]
REFS_A = ["le chat dort sur le tapis .", "le chien mange une pomme rouge .", "la femme n'aime pas le vin blanc ."]
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
    hyps, refs = ["le chat .", "le chien dort ."], [["le chat dort sur le tapis ."], ["le chien dort .", "x y"]]
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
    rows = bleu_by_length(["a .", "a b c d ."], HYPS[:2], [[r] for r in REFS_A[:2]], buckets=((1, 3), (4, None)))
    assert [(r["bucket"], r["n"]) for r in rows] == [("1–3", 1), ("4+", 1)]
