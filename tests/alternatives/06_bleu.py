"""Correct implementations of notebook 06's graded names in other styles; each must pass every graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``math``, ``np``,
``Counter`` and the graded names exist.
"""
from tests.alternatives import Alternative

ALTERNATIVES = [
    # ------------------------------------------------------------------ ngrams
    Alternative("ngrams", "zip of shifted copies", '''
def ngrams(tokens, n):
    tokens = list(tokens)
    return Counter(zip(*(tokens[i:] for i in range(n))))
'''),
    Alternative("ngrams", "explicit loop and Counter.update, type hints", '''
def ngrams(tokens: "list[str]", n: int) -> Counter:
    counts = Counter()
    for start in range(0, len(tokens) - n + 1):
        counts.update([tuple(tokens[start:start + n])])
    return counts
'''),
    Alternative("ngrams", "the standard library's codecs and datetime, a module-level table of results (issue 40)",
                '''
import codecs
import datetime

_SEEN = {}
_SINCE = datetime.date(2026, 1, 1)

def ngrams(tokens, n):
    tokens = [codecs.decode(codecs.encode(t, "utf-8"), "utf-8") for t in tokens]
    counts = Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    _SEEN[len(_SEEN)] = len(counts)
    return counts
'''),
    # ------------------------------------------------------------------ modified_precision
    Alternative("modified_precision", "the pair as a list, counts from a dict of maxima", '''
def modified_precision(candidate, references, n):
    caps = {}
    for reference in references:
        for gram, count in ngrams(reference, n).items():
            caps[gram] = max(caps.get(gram, 0), count)
    counts = ngrams(candidate, n)
    return [sum(min(count, caps.get(gram, 0)) for gram, count in counts.items()), sum(counts.values())]
'''),
    Alternative("modified_precision", "Counter union and intersection", '''
def modified_precision(candidate, references, n):
    counts = ngrams(candidate, n)
    most = Counter()
    for reference in references:
        most |= ngrams(reference, n)
    return sum((counts & most).values()), sum(counts.values())
'''),
    Alternative("modified_precision", "plain dicts, ints by hand, extra keyword", '''
def modified_precision(candidate, references, n, return_ratio=False):
    counts = {}
    for i in range(len(candidate) - n + 1):
        g = tuple(candidate[i:i + n])
        counts[g] = counts.get(g, 0) + 1
    clipped = 0
    for g, k in counts.items():
        best = max((sum(1 for i in range(len(r) - n + 1) if tuple(r[i:i + n]) == g) for r in references), default=0)
        clipped += min(k, best)
    total = sum(counts.values())
    if return_ratio:
        return clipped / total if total else 0.0
    return int(clipped), int(total)
'''),
    Alternative("modified_precision", "fractions, and a memo dict written from a nested function (issue 40)",
                '''
from fractions import Fraction

def modified_precision(candidate, references, n):
    memo = {}

    def counts_of(tokens):
        key = tuple(tokens)
        if key not in memo:
            memo[key] = ngrams(tokens, n)
        return memo[key]

    counts = counts_of(candidate)
    caps = Counter()
    for reference in references:
        caps |= counts_of(reference)
    clipped = Fraction(sum(min(k, caps[g]) for g, k in counts.items()))
    return int(clipped), sum(counts.values())
'''),
    # ------------------------------------------------------------------ brevity_penalty
    Alternative("brevity_penalty", "min(0, 1 - r/c) in one exponential", '''
def brevity_penalty(c, r):
    if c == 0:
        return 1.0 if r == 0 else 0.0
    return math.exp(min(0.0, 1.0 - r / c))
'''),
    Alternative("brevity_penalty", "numpy, returns a numpy float64", '''
def brevity_penalty(c, r):
    if c >= r:
        return np.float64(1.0)
    return np.exp(1.0 - r / c) if c > 0 else np.float64(0.0)
'''),
    # ------------------------------------------------------------------ corpus_bleu
    Alternative("corpus_bleu", "product of the precisions to the power 1/N; closest length by sorting", '''
def _closest(c, lengths):
    return sorted(lengths, key=lambda r: (abs(r - c), r))[0]

def corpus_bleu(hypotheses, references, max_n=4):
    stats = np.zeros((max_n, 2), dtype=np.int64)
    c = r = 0
    for hyp, refs in zip(hypotheses, references):
        h, rs = hyp.split(), [x.split() for x in refs]
        for n in range(1, max_n + 1):
            stats[n - 1] += modified_precision(h, rs, n)
        c, r = c + len(h), r + _closest(len(h), [len(x) for x in rs])
    if stats[0, 0] == 0 or (stats[:, 1] == 0).any():
        return 0.0
    precisions, smooth = [], 1.0
    for k, t in stats.tolist():
        if k == 0:
            smooth *= 2
        precisions.append(k / t if k else 1.0 / (smooth * t))
    return float(100.0 * brevity_penalty(c, r) * math.exp(sum(math.log(p) for p in precisions) / max_n))
'''),
    Alternative("corpus_bleu", "sacreBLEU's percent logs, statistics in a helper, extra keyword", '''
def _statistics(hypotheses, references, max_n):
    clipped, totals, c, r = [0] * max_n, [0] * max_n, 0, 0
    for hyp, refs in zip(hypotheses, references):
        h, rs = hyp.split(), [x.split() for x in refs]
        for n in range(max_n):
            k, t = modified_precision(h, rs, n + 1)
            clipped[n], totals[n] = clipped[n] + k, totals[n] + t
        c += len(h)
        r += min((abs(len(x) - len(h)), len(x)) for x in rs)[1]
    return clipped, totals, c, r

def corpus_bleu(hypotheses, references, max_n=4, smooth="exp"):
    clipped, totals, c, r = _statistics(hypotheses, references, max_n)
    if not any(clipped) or min(totals) == 0:
        return 0.0
    logs, factor = [], 1
    for k, t in zip(clipped, totals):
        if k == 0:
            factor *= 2
        logs.append(math.log(100.0 * k / t) if k else math.log(100.0 / (factor * t)))
    return brevity_penalty(c, r) * math.exp(sum(logs) / max_n)
'''),
    # ------------------------------------------------------------------ sentence_bleu
    Alternative("sentence_bleu", "precisions collected first, then effective order", '''
def sentence_bleu(hypothesis, references, max_n=4):
    h, rs = hypothesis.split(), [x.split() for x in references]
    stats = [modified_precision(h, rs, n) for n in range(1, max_n + 1)]
    stats = [(k, t) for k, t in stats if t > 0]           # effective order
    if not stats or stats[0][0] == 0:
        return 0.0
    halvings, logs = 1, []
    for k, t in stats:
        if k == 0:
            halvings *= 2
        logs.append(math.log(k / t) if k else -math.log(halvings * t))
    r = min(rs, key=lambda x: (abs(len(x) - len(h)), len(x)))
    return 100 * brevity_penalty(len(h), len(r)) * math.exp(sum(logs) / len(logs))
'''),
    Alternative("sentence_bleu", "numpy geometric mean, float() result", '''
def sentence_bleu(hypothesis, references, max_n=4):
    h, rs = hypothesis.split(), [x.split() for x in references]
    order = min(max_n, len(h))
    if order == 0:
        return 0.0
    k, t = np.array([modified_precision(h, rs, n) for n in range(1, order + 1)], dtype=np.float64).T
    if k[0] == 0:
        return 0.0
    smooth = np.cumprod(np.where(k == 0, 2.0, 1.0))
    p = np.where(k > 0, k / t, 1.0 / (smooth * t))
    lengths = sorted({len(x) for x in rs}, key=lambda length: (abs(length - len(h)), length))
    return float(100 * brevity_penalty(len(h), lengths[0]) * np.exp(np.log(p).mean()))
'''),

    # ------------------------------------------------------------------ best_unigram_precision (question 1)
    Alternative("best_unigram_precision", "the union of the references' Counters, capped at 1", '''
def best_unigram_precision(length, references):
    caps = Counter()
    for reference in references:
        caps |= Counter(reference)            # the larger count of each word
    return min(1.0, caps.total() / length)
'''),
    Alternative("best_unigram_precision", "builds the best candidate and scores it with modified_precision", '''
def best_unigram_precision(length: int, references: list) -> float:
    words = sorted({word for reference in references for word in reference})
    candidate = []
    for word in words:
        candidate += [word] * max(reference.count(word) for reference in references)
    candidate = candidate[:length]
    candidate += ["<nothing>" + "_" * max(map(len, words), default=0)] * (length - len(candidate))
    clipped, total = modified_precision(candidate, references, 1)
    return clipped / total
'''),
    # ------------------------------------------------------------------ best_possible_bleu (question 2)
    Alternative("best_possible_bleu", "the penalty written out, percent at the end", '''
def best_possible_bleu(c, r):
    if c < 4:
        return 0.0
    penalty = 1.0 if c >= r else math.exp(1 - r / c)
    return penalty * 100.0
'''),
    Alternative("best_possible_bleu", "geometric mean of four perfect precisions times brevity_penalty", '''
def best_possible_bleu(c, r, max_n=4):
    totals = [c - n + 1 for n in range(1, max_n + 1)]
    if min(totals) <= 0:
        return 0.0
    log_mean = sum(math.log(t / t) for t in totals) / max_n
    return 100 * brevity_penalty(c, r) * math.exp(log_mean)
'''),
]
