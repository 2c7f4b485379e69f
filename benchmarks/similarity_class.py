"""Benchmark of ``course similarity`` on a class of one assignment: seconds for the whole class.

    python -m benchmarks.similarity_class                                   # 200 students of
    07_language_model
    python -m benchmarks.similarity_class --students 60 --assignment 02_attention --rounds 1

The class: the students tests/test_similarity.py compares (the solution, a copy of it in every
disguise of tests/similarity_disguises.py, the alternatives catalogue's rounds, the untouched
release), then more up to the class size, each the solution or an alternatives round disguised by
two kinds drawn with a fixed seed. Two contenders compare the whole class's answer cells, taking
turns in each round (benchmarks/_timing.py): the comparison ``course similarity`` runs (canonical
forms, then their fingerprints, then every pair) and copydetect on the raw answer cells (what the
command ran before canonical forms), so that the ratio of their medians says what canonical forms
cost. Then the comparison runs once more, its two phases timed apart (the canonical forms of every
student; every pair's shares), and ``course similarity`` itself once on the submitted notebooks,
report included.
Recorded beside the times: how many of the disguised copies each contender flags against the
solution, and how many pairs with an independent solution in them. Writes
``benchmarks/results/similarity_class.json``.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

from benchmarks._notebook_run import RESULTS, machine, write_report
from benchmarks._timing import alternate, medians

ROOT = Path(__file__).resolve().parents[1]
# copydetect's settings in the command before canonical forms: 25 characters of filtered code per
# k-gram, every k-gram kept, and a flag only over 80 matched characters
COPYDETECT_NOISE, COPYDETECT_MIN_MATCHED = 25, 80


def make_class(assignment, students: int, seed: int = 0) -> dict[str, dict[str, str]]:
    """student -> grade id -> answer code: the test suite's class, then disguised answers up to
    ``students``."""
    from tests.similarity_disguises import DISGUISES
    from tests.test_similarity import RELEASE, real_class

    answers = real_class(assignment)
    originals = [name for name in answers if name != RELEASE and not name.startswith("copy-")]
    kinds = [kind for kind in DISGUISES if kind != "all-at-once"]
    rng = random.Random(seed)
    while len(answers) < students:
        original, chosen = rng.choice(originals), rng.sample(kinds, 2)
        disguised = {}
        for grade_id, code in answers[original].items():
            for kind in chosen:
                code = DISGUISES[kind](code)
            disguised[grade_id] = code
        answers[f"student-{len(answers):03d}-{original}-{'+'.join(chosen)}"] = disguised
    return answers


def copydetect_scores(codes: dict[str, dict[str, str]], given: list[str],
                      threshold: float) -> dict[frozenset, bool]:
    """The previous comparison: copydetect's fingerprints of each raw answer cell, the release's removed;
    pair -> flagged."""
    import numpy as np
    from copydetect import CodeFingerprint, compare_files

    def fingerprint(code: str, boilerplate=None):
        return CodeFingerprint("answer.py", COPYDETECT_NOISE, 1, boilerplate, language="python",
                               fp=io.StringIO(code))

    boilerplate = np.unique(np.array([h for code in given for h in fingerprint(code).hashes], dtype=np.int64))
    prints = {student: {g: fingerprint(code, boilerplate) for g, code in cells.items()}
              for student, cells in codes.items()}
    sizes = {student: sum(p.token_coverage for p in cells.values()) for student, cells in prints.items()}
    flagged = {}
    for first, second in combinations(sorted(prints), 2):
        first_matched = second_matched = 0.0
        for grade_id in prints[first].keys() & prints[second].keys():
            mine, theirs = prints[first][grade_id], prints[second][grade_id]
            _, (first_share, second_share), _ = compare_files(mine, theirs)
            first_matched += first_share * mine.token_coverage
            second_matched += second_share * theirs.token_coverage
        score = max(first_matched / sizes[first] if sizes[first] else 0.0,
                    second_matched / sizes[second] if sizes[second] else 0.0)
        flagged[frozenset((first, second))] = score >= threshold and \
            max(first_matched, second_matched) >= COPYDETECT_MIN_MATCHED
    return flagged


def _flag_counts(flagged: dict[frozenset, bool]) -> dict[str, str | int]:
    from tests.test_similarity import SOLUTION

    copies = [pair for pair in flagged if SOLUTION in pair and any(s.startswith("copy-") for s in pair)]
    independent = [pair for pair in flagged if any(s.startswith("alternatives-") for s in pair)
                   and not any(s.startswith(("copy-", "student-")) for s in pair)]
    return {"copies_flagged": f"{sum(flagged[p] for p in copies)}/{len(copies)}",
            "independent_pairs_flagged": f"{sum(flagged[p] for p in independent)}/{len(independent)}"}


def run(assignment_id: str, students: int, rounds: int) -> dict:
    from course_tools.classroom.canonical import tokens as canonical_tokens
    from course_tools.cli import main as course
    from course_tools.course import assignments
    from course_tools.publishing.sample import scratch_course
    from course_tools.classroom.similarity import (
        DEFAULT_THRESHOLD, compare, compare_fingerprints, fingerprinted, given_cells)
    from tests.test_similarity import write_class

    assignment = assignments(ROOT, [assignment_id])[0]
    codes, given = make_class(assignment, students), given_cells(assignment)

    def ours() -> dict[frozenset, bool]:
        canonical_tokens.statement_tokens.cache_clear(
        )  # every round starts cold, as one run of the command does
        return {frozenset((p.first, p.second)): p.flagged(DEFAULT_THRESHOLD) for p in compare(codes, given)}

    times, last = alternate(
        {"canonical": ours, "copydetect": lambda: copydetect_scores(codes, given, DEFAULT_THRESHOLD)},
        repeats=rounds)
    canonical_tokens.statement_tokens.cache_clear()
    started = time.perf_counter()
    prints = fingerprinted(codes, given)
    canonical_forms = time.perf_counter() - started
    compare_fingerprints(prints)
    pairs = time.perf_counter() - started - canonical_forms
    with tempfile.TemporaryDirectory() as scratch:
        course_root = Path(scratch) / "course"
        scratch_course(ROOT, course_root, [assignment])
        write_class(course_root, assignments(course_root, [assignment_id])[0], codes)
        canonical_tokens.statement_tokens.cache_clear()
        with contextlib.chdir(course_root), contextlib.redirect_stdout(io.StringIO()):
            started = time.perf_counter()
            course(["similarity", assignment_id])
            command = time.perf_counter() - started
    median = medians(times)
    return {"machine": machine(), "assignment": assignment_id, "students": len(codes),
            "pairs": len(codes) * (len(codes) - 1) // 2, "rounds": rounds,
            "seconds": times, "median_seconds": median,
            "ratio_canonical_to_copydetect": median["canonical"] / median["copydetect"],
            "canonical_forms_ms_per_student": 1000 * canonical_forms / len(codes),
            "pairs_seconds": pairs,
            "command_seconds": command,
            "flags": {name: _flag_counts(flagged) for name, flagged in last.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", default="07_language_model")
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="turns of each contender (default 3)")
    parser.add_argument("--output", type=Path, default=RESULTS / "similarity_class.json")
    arguments = parser.parse_args(argv)
    report = run(arguments.assignment, arguments.students, arguments.rounds)
    write_report("similarity_class", report, arguments.output)
    median = report["median_seconds"]
    print(f"{report['students']} students of {report['assignment']} ({report['pairs']} pairs), load "
          f"{report['machine']['load_average']}: canonical {median['canonical']:.1f} s "
          f"({report['canonical_forms_ms_per_student']:.0f} ms per student for the canonical forms, "
          f"{report['pairs_seconds']:.1f} s for the pairs), copydetect {median['copydetect']:.1f} s, ratio "
          f"{report['ratio_canonical_to_copydetect']:.2f}; the command, report included: "
          f"{report['command_seconds']:.1f} s; flags: {report['flags']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
