"""The quality rows of the table (:mod:`benchmarks.table`): each notebook's numbers against the
course's targets, per profile, from the notebook benchmarks' result files.
"""
from __future__ import annotations

import statistics
from functools import partial
from pathlib import Path
from typing import Callable

from benchmarks import attention_rnn, language_model
from benchmarks.table_row import UNREADABLE, Row, load_result, measured_row, not_measured, unreadable

# The course's targets (benchmarks/README.md lists them) that no benchmark script holds as a constant
TRANSFORMER_BLEU = 98.0  # laptop profile, BLEU on test (notebook 05)
NOTEBOOK_MINUTES = {"laptop": attention_rnn.BUDGET_MINUTES, "gpu": 5.0}  # a whole notebook, per profile
# gpu-profile base Transformer (notebook 05, one H100)
GPU_BLEU, GPU_BLEU_LONG, GPU_TRAIN_MINUTES = 99.5, 95.0, 3.0


# Quality checks: flat notebook report -> (measured, met)
def _bleu(flat: dict, test: float | None = None, long: float | None = None) -> tuple[str, bool | None]:
    measured = f"test {flat['bleu_test']:.2f}, test_long {flat['bleu_test_long']:.2f}"
    if test is None:
        return measured, None
    return measured, flat["bleu_test"] >= test and (long is None or flat["bleu_test_long"] >= long)


def _falling_with_length(flat: dict) -> tuple[str, bool]:
    first, last = flat["bleu_by_length"][0], flat["bleu_by_length"][-1]
    measured = (
        f"test {flat['bleu_test']:.1f}: {first['bucket']} tokens {first['bleu']:.1f} → {last['bucket']} "
        f"{last['bleu']:.1f}; test_long {flat['bleu_test_long']:.1f}")
    return measured, first["bleu"] > last["bleu"] and flat["bleu_test_long"] < flat["bleu_test"]


def _within(flat: dict, key: str, limit: float) -> tuple[str, bool]:
    return f"{flat[key]:.1f} min", flat[key] <= limit


def _capstone(flat: dict) -> tuple[str, None]:
    models = flat["models"] or {}
    retrained = [name for name, m in models.items() if "retrain" in m["origin"]]
    scores = "; ".join(
        f"{name} {m['bleu_test']:.1f} ({m['bleu_test_long']:.1f} long)" for name, m in models.items())
    return (scores or "no model compared") + (
        f"; quick retrain inside the run: {', '.join(retrained)}" if retrained else ""), None


def _valid_loss(flat: dict, limit: float, minutes: float | None = None) -> tuple[str, bool]:
    measured = (f"{flat['valid_loss']:.3f} nats/char after {flat['steps']} updates, "
                f"{flat['train_minutes']:.1f} min of training ({flat['tokens_per_s']:,.0f} tokens/s)")
    return measured, flat["valid_loss"] <= limit and (minutes is None or flat["train_minutes"] <= minutes)


def _against_nanogpt(flat: dict) -> tuple[str, bool]:
    comparison = flat["nanogpt_comparison"]
    ours, theirs = comparison["course laptop preset"], comparison["nanoGPT CPU recipe"]
    measured = (
        f"ours {ours['valid_loss']:.3f} ({ours['steps']} updates) vs nanoGPT's recipe "
        f"{theirs['valid_loss']:.3f} ({theirs['steps']} updates), {comparison['budget_seconds']:.0f} s each")
    return measured, ours["valid_loss"] < theirs["valid_loss"]


def _ablation(flat: dict) -> tuple[str, bool]:
    """Every variant of 07's positions/score ablation below the bigram line in every seed, two seeds at
    least."""
    ablation, bigram = flat["ablation"], flat["baselines"]["bigram"]
    worst = {label: max(losses) for label, losses in ablation["valid_loss"].items()}
    measured = (f"bigram {bigram:.3f}; worst seed of {len(ablation['seeds'])}: "
                + ", ".join(f"{label} {loss:.3f}" for label, loss in worst.items()))
    return measured, len(ablation["seeds"]) >= 2 and all(loss < bigram for loss in worst.values())


def _below_kneser_ney(flat: dict) -> tuple[str, bool]:
    """07's laptop model at least ``language_model.KN_MARGIN`` below the best Kneser–Ney order."""
    by_order = flat["baselines"].get("kneser_ney", {}).get("by_order")
    if not by_order:
        return "no Kneser–Ney baseline recorded", False
    order = min(by_order, key=by_order.get)
    margin = by_order[order] - flat["valid_loss"]
    measured = f"{flat['valid_loss']:.3f} against the Kneser–Ney {order}-gram's {by_order[order]:.3f}"
    return f"{measured}: {margin:+.3f} below", margin >= language_model.KN_MARGIN


def _mean_and_error(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error (sample standard deviation over the square root of n)."""
    return statistics.fmean(values), statistics.stdev(values) / len(values) ** 0.5


def _kneser_ney_across_seeds(flat: dict) -> tuple[str, bool]:
    """07's laptop preset in the notebook's seed and the benchmark's others: each below the best
    Kneser–Ney order, with the mean distance and its standard error."""
    by_order = flat["baselines"]["kneser_ney"]["by_order"]
    best = min(by_order.values())
    losses = [flat["valid_loss"], *flat["seeds"]["valid_loss"].values()]
    below = [best - loss for loss in losses]
    mean, error = _mean_and_error(below)
    measured = (f"{len(losses)} seeds: {', '.join(f'{loss:.3f}' for loss in losses)} against {best:.3f}; "
                f"{mean:+.3f} ± {error:.3f} below (mean ± standard error)")
    return measured, len(losses) >= 3 and min(below) > 0


def _dropout(flat: dict) -> tuple[str, bool]:
    """07's section 11: without dropout the validation loss climbs back beyond two standard errors
    (overfitting), and dropout's paired change of the final validation loss is beyond two as well."""
    dropout = flat["dropout"]
    p = f"{dropout['p']:g}"
    climb, climb_error = _mean_and_error(
        [end - low for end, low in zip(dropout["valid_loss"]["0"], dropout["lowest_valid_loss"]["0"])])
    change, change_error = _mean_and_error(
        [with_p - without for with_p, without in zip(dropout["valid_loss"][p], dropout["valid_loss"]["0"])])
    measured = (f"{dropout['train_chars']:,} characters, {len(dropout['seeds'])} seeds: without dropout the "
                f"validation loss climbed {climb:.3f} ± {climb_error:.3f} from its lowest; dropout {p} "
                f"changed it by {change:+.3f} ± {change_error:.3f} (paired; mean ± standard error)")
    return measured, climb > 2 * climb_error and -change > 2 * change_error


def _kv_cache(flat: dict) -> tuple[str, bool]:
    cache = flat["kv_cache"]
    speedup = cache["seconds_recompute"] / cache[
        "seconds_cached"]  # not the rounded figure the notebook prints
    rounds = (f", fastest of {cache['rounds']} rounds (single rounds {min(cache['round_speedups']):.2f}–"
              f"{max(cache['round_speedups']):.2f}×)" if "rounds" in cache else ", one round")
    measured = (f"{speedup:.3f}× at {cache['new_tokens']} new tokens "
                f"({cache['seconds_cached']:.2f} s vs {cache['seconds_recompute']:.2f} s{rounds}), "
                + ("identical tokens" if cache["identical"] else "tokens DIFFER"))
    return measured, cache["identical"] and speedup >= language_model.KV_CACHE_SPEEDUP


def _bpe(flat: dict) -> tuple[str, None]:
    """07's byte-level BPE model against its character model at equal training FLOPs, in nats/char."""
    bpe = flat["bpe"]
    measured = (f"characters {bpe['char_nats_per_char']:.3f} ({bpe['char_steps']} updates) vs BPE "
                f"{bpe['bpe_nats_per_char']:.3f} nats/char ({bpe['vocab_size']} tokens, "
                f"{bpe['bpe_steps']} updates, {bpe['chars_per_token']:.2f} characters per token) "
                f"on {bpe['eval_chars']:,} validation characters")
    return measured, None


def _isoflop(flat: dict) -> tuple[str, None]:
    """07's IsoFLOP sweep (section 16): every width's final validation loss at one training budget."""
    scaling = flat.get("scaling")
    if not scaling:
        return "not recorded", None
    widths = scaling["by_width"]
    points = ", ".join(f"d {w} (N {r['weights']:,}, {r['tokens'] / r['weights']:.1f} tokens/weight) "
                       f"{sum(r['valid_loss']) / len(r['valid_loss']):.3f}"
                       for w, r in widths.items())
    measured = (f"{scaling['budget_flops']:.3g} training FLOPs each, {len(scaling['seeds'])} seeds: "
                f"{points}; Chinchilla's rule: N {scaling['rule_params']:,}")
    return measured, None


def _memory(flat: dict) -> tuple[str, None]:
    """07's section 17: the laptop run's MFU against a measured matrix product, and what training held."""
    memory = flat.get("memory")
    if not memory:
        return "not recorded", None
    measured = (f"MFU {memory['mfu']:.0%} ({memory['achieved_gflops']:.1f} of {memory['peak_gflops']:.1f} "
                f"GFLOP/s, a measured fp32 matrix product); state {sum(memory['state_mb'].values()):.1f} MB, "
                f"activations {memory['activations_mb']:.1f} MB, {memory['checkpointed_mb']:.1f} MB with "
                "every block checkpointed")
    return measured, None


def _quality_checks(profile: str) -> list[tuple[str, str, Callable[[dict], tuple[str, bool | None]]]]:
    """(assignment, target, check) of one profile, in course order."""
    limit = NOTEBOOK_MINUTES[profile]
    if profile == "laptop":
        checks = [
            ("01_rnn_baselines", "RNN seq2seq (01): BLEU reported, falling with source length",
             _falling_with_length),
            ("02_attention", f"RNN + attention (02): BLEU test ≥ {attention_rnn.TARGET_BLEU:g}",
             partial(_bleu, test=attention_rnn.TARGET_BLEU)),
            ("05_transformer", f"Transformer (05): BLEU test ≥ {TRANSFORMER_BLEU:g}",
             partial(_bleu, test=TRANSFORMER_BLEU)),
            ("07_language_model", f"GPT on Shakespeare (07): validation loss ≤ {language_model.TARGET:g} "
             "nats/char", partial(_valid_loss, limit=language_model.TARGET)),
            ("07_language_model", f"GPT (07): ≥ {language_model.KN_MARGIN:g} nats/char below the "
             "interpolated Kneser–Ney n-gram (order chosen on validation)", _below_kneser_ney),
            ("07_language_model", "GPT (07): the laptop preset below that Kneser–Ney line in each of "
             "≥ 3 seeds", _kneser_ney_across_seeds),
            ("07_language_model", "GPT (07): lower validation loss than nanoGPT's CPU recipe at equal "
             "training time", _against_nanogpt),
            ("07_language_model", "GPT (07): every ablation variant below the bigram baseline, ≥ 2 seeds",
             _ablation),
            ("07_language_model", "GPT (07): without dropout the slice overfits, and dropout lowers the "
             "validation loss, each beyond two standard errors", _dropout),
            ("07_language_model", f"GPT (07): KV-cache generation ≥ {language_model.KV_CACHE_SPEEDUP:g}× "
             "faster than recomputation, identical tokens", _kv_cache),
            ("07_language_model", "GPT (07): byte-level BPE vs characters at equal training FLOPs, nats/char",
             _bpe),
            ("07_language_model", "GPT (07): IsoFLOP sweep of widths at equal training FLOPs, nats/char",
             _isoflop),
            ("07_language_model", "GPT (07): MFU of the laptop run, and the memory training held",
             _memory),
        ]
    else:
        checks = [
            ("01_rnn_baselines", "RNN seq2seq (01): BLEU", _bleu),
            ("02_attention", "RNN + attention (02): BLEU", _bleu),
            ("05_transformer", f"base Transformer (05): BLEU test ≥ {GPU_BLEU:g}, "
             f"test_long ≥ {GPU_BLEU_LONG:g}", partial(_bleu, test=GPU_BLEU, long=GPU_BLEU_LONG)),
            ("05_transformer", f"base Transformer (05): training ≤ {GPU_TRAIN_MINUTES:g} min",
             partial(_within, key="train_minutes", limit=GPU_TRAIN_MINUTES)),
            ("07_language_model", f"GPT (07): validation loss ≤ {language_model.GPU_TARGET:g} nats/char in "
             f"≤ {language_model.GPU_TRAIN_MINUTES:g} min of training",
             partial(_valid_loss, limit=language_model.GPU_TARGET, minutes=language_model.GPU_TRAIN_MINUTES))
        ]
    checks.append(("06_bleu", "capstone (06): every model's BLEU on one test set", _capstone))
    order = list(dict.fromkeys(assignment for assignment, _, _ in checks))
    own = {("07_language_model", "laptop"): language_model.BUDGET_MINUTES}     # 07 alone has 10 minutes
    timed = [
        (a, f"notebook {a[:2]} under {minutes:g} min",
         partial(_within, key="notebook_minutes", limit=minutes))
        for a in order
        for minutes in [own.get((a, profile), limit)]
    ]
    return sorted(checks + timed,
                  key=lambda check: order.index(check[0]))  # stable: a notebook's time comes last


def quality_file(assignment: str, profile: str) -> str:
    """The result file of a notebook benchmark: ``<assignment>`` for a CPU profile, ``<assignment>-gpu``."""
    return f"{assignment}-gpu" if profile == "gpu" else assignment


def quality_rows(folder: Path) -> list[Row]:
    rows = []
    for profile in ("laptop", "gpu"):
        section = f"quality ({profile})"
        for assignment, target, check in _quality_checks(profile):
            report, path = load_result(folder, quality_file(assignment, profile))
            if report is None:
                gpu = profile == "gpu"
                rows.append(not_measured(section, target, "python -m benchmarks quality",
                                          "not measured (no GPU run)" if gpu else "not measured",
                                          " on a CUDA machine" if gpu else ""))
                continue
            flat = {**report,
                    **report.get("notebook", {})}  # 05's report keeps the notebook's numbers in a section
            try:
                rows.append(measured_row(section, target, flat, path, *check(flat)))
            except UNREADABLE as error:  # e.g. 05's report without its notebook section
                rows.append(unreadable(section, target, error, path))
    return rows
