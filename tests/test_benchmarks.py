"""The benchmark harness: a smoke run end to end, the table it regenerates, and `course bench`.

Nothing here measures anything: the smoke run uses tiny sizes and a temporary output folder, so
that the harness cannot rot without a test failing, and the real results are never touched.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import runner, table, table_quality
from benchmarks._timing import alternate
from benchmarks.flops import matmul_params, peak_flops, training_flops
from benchmarks.mha_speed import CONTENDERS, FUSED
from benchmarks.transformer import TorchTransformer
from course_lib import seed_everything
from course_tools.cli import main as course
from course_lib.transformer import Transformer, transformer_param_count

from .test_transformer import batch, tiny

ROOT = Path(__file__).resolve().parents[1]
FAST_SECTIONS = {
    "attention": "attention", "throughput": "throughput", "bleu": "bleu_speed", "decoding": "decoding",
    "gpu": "gpu"
}  # section -> its result file


def test_smoke_run_writes_every_fast_section_and_the_table(tmp_path):
    readme_before = (ROOT / "benchmarks" / "README.md").read_bytes()
    # the timeout only turns a hang into a failure: on a busy machine the smoke run takes several times its
    # idle time
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--smoke", "--output-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert {n for n, s in runner.SECTIONS.items() if s.fast} == set(FAST_SECTIONS)
    reports = {
        name: json.loads((tmp_path / f"{file}.json").read_text())
        for name, file in FAST_SECTIONS.items()
    }
    for report in reports.values():
        assert report["smoke"] is True and report["date"] and report["machine"]["torch"]

    attention = reports["attention"]
    assert {row["causal"] for row in attention["rows"]} == {False, True}
    for row in attention["rows"]:
        assert set(row["median_ms"]) == set(CONTENDERS) and row["repeats"] >= 3
        assert set(row.get("peak_memory_mb", CONTENDERS)) == set(CONTENDERS)  # measured without a mask
    assert all(attention["target"]["worst_ratio"][name] > 0 for name in FUSED)  # smoke sizes include T = 32
    assert "ru_maxrss" in attention["memory_method"]

    assert reports["throughput"]["ratio_tokens_per_s"] > 0
    assert all(r["identical"] for r in reports["bleu"]["results"].values())
    decoding = reports["decoding"]
    assert decoding["model"].startswith("untrained")  # the test's runs folder has no checkpoint
    assert decoding["greedy_cache_identical"]  # the KV cache must not change a translation
    assert set(decoding["sentences_per_s"]) == {"greedy, KV cache", "greedy, recompute", "beam 4, KV cache"}
    assert reports["gpu"]["measured"] is False

    readme = (tmp_path / "README.md").read_text()
    assert "| section | target | measured | status | machine | torch | device | date |" in readme
    for name, file in FAST_SECTIONS.items():
        assert f"[{name}]({file}.json)" in readme
    assert "smoke run, not a measurement" in readme and "not measured (no GPU)" in readme
    assert (ROOT / "benchmarks" / "README.md").read_bytes() == readme_before  # the real table is untouched


def _write(folder: Path, name: str, report: dict) -> None:
    machine = {"cpu": "Test CPU", "cpu_count": 2, "torch": "2.x", "device": "cpu"}
    report = {"date": "2026-01-02T03:04:05+00:00", "machine": machine, **report}
    (folder / f"{name}.json").write_text(json.dumps(report))


def test_table_lists_a_missed_target_as_gap_with_its_value(tmp_path):
    _write(tmp_path, "ci", {"command": "make test", "exit_code": 0, "minutes": 25.0})
    _write(tmp_path, "05_transformer", {
        "notebook": {
            "profile": "laptop", "notebook_minutes": 10.5, "bleu_test": 99.25, "bleu_test_long": 71.4
        }
    })
    _write(tmp_path, "bleu_speed", {"sentences": 3000, "passed": False, "results": {
        "13a": {"identical": True, "ratio": 2.0}}})
    rows = {(row.section, row.target): row for row in table.rows(tmp_path)}

    def row(section, start):
        return next(r for (s, target), r in rows.items() if s == section and target.startswith(start))

    ci = row("ci", "README test command")
    assert (ci.status, ci.measured) == (table.GAP, "25.0 min")
    assert (ci.machine, ci.torch, ci.device, ci.date) == ("Test CPU, 2 cores", "2.x", "cpu", "2026-01-02")
    assert row("quality (laptop)", "notebook 05").status == table.GAP
    assert row("quality (laptop)", "notebook 05").measured == "10.5 min"
    assert row("quality (laptop)", "Transformer (05)").status == table.MET
    assert row("bleu", "course_lib.bleu").status == table.GAP and "2.00×" in row(
        "bleu", "course_lib.bleu").measured
    assert row("throughput", "course_lib Transformer").status == "not measured"  # no file: said, not hidden
    assert row("quality (gpu)", "base Transformer (05): BLEU").status == "not measured (no GPU run)"
    markdown = table.markdown(list(rows.values()), tmp_path)
    assert (
        "| [ci](ci.json) | README test command (`make test`) under 20 min on 2 cores | 25.0 min | **GAP** |"
        in markdown)


def test_table_reports_gpu_targets_from_a_gpu_run(tmp_path):
    _write(
        tmp_path, "gpu", {
            "measured": True, "device_name": "NVIDIA H100 80GB HBM3", "mfu": 0.2, "tokens_per_s": 1e6,
            "bleu_test": 99.6, "bleu_test_long": 96.0, "train_minutes": 2.9,
            "machine": {"cuda": "NVIDIA H100 80GB HBM3", "torch": "2.x"}
        })
    mfu, bleu = table.rows(tmp_path)[-2:]
    assert (mfu.status, mfu.measured) == (table.GAP, "20.0% (1,000,000 tokens/s, NVIDIA H100 80GB HBM3)")
    assert bleu.status == table.MET and (bleu.machine, bleu.device) == ("NVIDIA H100 80GB HBM3", "cuda")


def test_gpu_row_of_05_is_planned_within_its_training_time_from_the_measured_throughput():
    """05's gpu row (course_lib.recipes) trains, at the tokens/s measured on an H200, within the
    3-minute target; its RoPE variant compares at an evaluation point of the main run."""
    from benchmarks.transformer import gpu_plan
    from course_lib import recipes

    hp = recipes.HPARAMS["transformer"]["gpu"]
    plan = gpu_plan()
    assert plan["planned_train_minutes"] <= plan["target_train_minutes"] == table_quality.GPU_TRAIN_MINUTES
    assert plan["planned_train_minutes"] == round(hp["steps"] * hp["max_tokens"] / 240_000 / 60, 2)
    assert hp["variant_steps"] <= hp["steps"] and hp["variant_steps"] % hp["eval_every"] == 0
    assert hp["steps"] % hp["eval_every"] == 0


def test_ci_section_times_the_given_command(tmp_path):
    command = f'"{sys.executable}" -c pass'
    assert runner.main(["ci", "--ci-command", command, "--output-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "ci.json").read_text())
    assert report["exit_code"] == 0 and report["command"] == command and report["minutes"] < 1
    assert "| met |" in (tmp_path / "README.md").read_text()


def test_course_bench_passes_its_arguments_to_the_runner(tmp_path, capfd):
    """`course bench` runs `python -m benchmarks` in the course folder: nothing outside the package is
    imported."""
    _write(tmp_path, "ci", {"command": "make test", "exit_code": 3, "minutes": 1.0})
    assert course(["bench", "--table", "--output-dir", str(tmp_path)]) == 0
    assert "failed (exit 3) after 1.0 min | **GAP**" in (tmp_path / "README.md").read_text()
    assert course(["bench", "no-such-section"]) == 2
    assert "unknown section no-such-section" in capfd.readouterr().err


def test_alternate_reverses_the_order_every_other_round_and_keeps_min_repeats():
    calls = []
    times, last = alternate({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2},
                            repeats=10, warmup=1, budget_s=0.0, min_repeats=3)
    assert calls == ["a", "b"] + ["a", "b", "b", "a", "a", "b"]  # warm-up, then three alternating rounds
    assert {name: len(t) for name, t in times.items()} == {"a": 3, "b": 3} and last == {"a": 1, "b": 2}


@pytest.mark.parametrize("module", [
    "rnn_baselines", "attention_rnn", "transformer", "capstone", "autograde_batch", "bleu_speed", "mha_speed",
    "decoding", "load", "validate_agreement", "report_speed"
])
def test_every_benchmark_script_still_parses_its_command_line(module, capsys):
    main = __import__(f"benchmarks.{module}", fromlist=["main"]).main
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and "usage:" in capsys.readouterr().out


@torch.no_grad()
@pytest.mark.filterwarnings("ignore:.*nested tensor:UserWarning")  # torch's eval fast path, not our concern
@pytest.mark.parametrize("norm_first", [True, False])
def test_whole_model_equals_nn_transformer_twin(norm_first):
    """The benchmark's nn.Transformer twin computes the same function once the weights are copied."""
    seed_everything(3)
    cfg = tiny(norm_first=norm_first)
    ours = Transformer(cfg).eval()
    twin = TorchTransformer(cfg).eval()
    assert sum(p.numel()
               for p in twin.parameters()) == transformer_param_count(cfg) + (0 if norm_first else 4 * 16)
    twin.load_from(ours)
    src, tgt = batch()
    torch.testing.assert_close(twin(src, tgt), ours(src, tgt), atol=1e-4, rtol=1e-4)


def test_training_flops():
    cfg = tiny()
    n_enc, n_dec = matmul_params(cfg)
    assert n_enc == 2 * (4 * 16 * 16 + 2 * 16 * 24)
    assert n_dec == 2 * (8 * 16 * 16 + 2 * 16 * 24) + 17 * 16
    s, t = 5, 4
    # the decoder's self-attention: the t·(t + 1)/2 = 10 pairs its causal mask keeps, not t² = 16
    want = 6 * (n_enc * s + n_dec * t) + 12 * 16 * (2 * s * s + 2 * (t * (t + 1) // 2 + t * s))
    assert training_flops(cfg, [s, s], [t, t]) == 2 * want
    assert peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_flops("NVIDIA H100 PCIe") == 756e12
    assert peak_flops("a toaster") is None


@pytest.mark.slow
def test_length_section_trains_both_position_schemes_and_reports_them(tmp_path):
    """`python -m benchmarks length --smoke`: sinusoidal and RoPE trained by the same recipe on the same
    data, each scored on test and test_long; the table row quotes both and the RNN's recorded score."""
    assert runner.main(["length", "--smoke", "--output-dir", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "length_generalisation.json").read_text())
    assert report["smoke"] is True and set(report["variants"]) == {"sinusoidal", "rope"}
    for variant in report["variants"].values():
        assert 0 < variant["updates"] <= report["hyperparameters"]["steps"]
        assert 0 <= variant["bleu_test_long"] <= 100 and 0 <= variant["bleu_test"] <= 100
    runs = report["by_seed"]
    assert set(runs["rope"]) == {str(seed) for seed in report["seeds"]} and len(report["seeds"]) >= 2
    for key, paired in report["rope_minus_sinusoidal"].items():
        differences = [runs["rope"][s][key] - runs["sinusoidal"][s][key] for s in runs["rope"]]
        assert paired["by_seed"] == [round(d, 2) for d in differences]
    row = next(r for r in table.rows(tmp_path) if r.section == "length")
    assert "sinusoidal: test_long" in row.measured and "rope: test_long" in row.measured
    assert "RoPE − sinusoidal over 2 seeds" in row.measured
    assert row.status == "smoke run, not a measurement"


@pytest.mark.parametrize("seconds, status", [(13.1, table.MET), (16.9, table.GAP)])
def test_autograde_row_holds_the_whole_course_to_its_target(tmp_path, seconds, status):
    from course_tools.course import assignments

    course = [a.id for a in assignments(ROOT)]
    runs = {"jobs1": {"seconds_per_student": seconds, "unexpected": 0},
            "jobs2": {"seconds_per_student": seconds / 2, "unexpected": 0}}
    _write(tmp_path, "autograde_batch", {"assignments": course, "students": 12, "runs": runs})
    assert next(r for r in table.rows(tmp_path) if r.section == "autograde").status == status
    _write(tmp_path, "autograde_batch", {"assignments": course[:1], "students": 12, "runs": runs})
    assert next(r for r in table.rows(tmp_path) if r.section == "autograde").status == table.REPORTED


def _load_run(headline: dict, minutes: float, hogs: int = 0, updates: int = 900) -> dict:
    return {
        "hogs": hogs, "headline": headline, "updates": updates, "notebook_minutes": minutes,
        "train_minutes": 3.0, "estimated_train_minutes": 2.9, "load_average_before": [0.5, 0.5, 0.5],
        "load_average_after": [3.9 if hogs else 1.2, 2.0, 1.0]
    }


@pytest.mark.parametrize("loaded_headline, loaded_updates, same, identical, status", [
    ({"bleu_test": 98.62, "bleu_test_long": 45.5}, 900, True, True, table.MET),  # the same run, slower
    ({"bleu_test": 98.9, "bleu_test_long": 45.1}, 900, True, False, table.MET),  # within ±0.5 BLEU
    ({"bleu_test": 97.9, "bleu_test_long": 45.5}, 900, False, False, table.GAP),  # the load moved the result
    ({"bleu_test": 98.62, "bleu_test_long": 45.5}, 81, False, False, table.GAP),  # a time budget cut the run
])
def test_load_section_holds_the_headline(tmp_path, loaded_headline, loaded_updates, same, identical, status):
    from benchmarks.load import agreement

    idle = _load_run({"bleu_test": 98.62, "bleu_test_long": 45.5}, 4.6)
    loaded = _load_run(loaded_headline, 21.0, hogs=2, updates=loaded_updates)
    runs = {"idle": idle, "loaded": loaded, **agreement("05_transformer", idle, loaded)}
    assert (runs["same"], runs["identical"]) == (same, identical)
    _write(tmp_path, "load", {"profile": "laptop", "hogs": 2, "notebooks": {"05_transformer": runs}})
    row05, row07 = [r for r in table.rows(tmp_path) if r.section == "load"]
    assert row05.status == status
    assert "beside 2: bleu_test" in row05.measured and "(load 3.9)" in row05.measured
    assert row07.status == "not measured" and "--assignments 07_language_model" in row07.measured


def test_busy_processes_spin_while_the_block_runs_and_are_gone_after():
    from benchmarks.load import busy

    with busy(2) as pids:
        assert len(pids) == 2 and all(Path(f"/proc/{pid}").exists() for pid in pids)
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)  # killed and reaped


def test_load_run_of_one_notebook_keeps_the_other_notebooks_entry(tmp_path, monkeypatch):
    from benchmarks import load

    runs = iter(
        [
            _load_run({"bleu_test": 98.7, "bleu_test_long": 44.0}, 4.6),
            _load_run({"bleu_test": 98.7, "bleu_test_long": 44.0}, 21.0, hogs=2),
        ]
    )
    monkeypatch.setattr(load, "run_once", lambda *args: next(runs))
    output = tmp_path / "load.json"
    earlier_07 = {"date": "2026-01-01T00:00:00+00:00", "same": True, "identical": True}
    output.write_text(json.dumps({"profile": "laptop", "notebooks": {"07_language_model": earlier_07}}))
    assert load.main(["--assignments", "05_transformer", "--output", str(output)]) == 0
    notebooks = json.loads(output.read_text())["notebooks"]
    assert notebooks["07_language_model"] == earlier_07 and notebooks["05_transformer"]["identical"] is True


def test_language_model_benchmark_trains_the_preset_the_notebook_recorded(tmp_path, capsys):
    """The seeds and the nanoGPT comparison train what the notebook's results say it trained, not a copy."""
    from benchmarks import language_model

    tiny_preset = {"model": dict(d_model=16, n_layers=1, n_heads=2, d_ff=32),
                   "train": dict(steps=3, batch_size=2, context=16, warmup=1, eval_every=3, eval_batches=1)}
    output = tmp_path / "07.json"
    earlier = {"date": "earlier", "notebook": {"profile": "laptop", "preset": tiny_preset}}
    output.write_text(json.dumps(earlier))
    assert language_model.main(["--skip-notebook", "--budget", "0.2", "--slice", "0.1", "--output",
                                str(output)]) == 0
    report = json.loads(output.read_text())
    assert set(report["seeds"]["valid_loss"]) == {str(s) for s in language_model.SPREAD_SEEDS}
    ours = report["nanogpt_comparison"]["course laptop preset"]
    assert ours["schedule_steps"] == 3 and ours["tokens"] == ours["steps"] * 2 * 16
    assert report["notebook"]["preset"] == tiny_preset and report["carried_from"]["notebook"] == "earlier"

    output.write_text(json.dumps({"notebook": {"profile": "laptop"}}))   # recorded before the preset was
    with pytest.raises(SystemExit, match="no preset recorded"):
        language_model.main(["--skip-notebook", "--output", str(output)])


@pytest.mark.parametrize("seeds, status", [({"1": 1.530, "2": 1.548}, table.MET),
                                           ({"1": 1.530, "2": 1.562}, table.GAP), ({"1": 1.530}, table.GAP)])
def test_kneser_ney_row_needs_every_seed_below_the_line(tmp_path, seeds, status):
    kneser_ney = {"by_order": {"5": 1.608, "6": 1.561}}
    _write(tmp_path, "07_language_model", {
        "notebook": {"profile": "laptop", "valid_loss": 1.540, "baselines": {"kneser_ney": kneser_ney}},
        "seeds": {"valid_loss": seeds}})
    row = next(r for r in table.rows(tmp_path) if "Kneser–Ney line in each" in r.target)
    assert row.status == status and "against 1.561" in row.measured and "standard error" in row.measured


@pytest.mark.parametrize("lowest, with_dropout, status", [
    ([2.92, 2.93, 2.94], [2.91, 2.92, 2.94], table.MET),    # climbed 0.3 each; dropout 0.3 lower each
    ([3.20, 3.22, 3.25], [2.91, 2.92, 2.94], table.GAP),    # no climb: nothing overfit
    ([2.92, 2.93, 2.94], [3.10, 3.30, 3.20], table.GAP),    # overfit, and dropout did not help
])
def test_dropout_row_needs_overfitting_and_an_effect_beyond_the_noise(tmp_path, lowest, with_dropout, status):
    dropout = {"train_chars": 3000, "p": 0.2, "seeds": [0, 1, 2],
               "valid_loss": {"0": [3.22, 3.23, 3.25], "0.2": with_dropout},
               "lowest_valid_loss": {"0": lowest, "0.2": with_dropout}}
    _write(tmp_path, "07_language_model", {"notebook": {"profile": "laptop", "dropout": dropout}})
    row = next(r for r in table.rows(tmp_path) if "dropout lowers" in r.target)
    assert row.status == status and "3,000 characters, 3 seeds" in row.measured
