"""Corpus BLEU for reporting, computed by sacrebleu (notebook 05 rebuilds it from scratch).

    bleu(["le chat dort ."], [["le chat dort .", "le chat sommeille ."]]).score   # 100.0

``references[i]`` lists the references of sentence ``i``; their number may vary per sentence.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sacrebleu

from course_lib import text

LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, None))  # source lengths in tokens, inclusive


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
    """Corpus BLEU of ``hypotheses`` (one string per sentence) against ``references[i]`` (a list).

    sacrebleu wants reference *streams* (stream ``k`` = the k-th reference of every sentence), so
    the per-sentence lists are transposed, with ``None`` where a sentence has fewer references:
    sacrebleu drops ``None`` entries, whereas an empty string would count as a (zero-length) reference.
    """
    if len(hypotheses) != len(references):
        # sacrebleu zips them and would silently score only the shorter prefix.
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    if not hypotheses:
        raise ValueError("no sentences to score")
    if any(len(refs) == 0 for refs in references):
        raise ValueError("every sentence needs at least one reference")
    n_streams = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(n_streams)]
    # force=True: the corpus is written with " ." on purpose, don't warn that it looks tokenized.
    metric = sacrebleu.BLEU(tokenize=tokenize, force=True)
    result = metric.corpus_score(list(hypotheses), streams)
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
        raise ValueError(f"{len(sources)} sources, {len(hypotheses)} hypotheses, {len(references)} reference lists")
    lengths = [len(text.tokenize(s)) for s in sources]
    rows = []
    for low, high in buckets:
        picked = [i for i, n in enumerate(lengths) if low <= n and (high is None or n <= high)]
        score = bleu([hypotheses[i] for i in picked], [references[i] for i in picked],
                     tokenize=tokenize).score if picked else None
        rows.append({"bucket": bucket_label((low, high)), "n": len(picked), "bleu": score})
    return rows

