"""Decoding speed of course_lib's Transformer: greedy and beam search, with and without the KV cache.

    python -m benchmarks.decoding                     # or: python -m benchmarks decoding
    python -m benchmarks.decoding --sentences 50 --repeats 3

Translates the first ``--sentences`` test sentences with each decoder in alternating rounds
(``_timing.alternate``) and reports sentences per second from the median time:

    greedy, KV cache     course_lib.transformer.greedy_decode(use_cache=True): one new token per step
    greedy, recompute    greedy_decode(use_cache=False): the whole prefix through the decoder every step
    beam 4, KV cache     course_lib.decoding.beam_search(beam_size=4) (it always decodes through a cache)

The model is notebook 05's checkpoint, ``05_transformer/transformer.pt`` in ``--runs`` (default: the
course's runs folder; ``python -m benchmarks`` passes the quality section's laptop runs when they
exist), read with ``course_lib.checkpoints.load_checkpoint``; without one, a freshly initialised model of
the profile's preset. An untrained model rarely emits <eos>, so each sentence runs to its length limit
(2 × source length + 10 tokens): the slowest case, and not the speed of a trained model. The report
says which model it was, and whether the cached and recomputed greedy translations are identical.
Writes ``benchmarks/results/decoding.json``.
"""
from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import torch

from benchmarks._notebook_run import machine, write_report
from benchmarks._timing import alternate, medians
from course_lib import recipes
from course_lib.bleu import bleu
from course_lib.data import reference_sets, translation_pairs
from course_lib.decoding import beam_search, translate
from course_lib.checkpoints import CheckpointError, load_checkpoint, runs_dir
from course_lib.train import pick_device
from course_lib.transformer import Transformer, TransformerConfig, greedy_decode

ROOT = Path(__file__).resolve().parents[1]

DECODERS = {
    "greedy, KV cache": partial(greedy_decode, use_cache=True),
    "greedy, recompute": partial(greedy_decode, use_cache=False),
    "beam 4, KV cache": partial(beam_search, beam_size=4),
}


def load_model(profile: str, runs: Path | None = None) -> tuple[Transformer, dict, str]:
    """(model, {"src": Vocab, "tgt": Vocab}, where it came from): notebook 05's checkpoint in ``runs``
    (default: the course's runs folder), else an untrained one."""
    recipe = recipes.RECIPES["transformer"]
    path = (runs or runs_dir()) / recipe.assignment / recipe.checkpoint
    try:
        ckpt = load_checkpoint(path)
        model = Transformer(TransformerConfig(**ckpt["config"]))
        load_checkpoint(path, model)  # checks that every weight fits before loading it
        extra = ckpt["extra"]
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        return model, ckpt["vocabs"], (f"trained: {shown} ({extra.get('profile', '?')} profile, "
                                       f"{extra.get('updates', '?')} updates)")
    except (CheckpointError, TypeError) as error:  # missing, corrupt, or from an older config class
        data = recipes.training_data(recipes.hparams("transformer", profile))  # for its vocabularies
        model, _ = recipes.build("transformer", len(data.src_vocab), len(data.tgt_vocab), profile)
        return model, {"src": data.src_vocab, "tgt": data.tgt_vocab}, (
            f"untrained: freshly initialised {profile} preset, decodes to the length limit ({error})")


def run(profile: str = "laptop", sentences: int = 100, repeats: int = 5, warmup: int = 1,
        budget_s: float = 60.0, max_len: int | None = None, runs: Path | None = None) -> dict:
    """Time every decoder on the same sentences; the report written to decoding.json."""
    device = pick_device()
    model, vocabs, origin = load_model(profile, runs)
    model.to(device).eval()
    sources = [en for en, _ in translation_pairs("test", n=sentences)]
    references = reference_sets("test", n=sentences)
    before = machine()
    contenders = {
        name: partial(translate, decode, model, sources, vocabs["src"], vocabs["tgt"], max_len=max_len,
                      device=device)
        for name, decode in DECODERS.items()
    }
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    times, translations = alternate(contenders, repeats, warmup, budget_s, sync=sync)
    median = medians(times)
    return {
        "machine": {**before, "device": str(device), "load_average_after": machine()["load_average"]},
        "model": origin,
        "parameters": sum(p.numel() for p in model.parameters()),
        "sentences": sentences,
        "max_len": max_len or "2 x source length + 10",
        "repeats": len(times["greedy, KV cache"]),
        "median_s": {name: round(s, 4) for name, s in median.items()},
        "sentences_per_s": {name: round(sentences / s, 2) for name, s in median.items()},
        "kv_cache_speedup_greedy": round(median["greedy, recompute"] / median["greedy, KV cache"], 3),
        "greedy_cache_identical": translations["greedy, KV cache"] == translations["greedy, recompute"],
        "bleu_test": {name: round(bleu(hyps, references).score, 2) for name, hyps in translations.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="laptop", choices=["smoke", "laptop", "gpu"],
                        help="the preset of the untrained model when there is no checkpoint (default laptop)")
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="rounds at most (default 5)")
    parser.add_argument("--budget", type=float, default=60.0, metavar="S",
                        help="seconds after which no new round starts (at least 3 rounds)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--runs", type=Path, default=None, metavar="DIR",
                        help="the runs folder holding 05_transformer/transformer.pt (default: the course's)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    report = run(args.profile, args.sentences, args.repeats, budget_s=args.budget, runs=args.runs)
    print(json.dumps(report, indent=2))
    print(f"written to {write_report('decoding', report, args.output)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
