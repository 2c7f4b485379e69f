"""One harness for every performance target of the course: run the benchmarks, write JSON, regenerate the
table.

    python -m benchmarks                     # the fast sections (minutes on a laptop CPU)
    python -m benchmarks attention bleu      # only these sections
    python -m benchmarks all                 # every section, the notebook runs, load, autograde and CI
    included (hours)
    python -m benchmarks --smoke             # tiny sizes, seconds: proves the harness works, measures nothing
    python -m benchmarks --table             # run nothing: regenerate benchmarks/README.md from the JSON
    there is
    course bench [the same arguments]        # the same, from anywhere inside the course

Each section writes ``benchmarks/results/<name>.json`` (machine, torch, device, date and load
included), then ``benchmarks/README.md`` is regenerated from all the JSON files (``benchmarks/table.py``).
Each comparison runs its contenders in one process, in alternating rounds, and reports medians and
their ratios: on a shared machine every absolute time moves with the load, a ratio much less.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from benchmarks import capstone, table
from benchmarks.table_quality import quality_file
from benchmarks._notebook_run import RESULTS, SMOKE_OUTPUT, machine, write_report

ROOT = Path(__file__).resolve().parents[1]

RUNS_KEPT = ROOT / "build" / "benchmark-runs"  # the quality section's notebooks leave their run folders here


@dataclass
class Options:
    output_dir: Path  # where the JSON files go
    smoke: bool  # tiny sizes: checks the code, measures nothing
    threads: int | None  # torch threads here and in the notebooks' kernels (None: torch's default)
    ci_command: str  # the command the ci section times

    def write(self, name: str, report: dict) -> Path:
        return write_report(name, {"smoke": self.smoke, **report}, self.output_dir / f"{name}.json")


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def attention(options: Options) -> None:
    from benchmarks import mha_speed

    sizes = dict(batch=2, d_models=(32,), lengths=(16, 32), heads=2, repeats=3, warmup=1, budget_s=1.0) \
        if options.smoke else {}
    options.write("attention", mha_speed.run(**sizes, device="cuda" if _cuda() else "cpu"))


def throughput(options: Options) -> None:
    from benchmarks.transformer import throughput as measure

    sizes = dict(profile="smoke", rounds=2, steps_per_round=1, n_train=2_000) if options.smoke \
        else dict(profile="gpu" if _cuda() else "laptop")
    options.write("throughput", {"machine": machine(), **measure(**sizes)})


# (module, assignment): each runs its solution notebook and writes what it recorded
NOTEBOOK_BENCHMARKS = (
    ("benchmarks.rnn_baselines", "01_rnn_baselines"), ("benchmarks.attention_rnn", "02_attention"),
    ("benchmarks.transformer", "05_transformer"), ("benchmarks.capstone", "06_bleu"),
    ("benchmarks.language_model", "07_language_model"))


def quality(options: Options) -> None:
    """Every training notebook, and the capstone, in every profile this machine has: one process each.

    The notebooks run in course order and build on each other as a student's do: each one's run
    folder is kept in ``build/benchmark-runs/<profile>/``, where 02 finds 01's checkpoint and 06
    the checkpoints of 01, 02 and 05.
    """
    profiles = ["smoke"] if options.smoke else ["laptop", *(["gpu"] if _cuda() else [])]
    failed = []
    for profile in profiles:
        # the laptop targets are for a CPU: hide a GPU from those runs
        env = {**os.environ, **({} if profile == "gpu" else {"CUDA_VISIBLE_DEVICES": ""})}
        kept = RUNS_KEPT / profile
        for module, assignment in NOTEBOOK_BENCHMARKS:
            command = [
                sys.executable, "-m", module, "--profile", profile, "--keep",
                str(kept), "--output",
                str(options.output_dir / f"{quality_file(assignment, profile)}.json")
            ]
            if module == "benchmarks.transformer":
                command.append("--skip-throughput")  # the throughput section measures it
            if module == "benchmarks.attention_rnn" and (kept / "01_rnn_baselines").is_dir():
                command += ["--reuse-01", str(kept / "01_rnn_baselines")]
            if module == "benchmarks.capstone":
                command += [
                    "--reuse", *(str(kept / name) for name in capstone.EARLIER if (kept / name).is_dir())
                ]
            if options.threads:
                command += ["--threads", str(options.threads)]
            print(f"-- {assignment} ({profile} profile)", file=sys.stderr)
            if subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL).returncode:
                failed.append(f"{assignment} ({profile})")
    if failed:
        raise RuntimeError(f"notebook benchmarks failed: {', '.join(failed)}")


def load(options: Options) -> None:
    """Notebooks 05 and 07 idle and beside busy processes: the same numbers, other times (benchmarks/load.py).

    The idle runs are kept where the quality section keeps its notebooks' (06 and ``course provenance
    --executed`` read them there).
    """
    profile = "smoke" if options.smoke else "laptop"
    env = {**os.environ,
           **({} if options.smoke else {"CUDA_VISIBLE_DEVICES": ""})}  # the laptop targets: a CPU
    command = [
        sys.executable, "-m", "benchmarks.load", "--profile", profile, "--keep",
        str(RUNS_KEPT / profile), "--output",
        str(options.output_dir / "load.json")
    ]
    if subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL).returncode:
        raise RuntimeError("the load benchmark failed")


def bleu(options: Options) -> None:
    from benchmarks import bleu_speed

    sentences, repeats = (200, 3) if options.smoke else (3000, 15)
    options.write("bleu_speed", bleu_speed.run(sentences, repeats))


def decoding(options: Options) -> None:
    from benchmarks import decoding as benchmark

    laptop_runs = RUNS_KEPT / "laptop"  # the quality section's trained model, when it has run
    sizes = dict(profile="smoke", sentences=8, repeats=3, warmup=0) if options.smoke \
        else dict(runs=laptop_runs if (laptop_runs / "05_transformer").is_dir() else None)
    options.write("decoding", benchmark.run(**sizes))


def autograde(options: Options) -> None:
    from benchmarks import autograde_batch
    from course_tools.course import assignments

    course = [a.id for a in assignments(ROOT)]
    # 6 students per assignment (2 honest, 1 blank, 3 bugs): both job counts over the 6 assignments take
    # about 15 minutes on 2 cores; `python -m benchmarks.autograde_batch --students N` grades bigger batches
    batch = dict(assignments=course[:1], students=3) if options.smoke else dict(
        assignments=course, students=6)
    # then every grade again beside two CPU-bound processes, which must change none (issue 28); the
    # students spread over 4 variants of the hidden inputs, each variant's reference timed (issue 29)
    options.write("autograde_batch", autograde_batch.run(**batch, jobs=[1, 2], load=2, variants=4))


CLASS_ASSIGNMENT, CLASS_SIZE = "06_bleu", 200  # one assignment, a class of students


def autograde_class(options: Options) -> None:
    """A whole class of one assignment: seconds per student with --jobs 1 and 2, every grade checked."""
    from benchmarks import autograde_batch

    batch = dict(assignments=[CLASS_ASSIGNMENT], students=12 if options.smoke else CLASS_SIZE)
    options.write("autograde_class", autograde_batch.run(**batch, jobs=[1, 2]))


def agreement(options: Options) -> None:
    """Every bug and alternative of every assignment through nbgrader's Validator and course autograde."""
    from benchmarks import validate_agreement

    sizes = dict(assignment_ids=["04_positional_encoding"], only=2) if options.smoke else {}
    validate_agreement.run(**sizes, jobs=2, output=options.output_dir / "validate_agreement.json")


def similarity(options: Options) -> None:
    """course similarity's comparison on a class of one assignment, against copydetect on the raw cells."""
    from benchmarks import similarity_class

    students, rounds = (30, 1) if options.smoke else (CLASS_SIZE, 3)
    options.write("similarity_class", similarity_class.run("07_language_model", students, rounds))


REPORT_SIZE = 500  # students in course report's class


def report(options: Options) -> None:
    """course report on a class of synthetic grading records: seconds for the whole command."""
    from benchmarks import report_speed

    options.write("report", report_speed.run(30 if options.smoke else REPORT_SIZE, 1 if options.smoke else 3))


def length(options: Options) -> None:
    """The Transformer on test_long with sinusoidal positions and with RoPE, the full recipe each."""
    from benchmarks import length_generalisation

    options.write("length_generalisation", length_generalisation.run("smoke" if options.smoke else "laptop"))


def ci(options: Options) -> None:
    """Wall time of the README's test command (what .ci/run runs), target under 20 minutes on 2 cores."""
    before = machine()
    started = time.perf_counter()
    exit_code = subprocess.run(options.ci_command, shell=True, cwd=ROOT).returncode
    minutes = (time.perf_counter() - started) / 60
    options.write("ci", {"machine": {**before, "load_average_after": machine()["load_average"]},
                         "command": options.ci_command, "exit_code": exit_code, "minutes": round(minutes, 2)})


def gpu(options: Options) -> None:
    """The gpu-profile base model (tokens/s, MFU, BLEU, minutes) through
    benchmarks.transformer.gpu_section."""
    from benchmarks.transformer import gpu_section

    if options.smoke and _cuda():
        report = {
            "measured": False, "note": "not measured with --smoke (the gpu section trains the base model)"
        }
    else:
        report = gpu_section()  # says "no GPU" by itself without CUDA
    options.write("gpu", {"machine": machine(), **report})


@dataclass(frozen=True)
class Section:
    run: Callable[[Options], None]
    fast: bool  # in the default list
    help: str


SECTIONS: dict[str, Section] = {
    "attention": Section(
        attention, True, "course_lib's naive and fused attention vs F.scaled_dot_product_attention "
        "and nn.MultiheadAttention: training-step time and peak memory, B=32, d_model 128/256, "
        "T 32-1024 (benchmarks/mha_speed.py)"),
    "throughput": Section(
        throughput, True, "training tokens/s of course_lib's Transformer vs nn.Transformer of the "
        "same size (benchmarks/transformer.py)"),
    "quality": Section(
        quality, False, "time to quality: notebooks 01, 02, 05, 06 and 07 run top to bottom in "
        "every profile this machine has: minutes, BLEU on test and test_long, 07's validation loss "
        "in three seeds and against nanoGPT's CPU recipe (about 50 minutes per profile)"),
    "load": Section(
        load, False, "notebooks 05 and 07 (laptop) run idle and then beside two CPU-bound processes: "
        "the same BLEU (±0.5) and nats/char (±0.02), the times and load averages of both "
        "(benchmarks/load.py; about an hour on 2 cores)"),
    "bleu": Section(
        bleu, True, "course_lib.bleu vs sacreBLEU on 3000 sentences: same score, time ratio "
        "(benchmarks/bleu_speed.py)"),
    "decoding": Section(
        decoding, True, "sentences/s of greedy and beam search, with and without the KV cache "
        "(benchmarks/decoding.py)"),
    "autograde": Section(
        autograde, False, "course autograde on every assignment: seconds per student, --jobs 1 vs "
        "--jobs 2 (benchmarks/autograde_batch.py; a quarter of an hour)"),
    "class": Section(
        autograde_class, False, f"course autograde on a class of {CLASS_SIZE} students of "
        f"{CLASS_ASSIGNMENT} (honest, blank and catalogued bugs): seconds per student, --jobs 1 vs 2 "
        "(half an hour)"),
    "agreement": Section(
        agreement, False, "every catalogued bug and alternative of every assignment through "
        "nbgrader's Validator and course autograde: the test cells each fails must be the same "
        "(benchmarks/validate_agreement.py; about two hours on 2 cores)"),
    "similarity": Section(
        similarity, False, f"course similarity on a class of {CLASS_SIZE} students of "
        "07_language_model (disguised copies, independent solutions): seconds, flags, against "
        "copydetect on the raw cells (benchmarks/similarity_class.py; about 3 minutes)"),
    "report": Section(
        report, False, f"course report on a class of {REPORT_SIZE} students' synthetic grading records "
        "(profiles of known outcome, cycled): seconds for the whole command, page and CSV files "
        "included (benchmarks/report_speed.py; about a minute)"),
    "length": Section(
        length, False, "the Transformer on test_long (sentences longer than any in training): "
        "sinusoidal positions vs RoPE, each with notebook 05's full laptop recipe and three seeds, "
        "against the RNN with attention (benchmarks/length_generalisation.py; about 20 minutes)"),
    "ci": Section(ci, False, "wall time of the README's test command (--ci-command, default `make test`)"),
    "gpu": Section(
        gpu, True, "with CUDA: the gpu-profile base model's tokens/s, MFU, BLEU and minutes; "
        "without: recorded as not measured"),
}


def readme_path(output_dir: Path) -> Path:
    """benchmarks/README.md for the real results; a README.md beside the JSON for any other folder."""
    return ROOT / "benchmarks" / "README.md" if output_dir.resolve() == RESULTS.resolve(
    ) else output_dir / "README.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog="sections:\n" +
        "\n".join(f"  {name:<11} {s.help}{'' if s.fast else ' [not in the default list]'}"
                  for name, s in SECTIONS.items()))
    parser.add_argument(
        "sections", nargs="*", metavar="SECTION",
        help=f"sections to run, or all (default: {' '.join(n for n, s in SECTIONS.items() if s.fast)})")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes, seconds: checks the harness "
                             f"(default output {SMOKE_OUTPUT.relative_to(ROOT)}/)")
    parser.add_argument("--table", action="store_true", help="run nothing, only regenerate the README table")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help=f"folder of the JSON files (default {RESULTS.relative_to(ROOT)}/); the table of "
                             "another folder is written to its own README.md")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads, here and in the notebooks' kernels (default: torch's choice)")
    parser.add_argument("--ci-command", default="make test", help="the command the ci section times")
    args = parser.parse_args(argv)
    if args.table and args.sections:
        parser.error("--table runs no section")
    names = list(SECTIONS) if args.sections == [
        "all"
    ] else args.sections or [n for n, s in SECTIONS.items() if s.fast]
    if unknown := [n for n in names if n not in SECTIONS]:
        parser.error(f"unknown section {', '.join(unknown)}: choose from {', '.join(SECTIONS)} or all")
    output_dir = args.output_dir or (SMOKE_OUTPUT if args.smoke else RESULTS)
    output_dir.mkdir(parents=True, exist_ok=True)
    options = Options(output_dir, args.smoke, args.threads, args.ci_command)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # for the processes the sections start
    failed = []
    for name in [] if args.table else names:
        print(f"== {name}", file=sys.stderr)
        started = time.perf_counter()
        try:
            SECTIONS[name].run(options)
        except Exception:  # one broken section must not cost the others' measurements
            traceback.print_exc()
            failed.append(name)
        print(f"== {name}: {'FAILED' if name in failed else 'done'} in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
    readme = readme_path(output_dir)
    readme.write_text(table.readme(output_dir, readme.parent, {n: s.help for n, s in SECTIONS.items()}),
                      encoding="utf-8")
    print(table.markdown(table.rows(output_dir), readme.parent))
    print(f"table written to {readme}" + (f"; sections that failed: {', '.join(failed)}" if failed else ""),
          file=sys.stderr)
    return 1 if failed else 0
