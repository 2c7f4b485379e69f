"""Speed of course_lib's from-scratch BLEU against sacreBLEU on 3000 sentences (same process, same data).

    python -m benchmarks.bleu_speed
    python -m benchmarks.bleu_speed --repeats 21 --output /tmp/bleu_speed.json

Scores the first 3000 sentences of the generated corpus's ``test`` split (hypotheses: the first
reference with about 12 % of the words dropped, replaced or repeated; references: every reference
of the sentence) with ``course_lib.bleu.corpus_bleu`` and with sacreBLEU's ``BLEU.corpus_score``
(what ``sacrebleu.corpus_bleu`` calls), for both tokenizers, alternating the two implementations
``--repeats`` times (``_timing.alternate``) and keeping the median time of each. The scores must be identical
and
course_lib at most ``MAX_RATIO`` times slower; the script exits 1 otherwise. Results go to
``benchmarks/results/bleu_speed.json``.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from benchmarks._notebook_run import RESULTS, machine, write_report
from benchmarks._timing import alternate, medians

ROOT = Path(__file__).resolve().parents[1]

MAX_RATIO = 1.5  # course_lib's time / sacreBLEU's time allowed


def corpus(n: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """``n`` test sentences: corrupted first references as hypotheses, and all their references."""
    from course_lib.data import reference_sets

    references = reference_sets("test", n=n)
    words = sorted({w for refs in references for ref in refs for w in ref.split()})
    rng = random.Random(seed)
    hypotheses = []
    for refs in references:
        out = []
        for word in refs[0].split():
            u = rng.random()
            out += [] if u < 0.04 else [rng.choice(words)
                                        ] if u < 0.08 else [word, word] if u < 0.12 else [word]
        hypotheses.append(" ".join(out))
    return hypotheses, references


def run(n: int = 3000, repeats: int = 15) -> dict:
    import sacrebleu

    from course_lib.bleu import corpus_bleu, reference_streams

    hypotheses, references = corpus(n)
    streams = reference_streams(references)
    before = machine()
    load_before = before.pop("load_average")
    results = {}
    for tokenize in ("none", "13a"):
        # One BLEU object for all repeats: sacrebleu.corpus_bleu() would build a new 13a tokenizer
        # per call and lose its cache, which course_lib's module-level tokenizer keeps (unfair to
        # sacreBLEU). force=True: the corpus ends sentences with " ." on purpose; no warning.
        metric = sacrebleu.BLEU(tokenize=tokenize, force=True)
        times, scores = alternate({
            "course_lib": lambda: corpus_bleu(hypotheses, references, tokenize=tokenize),
            "sacrebleu": lambda: metric.corpus_score(hypotheses, streams).score,
        }, repeats)
        median = medians(times)
        results[tokenize] = {
            "score_course_lib": scores["course_lib"],
            "score_sacrebleu": scores["sacrebleu"],
            "identical": scores["course_lib"] == scores["sacrebleu"],
            "median_s_course_lib": round(median["course_lib"], 5),
            "median_s_sacrebleu": round(median["sacrebleu"], 5),
            "first_s_course_lib": round(times["course_lib"][0], 5),  # cold: tokenizer caches empty
            "first_s_sacrebleu": round(times["sacrebleu"][0], 5),
            "ratio": round(median["course_lib"] / median["sacrebleu"], 3),
        }
    return {
        "machine": {**before, "sacrebleu": sacrebleu.__version__, "load_average_before": load_before,
                    "load_average_after": machine()["load_average"]},
        "sentences": n,
        "references": sum(map(len, references)),
        "hypothesis_tokens": sum(len(h.split()) for h in hypotheses),
        "repeats": repeats,
        "max_ratio": MAX_RATIO,
        "results": results,
        "passed": all(r["identical"] and r["ratio"] <= MAX_RATIO for r in results.values()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--output", type=Path, default=None, help=f"default: {RESULTS / 'bleu_speed.json'}")
    args = parser.parse_args(argv)
    report = run(args.sentences, args.repeats)
    print(f"written to {write_report('bleu_speed', report, args.output)}", file=sys.stderr)
    for tokenize, r in report["results"].items():
        print(
            f"tok:{tokenize:<5} BLEU {r['score_course_lib']:.4f} vs {r['score_sacrebleu']:.4f} "
            f"({'identical' if r['identical'] else 'DIFFERENT'}); median "
            f"{r['median_s_course_lib'] * 1000:.0f} ms "
            f"vs {r['median_s_sacrebleu'] * 1000:.0f} ms: ratio {r['ratio']:.2f} (allowed {MAX_RATIO})")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
