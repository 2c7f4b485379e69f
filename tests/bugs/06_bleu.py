"""Plausible wrong implementations of notebook 06's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``Counter``, ``math`` and
the (correct) ``ngrams``, ``modified_precision`` and ``brevity_penalty`` exist. ``TEMPLATES`` holds
the correct code of each target; every bug is its template with one mistake substituted in
(``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant

# ----------------------------------------------------------------------------- ngrams
_NGRAMS = '''
def ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
'''
_NGRAMS_BUGS = [
    Bug("ngrams", "off by one: drops the last n-gram", variant(_NGRAMS, "len(tokens) - n + 1", "len(tokens) - n")),
    Bug("ngrams", "counts each distinct n-gram once (a set)",
        variant(_NGRAMS, "Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))",
                "Counter(set(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)))")),
    Bug("ngrams", "non-overlapping chunks instead of a sliding window",
        variant(_NGRAMS, "range(len(tokens) - n + 1)", "range(0, len(tokens) - n + 1, n)")),
    Bug("ngrams", "keys are joined strings, not tuples", variant(_NGRAMS, "tuple(tokens[i:i + n])", "' '.join(tokens[i:i + n])")),
    Bug("ngrams", "includes the shorter n-grams at the end of the sentence",
        variant(_NGRAMS, "range(len(tokens) - n + 1)", "range(len(tokens))")),
    # contract edge: counts are Python ints (the grader compares their type)
    Bug("ngrams", "float counts (counts[g] += 1.0)",
        variant(_NGRAMS, "    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))\n",
                "    counts = Counter()\n    for i in range(len(tokens) - n + 1):\n"
                "        counts[tuple(tokens[i:i + n])] += 1.0\n    return counts\n")),
]

# ----------------------------------------------------------------------------- modified_precision
# ``largest |= other`` keeps, for each n-gram, the larger of the two counts: the max over references.
_PRECISION = '''
def modified_precision(candidate, references, n):
    counts = ngrams(candidate, n)
    largest = Counter()
    for ref in references:
        largest |= ngrams(ref, n)
    return sum(min(k, largest[g]) for g, k in counts.items()), sum(counts.values())
'''
_PRECISION_BUGS = [
    Bug("modified_precision", "no clipping: every n-gram found in a reference counts in full",
        variant(_PRECISION, "sum(min(k, largest[g]) for g, k in counts.items())",
                "sum(k for g, k in counts.items() if g in largest)")),
    Bug("modified_precision", "clips by the sum over references instead of the max",
        variant(_PRECISION, "largest |= ngrams(ref, n)", "largest += ngrams(ref, n)")),
    Bug("modified_precision", "clips against the first reference only",
        variant(_PRECISION, "for ref in references:", "for ref in references[:1]:")),
    Bug("modified_precision", "total counts distinct n-grams, not occurrences",
        variant(_PRECISION, "sum(counts.values())", "len(counts)")),
    Bug("modified_precision", "clips by the min over references (must be in every reference)",
        variant(variant(_PRECISION, "largest = Counter()", "largest = ngrams(references[0], n)"),
                "largest |= ngrams(ref, n)", "largest &= ngrams(ref, n)")),
    Bug("modified_precision", "float counts",
        variant(_PRECISION, "sum(counts.values())\n", "float(sum(counts.values()))\n")),
]

# ----------------------------------------------------------------------------- brevity_penalty
_BP = '''
def brevity_penalty(c, r):
    if c >= r:
        return 1.0
    if c == 0:
        return 0.0
    return math.exp(1 - r / c)
'''
_BP_BUGS = [
    Bug("brevity_penalty", "inverted ratio: exp(1 - c/r)", variant(_BP, "math.exp(1 - r / c)", "math.exp(1 - c / r)")),
    Bug("brevity_penalty", "also applied to outputs longer than the reference",
        variant(_BP, "    if c >= r:\n        return 1.0\n", "")),
    Bug("brevity_penalty", "linear c/r instead of exponential", variant(_BP, "return math.exp(1 - r / c)", "return c / r")),
    Bug("brevity_penalty", "divides by zero on an empty output", variant(_BP, "    if c == 0:\n        return 0.0\n", "")),
    Bug("brevity_penalty", "penalises outputs of exactly the reference length",
        variant(variant(_BP, "if c >= r:", "if c > r:"), "math.exp(1 - r / c)", "math.exp(1 - (r + 1) / c)")),
]

# ----------------------------------------------------------------------------- corpus_bleu
_CLOSEST = "min((len(ref) for ref in ref_tokens), key=lambda length: (abs(length - len(hyp)), length))"
# exponential smoothing of the pooled counts, then the geometric mean times the brevity penalty
_SMOOTHED = '''    log_sum, halvings = 0.0, 1
    for k, t in zip(clipped, totals):
        if k == 0:
            halvings *= 2
        log_sum += math.log(k / t if k else 1 / (halvings * t))
    return 100 * brevity_penalty(c, r) * math.exp(log_sum / max_n)
'''
_CORPUS_BODY = f'''    clipped, totals = [0] * max_n, [0] * max_n
    c = r = 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = hypothesis.split()
        ref_tokens = [ref.split() for ref in refs]
        for n in range(1, max_n + 1):
            k, t = modified_precision(hyp, ref_tokens, n)
            clipped[n - 1] += k
            totals[n - 1] += t
        c += len(hyp)
        r += {_CLOSEST}
    if clipped[0] == 0 or 0 in totals:
        return 0.0
{_SMOOTHED}'''
_CORPUS = "\ndef corpus_bleu(hypotheses, references, max_n=4):\n" + _CORPUS_BODY
_CORPUS_BUGS = [
    Bug("corpus_bleu", "averages sentence scores instead of pooling counts", variant(_CORPUS, _CORPUS_BODY, '''\
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
''')),
    Bug("corpus_bleu", "arithmetic mean of the precisions instead of the geometric mean",
        variant(_CORPUS, _SMOOTHED,
                "    return 100 * brevity_penalty(c, r) * sum(k / t for k, t in zip(clipped, totals)) / max_n\n")),
    Bug("corpus_bleu", "the slides' formula: BP * exp(mean of the precisions)",
        variant(_CORPUS, _SMOOTHED,
                "    return 100 * brevity_penalty(c, r) * math.exp(sum(k / t for k, t in zip(clipped, totals)) / max_n)\n")),
    Bug("corpus_bleu", "shortest reference length instead of the closest",
        variant(_CORPUS, _CLOSEST, "min(len(ref) for ref in ref_tokens)")),
    Bug("corpus_bleu", "closest reference length, but ties go to the longer one",
        variant(_CORPUS, "(abs(length - len(hyp)), length)", "(abs(length - len(hyp)), -length)")),
    Bug("corpus_bleu", "first reference's length instead of the closest", variant(_CORPUS, _CLOSEST, "len(ref_tokens[0])")),
    Bug("corpus_bleu", "no smoothing: an order without matches makes BLEU 0",
        variant(_CORPUS, "if clipped[0] == 0 or", "if 0 in clipped or")),
    Bug("corpus_bleu", "smoothing constant 1/(2 total) instead of doubling per order",
        variant(_CORPUS, "1 / (halvings * t)", "1 / (2 * t)")),
    Bug("corpus_bleu", "score on a 0-1 scale instead of 0-100",
        variant(_CORPUS, "return 100 * brevity_penalty(", "return brevity_penalty(")),
    Bug("corpus_bleu", "max_n ignored: pools four orders whatever it is given",
        variant(_CORPUS, "    clipped, totals = [0] * max_n, [0] * max_n\n",
                "    max_n = 4\n    clipped, totals = [0] * max_n, [0] * max_n\n")),
    Bug("corpus_bleu", "off by one: leaves out the highest order (n = 1 .. max_n - 1)",
        variant(variant(_CORPUS, "zip(clipped, totals)", "zip(clipped[:-1], totals[:-1])"),
                "log_sum / max_n", "log_sum / (max_n - 1)")),
]

# ----------------------------------------------------------------------------- sentence_bleu
_SENTENCE = f'''
def sentence_bleu(hypothesis, references, max_n=4):
    hyp = hypothesis.split()
    ref_tokens = [ref.split() for ref in references]
    log_sum, halvings, used = 0.0, 1, 0
    for n in range(1, max_n + 1):
        k, t = modified_precision(hyp, ref_tokens, n)
        if t == 0:
            break
        if n == 1 and k == 0:
            return 0.0
        if k == 0:
            halvings *= 2
        log_sum += math.log(k / t if k else 1 / (halvings * t))
        used += 1
    if used == 0:
        return 0.0
    r = {_CLOSEST}
    return 100 * brevity_penalty(len(hyp), r) * math.exp(log_sum / used)
'''
_SENTENCE_BUGS = [
    Bug("sentence_bleu", "no smoothing: a zero order gives BLEU 0", variant(_SENTENCE, "halvings *= 2", "return 0.0")),
    Bug("sentence_bleu", "no effective order: a short hypothesis scores 0",
        variant(_SENTENCE, "        if t == 0:\n            break\n", "        if t == 0:\n            return 0.0\n")),
    Bug("sentence_bleu", "smoothing does not double from one zero order to the next",
        variant(_SENTENCE, "1 / (halvings * t)", "1 / (2 * t)")),
    Bug("sentence_bleu", "add-one smoothing instead of exponential",
        variant(_SENTENCE, "math.log(k / t if k else 1 / (halvings * t))", "math.log((k + 1) / (t + 1) if n > 1 else k / t)")),
    Bug("sentence_bleu", "brevity penalty from the shortest reference",
        variant(_SENTENCE, _CLOSEST, "min(len(ref) for ref in ref_tokens)")),
    Bug("sentence_bleu", "max_n ignored: always four orders",
        variant(_SENTENCE, "    for n in range(1, max_n + 1):\n", "    for n in range(1, 5):\n")),
]

# ----------------------------------------------------------------------------- best_unigram_precision (question 1)
_BEST_UNIGRAM = '''
def best_unigram_precision(length, references):
    caps = Counter()
    for reference in references:
        for word, count in Counter(reference).items():
            caps[word] = max(caps[word], count)
    credit = sum(caps.values())
    return min(length, credit) / length
'''
_BEST_UNIGRAM_BUGS = [
    Bug("best_unigram_precision", "sum over the references instead of the max",
        variant(_BEST_UNIGRAM, "caps[word] = max(caps[word], count)", "caps[word] += count")),
    Bug("best_unigram_precision", "copies the longest reference: one reference's words only",
        variant(_BEST_UNIGRAM, "credit = sum(caps.values())", "credit = max(len(reference) for reference in references)")),
    Bug("best_unigram_precision", "no cap at the length: a precision above 1",
        variant(_BEST_UNIGRAM, "min(length, credit) / length", "credit / length")),
    Bug("best_unigram_precision", "each word credited once", variant(_BEST_UNIGRAM, "credit = sum(caps.values())", "credit = len(caps)")),
    Bug("best_unigram_precision", "the caps of the first reference only",
        variant(_BEST_UNIGRAM, "for reference in references:", "for reference in references[:1]:")),
]

# ----------------------------------------------------------------------------- best_possible_bleu (question 2)
_BEST = '''
def best_possible_bleu(c, r):
    if c < 4:
        return 0.0
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return 100 * bp
'''
_BEST_BUGS = [
    Bug("best_possible_bleu", "forgets the scale of 100", variant(_BEST, "return 100 * bp", "return bp")),
    Bug("best_possible_bleu", "penalises long outputs too", variant(_BEST, "1.0 if c >= r else math.exp(1 - r / c)",
                                                                    "math.exp(1 - max(c, r) / max(min(c, r), 1))")),
    Bug("best_possible_bleu", "inverted ratio in the penalty: exp(1 - c/r)", variant(_BEST, "math.exp(1 - r / c)", "math.exp(1 - c / r)")),
    Bug("best_possible_bleu", "only an empty output scores 0", variant(_BEST, "if c < 4:", "if c == 0:")),
    Bug("best_possible_bleu", "a 4-token output scores 0 too", variant(_BEST, "if c < 4:", "if c <= 4:")),
]

TEMPLATES = {"ngrams": _NGRAMS, "modified_precision": _PRECISION, "brevity_penalty": _BP, "corpus_bleu": _CORPUS,
             "sentence_bleu": _SENTENCE,
             "best_unigram_precision": _BEST_UNIGRAM, "best_possible_bleu": _BEST}

BUGS = _NGRAMS_BUGS + _PRECISION_BUGS + _BP_BUGS + _CORPUS_BUGS + _SENTENCE_BUGS + _BEST_UNIGRAM_BUGS + _BEST_BUGS
