"""Benchmark of what carries the Transformer to sentences longer than any it was trained on.

    python -m benchmarks.length_generalisation                    # laptop profile: sinusoidal vs RoPE, 900
    updates each
    python -m benchmarks.length_generalisation --profile smoke    # seconds: checks the script, measures
    nothing

Notebook 05 compares RoPE with sinusoidal encodings at 300 updates only (what a notebook can afford
twice); this trains both with the full recipe of the profile (``course_lib.recipes``, the notebook's
hyperparameters) in one process, one after the other, and scores each on ``test`` and ``test_long``
(greedy decoding, every reference), with BLEU by source length. Writes
``benchmarks/results/length_generalisation.json``; the RNN with attention of notebook 02 is the
model to beat on ``test_long`` (its recorded score is copied in when ``02_attention.json`` has it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks._notebook_run import machine, write_report

ROOT = Path(__file__).resolve().parents[1]
POSITIONALS = ("sinusoidal", "rope")


def run(profile: str = "laptop", positionals: tuple[str, ...] = POSITIONALS) -> dict:
    from course_lib.recipes import evaluate, fit, hparams, training_data

    hp = hparams("transformer", profile)
    data = training_data(hp)  # the same sentences and vocabularies for every variant
    report: dict = {"profile": profile, "machine": machine(), "hyperparameters": hp, "variants": {}}
    for positional in positionals:
        started = time.perf_counter()
        trained = fit("transformer", hp=hp, data=data, progress=False, config={"positional": positional})
        train_minutes = (time.perf_counter() - started) / 60
        metrics = evaluate(trained)
        report["variants"][positional] = {
            "updates": trained.history.step[-1] if trained.history.step else 0,
            "train_minutes": round(train_minutes, 2), **metrics}
        print(f"{positional}: test {metrics['bleu_test']:.1f}, test_long {metrics['bleu_test_long']:.1f} "
              f"after {train_minutes:.1f} min", file=sys.stderr)
    rnn = ROOT / "benchmarks" / "results" / "02_attention.json"
    if rnn.is_file():
        recorded = json.loads(rnn.read_text(encoding="utf-8"))
        report["attention_rnn_recorded"] = {
            k: recorded.get(k) for k in ("bleu_test", "bleu_test_long", "date")
        } | {"source": "benchmarks/results/02_attention.json"}
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


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
