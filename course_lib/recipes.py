"""How each translation model of the course is built, trained and evaluated, in one place.

``course train``, the data-parallel entry point (``torchrun -m course_lib.distributed``) and notebook 05
use these recipes, so that a model trained from the shell is the model the notebook trains::

    run = fit("transformer")                  # this profile's preset and hyperparameters
    metrics = evaluate(run)                   # BLEU on test and test_long
    save(run, metrics)                        # checkpoint + results.json where the notebooks put them

Each recipe names its model's module, per-profile presets, loss and decoding function; ``HPARAMS``
keeps one small table per model and profile, the same numbers as its notebook's table.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

import course_lib
from course_lib.bleu import bleu, bleu_by_length
from course_lib.data import reference_sets, translation_pairs
from course_lib.decoding import translate
from course_lib.text import PAD_ID, BucketedBatches, TranslationData, Vocab
from course_lib.checkpoints import record_results, runs_dir, save_checkpoint
from course_lib.train import History, linear_warmup, pick_device, train

# n_train: training pairs; max_tokens: padded tokens per batch (per process under DDP); steps: the
# training, in updates (the schedule is defined over them, so the model does not depend on the speed;
# each laptop notebook is sized for at most 5 minutes on 2 idle CPU cores, measured in
# benchmarks/README.md); n_test/n_long: sentences of test/test_long scored with BLEU. No profile
# has a time limit: `course train --minutes` (max_minutes) adds one as a safety net that says when it stops a
# run.
_RNN_HP = {
    "smoke": dict(n_train=2_000, max_tokens=2_000, steps=40, lr=3e-3, warmup=100, n_test=100, n_long=20),
    "laptop": dict(n_train=100_000, max_tokens=3_000, steps=1_500, lr=3e-3, warmup=100, n_test=1_000,
                   n_long=300),
    "gpu": dict(n_train=200_000, max_tokens=16_000, steps=3_000, lr=1e-3, warmup=100, n_test=2_000,
                n_long=500),
}
# The Transformer (notebook 05) adds the paper's recipe: Adam(0.9, 0.98), the warm-up schedule
# noam_lr scaled by lr_factor, label smoothing; on a GPU bf16 autocast. No profile compiles the model:
# on an H200 (torch 2.11) torch.compile of this variable-length model took 150 s for its first 50
# updates and then ran at about 270k tokens/s against eager's 240k, so a run of a few thousand updates
# finishes sooner without it (benchmarks/results/gpu.json). The gpu row is planned from that measured
# eager throughput (GPU_TOKENS_PER_S): 1,600 updates of 24,000 tokens are 38.4M tokens, about 2.7
# minutes of training, under the 3-minute target (4,000 updates took about 6.7); planned_minutes()
# says it for any row, and `python -m benchmarks quality` measures it when a GPU is lent. The notebook
# also reads n_valid (BLEU curve sentences), eval_every (updates between points), n_speed (sentences
# of its decoding comparisons) and variant_steps (updates of the RoPE variant, compared with the main
# model's weights at that update; a multiple of eval_every).
_TRANSFORMER_HP = {
    "smoke": dict(n_train=2_000, max_tokens=2_000, steps=30, warmup=20, lr_factor=1.0,
                  label_smoothing=0.1, n_test=100, n_long=30, autocast=None,
                  n_valid=30, eval_every=15, n_speed=20, variant_steps=15),
    "laptop": dict(n_train=60_000, max_tokens=3_000, steps=900, warmup=200, lr_factor=1.0,
                   label_smoothing=0.1, n_test=1_000, n_long=300, autocast=None,
                   n_valid=100, eval_every=100, n_speed=100, variant_steps=300),
    "gpu": dict(n_train=200_000, max_tokens=24_000, steps=1_600, warmup=400, lr_factor=1.0,
                label_smoothing=0.1, n_test=2_000, n_long=1_000, autocast="bfloat16",
                n_valid=200, eval_every=400, n_speed=200, variant_steps=1_200),
}
GPU_TOKENS_PER_S = 240_000  # the Transformer's eager bf16 training tokens/s, measured on an H200


def planned_minutes(hp: dict, tokens_per_s: float) -> float:
    """Minutes of training a row of hyperparameters takes at ``tokens_per_s``: ``steps`` batches of
    up to ``max_tokens`` tokens each (the batches are filled close to it)."""
    return hp["steps"] * hp["max_tokens"] / tokens_per_s / 60
# The attention RNN (notebook 02). The notebook also reads baseline_steps (updates of 01's model,
# retrained when its checkpoint is missing) and max_len (longest translation; None: 2 × source length + 10).
_ATTENTION_RNN_HP = {
    "smoke": dict(n_train=3_000, max_tokens=600, steps=20, lr=3e-3, warmup=100, n_test=40, n_long=10,
                  baseline_steps=5, max_len=20),
    "laptop": dict(n_train=100_000, max_tokens=3_000, steps=1_000, lr=2e-3, warmup=100, n_test=1_000,
                   n_long=300, baseline_steps=400, max_len=None),
    "gpu": dict(n_train=200_000, max_tokens=12_000, steps=3_000, lr=1e-3, warmup=100, n_test=2_000,
                n_long=500, baseline_steps=1_000, max_len=None),
}
HPARAMS: dict[str, dict[str, dict]] = {
    "rnn": _RNN_HP, "attention-rnn": _ATTENTION_RNN_HP, "transformer": _TRANSFORMER_HP
}


@dataclass(frozen=True)
class Recipe:
    """One model of the course: where its notebook leaves it, and how to build and decode it."""

    name: str  # the --model of `course train`
    assignment: str  # the notebook that trains it: checkpoint and results under runs_dir()/assignment
    checkpoint: str  # checkpoint file name, the one its notebook writes (course_lib.capstone reads it)
    model: str  # "module:Class", built as Class(config)
    presets: str  # "module:NAME" of its per-profile config presets
    decode: str  # "module:function", decode(model, src, max_len) -> ids


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe("rnn", "01_rnn_baselines", "seq2seq.pt", "course_lib.rnn:Seq2SeqRNN",
               "course_lib.rnn:SEQ2SEQ_PRESETS", "course_lib.rnn:greedy_decode"),
        Recipe("attention-rnn", "02_attention", "seq2seq_attention.pt",
               "course_lib.attention_rnn:Seq2SeqAttentionRNN",
               "course_lib.attention_rnn:ATTENTION_RNN_PRESETS", "course_lib.rnn:greedy_decode"),
        Recipe("transformer", "05_transformer", "transformer.pt", "course_lib.transformer:Transformer",
               "course_lib.transformer:TRANSFORMER_PRESETS", "course_lib.transformer:greedy_decode"),
    )
}


def resolve(path: str) -> Any:
    """The object a recipe names as ``"module:attribute"``, e.g. ``"course_lib.rnn:Seq2SeqRNN"``."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def hparams(name: str, profile: str | None = None, **overrides) -> dict:
    """The hyperparameters of model ``name`` in ``profile`` (default: this run's), with ``overrides``
    whose value is not None applied."""
    hp = dict(course_lib.by_profile(HPARAMS[name], profile))
    hp.update({k: v for k, v in overrides.items() if v is not None})
    hp["profile"] = profile or course_lib.profile()
    return hp


def build(name: str, src_vocab_size: int, tgt_vocab_size: int, profile: str | None = None,
          **config_overrides) -> tuple[nn.Module, Any]:
    """The model of recipe ``name`` with its profile's preset config: (model, config)."""
    preset = course_lib.by_profile(resolve(RECIPES[name].presets), profile)
    cfg = dataclasses.replace(preset, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
                              **config_overrides)
    return resolve(RECIPES[name].model)(cfg), cfg


def loss_function(hp: dict) -> Callable[[nn.Module, Any], torch.Tensor]:
    """``loss(model, batch)``: mean loss per target token, padding ignored, label-smoothed by
    ``hp["label_smoothing"]`` (the Transformer's recipe has it). Every translation model of the course
    has the same forward: ``model(src, tgt_in) -> logits (B, T, V)``, source lengths read from the padding."""
    eps = hp.get("label_smoothing", 0.0)

    def loss(model: nn.Module, batch) -> torch.Tensor:
        logits = model(batch.src, batch.tgt_in)                                                  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),  # (B*T, V)
                               batch.tgt_out.reshape(-1), ignore_index=PAD_ID, label_smoothing=eps)

    return loss


def optimizer_and_schedule(name: str, model: nn.Module, cfg: Any, hp: dict
                           ) -> tuple[torch.optim.Optimizer, Callable[[int], float]]:
    """Adam and an LR multiplier per step: the paper's warm-up schedule for the Transformer, linear
    warm-up to ``lr`` for the RNNs."""
    if name != "transformer":
        return torch.optim.Adam(model.parameters(), lr=hp["lr"]), linear_warmup(hp["warmup"])
    from course_lib.transformer import noam_lr

    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98),
                                 eps=1e-9)  # lr = the multiplier
    return optimizer, lambda step: noam_lr(step + 1, cfg.d_model, hp["warmup"], hp["lr_factor"])


@dataclass
class TrainedRun:
    """A trained model with everything needed to evaluate, save or reload it."""

    name: str  # recipe name
    model: nn.Module  # the trained model (unwrapped: no DDP), eval mode
    cfg: Any  # its config dataclass
    src_vocab: Vocab
    tgt_vocab: Vocab
    history: History
    hp: dict  # the hyperparameters used, profile included
    extra: dict = field(default_factory=dict)  # e.g. world size, tokens/s, MFU


def training_data(hp: dict) -> TranslationData:
    """The first ``hp["n_train"]`` generated training pairs, tokenized, with their vocabularies."""
    return TranslationData.from_pairs(translation_pairs("train", n=hp["n_train"]))


def fit(name: str, profile: str | None = None, *, hp: dict | None = None,
        device: torch.device | str | None = None, progress: bool = True, batches: Iterable | None = None,
        data: TranslationData | None = None, wrap: Callable[[nn.Module], nn.Module] | None = None,
        config: dict | None = None, **overrides) -> TrainedRun:
    """Build and train recipe ``name`` with its profile's hyperparameters (``overrides`` replace some),
    or with ``hp`` as given (a dict from ``hparams``); ``config`` replaces fields of the profile's
    model preset (e.g. ``{"positional": "rope"}``).

    ``batches`` replaces the default ``BucketedBatches`` of ``data`` (DDP passes one shard);
    ``wrap(model)`` returns the module to train (e.g. ``DistributedDataParallel``); the unwrapped
    model is what ``TrainedRun`` keeps.
    """
    hp = hp if hp is not None else hparams(name, profile, **overrides)
    course_lib.seed_everything(hp.get("seed", 0))
    device = torch.device(device) if device is not None else pick_device()
    data = data or training_data(hp)
    model, cfg = build(name, len(data.src_vocab), len(data.tgt_vocab), hp["profile"], **(config or {}))
    model.to(device)
    trained = wrap(model) if wrap else model
    optimizer, schedule = optimizer_and_schedule(name, model, cfg, hp)
    autocast = getattr(torch, hp["autocast"]) if hp.get("autocast") else None
    batches = batches if batches is not None else BucketedBatches(data, max_tokens=hp["max_tokens"], seed=0)
    history = train(trained, batches, loss_function(hp), optimizer, steps=hp["steps"],
                    max_minutes=hp.get("max_minutes"), schedule=schedule, clip_norm=1.0, device=device,
                    progress=progress, autocast_dtype=autocast)
    return TrainedRun(name, model.eval(), cfg, data.src_vocab, data.tgt_vocab, history, hp)


def evaluate(run: TrainedRun, device: torch.device | str | None = None) -> dict:
    """BLEU of greedy translations on ``n_test`` sentences of test and ``n_long`` of test_long."""
    device = device or next(run.model.parameters()).device
    decode = resolve(RECIPES[run.name].decode)
    metrics: dict[str, Any] = {}
    for split, n in (("test", run.hp["n_test"]), ("test_long", run.hp["n_long"])):
        sources = [en for en, _ in translation_pairs(split, n=n)]
        refs = reference_sets(split, n=n)
        hyps = translate(decode, run.model, sources, run.src_vocab, run.tgt_vocab, device=device)
        score = bleu(hyps, refs)
        metrics[f"bleu_{split}"] = round(score.score, 2)
        if split == "test":
            metrics["bleu_signature"] = score.signature
            metrics["bleu_by_length"] = [
                {**row, "bleu": None if row["bleu"] is None else round(row["bleu"], 2)}
                for row in bleu_by_length(sources, hyps, refs)
            ]
    return metrics


def save(run: TrainedRun, metrics: dict, directory: Path | None = None) -> tuple[Path, Path]:
    """Write the checkpoint where the model's notebook writes it and merge ``metrics`` into its results.

    Returns (checkpoint path, results.json path).
    """
    recipe = RECIPES[run.name]
    directory = directory or runs_dir() / recipe.assignment
    history = run.history
    summary = {"train_minutes": round(history.minutes, 3), "updates": history.step[-1] if history.step else 0,
               "stopped_early": history.stopped_early,
               "parameters": sum(p.numel() for p in run.model.parameters()),
               "tokens_per_s": round(sum(history.tokens_per_s[1:] or history.tokens_per_s)
                                     / max(1, len(history.tokens_per_s[1:] or history.tokens_per_s)), 1)}
    checkpoint = save_checkpoint(directory / recipe.checkpoint, run.model, config=run.cfg,
                                 vocabs={"src": run.src_vocab, "tgt": run.tgt_vocab},
                                 extra={"profile": run.hp["profile"], "trained_by": "course train",
                                        "bleu_test": metrics.get("bleu_test"), **summary})
    results = record_results(recipe.assignment, {
        "headline": {"name": "BLEU test", "value": metrics.get("bleu_test")},
        **metrics, **summary, **run.extra, "checkpoint": str(checkpoint), "trained_by": "course train"})
    return checkpoint, results


__all__ = [
    "GPU_TOKENS_PER_S", "HPARAMS", "RECIPES", "Recipe", "TrainedRun", "build", "evaluate", "fit", "hparams",
    "loss_function", "optimizer_and_schedule", "planned_minutes", "resolve", "save", "training_data"
]
