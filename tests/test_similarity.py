"""``course similarity`` on a tiny course: copies are flagged, independent solutions and stubs are not.

The assignment has one given cell and two answer cells (four BLEU helpers, a vocabulary builder).
Fixtures: ``ada`` wrote a solution, ``bob`` copied it with renamed variables, reordered functions and
new comments; ``carol``, ``dave`` and ``erin`` each wrote a correct solution of their own in another
style; ``fay`` and ``gus`` submitted the release untouched; ``hal``'s notebook is not JSON.
"""
from __future__ import annotations

import csv
import io
import math
import shutil
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from course_lib.instructor.course import assignments
from course_lib.instructor.similarity import DEFAULT_THRESHOLD, Pair, collect, compare, given_cells, similarity_report

from .toy_course import ROOT, cell

ASSIGNMENT = "sim"
GIVEN = '''import math
from collections import Counter


def closest_length(c, reference_lengths):
    """The reference length closest to c (the shorter one on a tie), as BLEU's brevity penalty uses it."""
    return min(reference_lengths, key=lambda r: (abs(r - c), r))'''

STUBS = {
    "answer_bleu": '''def ngram_counts(tokens, n):
    """Counter of the n-grams (tuples) of a list of tokens."""
    # YOUR CODE HERE
    raise NotImplementedError()


def clipped_precision(candidate, references, n):
    """(clipped n-gram matches, n-grams in candidate) of a candidate against its references."""
    # YOUR CODE HERE
    raise NotImplementedError()


def brevity_penalty(c, r):
    """1 when the candidate length c reaches the reference length r, else exp(1 - r / c)."""
    # YOUR CODE HERE
    raise NotImplementedError()


def sentence_bleu(candidate, references, max_n=4):
    """BLEU of one tokenized candidate against its tokenized references, uniform weights."""
    # YOUR CODE HERE
    raise NotImplementedError()''',
    "answer_vocab": '''def build_vocab(sentences, min_count=1):
    """token -> index: <pad>=0, <bos>=1, <eos>=2, <unk>=3, then the tokens seen at least min_count
    times, the most frequent first (ties alphabetical)."""
    # YOUR CODE HERE
    raise NotImplementedError()''',
}

ADA = {
    "answer_bleu": '''def ngram_counts(tokens, n):
    """Counter of the n-grams (tuples) of a list of tokens."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def clipped_precision(candidate, references, n):
    """(clipped n-gram matches, n-grams in candidate) of a candidate against its references."""
    counts = ngram_counts(candidate, n)
    max_ref = Counter()
    for ref in references:
        for gram, count in ngram_counts(ref, n).items():
            max_ref[gram] = max(max_ref[gram], count)  # a reference n-gram is used at most this often
    clipped = sum(min(count, max_ref[gram]) for gram, count in counts.items())
    return clipped, sum(counts.values())


def brevity_penalty(c, r):
    """1 when the candidate length c reaches the reference length r, else exp(1 - r / c)."""
    if c == 0:
        return 0.0
    return 1.0 if c >= r else math.exp(1 - r / c)


def sentence_bleu(candidate, references, max_n=4):
    """BLEU of one tokenized candidate against its tokenized references, uniform weights."""
    logs = []
    for n in range(1, max_n + 1):
        clipped, total = clipped_precision(candidate, references, n)
        if clipped == 0 or total == 0:
            return 0.0  # one empty precision makes the geometric mean zero
        logs.append(math.log(clipped / total))
    r = closest_length(len(candidate), [len(ref) for ref in references])
    return brevity_penalty(len(candidate), r) * math.exp(sum(logs) / max_n)''',
    "answer_vocab": '''def build_vocab(sentences, min_count=1):
    """token -> index: <pad>=0, <bos>=1, <eos>=2, <unk>=3, then the tokens seen at least min_count
    times, the most frequent first (ties alphabetical)."""
    counts = Counter(token for sentence in sentences for token in sentence.split())
    vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2, "<unk>": 3}
    for token, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        if count >= min_count:
            vocab[token] = len(vocab)
    return vocab''',
}

# ada's solution with every name a student may choose renamed, the functions in another order, and
# the comments and docstrings rewritten.
BOB = {
    "answer_bleu": '''def sentence_bleu(hyp, refs, max_n=4):
    """My BLEU."""
    log_precisions = []
    for order in range(1, max_n + 1):
        matched, possible = clipped_precision(hyp, refs, order)
        if matched == 0 or possible == 0:
            return 0.0  # zero precision -> zero score
        log_precisions.append(math.log(matched / possible))
    ref_len = closest_length(len(hyp), [len(x) for x in refs])
    return brevity_penalty(len(hyp), ref_len) * math.exp(sum(log_precisions) / max_n)


def brevity_penalty(c, r):
    # short candidates are penalised
    if c == 0:
        return 0.0
    return 1.0 if c >= r else math.exp(1 - r / c)


def clipped_precision(candidate, references, n):
    # count, then clip by the best reference
    hyp_counts = ngram_counts(candidate, n)
    best = Counter()
    for r in references:
        for g, k in ngram_counts(r, n).items():
            best[g] = max(best[g], k)
    matched = sum(min(k, best[g]) for g, k in hyp_counts.items())
    return matched, sum(hyp_counts.values())


def ngram_counts(words, n):
    # all windows of length n
    return Counter(tuple(words[j:j + n]) for j in range(len(words) - n + 1))''',
    "answer_vocab": '''def build_vocab(sentences, min_count=1):
    # special tokens first
    freq = Counter(w for line in sentences for w in line.split())
    table = {"<pad>": 0, "<bos>": 1, "<eos>": 2, "<unk>": 3}
    for w, c in sorted(freq.items(), key=lambda kv: (-kv[1], kv[0])):
        if c >= min_count:
            table[w] = len(table)
    return table''',
}

CAROL = {  # explicit loops and dictionaries
    "answer_bleu": '''def ngram_counts(tokens, n):
    counts = Counter()
    start = 0
    while start + n <= len(tokens):
        counts[tuple(tokens[start:start + n])] += 1
        start += 1
    return counts


def clipped_precision(candidate, references, n):
    reference_counts = [ngram_counts(reference, n) for reference in references]
    matches = 0
    candidate_counts = ngram_counts(candidate, n)
    for gram in candidate_counts:
        allowed = 0
        for counts in reference_counts:
            if counts[gram] > allowed:
                allowed = counts[gram]
        matches += min(candidate_counts[gram], allowed)
    total = max(len(candidate) - n + 1, 0)
    return matches, total


def brevity_penalty(c, r):
    if c > r:
        return 1.0
    if c == 0:
        return 0.0
    return math.exp(1.0 - float(r) / float(c))


def sentence_bleu(candidate, references, max_n=4):
    total_log = 0.0
    for order in range(1, max_n + 1):
        matches, count = clipped_precision(candidate, references, order)
        if count == 0 or matches == 0:
            return 0.0
        total_log = total_log + math.log(matches) - math.log(count)
    lengths = []
    for reference in references:
        lengths.append(len(reference))
    penalty = brevity_penalty(len(candidate), closest_length(len(candidate), lengths))
    return penalty * math.exp(total_log / max_n)''',
    "answer_vocab": '''def build_vocab(sentences, min_count=1):
    frequency = {}
    for sentence in sentences:
        for word in sentence.split():
            frequency[word] = frequency.get(word, 0) + 1
    kept = [word for word in frequency if frequency[word] >= min_count]
    kept.sort()
    kept.sort(key=lambda word: frequency[word], reverse=True)
    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    return {word: index for index, word in enumerate(specials + kept)}''',
}

DAVE = {  # zip-based n-grams, a product instead of a sum of logarithms
    "answer_bleu": '''def ngram_counts(tokens, n):
    return Counter(zip(*(tokens[k:] for k in range(n))))


def brevity_penalty(c, r):
    return 1.0 if c >= r else (math.exp(1 - r / c) if c else 0.0)


def clipped_precision(candidate, references, n):
    ours = ngram_counts(candidate, n)
    ceiling = Counter()
    for reference in references:
        ceiling |= ngram_counts(reference, n)  # Counter union keeps the maximum count
    return sum((ours & ceiling).values()), sum(ours.values())


def sentence_bleu(candidate, references, max_n=4):
    product = 1.0
    for n in range(1, max_n + 1):
        hits, size = clipped_precision(candidate, references, n)
        product *= hits / size if size else 0.0
    if product == 0.0:
        return 0.0
    nearest = closest_length(len(candidate), list(map(len, references)))
    return brevity_penalty(len(candidate), nearest) * product ** (1.0 / max_n)''',
    "answer_vocab": '''def build_vocab(sentences, min_count=1):
    seen = Counter()
    for s in sentences:
        seen.update(s.split())
    ranked = sorted((w for w in seen if seen[w] >= min_count), key=lambda w: (-seen[w], w))
    return dict(zip(["<pad>", "<bos>", "<eos>", "<unk>"] + ranked, range(4 + len(ranked))))''',
}

ERIN = {  # precision computed in one comprehension, geometric mean with fsum
    "answer_bleu": '''def ngram_counts(tokens, n):
    grams = [tuple(tokens[position:position + n]) for position in range(len(tokens) - n + 1)]
    return Counter(grams)


def clipped_precision(candidate, references, n):
    mine = ngram_counts(candidate, n)
    theirs = [ngram_counts(reference, n) for reference in references]
    clipped = sum(min(number, max(other[gram] for other in theirs)) for gram, number in mine.items())
    return clipped, sum(mine.values())


def sentence_bleu(candidate, references, max_n=4):
    precisions = [clipped_precision(candidate, references, n) for n in range(1, max_n + 1)]
    if any(hit == 0 or out_of == 0 for hit, out_of in precisions):
        return 0.0
    mean = math.exp(math.fsum(math.log(hit / out_of) for hit, out_of in precisions) / max_n)
    target = closest_length(len(candidate), [len(reference) for reference in references])
    return mean * brevity_penalty(len(candidate), target)


def brevity_penalty(c, r):
    return math.exp(min(0.0, 1.0 - r / c)) if c > 0 else 0.0''',
    "answer_vocab": '''def build_vocab(sentences, min_count=1):
    counter = Counter()
    for sentence in sentences:
        for token in sentence.split():
            counter[token] += 1
    vocab = dict(zip(("<pad>", "<bos>", "<eos>", "<unk>"), range(4)))
    for token, _ in sorted(counter.items(), key=lambda pair: (-pair[1], pair[0])):
        if counter[token] < min_count:
            continue
        vocab.setdefault(token, len(vocab))
    return vocab''',
}

INDEPENDENT = ("ada", "carol", "dave", "erin")


def _notebook(answers: dict[str, str], with_solution_markers: bool = False) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}})
    notebook.cells = [cell("markdown", "# BLEU and a vocabulary", "intro"),
                      cell("code", GIVEN, "given", {"grade": False, "solution": False, "locked": True,
                                                     "grade_id": "given"})]
    for grade_id, code in answers.items():
        cells = [cell("code", code, grade_id.replace("_", "-"),
                      {"grade": False, "solution": True, "locked": False, "grade_id": grade_id}),
                 cell("code", f"assert {grade_id.split('_')[1]} is not None", f"test-{grade_id}",
                      {"grade": True, "solution": False, "locked": True, "points": 1, "grade_id": f"test_{grade_id}"})]
        notebook.cells += cells
    return notebook


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("similarity")
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    for folder, answers in (("solutions", ADA), ("notebooks", STUBS)):
        path = root / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_notebook(answers), path)
    for student, answers in (("ada", ADA), ("bob", BOB), ("carol", CAROL), ("dave", DAVE), ("erin", ERIN),
                             ("fay", STUBS), ("gus", STUBS)):
        path = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_notebook(answers), path)
    broken = root / "submitted" / "hal" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"cells": [{"cell_type": "code", "source": "def sentence_bleu(')
    return root


@pytest.fixture(scope="module")
def pairs(course) -> dict[frozenset, Pair]:
    assignment = assignments(course, [ASSIGNMENT])[0]
    codes, _ = collect(assignment)
    return {frozenset((p.first, p.second)): p for p in compare(codes, given_cells(assignment))}


@pytest.mark.parametrize("answers", [BOB, CAROL, DAVE, ERIN], ids=["bob", "carol", "dave", "erin"])
def test_every_fixture_is_a_correct_solution(answers):
    """The independent solutions are independent *correct* solutions: they agree with ada's."""
    def run(code: dict[str, str]) -> dict:
        space: dict = {}
        exec(GIVEN + "\n\n" + "\n\n".join(code.values()), space)  # our own fixtures, not a student's
        return space

    reference, candidate = run(ADA), run(answers)
    cases = [("the cat sat on the mat".split(), ["the cat is on the mat".split(), "a cat sat on the mat".split()]),
             ("the the the the the the the".split(), ["the cat is on the mat".split()]),
             ("a cat".split(), ["the cat is on the mat".split()]),
             ("it is a guide to action which ensures that the military always obeys the commands of the party".split(),
              ["it is a guide to action that ensures that the military will forever heed party commands".split(),
               "it is the practical guide for the army always to heed the directions of the party".split()])]
    for hypothesis, references in cases:
        for name in ("clipped_precision",):
            for n in (1, 2):
                assert candidate[name](hypothesis, references, n) == reference[name](hypothesis, references, n)
        assert math.isclose(candidate["sentence_bleu"](hypothesis, references),
                            reference["sentence_bleu"](hypothesis, references), abs_tol=1e-12)
    sentences = ["the cat sat", "the dog sat", "a cat ran"]
    for min_count in (1, 2):
        assert candidate["build_vocab"](sentences, min_count) == reference["build_vocab"](sentences, min_count)
    assert Counter(candidate["ngram_counts"]("a b a b".split(), 2)) == Counter({("a", "b"): 2, ("b", "a"): 1})


def test_a_disguised_copy_is_flagged(pairs):
    assert pairs[frozenset(("ada", "bob"))].flagged(DEFAULT_THRESHOLD)


def test_independent_solutions_are_not_flagged(pairs):
    for first, second in ((a, b) for i, a in enumerate(INDEPENDENT) for b in INDEPENDENT[i + 1:]):
        assert not pairs[frozenset((first, second))].flagged(DEFAULT_THRESHOLD), (first, second)
    for student in ("carol", "dave", "erin"):  # nor is the copy like anyone but its original
        assert not pairs[frozenset(("bob", student))].flagged(DEFAULT_THRESHOLD)


def test_untouched_stubs_never_match(pairs):
    assert pairs[frozenset(("fay", "gus"))].score == 0
    for student in INDEPENDENT + ("bob",):
        assert pairs[frozenset(("fay", student))].score == 0


def test_the_fixtures_scores(pairs):
    """The scores the README quotes (copydetect 0.5.0); far from the threshold on either side."""
    assert pairs[frozenset(("ada", "bob"))].score > 0.9
    assert max(pairs[frozenset((a, b))].score for i, a in enumerate(INDEPENDENT) for b in INDEPENDENT[i + 1:]) < 0.35


def test_the_command_reports_flags_and_unreadable_notebooks(course, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    status = similarity_report(course, assignments(course, [ASSIGNMENT])[0], DEFAULT_THRESHOLD, tmp_path / "report",
                               stdout=out, stderr=err)
    assert status == 1
    flagged = [line for line in out.getvalue().splitlines() if line.endswith("FLAGGED")]
    assert len(flagged) == 1 and "ada" in flagged[0] and "bob" in flagged[0]
    assert "hal:" in err.getvalue() and "not valid JSON" in err.getvalue()
    page = (tmp_path / "report" / "index.html").read_text()
    assert "<mark>" in page and "hal" in page
    pairs = list(csv.DictReader((tmp_path / "report" / "pairs.csv").open()))
    assert len(pairs) == 21 and pairs[0]["flagged"] == "yes"  # 7 readable submissions, ada · bob first


def test_what_students_wrote_is_escaped(course, tmp_path):
    hostile = course / "submitted" / "<script>x" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    hostile.parent.mkdir(parents=True)
    code = dict(ADA, answer_vocab=ADA["answer_vocab"] + '\n\nNOTE = "</pre><script>alert(1)</script>\x1b[2J"')
    nbformat.write(_notebook(code), hostile)
    try:
        out = io.StringIO()
        similarity_report(course, assignments(course, [ASSIGNMENT])[0], DEFAULT_THRESHOLD, tmp_path / "report",
                          stdout=out, stderr=io.StringIO())
    finally:
        shutil.rmtree(course / "submitted" / "<script>x")
    page = (tmp_path / "report" / "index.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page and "\x1b" not in page
    assert "\x1b" not in out.getvalue()


def test_the_command_line(course, monkeypatch, capsys):
    from course_lib.instructor.cli import main

    monkeypatch.chdir(course)
    assert main(["similarity", ASSIGNMENT, "--threshold", "0.99"]) == 1  # hal's notebook is still unreadable
    captured = capsys.readouterr()
    assert "0 flagged at 0.99" in captured.out and "hal:" in captured.err
    assert (course / "build" / "similarity" / ASSIGNMENT / "index.html").is_file()
    assert main(["similarity", ASSIGNMENT, "--threshold", "2"]) == 2
