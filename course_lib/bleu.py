"""BLEU (Papineni et al. 2002): the from-scratch reference of notebook 06, and sacreBLEU for reporting.

    corpus_bleu(["le chat dort ."], [["le chat dort .", "le chat sommeille ."]])   # 100.0
    bleu(hypotheses, references).signature                                      # sacreBLEU's, for tables

``references[i]`` lists the references of sentence ``i``; their number may vary per sentence.
Scores are on sacreBLEU's 0–100 scale.

The reference half (``ngrams`` … ``sentence_bleu``) equals ``sacrebleu.corpus_bleu`` /
``sacrebleu.sentence_bleu`` with the same tokenizer to floating-point rounding, smoothing included:
when an n-gram order has no match anywhere, sacreBLEU's default ``exp`` smoothing counts the k-th
such order as ``1 / (2**k * total_n)`` instead of 0 (Chen & Cherry 2014, method 3).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from course_lib import text

LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, None))  # source lengths in tokens, inclusive
TOKENIZERS = ("none", "13a")  # "none": split on whitespace; "13a": mteval-v13a, sacreBLEU's default
_TOKENIZER_13A = Tokenizer13a()


# --------------------------------------------------------------------------- from scratch
def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """How often each n-gram (a tuple of ``n`` tokens) occurs in ``tokens``; empty when ``n > len``.

    ``ngrams("the cat the cat".split(), 2) == Counter({("the", "cat"): 2, ("cat", "the"): 1})``
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    tokens = list(tokens)
    return Counter(zip(*(tokens[i:] for i in range(n))))  # zip stops at the shortest: len - n + 1 n-grams


def modified_precision(candidate: Sequence[str], references: Sequence[Sequence[str]],
                       n: int) -> tuple[int, int]:
    """``(clipped, total)``: the candidate's n-grams, each counted at most as often as it occurs in
    the *one* reference where it is most frequent, and the number of candidate n-grams."""
    counts = ngrams(candidate, n)
    most = Counter()
    for ref in references:
        most |= ngrams(ref, n)  # Counter union keeps the maximum count of each n-gram
    return sum(min(k, most[g]) for g, k in counts.items()), sum(counts.values())


def brevity_penalty(c: int, r: int) -> float:
    """``1`` when the candidate length ``c`` reaches the reference length ``r``, else ``exp(1 - r/c)``
    (0 for an empty candidate)."""
    if c >= r:
        return 1.0
    return math.exp(1 - r / c) if c > 0 else 0.0


def closest_reference_length(c: int, ref_lengths: Sequence[int]) -> int:
    """The reference length nearest to ``c``; on a tie the shorter one (as BLEU and sacreBLEU do)."""
    return min(ref_lengths, key=lambda r: (abs(r - c), r))


def _all_ngrams(tokens: list[str], max_n: int) -> Counter:
    """Every n-gram of order 1..max_n in one Counter (tuple length = order): one pass per sentence."""
    counts = Counter()
    for n in range(1, min(max_n, len(tokens)) + 1):
        counts.update(zip(*(tokens[i:] for i in range(n))))
    return counts


def tokenize_13a(line: str) -> str:
    """sacreBLEU's default tokenization (mteval-v13a, the WMT standard): punctuation and symbols
    become tokens of their own (``"dort."`` -> ``"dort ."``, but ``"3.5"`` stays), tokens joined by
    single spaces. Trailing whitespace is stripped first, as sacreBLEU does."""
    return _TOKENIZER_13A(line.rstrip())


def _tokenizer(tokenize: str):
    if tokenize not in TOKENIZERS:
        raise ValueError(f"tokenize must be one of {TOKENIZERS}, not {tokenize!r}")
    return str.split if tokenize == "none" else (lambda line: tokenize_13a(line).split())


def bleu_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4,
                    tokenize: str = "none") -> tuple[list[int], list[int], int, int]:
    """Corpus sums ``(clipped[n-1], totals[n-1], c, r)``: the sufficient statistics of BLEU."""
    _check_corpus(hypotheses, references)
    split = _tokenizer(tokenize)
    clipped, totals, c, r = [0] * max_n, [0] * max_n, 0, 0
    for hyp, refs in zip(hypotheses, references):
        hyp_tokens, ref_tokens = split(hyp), [split(ref) for ref in refs]
        most = _all_ngrams(ref_tokens[0], max_n)
        for other in ref_tokens[1:]:  # the most frequent count over the references, not their sum
            for g, k in _all_ngrams(other, max_n).items():
                if k > most[g]:
                    most[g] = k
        for g, k in _all_ngrams(hyp_tokens, max_n).items():
            totals[len(g) - 1] += k
            m = most.get(g)
            if m:
                clipped[len(g) - 1] += k if k < m else m
        c += len(hyp_tokens)
        r += closest_reference_length(len(hyp_tokens), [len(t) for t in ref_tokens])
    return clipped, totals, c, r


def bleu_from_statistics(clipped: Sequence[int], totals: Sequence[int], c: int, r: int,
                         effective_order: bool = False) -> float:
    """``BP · exp(mean_n log p_n)`` in percent, with sacreBLEU's ``exp`` smoothing of zero matches.

    ``effective_order`` (sentence level) averages only the orders the hypothesis is long enough to have.
    """
    if not any(clipped):
        return 0.0
    log_p, halvings = [], 1.0
    for k, total in zip(clipped, totals):
        if total == 0:  # too short for this order: BLEU is 0, unless only effective orders count
            if not effective_order:
                return 0.0
            break
        if k == 0:
            halvings *= 2
        log_p.append(math.log(100.0 * k / total if k else 100.0 / (halvings * total)))
    return brevity_penalty(c, r) * math.exp(sum(log_p) / len(log_p))


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4,
                tokenize: str = "none") -> float:
    """Corpus BLEU (0–100) of ``hypotheses[i]`` against the list ``references[i]``.

    Equals ``sacrebleu.corpus_bleu(hypotheses, reference_streams(references), tokenize=tokenize)``.
    """
    return bleu_from_statistics(*bleu_statistics(hypotheses, references, max_n, tokenize))


def sentence_bleu(hypothesis: str, references: Sequence[str], max_n: int = 4,
                  tokenize: str = "none") -> float:
    """Smoothed sentence BLEU (0–100), equal to ``sacrebleu.sentence_bleu(hypothesis, references,
    tokenize=tokenize)`` (``exp`` smoothing, effective order)."""
    return bleu_from_statistics(*bleu_statistics([hypothesis], [references], max_n, tokenize),
                                effective_order=True)


# --------------------------------------------------------------------------- reporting with sacreBLEU
def _check_corpus(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if len(hypotheses) != len(references):
        # sacrebleu zips them and would silently score only the shorter prefix.
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    if not hypotheses:
        raise ValueError("no sentences to score")
    if any(isinstance(refs, str) or len(refs) == 0 for refs in references):
        raise ValueError(
            "references[i] must be a non-empty list of strings: every sentence needs a reference")


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Per-sentence reference lists -> sacreBLEU's reference *streams* (stream ``k`` = the k-th
    reference of every sentence), with ``None`` where a sentence has fewer references: sacreBLEU
    drops ``None`` entries, whereas an empty string would count as a (zero-length) reference."""
    n_streams = max(len(refs) for refs in references)
    return [[refs[k] if k < len(refs) else None for refs in references] for k in range(n_streams)]


@dataclass
class BleuResult:
    """A corpus BLEU score and what it is made of."""

    score: float  # BLEU in [0, 100]
    signature: str  # sacrebleu's reproducibility signature, e.g. "nrefs:var|case:mixed|...|tok:13a|..."
    precisions: list[float]  # modified n-gram precisions (percent), n = 1..4
    bp: float  # brevity penalty in (0, 1]
    sys_len: int  # hypothesis tokens in the corpus
    ref_len: int  # effective reference tokens (closest reference length per sentence)
    n_sentences: int  # sentences scored

    def __str__(self) -> str:
        return f"BLEU {self.score:.2f} ({'/'.join(f'{p:.1f}' for p in self.precisions)}, BP {self.bp:.3f})"


def bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], tokenize: str = "13a") -> BleuResult:
    """Corpus BLEU of ``hypotheses`` (one string per sentence) against ``references[i]`` (a list),
    computed by sacreBLEU, with its signature."""
    _check_corpus(hypotheses, references)
    # force=True: the corpus is written with " ." on purpose, don't warn that it looks tokenized.
    metric = sacrebleu.BLEU(tokenize=tokenize, force=True)
    result = metric.corpus_score(list(hypotheses), reference_streams(references))
    return BleuResult(score=result.score, signature=str(metric.get_signature()),
                      precisions=list(result.precisions), bp=result.bp, sys_len=result.sys_len,
                      ref_len=result.ref_len, n_sentences=len(hypotheses))


def bucket_label(bucket: tuple[int, int | None]) -> str:
    """``(1, 10)`` -> ``"1–10"``, ``(31, None)`` -> ``"31+"``."""
    low, high = bucket
    return f"{low}+" if high is None else f"{low}–{high}"


def bleu_by_length(sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[Sequence[str]],
                   buckets: Sequence[tuple[int, int | None]] = LENGTH_BUCKETS,
                   tokenize: str = "13a") -> list[dict]:
    """Corpus BLEU of the sentences whose source length (``course_lib.text.tokenize`` tokens,
    punctuation included) falls in each bucket.

    Returns ``[{"bucket": "1–10", "n": sentences, "bleu": score or None when n == 0}, ...]``.
    """
    if not len(sources) == len(hypotheses) == len(references):
        raise ValueError(
            f"{len(sources)} sources, {len(hypotheses)} hypotheses, {len(references)} reference lists")
    lengths = [len(text.tokenize(s)) for s in sources]
    rows = []
    for low, high in buckets:
        picked = [i for i, n in enumerate(lengths) if low <= n and (high is None or n <= high)]
        score = bleu([hypotheses[i] for i in picked], [references[i] for i in picked],
                     tokenize=tokenize).score if picked else None
        rows.append({"bucket": bucket_label((low, high)), "n": len(picked), "bleu": score})
    return rows
