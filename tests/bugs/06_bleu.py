"""Plausible wrong implementations of notebook 06's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``Counter``, ``math`` and
the (correct) ``ngrams``, ``modified_precision`` and ``brevity_penalty`` exist.
"""
from tests.bugs import Bug

# ----------------------------------------------------------------------------- ngrams
_NGRAMS = '''
def ngrams(tokens, n):
    return {body}
'''

# ----------------------------------------------------------------------------- modified_precision
_PRECISION = '''
def modified_precision(candidate, references, n):
    counts = ngrams(candidate, n)
{body}
'''

# ----------------------------------------------------------------------------- brevity_penalty
_BP = '''
def brevity_penalty(c, r):
{body}
'''

# ----------------------------------------------------------------------------- corpus_bleu
# The correct statistics loop, with holes for {closest} (the reference length added to r) and
# {combine} (turning the pooled counts into the score).
_CLOSEST = "min((len(ref) for ref in ref_tokens), key=lambda length: (abs(length - len(hyp)), length))"
_SMOOTHED = '''
    if clipped[0] == 0 or 0 in totals:
        return 0.0
    log_sum, halvings = 0.0, 1
    for k, t in zip(clipped, totals):
        if k == 0:
            halvings *= 2
        log_sum += math.log(k / t if k else 1 / (halvings * t))
    return 100 * brevity_penalty(c, r) * math.exp(log_sum / max_n)'''
_CORPUS = '''
def corpus_bleu(hypotheses, references, max_n=4):
    clipped, totals = [0] * max_n, [0] * max_n
    c = r = 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = hypothesis.split()
        ref_tokens = [ref.split() for ref in refs]
        for n in range(1, max_n + 1):
            k, t = modified_precision(hyp, ref_tokens, n)
            clipped[n - 1] += k
            totals[n - 1] += t
        c += len(hyp)
        r += {closest}
{combine}
'''

# ----------------------------------------------------------------------------- sentence_bleu
_SENTENCE = '''
def sentence_bleu(hypothesis, references, max_n=4):
    hyp = hypothesis.split()
    ref_tokens = [ref.split() for ref in references]
    log_sum, halvings, used = 0.0, 1, 0
    for n in range(1, max_n + 1):
        k, t = modified_precision(hyp, ref_tokens, n)
        if t == 0:
            {on_empty_order}
        if n == 1 and k == 0:
            return 0.0
{zero_order}
        used += 1
    if used == 0:
        return 0.0
    r = {closest}
    return 100 * brevity_penalty(len(hyp), r) * math.exp(log_sum / used)
'''
_EXP_SMOOTHING = '''        if k == 0:
            halvings *= 2
        log_sum += math.log(k / t if k else 1 / (halvings * t))'''

BUGS = [
    # ngrams
    Bug("ngrams", "off by one: drops the last n-gram",
        _NGRAMS.format(body="Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n))")),
    Bug("ngrams", "counts each distinct n-gram once (a set)",
        _NGRAMS.format(body="Counter(set(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)))")),
    Bug("ngrams", "non-overlapping chunks instead of a sliding window",
        _NGRAMS.format(body="Counter(tuple(tokens[i:i + n]) for i in range(0, len(tokens) - n + 1, n))")),
    Bug("ngrams", "keys are joined strings, not tuples",
        _NGRAMS.format(body="Counter(' '.join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))")),
    Bug("ngrams", "includes the shorter n-grams at the end of the sentence",
        _NGRAMS.format(body="Counter(tuple(tokens[i:i + n]) for i in range(len(tokens)))")),

    # modified_precision
    Bug("modified_precision", "no clipping: every n-gram found in a reference counts in full",
        _PRECISION.format(body="""    found = set().union(*(ngrams(ref, n) for ref in references))
    return sum(k for g, k in counts.items() if g in found), sum(counts.values())""")),
    Bug("modified_precision", "clips by the sum over references instead of the max",
        _PRECISION.format(body="""    summed = Counter()
    for ref in references:
        summed.update(ngrams(ref, n))
    return sum(min(k, summed[g]) for g, k in counts.items()), sum(counts.values())""")),
    Bug("modified_precision", "clips against the first reference only",
        _PRECISION.format(body="""    first = ngrams(references[0], n)
    return sum(min(k, first[g]) for g, k in counts.items()), sum(counts.values())""")),
    Bug("modified_precision", "total counts distinct n-grams, not occurrences",
        _PRECISION.format(body="""    largest = Counter()
    for ref in references:
        largest |= ngrams(ref, n)
    return sum(min(k, largest[g]) for g, k in counts.items()), len(counts)""")),
    Bug("modified_precision", "clips by the min over references (must be in every reference)",
        _PRECISION.format(body="""    common = ngrams(references[0], n)
    for ref in references[1:]:
        common &= ngrams(ref, n)
    return sum(min(k, common[g]) for g, k in counts.items()), sum(counts.values())""")),

    # brevity_penalty
    Bug("brevity_penalty", "inverted ratio: exp(1 - c/r)",
        _BP.format(body="""    if c >= r:
        return 1.0
    return math.exp(1 - c / r) if c > 0 else 0.0""")),
    Bug("brevity_penalty", "also applied to outputs longer than the reference",
        _BP.format(body="""    return math.exp(1 - r / c) if c > 0 else 0.0""")),
    Bug("brevity_penalty", "linear c/r instead of exponential",
        _BP.format(body="""    return 1.0 if c >= r else c / r""")),
    Bug("brevity_penalty", "divides by zero on an empty output",
        _BP.format(body="""    return 1.0 if c >= r else math.exp(1 - r / c)""")),
    Bug("brevity_penalty", "penalises outputs of exactly the reference length",
        _BP.format(body="""    if c > r:
        return 1.0
    return math.exp(1 - (r + 1) / c) if c > 0 else 0.0""")),

    # corpus_bleu
    Bug("corpus_bleu", "averages sentence scores instead of pooling counts", '''
def corpus_bleu(hypotheses, references, max_n=4):
    def one(hypothesis, refs):
        hyp, ref_tokens = hypothesis.split(), [ref.split() for ref in refs]
        stats = [modified_precision(hyp, ref_tokens, n) for n in range(1, max_n + 1)]
        if stats[0][0] == 0 or any(t == 0 for _, t in stats):
            return 0.0
        log_sum, halvings = 0.0, 1
        for k, t in stats:
            if k == 0:
                halvings *= 2
            log_sum += math.log(k / t if k else 1 / (halvings * t))
        r = min((len(x) for x in ref_tokens), key=lambda length: (abs(length - len(hyp)), length))
        return 100 * brevity_penalty(len(hyp), r) * math.exp(log_sum / max_n)
    return sum(one(h, rs) for h, rs in zip(hypotheses, references)) / len(hypotheses)
'''),
    Bug("corpus_bleu", "arithmetic mean of the precisions instead of the geometric mean",
        _CORPUS.format(closest=_CLOSEST, combine='''
    if clipped[0] == 0 or 0 in totals:
        return 0.0
    return 100 * brevity_penalty(c, r) * sum(k / t for k, t in zip(clipped, totals)) / max_n''')),
    Bug("corpus_bleu", "the slides' formula: BP * exp(mean of the precisions)",
        _CORPUS.format(closest=_CLOSEST, combine='''
    if clipped[0] == 0 or 0 in totals:
        return 0.0
    return 100 * brevity_penalty(c, r) * math.exp(sum(k / t for k, t in zip(clipped, totals)) / max_n)''')),
    Bug("corpus_bleu", "shortest reference length instead of the closest",
        _CORPUS.format(closest="min(len(ref) for ref in ref_tokens)", combine=_SMOOTHED)),
    Bug("corpus_bleu", "closest reference length, but ties go to the longer one",
        _CORPUS.format(closest=_CLOSEST.replace("length))", "-length))"),
                       combine=_SMOOTHED)),
    Bug("corpus_bleu", "first reference's length instead of the closest",
        _CORPUS.format(closest="len(ref_tokens[0])", combine=_SMOOTHED)),
    Bug("corpus_bleu", "no smoothing: an order without matches makes BLEU 0",
        _CORPUS.format(closest=_CLOSEST, combine='''
    if 0 in clipped or 0 in totals:
        return 0.0
    return 100 * brevity_penalty(c, r) * math.exp(sum(math.log(k / t) for k, t in zip(clipped, totals)) / max_n)''')),
    Bug("corpus_bleu", "smoothing constant 1/(2 total) instead of doubling per order",
        _CORPUS.format(closest=_CLOSEST, combine='''
    if clipped[0] == 0 or 0 in totals:
        return 0.0
    log_sum = sum(math.log(k / t if k else 1 / (2 * t)) for k, t in zip(clipped, totals))
    return 100 * brevity_penalty(c, r) * math.exp(log_sum / max_n)''')),
    Bug("corpus_bleu", "score on a 0-1 scale instead of 0-100",
        _CORPUS.format(closest=_CLOSEST, combine=_SMOOTHED.replace("return 100 * ", "return "))),
    Bug("corpus_bleu", "off by one: leaves out the highest order (n = 1 .. max_n - 1)",
        _CORPUS.format(closest=_CLOSEST, combine=_SMOOTHED
                       .replace("zip(clipped, totals)", "zip(clipped[:-1], totals[:-1])")
                       .replace("log_sum / max_n", "log_sum / (max_n - 1)"))),

    # sentence_bleu
    Bug("sentence_bleu", "no smoothing: a zero order gives BLEU 0",
        _SENTENCE.format(on_empty_order="break", closest=_CLOSEST,
                         zero_order='''        if k == 0:
            return 0.0
        log_sum += math.log(k / t)''')),
    Bug("sentence_bleu", "no effective order: a short hypothesis scores 0",
        _SENTENCE.format(on_empty_order="return 0.0", closest=_CLOSEST, zero_order=_EXP_SMOOTHING)),
    Bug("sentence_bleu", "smoothing does not double from one zero order to the next",
        _SENTENCE.format(on_empty_order="break", closest=_CLOSEST,
                         zero_order='''        log_sum += math.log(k / t if k else 1 / (2 * t))''')),
    Bug("sentence_bleu", "add-one smoothing instead of exponential",
        _SENTENCE.format(on_empty_order="break", closest=_CLOSEST,
                         zero_order='''        log_sum += math.log((k + 1) / (t + 1) if n > 1 else k / t)''')),
    Bug("sentence_bleu", "brevity penalty from the shortest reference",
        _SENTENCE.format(on_empty_order="break", closest="min(len(ref) for ref in ref_tokens)",
                         zero_order=_EXP_SMOOTHING)),
]
