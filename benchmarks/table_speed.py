"""The rows of the table (:mod:`benchmarks.table`) about speed and robustness: attention and
training throughput, BLEU and decoding speed, length generalisation, notebooks under load, the CI
run and the GPU profile.
"""
from __future__ import annotations

from pathlib import Path

from benchmarks import bleu_speed, mha_speed
from benchmarks import load as load_benchmark
from benchmarks.table_quality import GPU_BLEU, GPU_TRAIN_MINUTES
from benchmarks.table_row import Row, load_result, measured_row, not_measured, provenance

# The course's targets (benchmarks/README.md lists them) that no benchmark script holds as a constant
THROUGHPUT_RATIO = 1.0  # course_lib Transformer's training tokens/s over nn.Transformer's, at least
GPU_MFU = 0.35  # model FLOPs utilisation against the card's dense bf16 peak
CI_MINUTES = 20.0  # the whole test suite on 2 CPU cores, as CI runs it


def attention_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "attention")
    low, high = mha_speed.TRAINING_LENGTHS
    targets = [
        f"{name}: training step ≤ {mha_speed.TARGET_RATIO}× nn.MultiheadAttention's time at T {low}–{high}"
        for name in mha_speed.FUSED
    ]
    comparison = "naive against fused attention at the longest T: time and peak memory"
    if report is None:
        return [not_measured("attention", target, "python -m benchmarks attention")
                for target in [*targets, comparison]]
    B, d_models = report["rows"][0]["B"], sorted({r["d_model"] for r in report["rows"]})
    rows = []
    for name, target in zip(mha_speed.FUSED, targets):
        worst = report["target"]["worst_ratio"][name]
        measured = (f"no shape with T {low}–{high}" if worst is None else
                    f"worst {worst:.2f}× (B {B}, d_model {'/'.join(map(str, d_models))}, no mask and causal)")
        met = None if worst is None else worst <= mha_speed.TARGET_RATIO
        rows.append(measured_row("attention", target, report, path, measured, met))
    longest = max(report["rows"], key=lambda r: (r["T"], r["d_model"], not r["causal"]))
    ms, memory = longest["median_ms"], longest.get("peak_memory_mb")
    naive, fused = "course_lib MHA naive", "course_lib MHA fused"
    measured = (
        f"T {longest['T']}, d_model {longest['d_model']}: MHA naive {ms[naive] / ms[fused]:.1f}× fused's time"
        + (f", {memory[naive]:,.1f} vs {memory[fused]:,.1f} MB peak" if memory else "") +
        f"; course_lib sdpa naive {longest['ratio']['course_lib sdpa naive']:.1f}× "
        "F.scaled_dot_product_attention's")
    return rows + [measured_row("attention", comparison, report, path, measured, None)]


def throughput_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "throughput")
    target = (f"course_lib Transformer training tokens/s ≥ {THROUGHPUT_RATIO:g}× nn.Transformer of the same "
              "size")
    if report is None:
        return [not_measured("throughput", target, "python -m benchmarks throughput")]
    ratio = report["ratio_tokens_per_s"]
    measured = (
        f"{ratio:.2f}× ({report['course_lib']['tokens_per_s']:,.0f} vs "
        f"{report['nn.Transformer']['tokens_per_s']:,.0f} target tokens/s, {report['profile']} preset; "
        f"per CPU second {report['ratio_tokens_per_cpu_s']:.2f}×)")
    return [measured_row("throughput", target, report, path, measured, ratio >= THROUGHPUT_RATIO)]


def bleu_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "bleu_speed")
    target = f"course_lib.bleu: sacreBLEU's score on 3000 sentences, time ≤ {bleu_speed.MAX_RATIO:g}×"
    if report is None:
        return [not_measured("bleu", target, "python -m benchmarks bleu")]
    results = report["results"]
    measured = (("identical scores" if all(r["identical"] for r in results.values()) else "DIFFERENT scores")
                + "; " + ", ".join(f"{r['ratio']:.2f}× (tok {tok})" for tok, r in results.items())
                + f"; {report['sentences']} sentences")
    return [measured_row("bleu", target, report, path, measured, report["passed"])]


def decoding_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "decoding")
    target = "greedy and beam-4 sentences/s, with and without the KV cache (cached = recomputed translations)"
    if report is None:
        return [not_measured("decoding", target, "python -m benchmarks decoding")]
    per_s = report["sentences_per_s"]
    measured = (
        f"greedy {per_s['greedy, KV cache']:.1f}/s cached, {per_s['greedy, recompute']:.1f}/s recomputed "
        f"({report['kv_cache_speedup_greedy']:.1f}×); beam 4 {per_s['beam 4, KV cache']:.1f}/s; "
        f"{report['model'].split(':')[0]} model, {report['sentences']} sentences" +
        ("" if report["greedy_cache_identical"] else "; cached and recomputed translations DIFFER"))
    met = None if report["greedy_cache_identical"] else False
    return [measured_row("decoding", target, report, path, measured, met)]


def length_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "length_generalisation")
    target = ("Transformer on test_long (longer than any training sentence): sinusoidal vs RoPE at the full "
              "recipe, against the RNN with attention")
    if report is None:
        return [not_measured("length", target, "python -m benchmarks length")]
    variants = report["variants"]
    measured = "; ".join(
        f"{name}: test_long {v['bleu_test_long']:.1f} (test {v['bleu_test']:.1f}, {v['updates']} updates)"
        for name, v in variants.items())
    rnn = report.get("attention_rnn_recorded") or {}
    if rnn.get("bleu_test_long") is not None:
        measured += f"; RNN with attention (recorded): test_long {rnn['bleu_test_long']:.1f}"
    paired = report.get("rope_minus_sinusoidal")
    if paired:
        measured += (f"; RoPE − sinusoidal over {len(report['seeds'])} seeds (mean ± standard error): "
                     + ", ".join(f"{key.removeprefix('bleu_')} {d['mean']:+.1f} ± {d['standard_error']:.1f}"
                                 for key, d in paired.items()))
    return [measured_row("length", target, report, path, measured, None)]


def _headline(run: dict) -> str:
    """One run of the load benchmark: its headline numbers, time and load."""
    numbers = ", ".join(f"{key} {value}" for key, value in run["headline"].items())
    return (f"{numbers} after {run['updates']} updates, {run['notebook_minutes']:.1f} min "
            f"(load {run['load_average_after'][0]:.1f})")


def load_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "load")
    # the idle time's target is the quality section's ("notebook NN under 5 min"): here, the numbers
    targets = {assignment: (f"notebook {assignment[:2]} (laptop): the same "
                            + ", ".join(f"{key} (±{tolerance:g})" for key, tolerance in tolerances.items())
                            + f" idle and beside {load_benchmark.HOGS} CPU-bound processes, only slower")
               for assignment, tolerances in load_benchmark.HEADLINES.items()}
    if report is None:
        return [not_measured("load", target, "python -m benchmarks load") for target in targets.values()]
    rows = []
    for assignment, target in targets.items():
        runs = report["notebooks"].get(assignment)
        if runs is None:
            rows.append(not_measured("load", target,
                                      f"python -m benchmarks.load --assignments {assignment}"))
            continue
        idle, loaded = runs["idle"], runs["loaded"]
        measured = (f"idle: {_headline(idle)}; beside {loaded['hogs']}: {_headline(loaded)}; "
                    + ("identical" if runs["identical"] else
                       "differences " + ", ".join(f"{k} {v}" for k, v in runs["difference"].items())))
        rows.append(
            measured_row("load", target, {**report, "date": runs.get("date", report.get("date"))}, path,
                         measured, runs["same"]))
    return rows


def ci_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "ci")
    target = f"README test command (`make test`) under {CI_MINUTES:g} min on 2 cores"
    if report is None:
        return [not_measured("ci", target, "python -m benchmarks ci")]
    minutes, exit_code = report["minutes"], report["exit_code"]
    measured = (f"{minutes:.1f} min" if exit_code == 0 else f"failed (exit {exit_code}) after {minutes:.1f} "
                                                            "min") \
        + ("" if report["command"] == "make test" else f" (`{report['command']}`)")
    return [measured_row("ci", target, report, path, measured, exit_code == 0 and minutes < CI_MINUTES)]


def gpu_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "gpu")
    targets = [
        f"base Transformer MFU ≥ {GPU_MFU:.0%} on one H100 (dense bf16 peak, PaLM FLOPs, causal attention)",
        f"base Transformer BLEU test ≥ {GPU_BLEU:g} in ≤ {GPU_TRAIN_MINUTES:g} min of training on one H100"
    ]
    if report is None:
        return [not_measured("gpu", target, "python -m benchmarks gpu") for target in targets]
    if not report["measured"]:
        why = "no GPU" if "no GPU" in report["note"] else report["note"]
        return [
            Row("gpu", target, "—", f"not measured ({why})", path, **provenance(report))
            for target in targets
        ]
    report = {"device": "cuda", **report}
    mfu = report["mfu"]
    return [
        measured_row("gpu", targets[0], report, path,
                     f"{'unknown peak' if mfu is None else f'{mfu:.1%}'} ({report['tokens_per_s']:,.0f} "
                     f"tokens/s, {report['device_name']})", None if mfu is None else mfu >= GPU_MFU),
        measured_row("gpu", targets[1], report, path,
                     f"test {report['bleu_test']:.2f} (test_long {report['bleu_test_long']:.1f}) after "
                     f"{report['train_minutes']:.1f} min ({report['device_name']})",
                     report["bleu_test"] >= GPU_BLEU and report["train_minutes"] <= GPU_TRAIN_MINUTES),
    ]
