"""Benchmark of what carries the Transformer to sentences longer than any it was trained on.

    python -m benchmarks.length_generalisation                    # laptop profile: sinusoidal vs RoPE, 900
    updates each
    python -m benchmarks.length_generalisation --profile smoke    # seconds: checks the script, measures
    nothing

Notebook 05 compares RoPE with sinusoidal encodings at 300 updates only (what a notebook can afford
twice); this trains both with the full recipe of the profile (``course_lib.recipes``, the notebook's
hyperparameters) in one process, one after the other, and scores each on ``test`` and ``test_long``
(greedy decoding, every reference), with BLEU by source length. Each variant is trained once per
seed of ``SEEDS`` (a seed fixes the initial weights and the order of the batches): ``variants``
keeps seed 0's run in full, ``by_seed`` every run's scores, and ``rope_minus_sinusoidal`` the
difference seed by seed with its mean and standard error. Writes
``benchmarks/results/length_generalisation.json``; the RNN with attention of notebook 02 is the
model to beat on ``test_long`` (its recorded score is copied in when ``02_attention.json`` has it).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from benchmarks._notebook_run import machine, write_report

ROOT = Path(__file__).resolve().parents[1]
POSITIONALS = ("sinusoidal", "rope")


SEEDS = {"smoke": (0, 1), "laptop": (0, 1, 2), "gpu": (0, 1, 2)}


def run(profile: str = "laptop", positionals: tuple[str, ...] = POSITIONALS) -> dict:
    from course_lib.recipes import evaluate, fit, hparams, training_data
    from course_lib.text import BucketedBatches

    hp = hparams("transformer", profile)
    data = training_data(hp)  # the same sentences and vocabularies for every variant and seed
    report: dict = {"profile": profile, "machine": machine(), "hyperparameters": hp,
                    "seeds": list(SEEDS[profile]), "variants": {},
                    "by_seed": {positional: {} for positional in positionals}}
    for seed in SEEDS[profile]:
        for positional in positionals:
            started = time.perf_counter()
            trained = fit("transformer", hp={**hp, "seed": seed}, data=data, progress=False,
                          batches=BucketedBatches(data, max_tokens=hp["max_tokens"], seed=seed),
                          config={"positional": positional})
            train_minutes = (time.perf_counter() - started) / 60
            metrics = evaluate(trained)
            scores = {"updates": trained.history.step[-1] if trained.history.step else 0,
                      "train_minutes": round(train_minutes, 2), **metrics}
            report["by_seed"][positional][str(seed)] = {
                k: scores[k] for k in ("updates", "train_minutes", "bleu_test", "bleu_test_long")}
            if seed == 0:
                report["variants"][positional] = scores
            print(f"{positional}, seed {seed}: test {metrics['bleu_test']:.1f}, test_long "
                  f"{metrics['bleu_test_long']:.1f} after {train_minutes:.1f} min", file=sys.stderr)
    if set(POSITIONALS) <= set(positionals):
        report["rope_minus_sinusoidal"] = {
            key: paired_difference(report["by_seed"]["rope"], report["by_seed"]["sinusoidal"], key)
            for key in ("bleu_test", "bleu_test_long")}
    rnn = ROOT / "benchmarks" / "results" / "02_attention.json"
    if rnn.is_file():
        recorded = json.loads(rnn.read_text(encoding="utf-8"))
        report["attention_rnn_recorded"] = {
            k: recorded.get(k) for k in ("bleu_test", "bleu_test_long", "date")
        } | {"source": "benchmarks/results/02_attention.json"}
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


def paired_difference(runs: dict, baseline: dict, key: str) -> dict:
    """``runs[seed][key] - baseline[seed][key]`` seed by seed, their mean and its standard error."""
    differences = [runs[seed][key] - baseline[seed][key] for seed in runs]
    return {"by_seed": [round(d, 2) for d in differences], "mean": round(statistics.fmean(differences), 2),
            "standard_error": round(statistics.stdev(differences) / len(differences) ** 0.5, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="laptop", choices=["smoke", "laptop", "gpu"])
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    report = run(args.profile)
    path = write_report("length_generalisation", report, args.output)
    print(json.dumps(report["variants"], indent=1))
    print(f"written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
