"""The table of benchmarks/README.md: every target of the course, what was measured, met or GAP.

    rows = table.rows(Path("benchmarks/results"))      # one Row per target, from the JSON files there
    text = table.readme(results, readme_folder, sections)

Each row says where its number comes from (machine, torch, device, date and commit of its JSON file). A
target whose measurement misses it is a **GAP** with the measured value, never left out; a target
without a result file is "not measured", a GPU target measured on a run without CUDA
"not measured (no GPU)", and a number from a ``--smoke`` run is marked as such, not as a result.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from benchmarks import attention_rnn, bleu_speed, language_model, mha_speed
from benchmarks import load as load_benchmark
from course_tools.course import assignments

ROOT = Path(__file__).resolve().parents[1]

# The course's targets (benchmarks/README.md lists them) that no benchmark script holds as a constant
THROUGHPUT_RATIO = 1.0  # course_lib Transformer's training tokens/s over nn.Transformer's, at least
TRANSFORMER_BLEU = 98.0  # laptop profile, BLEU on test (notebook 05)
NOTEBOOK_MINUTES = {"laptop": attention_rnn.BUDGET_MINUTES, "gpu": 5.0}  # a whole notebook, per profile
# gpu-profile base Transformer (notebook 05, one H100)
GPU_BLEU, GPU_BLEU_LONG, GPU_TRAIN_MINUTES = 99.5, 95.0, 3.0
GPU_MFU = 0.35  # model FLOPs utilisation against the card's dense bf16 peak
CI_MINUTES = 20.0  # the whole test suite on 2 CPU cores, as CI runs it
AUTOGRADE_SECONDS = 15.0  # course autograde, the whole course for one student with --jobs 1 on 2 cores

# REPORTED: a number the spec asks for, without a bar to pass
MET, GAP, REPORTED = "met", "**GAP**", "reported"


@dataclass
class Row:
    section: str
    target: str
    measured: str
    status: str  # MET, GAP, REPORTED, "not measured (...)", or a smoke run's mark
    source: Path | None = None  # the JSON file the numbers come from
    machine: str = ""
    torch: str = ""
    device: str = ""
    date: str = ""
    commit: str = ""  # the commit measured; older results did not record it


def _load(folder: Path, name: str) -> tuple[dict | None, Path]:
    path = folder / f"{name}.json"
    return (json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None), path


def _provenance(report: dict) -> dict:
    """Row fields saying where a report's numbers come from: machine, torch, device, date."""
    machine = report.get("machine") or {}
    device = str(machine.get("device") or report.get("device") or "cpu")
    where = (machine.get("cuda") if device.startswith("cuda")
             else f"{machine.get('cpu', '?')}, {machine.get('cpu_count', '?')} cores")
    return dict(machine=str(where), torch=str(machine.get("torch", "?")), device=device,
                date=str(report.get("date", "?"))[:10],
                commit=str(report.get("commit") or machine.get("commit") or "not recorded"))


def _row(section: str, target: str, report: dict, path: Path, measured: str, met: bool | None) -> Row:
    """A measured row: ``met`` True / False against the target, None for a number without one."""
    if report.get("smoke") or report.get("profile") == "smoke":
        status = "smoke run, not a measurement"
    else:
        status = REPORTED if met is None else MET if met else GAP
    return Row(section, target, measured, status, path, **_provenance(report))


def _not_measured(section: str, target: str, command: str, why: str = "not measured", where: str = "") -> Row:
    return Row(section, target, f"run `{command}`{where}", why)


# What reading a result file of another layout (an older version of its benchmark) raises
UNREADABLE = (KeyError, TypeError, IndexError, ValueError)


def _unreadable(section: str, target: str, error: Exception, path: Path | None = None) -> Row:
    return Row(section, target, f"{path.name if path else 'result file'} unreadable: {error!r}",
               "not measured (rerun the section)", path)


def _attention(folder: Path) -> list[Row]:
    report, path = _load(folder, "attention")
    low, high = mha_speed.TRAINING_LENGTHS
    targets = [
        f"{name}: training step ≤ {mha_speed.TARGET_RATIO}× nn.MultiheadAttention's time at T {low}–{high}"
        for name in mha_speed.FUSED
    ]
    comparison = "naive against fused attention at the longest T: time and peak memory"
    if report is None:
        return [_not_measured("attention", target, "python -m benchmarks attention")
                for target in [*targets, comparison]]
    B, d_models = report["rows"][0]["B"], sorted({r["d_model"] for r in report["rows"]})
    rows = []
    for name, target in zip(mha_speed.FUSED, targets):
        worst = report["target"]["worst_ratio"][name]
        measured = (f"no shape with T {low}–{high}" if worst is None else
                    f"worst {worst:.2f}× (B {B}, d_model {'/'.join(map(str, d_models))}, no mask and causal)")
        rows.append(_row("attention", target, report, path, measured, None if worst is None else
                         worst <= mha_speed.TARGET_RATIO))
    longest = max(report["rows"], key=lambda r: (r["T"], r["d_model"], not r["causal"]))
    ms, memory = longest["median_ms"], longest.get("peak_memory_mb")
    naive, fused = "course_lib MHA naive", "course_lib MHA fused"
    measured = (
        f"T {longest['T']}, d_model {longest['d_model']}: MHA naive {ms[naive] / ms[fused]:.1f}× fused's time"
        + (f", {memory[naive]:,.1f} vs {memory[fused]:,.1f} MB peak" if memory else "") +
        f"; course_lib sdpa naive {longest['ratio']['course_lib sdpa naive']:.1f}× "
        "F.scaled_dot_product_attention's")
    return rows + [_row("attention", comparison, report, path, measured, None)]


def _throughput(folder: Path) -> list[Row]:
    report, path = _load(folder, "throughput")
    target = (f"course_lib Transformer training tokens/s ≥ {THROUGHPUT_RATIO:g}× nn.Transformer of the same "
              "size")
    if report is None:
        return [_not_measured("throughput", target, "python -m benchmarks throughput")]
    ratio = report["ratio_tokens_per_s"]
    measured = (
        f"{ratio:.2f}× ({report['course_lib']['tokens_per_s']:,.0f} vs "
        f"{report['nn.Transformer']['tokens_per_s']:,.0f} target tokens/s, {report['profile']} preset; "
        f"per CPU second {report['ratio_tokens_per_cpu_s']:.2f}×)")
    return [_row("throughput", target, report, path, measured, ratio >= THROUGHPUT_RATIO)]


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
            ("07_language_model", "GPT (07): lower validation loss than nanoGPT's CPU recipe at equal "
             "training time", _against_nanogpt),
            ("07_language_model", "GPT (07): every ablation variant below the bigram baseline, ≥ 2 seeds",
             _ablation),
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


def _quality(folder: Path) -> list[Row]:
    rows = []
    for profile in ("laptop", "gpu"):
        section = f"quality ({profile})"
        for assignment, target, check in _quality_checks(profile):
            report, path = _load(folder, quality_file(assignment, profile))
            if report is None:
                gpu = profile == "gpu"
                rows.append(_not_measured(section, target, "python -m benchmarks quality",
                                          "not measured (no GPU run)" if gpu else "not measured",
                                          " on a CUDA machine" if gpu else ""))
                continue
            flat = {**report,
                    **report.get("notebook", {})}  # 05's report keeps the notebook's numbers in a section
            try:
                rows.append(_row(section, target, flat, path, *check(flat)))
            except UNREADABLE as error:  # e.g. 05's report without its notebook section
                rows.append(_unreadable(section, target, error, path))
    return rows


def _bleu_speed(folder: Path) -> list[Row]:
    report, path = _load(folder, "bleu_speed")
    target = f"course_lib.bleu: sacreBLEU's score on 3000 sentences, time ≤ {bleu_speed.MAX_RATIO:g}×"
    if report is None:
        return [_not_measured("bleu", target, "python -m benchmarks bleu")]
    results = report["results"]
    measured = (("identical scores" if all(r["identical"] for r in results.values()) else "DIFFERENT scores")
                + "; " + ", ".join(f"{r['ratio']:.2f}× (tok {tok})" for tok, r in results.items())
                + f"; {report['sentences']} sentences")
    return [_row("bleu", target, report, path, measured, report["passed"])]


def _decoding(folder: Path) -> list[Row]:
    report, path = _load(folder, "decoding")
    target = "greedy and beam-4 sentences/s, with and without the KV cache (cached = recomputed translations)"
    if report is None:
        return [_not_measured("decoding", target, "python -m benchmarks decoding")]
    per_s = report["sentences_per_s"]
    measured = (
        f"greedy {per_s['greedy, KV cache']:.1f}/s cached, {per_s['greedy, recompute']:.1f}/s recomputed "
        f"({report['kv_cache_speedup_greedy']:.1f}×); beam 4 {per_s['beam 4, KV cache']:.1f}/s; "
        f"{report['model'].split(':')[0]} model, {report['sentences']} sentences" +
        ("" if report["greedy_cache_identical"] else "; cached and recomputed translations DIFFER"))
    return [
        _row("decoding", target, report, path, measured, None if report["greedy_cache_identical"] else False)
    ]


def _autograde(folder: Path) -> list[Row]:
    report, path = _load(folder, "autograde_batch")
    target = (
        f"course autograde: the whole course for one student in ≤ {AUTOGRADE_SECONDS:g} s with --jobs 1 "
        "(--jobs 2 reported), every grade as expected")
    if report is None:
        return [_not_measured("autograde", target, "python -m benchmarks autograde")]
    runs = report["runs"]
    unexpected = sum(run["unexpected"] for run in runs.values())
    load = report.get("load")  # the grades again beside CPU-bound processes: none may differ (issue 28)
    unexpected += load["differ"] + load["alternatives_not_full"] if load else 0
    measured = (
        ", ".join(f"--jobs {name[4:]}: {run['seconds_per_student']:.1f} s" for name, run in runs.items()) +
        f" ({len(report['assignments'])} assignments, {report['students']} students each)" +
        (f"; beside {load['hogs']} CPU-bound processes, with the alternatives: {load['differ']} grades "
         f"differ" if load else "") + (f"; {unexpected} unexpected grades" if unexpected else "") +
        _variants(report))
    whole_course = set(report["assignments"]) == {a.id for a in assignments(ROOT)} and "jobs1" in runs
    met = None if not whole_course else \
        not unexpected and runs["jobs1"]["seconds_per_student"] <= AUTOGRADE_SECONDS
    return [_row("autograde", target, report, path, measured, False if unexpected else met)]


def _variants(report: dict) -> str:
    """The variants of the hidden inputs a batch was spread over, and what each variant after the
    first adds to the course's references (all variants are built in one record run)."""
    added = report.get("reference_seconds_per_variant", {})
    if report.get("variants", 1) <= 1 or not added:
        return ""
    return (f"; {report['variants']} variants of the hidden inputs, each after the first adding "
            f"{sum(added.values()):.0f} s to the course's references")


def _autograde_class(folder: Path) -> list[Row]:
    report, path = _load(folder, "autograde_class")
    target = ("course autograde on a class of one assignment: seconds per student, --jobs 1 vs 2 (every "
              "grade "
              "as expected)")
    if report is None:
        return [_not_measured("autograde", target, "python -m benchmarks class")]
    (assignment,) = report["assignments"]
    runs = report["runs"]
    unexpected = sum(run["unexpected"] for run in runs.values())
    measured = (", ".join(f"--jobs {name[4:]}: {run['seconds_per_student']:.2f} s"
                          for name, run in runs.items()) +
                f" ({report['students']} students of {assignment})" +
                (f"; {unexpected} unexpected grades" if unexpected else ""))
    return [_row("autograde", target, report, path, measured, False if unexpected else None)]


def _agreement(folder: Path) -> list[Row]:
    report, path = _load(folder, "validate_agreement")
    target = (
        "Validate and the grade fail the same test cells on every catalogued bug and alternative; every bug "
        "fails its own exercise in both, no alternative fails")
    if report is None:
        return [_not_measured("grading", target, "python -m benchmarks agreement")]
    found = report["assignments"]
    counts = {key: sum(len(a[key]) for a in found.values())
              for key in ("disagreements", "validate_misses", "grade_misses")}
    fixtures = sum(a["fixtures"] for a in found.values())
    missing = [a.id for a in assignments(ROOT) if a.id not in found]
    dates = sorted({a["date"][:10] for a in found.values()})
    measured = (
        f"{fixtures} fixtures of {len(found)} assignments: {counts['disagreements']} disagree, Validate "
        f"misses {counts['validate_misses']}, the grade misses {counts['grade_misses']}" +
        (f" (run {dates[0]} to {dates[-1]})" if len(dates) > 1 else "") +
        (f" (not run: {', '.join(missing)})" if missing else ""))
    commits = sorted({a.get("commit") or "not recorded" for a in found.values()})  # each assignment's run
    return [_row("grading", target, {**report, "commit": ", ".join(commits)}, path, measured,
                 not any(counts.values()) and not missing)]


def _similarity(folder: Path) -> list[Row]:
    report, path = _load(folder, "similarity_class")
    target = (
        "course similarity on a class: every disguised copy of the solution flagged, no pair of independent "
        "solutions flagged")
    if report is None:
        return [_not_measured("similarity", target, "python -m benchmarks similarity")]
    flags = report["flags"]["canonical"]
    copies, copies_total = map(int, flags["copies_flagged"].split("/"))
    independent = int(flags["independent_pairs_flagged"].split("/")[0])
    median = report["median_seconds"]
    measured = (
        f"{flags['copies_flagged']} copies, {flags['independent_pairs_flagged']} independent pairs flagged; "
        f"{report['students']} students of {report['assignment']} in {median['canonical']:.1f} s "
        f"(copydetect on the raw cells {median['copydetect']:.1f} s, flags "
        f"{report['flags']['copydetect']['copies_flagged']} copies)")
    return [_row("similarity", target, report, path, measured, copies == copies_total and independent == 0)]


REPORT_TARGET_S = 10.0  # "a class of 500 students is reported in seconds" (issue 44)


def _report(folder: Path) -> list[Row]:
    report, path = _load(folder, "report")
    target = f"course report: a class of 500 students in ≤ {REPORT_TARGET_S:g} s"
    if report is None:
        return [_not_measured("report", target, "python -m benchmarks report")]
    load = report["machine"]["load_average"][0]
    measured = (f"{report['median_seconds']:.1f} s for {report['students']} students (median of "
                f"{report['rounds']} rounds, load {load:.1f}; commit {report['commit']})")
    return [_row("report", target, report, path, measured,
                 report["students"] >= 500 and report["median_seconds"] <= REPORT_TARGET_S)]


def _length(folder: Path) -> list[Row]:
    report, path = _load(folder, "length_generalisation")
    target = ("Transformer on test_long (longer than any training sentence): sinusoidal vs RoPE at the full "
              "recipe, against the RNN with attention")
    if report is None:
        return [_not_measured("length", target, "python -m benchmarks length")]
    variants = report["variants"]
    measured = "; ".join(
        f"{name}: test_long {v['bleu_test_long']:.1f} (test {v['bleu_test']:.1f}, {v['updates']} updates)"
        for name, v in variants.items())
    rnn = report.get("attention_rnn_recorded") or {}
    if rnn.get("bleu_test_long") is not None:
        measured += f"; RNN with attention (recorded): test_long {rnn['bleu_test_long']:.1f}"
    return [_row("length", target, report, path, measured, None)]


def _headline(run: dict) -> str:
    """One run of the load benchmark: its headline numbers, time and load."""
    numbers = ", ".join(f"{key} {value}" for key, value in run["headline"].items())
    return (f"{numbers} after {run['updates']} updates, {run['notebook_minutes']:.1f} min "
            f"(load {run['load_average_after'][0]:.1f})")


def _load_rows(folder: Path) -> list[Row]:
    report, path = _load(folder, "load")
    # the idle time's target is the quality section's ("notebook NN under 5 min"): here, the numbers
    targets = {assignment: (f"notebook {assignment[:2]} (laptop): the same "
                            + ", ".join(f"{key} (±{tolerance:g})" for key, tolerance in tolerances.items())
                            + f" idle and beside {load_benchmark.HOGS} CPU-bound processes, only slower")
               for assignment, tolerances in load_benchmark.HEADLINES.items()}
    if report is None:
        return [_not_measured("load", target, "python -m benchmarks load") for target in targets.values()]
    rows = []
    for assignment, target in targets.items():
        runs = report["notebooks"].get(assignment)
        if runs is None:
            rows.append(_not_measured("load", target,
                                      f"python -m benchmarks.load --assignments {assignment}"))
            continue
        idle, loaded = runs["idle"], runs["loaded"]
        measured = (f"idle: {_headline(idle)}; beside {loaded['hogs']}: {_headline(loaded)}; "
                    + ("identical" if runs["identical"] else
                       "differences " + ", ".join(f"{k} {v}" for k, v in runs["difference"].items())))
        rows.append(
            _row("load", target, {**report, "date": runs.get("date", report.get("date"))}, path, measured,
                 runs["same"]))
    return rows


def _ci(folder: Path) -> list[Row]:
    report, path = _load(folder, "ci")
    target = f"README test command (`make test`) under {CI_MINUTES:g} min on 2 cores"
    if report is None:
        return [_not_measured("ci", target, "python -m benchmarks ci")]
    minutes, exit_code = report["minutes"], report["exit_code"]
    measured = (f"{minutes:.1f} min" if exit_code == 0 else f"failed (exit {exit_code}) after {minutes:.1f} "
                                                            "min") \
        + ("" if report["command"] == "make test" else f" (`{report['command']}`)")
    return [_row("ci", target, report, path, measured, exit_code == 0 and minutes < CI_MINUTES)]


def _gpu(folder: Path) -> list[Row]:
    report, path = _load(folder, "gpu")
    targets = [
        f"base Transformer MFU ≥ {GPU_MFU:.0%} on one H100 (dense bf16 peak, PaLM FLOPs, causal attention)",
        f"base Transformer BLEU test ≥ {GPU_BLEU:g} in ≤ {GPU_TRAIN_MINUTES:g} min of training on one H100"
    ]
    if report is None:
        return [_not_measured("gpu", target, "python -m benchmarks gpu") for target in targets]
    if not report["measured"]:
        why = "no GPU" if "no GPU" in report["note"] else report["note"]
        return [
            Row("gpu", target, "—", f"not measured ({why})", path, **_provenance(report))
            for target in targets
        ]
    report = {"device": "cuda", **report}
    mfu = report["mfu"]
    return [
        _row("gpu", targets[0], report, path,
             f"{'unknown peak' if mfu is None else f'{mfu:.1%}'} ({report['tokens_per_s']:,.0f} tokens/s, "
             f"{report['device_name']})", None if mfu is None else mfu >= GPU_MFU),
        _row("gpu", targets[1], report, path,
             f"test {report['bleu_test']:.2f} (test_long {report['bleu_test_long']:.1f}) after "
             f"{report['train_minutes']:.1f} min ({report['device_name']})",
             report["bleu_test"] >= GPU_BLEU and report["train_minutes"] <= GPU_TRAIN_MINUTES),
    ]


SECTION_ROWS = (_attention, _throughput, _quality, _load_rows, _bleu_speed, _decoding, _autograde,
                _autograde_class, _agreement, _similarity, _report, _length, _ci, _gpu)


def rows(folder: Path) -> list[Row]:
    """Every target's row, from the JSON files in ``folder``; a file that cannot be read says so in its
    rows."""
    found = []
    for section_rows in SECTION_ROWS:
        try:
            found += section_rows(folder)
        except UNREADABLE as error:
            found.append(
                _unreadable(section_rows.__name__.strip("_"), "(every target of this section)", error))
    return found


def markdown(table_rows: list[Row], relative_to: Path) -> str:
    """The rows as a markdown table, each section linked to its JSON file (relative to ``relative_to``)."""
    lines = ["| section | target | measured | status | machine | torch | device | date | commit |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in table_rows:
        section = row.section if row.source is None else \
            f"[{row.section}]({Path(os.path.relpath(row.source, relative_to)).as_posix()})"
        cells = (section, row.target, row.measured, row.status, row.machine, row.torch, row.device, row.date,
                 row.commit)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def readme(folder: Path, readme_folder: Path, sections: dict[str, str]) -> str:
    """The whole README: how to run the harness, its sections, and the table of ``folder``'s results."""
    table_rows = rows(folder)
    count = {
        status: sum(r.status.startswith(status) for r in table_rows)
        for status in (MET, GAP, "not measured")
    }
    section_list = "\n".join(f"- `{name}`: {text}" for name, text in sections.items())
    return f"""# Benchmarks

<!-- Generated from results/*.json by `python -m benchmarks` \
(text and targets: benchmarks/table.py); do not edit. -->

Every performance and quality target of the course, measured by one harness. Each comparison runs
its contenders in one process, in alternating rounds, and reports the medians and their ratio: on a
shared machine every absolute time moves with the load (each JSON file records the load average),
a ratio far less. A target that is not met is listed as **GAP** with what was measured. Each row names
the date and the commit it was measured on ("not recorded": measured before results named commits).

```bash
python -m benchmarks                  # the fast sections: attention throughput bleu decoding gpu
python -m benchmarks attention bleu   # only these sections
python -m benchmarks all              # every section, with quality, load, autograde and ci (hours)
python -m benchmarks --smoke          # tiny sizes, seconds: checks the harness, measures nothing
python -m benchmarks --table          # run nothing: regenerate this file from results/*.json
course bench [the same arguments]     # the same, from anywhere inside the course
```

Sections (each writes its JSON files into `results/`):

{section_list}

## Targets

{count[MET]} met, {count[GAP]} GAP, {count["not measured"]} not measured; "reported": a number the course asks
for, without a bar to pass.

{markdown(table_rows, readme_folder)}
"""
