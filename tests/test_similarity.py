"""``course similarity``: copies are flagged whatever cheap disguise they wear, independent solutions
and stubs are not.

A tiny course first: one given cell and two answer cells (four BLEU helpers, a vocabulary builder).
Fixtures: ``ada`` wrote a solution, ``bob`` copied it with renamed variables, reordered functions and
new comments; ``carol``, ``dave`` and ``erin`` each wrote a correct solution of their own in another
style; ``fay`` and ``gus`` submitted the release untouched; ``hal``'s notebook is not JSON.

Then every real assignment: the solution, a copy of it per disguise of tests/similarity_disguises.py
(each applied to every answer cell), the alternatives catalogue and the release (see ``real_class``).
"""
from __future__ import annotations

import ast
import contextlib
import csv
import io
import math
import shutil
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from course_tools.course import assignments
from course_tools.publishing.sample import scratch_course, submit
from course_tools.classroom.similarity import (
    DEFAULT_THRESHOLD,
    Pair,
    collect,
    compare,
    given_cells,
    similarity_report,
)
from course_tools.grading.submission import release_stubs, source_cells

from .alternatives import catalogue as alternatives
from .conftest import ASSIGNMENTS
from .similarity_disguises import DISGUISES
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
    notebook = nbformat.v4.new_notebook(
        metadata={
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
        }
    )
    notebook.cells = [
        cell("markdown", "# BLEU and a vocabulary", "intro"),
        cell(
            "code", GIVEN, "given", {"grade": False, "solution": False, "locked": True, "grade_id": "given"}
        ),
    ]
    for grade_id, code in answers.items():
        cells = [
            cell(
                "code",
                code,
                grade_id.replace("_", "-"),
                {"grade": False, "solution": True, "locked": False, "grade_id": grade_id},
            ),
            cell(
                "code",
                f"assert {grade_id.split('_')[1]} is not None",
                f"test-{grade_id}",
                {
                    "grade": True,
                    "solution": False,
                    "locked": True,
                    "points": 1,
                    "grade_id": f"test_{grade_id}",
                },
            ),
        ]
        notebook.cells += cells
    return notebook


def toy_course(root: Path, students: dict[str, dict[str, str]]) -> Path:
    """The tiny course in ``root``: ada's solution, the stubs released, each student's answers submitted."""
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    for folder, answers in (("solutions", ADA), ("notebooks", STUBS)):
        path = root / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_notebook(answers), path)
    for student, answers in students.items():
        path = root / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_notebook(answers), path)
    return root


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = toy_course(
        tmp_path_factory.mktemp("similarity"),
        {"ada": ADA, "bob": BOB, "carol": CAROL, "dave": DAVE, "erin": ERIN, "fay": STUBS, "gus": STUBS},
    )
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
    cases = [
        ("the cat sat on the mat".split(), ["the cat is on the mat".split(), "a cat sat on the mat".split()]),
        ("the the the the the the the".split(), ["the cat is on the mat".split()]),
        ("a cat".split(), ["the cat is on the mat".split()]),
        (
            ("it is a guide to action which ensures that the military always obeys "
             "the commands of the party").split(),
            [
                ("it is a guide to action that ensures that the military will forever heed "
                 "party commands").split(),
                "it is the practical guide for the army always to heed the directions of the party".split(),
            ],
        ),
    ]
    for hypothesis, references in cases:
        for name in ("clipped_precision",):
            for n in (1, 2):
                assert candidate[name](hypothesis, references, n) == reference[name](
                    hypothesis, references, n
                )
        assert math.isclose(
            candidate["sentence_bleu"](hypothesis, references),
            reference["sentence_bleu"](hypothesis, references),
            abs_tol=1e-12,
        )
    sentences = ["the cat sat", "the dog sat", "a cat ran"]
    for min_count in (1, 2):
        assert candidate["build_vocab"](sentences, min_count) == reference["build_vocab"](
            sentences, min_count
        )
    assert Counter(candidate["ngram_counts"]("a b a b".split(), 2)) == Counter({("a", "b"): 2, ("b", "a"): 1})


def test_a_disguised_copy_is_flagged(pairs):
    assert pairs[frozenset(("ada", "bob"))].flagged(DEFAULT_THRESHOLD)


def test_independent_solutions_are_not_flagged(pairs):
    for first, second in ((a, b) for i, a in enumerate(INDEPENDENT) for b in INDEPENDENT[i + 1 :]):
        assert not pairs[frozenset((first, second))].flagged(DEFAULT_THRESHOLD), (first, second)
    for student in ("carol", "dave", "erin"):  # nor is the copy like anyone but its original
        assert not pairs[frozenset(("bob", student))].flagged(DEFAULT_THRESHOLD)


def test_untouched_stubs_never_match(pairs):
    assert pairs[frozenset(("fay", "gus"))].score == 0
    for student in INDEPENDENT + ("bob",):
        assert pairs[frozenset(("fay", student))].score == 0


def test_the_fixtures_scores(pairs):
    """The scores docs/grading-and-security.md states: bob's copy is ada's answer in canonical form;
    the independent solutions stay far below the threshold."""
    assert pairs[frozenset(("ada", "bob"))].score == 1.0
    assert (
        max(pairs[frozenset((a, b))].score for i, a in enumerate(INDEPENDENT) for b in INDEPENDENT[i + 1 :])
        < 0.4
    )


def test_the_command_reports_flags_and_unreadable_notebooks(course, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    status = similarity_report(
        course,
        assignments(course, [ASSIGNMENT])[0],
        DEFAULT_THRESHOLD,
        tmp_path / "report",
        stdout=out,
        stderr=err,
    )
    assert status == 1
    flagged = [line for line in out.getvalue().splitlines() if line.endswith("FLAGGED")]
    assert len(flagged) == 1 and "ada" in flagged[0] and "bob" in flagged[0]
    assert "hal:" in err.getvalue() and "not valid JSON" in err.getvalue()
    page = (tmp_path / "report" / "index.html").read_text()
    assert "<mark>" in page and "hal" in page
    pairs = list(csv.DictReader((tmp_path / "report" / "pairs.csv").open()))
    assert len(pairs) == 21 and pairs[0]["flagged"] == "yes"  # 7 readable submissions, ada · bob first


def test_a_renamed_notebook_is_reported_as_autograde_reports_it(tmp_path):
    """Similarity compares what `course autograde` grades: the release's notebook name. A lone
    renamed copy is not a submission to either, and the reason is the grader's own words."""
    from course_tools.grading.submission import read_submission
    from course_tools.untrusted import Unreadable

    root = toy_course(tmp_path, {"ada": ADA, "bob": BOB})
    folder = root / "submitted" / "bob" / ASSIGNMENT
    (folder / f"{ASSIGNMENT}.ipynb").rename(folder / f"{ASSIGNMENT}-Copy1.ipynb")
    codes, problems = collect(assignments(root, [ASSIGNMENT])[0])
    with pytest.raises(Unreadable) as graded:
        read_submission(folder / f"{ASSIGNMENT}.ipynb", root=folder)
    assert set(codes) == {"ada"}
    assert len(problems) == 1 and problems[0].startswith("bob") and str(graded.value) in problems[0]
    assert f"{ASSIGNMENT}-Copy1.ipynb" in problems[0]


def test_what_students_wrote_is_escaped(course, tmp_path):
    hostile = course / "submitted" / "<script>x" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    hostile.parent.mkdir(parents=True)
    code = dict(ADA, answer_vocab=ADA["answer_vocab"] + '\n\nNOTE = "</pre><script>alert(1)</script>\x1b[2J"')
    nbformat.write(_notebook(code), hostile)
    try:
        out = io.StringIO()
        similarity_report(
            course,
            assignments(course, [ASSIGNMENT])[0],
            DEFAULT_THRESHOLD,
            tmp_path / "report",
            stdout=out,
            stderr=io.StringIO(),
        )
    finally:
        shutil.rmtree(course / "submitted" / "<script>x")
    page = (tmp_path / "report" / "index.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;" in page and "\x1b" not in page
    assert "\x1b" not in out.getvalue()


def test_the_command_line(course, monkeypatch, capsys):
    from course_tools.cli import main

    monkeypatch.chdir(course)
    assert main(["similarity", ASSIGNMENT, "--threshold", "0.99"]) == 1
    captured = capsys.readouterr()
    # the copy is the same in canonical form
    assert "1 flagged at 0.99" in captured.out and "hal:" in captured.err
    assert (course / "build" / "similarity" / ASSIGNMENT / "index.html").is_file()
    assert main(["similarity", ASSIGNMENT, "--threshold", "2"]) == 2


# --------------------------------------------------------------------------- the real assignments
# Every assignment of the course, graded by `course similarity` in a scratch course: the instructor's
# solution, one copy of it per disguise (tests/similarity_disguises.py, applied to every answer cell),
# the alternatives catalogue (round i answers every exercise that has an i-th alternative with it:
# independent correct solutions, none repeated in another round) and the untouched release.
SOLUTION, RELEASE = "solution", "release"


def _copy(kind: str) -> str:
    return f"copy-{kind}"


def solution_answers(assignment) -> dict[str, str]:
    """grade id -> the instructor's answer cell (its solution markers are comments)."""
    return {c.grade_id: c.source for c in source_cells(assignment.source) if c.kind == "solution"}


def real_class(assignment) -> dict[str, dict[str, str]]:
    """student -> grade id -> the code of that answer cell (a missing grade id keeps the release's stub)."""
    cells = [c for c in source_cells(assignment.source) if c.kind == "solution"]
    stubs = release_stubs(assignment.release)
    solution = solution_answers(assignment)
    students = {SOLUTION: solution, RELEASE: {}}
    for kind, disguise in DISGUISES.items():
        students[_copy(kind)] = {grade_id: disguise(code) for grade_id, code in solution.items()}
    by_name: dict[str, list[str]] = {}
    for alternative in alternatives(assignment.id):
        by_name.setdefault(alternative.target, []).append(alternative.code)
    for i in range(max((len(codes) for codes in by_name.values()), default=0)):
        students[f"alternatives-{i + 1}"] = {
            c.grade_id: "\n\n".join(
                [stubs[c.grade_id], *(by_name[n][i] for n in c.names if i < len(by_name.get(n, ())))]
            )
            for c in cells
        }
    return students


def write_class(course: Path, assignment, students: dict[str, dict[str, str]]) -> None:
    for student, answers in students.items():
        notebook = nbformat.read(assignment.release, as_version=4)
        for notebook_cell in notebook.cells:
            grade_id = notebook_cell.metadata.get("nbgrader", {}).get("grade_id")
            if notebook_cell.metadata.get("nbgrader", {}).get("solution") and grade_id in answers:
                notebook_cell.source = answers[grade_id]
        nbformat.write(notebook, submit(course, student, assignment.id, assignment.release))


def run_similarity(course: Path, assignment_id: str) -> dict[frozenset, dict[str, str]]:
    """``course similarity ASSIGNMENT`` in ``course``: its pairs.csv rows by pair."""
    from course_tools.cli import main

    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.chdir(course)
        main(["similarity", assignment_id])
    rows = csv.DictReader(
        (course / "build" / "similarity" / assignment_id / "pairs.csv").open(encoding="utf-8")
    )
    return {frozenset((row["student_a"], row["student_b"])): row for row in rows}


@pytest.fixture(scope="module", params=[pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def real_pairs(request, tmp_path_factory) -> tuple[str, dict[frozenset, dict[str, str]]]:
    assignment = request.param
    course = tmp_path_factory.mktemp(f"similarity-{assignment.id}")
    scratch_course(ROOT, course, [assignment])
    local = assignments(course, [assignment.id])[0]
    write_class(course, local, real_class(local))
    return assignment.id, run_similarity(course, assignment.id)


@pytest.mark.parametrize("kind", DISGUISES)
def test_a_disguised_copy_of_a_real_solution_is_flagged(real_pairs, kind):
    assignment_id, pairs = real_pairs
    pair = pairs[frozenset((SOLUTION, _copy(kind)))]
    assert pair["flagged"] == "yes", f"{assignment_id}: the {kind} copy scores {pair['score']}"


def test_independent_real_solutions_are_not_flagged(real_pairs):
    """The alternatives catalogue's rounds against the solution, each other and every disguised copy."""
    assignment_id, pairs = real_pairs
    flagged = [
        f"{' · '.join(sorted(pair))}: {row['score']}"
        for pair, row in pairs.items()
        if row["flagged"] and any(student.startswith("alternatives-") for student in pair)
    ]
    assert not flagged, f"{assignment_id}: {flagged}"


def test_the_untouched_release_matches_nobody(real_pairs):
    assignment_id, pairs = real_pairs
    assert {row["score"] for pair, row in pairs.items() if RELEASE in pair} == {"0.000"}, assignment_id


def _run_answers(assignment, answers: dict[str, str]) -> dict:
    """The namespace after the release's imports and then every answer cell, in order, have run."""
    imports = []
    for code in given_cells(assignment):
        try:
            tree = ast.parse("\n".join("" if line.startswith("%") else line for line in code.split("\n")))
        except SyntaxError:
            continue
        imports += [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    space: dict = {}
    exec(compile(ast.Module(imports, []), "<imports>", "exec"), space)
    for code in answers.values():  # the course's solution, disguised by our own fixtures
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, space)
    return space


def _probe_attention(space: dict) -> list:
    torch = space["torch"]
    torch.manual_seed(0)
    x, mask = torch.randn(2, 3, 5), torch.rand(2, 3, 5) > 0.3
    mask[0, 0] = False
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    torch.manual_seed(1)
    additive = space["AdditiveAttention"](4, 4, 7)
    return [
        space["softmax"](x),
        space["masked_softmax"](x, mask),
        *space["attention_lookup"](q[0, 0], k[0], v[0]),
        *space["scaled_dot_product_attention"](q, k, v, mask),
        space["dot_product_score_std"](64),
        space["recency_window"](0.5, 20, 0.9),
        *additive(q, k, v, mask),
    ]


def _probe_bleu(space: dict) -> list:
    hypothesis, references = (
        "the cat sat on the mat".split(),
        ["the cat is on the mat".split(), "a cat sat".split()],
    )
    return [
        space["ngrams"](hypothesis, 2),
        space["modified_precision"](hypothesis, references, 2),
        space["best_unigram_precision"](7, references),
        space["brevity_penalty"](5, 7),
        space["brevity_penalty"](0, 3),
        space["best_possible_bleu"](10, 12),
        space["corpus_bleu"](
            ["the cat sat on the mat", "a dog"], [["the cat is on the mat"], ["a dog runs"]]
        ),
        space["sentence_bleu"]("the cat sat on the mat", ["the cat is on the mat", "a cat sat on a mat"]),
    ]


PROBES = {"02_attention": _probe_attention, "06_bleu": _probe_bleu}


@pytest.mark.parametrize("kind", DISGUISES)
@pytest.mark.parametrize("assignment_id", PROBES)
def test_a_disguise_computes_what_the_original_computes(assignment_id, kind):
    """The disguises are copies a student could hand in: the disguised answers give the solution's results."""
    import torch

    assignment = assignments(ROOT, [assignment_id])[0]
    solution = solution_answers(assignment)
    disguised = {grade_id: DISGUISES[kind](code) for grade_id, code in solution.items()}
    assert disguised != solution
    probe = PROBES[assignment_id]
    torch.testing.assert_close(
        probe(_run_answers(assignment, disguised)), probe(_run_answers(assignment, solution))
    )


def test_answers_that_are_not_plain_python_are_compared_and_reported(tmp_path):
    """A cell Python cannot parse is compared as raw tokens; IPython magics are set aside; a
    pathological cell (a helper of 1500 chained statements, an expression nested too deep for Python
    to parse) breaks nothing but its own comparison."""
    no_colon = ADA["answer_bleu"].replace("def brevity_penalty(c, r):", "def brevity_penalty(c, r)")
    broken = dict(ADA, answer_bleu=no_colon)
    renamed_broken = {
        grade_id: code.replace("candidate", "hyp").replace("references", "refs") + "\n# mine"
        for grade_id, code in broken.items()
    }
    chain = (
        "\n\ndef chain(x):\n    y0 = x\n"
        + "".join(f"    y{i + 1} = y{i} * 2 + 1\n" for i in range(1500))
        + "    return y1500"
    )
    called = CAROL["answer_bleu"].replace(
        "def brevity_penalty(c, r):\n", "def brevity_penalty(c, r):\n    chain(c)\n"
    )
    students = {
        "ada": ADA,
        "ivy": broken,
        "jay": renamed_broken,
        "carol": CAROL,
        "kim": dict(CAROL, answer_bleu=called + chain),
        "lee": dict(CAROL, answer_vocab=CAROL["answer_vocab"] + "\n\nDEEP = " + " + ".join(["1"] * 6000)),
        "mia": {grade_id: f"%time\n!echo hi\n{code}" for grade_id, code in ADA.items()},
    }
    root = toy_course(tmp_path, students)
    pairs = run_similarity(root, ASSIGNMENT)
    assert pairs[frozenset(("ivy", "jay"))]["flagged"] == "yes"  # the same unparseable cell, renamed
    assert pairs[frozenset(("ada", "mia"))]["score"] == "1.000"
    assert len(pairs) == 21  # every submission compared with every other
    for padded in ("kim", "lee"):  # carol's answers, one cell padded with a pathological part
        assert pairs[frozenset(("carol", padded))]["flagged"] == "yes"
