"""`course train`, the recipes behind it, and data-parallel training under torchrun (2 CPU processes,
gloo)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_lib import recipes
from course_lib.distributed import MODELS, Shard
from course_tools.cli import main as course
from course_lib.text import BucketedBatches, TranslationData
from course_lib.checkpoints import load_checkpoint, read_results, runs_dir

ROOT = Path(__file__).resolve().parents[1]


def test_model_names_match_recipes():
    assert MODELS == tuple(sorted(recipes.RECIPES))
    for name in MODELS:
        assert set(recipes.HPARAMS[name]) == {"smoke", "laptop", "gpu"}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("profile", ["smoke", "laptop", "gpu"])
def test_every_profile_counts_updates_and_has_no_time_limit(name, profile):
    """The run, and so the model, is fixed by the profile: no minute budget decides how far it trains."""
    hp = recipes.hparams(name, profile)
    assert isinstance(hp["steps"], int) and hp["steps"] > 0
    assert not any("minutes" in key for key in hp)


def test_the_minutes_safety_net_stops_the_run_and_says_so(capsys):
    """--minutes 0: the safety net is hit after the first update, whatever the machine's speed."""
    assert course(["train", "--model", "rnn", "--profile", "smoke", "--steps", "5", "--n-train", "200",
                   "--minutes", "0", "--no-eval", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "rnn: 1 updates" in captured.out
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(
        "stopped by the 0-minute safety net after 1 of 5 updates: this is not the 5-update result")
    assert "course train --minutes" in line and "COURSE_PROFILE=smoke" in line
    assert read_results("01_rnn_baselines")["stopped_early"] == line


def test_course_train_transformer_writes_checkpoint_and_results(capsys):
    assert course([
        "train", "--model", "transformer", "--profile", "smoke", "--steps", "3", "--n-train", "300",
        "--no-progress"
    ]) == 0
    out = capsys.readouterr().out
    assert "3 updates" in out and "bleu_test" in out
    results = read_results("05_transformer")
    assert results["updates"] == 3 and results["trained_by"] == "course train"
    assert {"bleu_test", "bleu_test_long", "bleu_by_length", "headline", "tokens_per_s"} <= set(results)
    ckpt = load_checkpoint(runs_dir() / "05_transformer" / "transformer.pt")
    from course_lib.transformer import Transformer, TransformerConfig

    model = Transformer(TransformerConfig(**ckpt["config"]))
    load_checkpoint(runs_dir() / "05_transformer" / "transformer.pt", model)  # fits the notebook's class
    assert ckpt["extra"]["profile"] == "smoke" and set(ckpt["vocabs"]) == {"src", "tgt"}


@pytest.mark.parametrize("name", ["rnn", "attention-rnn"])
def test_course_train_rnns(name):
    assert course(["train", "--model", name, "--profile", "smoke", "--steps", "2", "--n-train", "200",
                   "--no-eval", "--no-progress"]) == 0
    recipe = recipes.RECIPES[name]
    assert (runs_dir() / recipe.assignment / recipe.checkpoint).is_file()
    assert read_results(recipe.assignment)["updates"] == 2


def test_every_capstone_row_is_a_recipe():
    """Notebook 06 compares exactly the models the recipes (and the notebooks) train and save."""
    from course_lib.capstone import COURSE_MODELS

    assert sorted(m.recipe for m in COURSE_MODELS) == sorted(recipes.RECIPES)


def test_shards_split_each_epoch_between_processes():
    data = TranslationData.from_pairs([(f"a {'b ' * i}.", f"c {'d ' * i}.") for i in range(40)])
    shards = [Shard(BucketedBatches(data, batch_size=3, seed=0), rank, 2) for rank in range(2)]
    epochs = [[[b.index.tolist() for b in shard] for _ in range(2)] for shard in shards]
    plan = BucketedBatches(data, batch_size=3, seed=0).plan(0)
    usable = len(plan) - len(plan) % 2
    assert epochs[0][0] + epochs[1][0] == plan[0:usable:2] + plan[1:usable:2]  # disjoint, together the epoch
    assert len(epochs[0][0]) == len(epochs[1][0]) == len(shards[0])
    assert epochs[0][1] != epochs[0][0]  # the next epoch is reshuffled


@pytest.mark.slow  # two processes that each import torch and train
def test_torchrun_ddp_two_cpu_processes(tmp_path):
    """torchrun -m course_lib.distributed: both ranks train on their own batches, and their weights stay
    equal."""
    report = tmp_path / "sync"
    env = {
        **os.environ, "OMP_NUM_THREADS": "1", "COURSE_RUNS_DIR": str(tmp_path / "runs"),
        "PYTHONPATH": str(ROOT)
    }
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "course_lib.distributed", "--model", "transformer", "--profile", "smoke", "--steps", "4",
               "--n-train", "300", "--no-eval", "--no-progress", "--sync-report", str(report)]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((report / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world_size"] == 2 for r in ranks)
    assert all(r["updates"] == 4 for r in ranks)
    assert ranks[0]["digest"] == ranks[1]["digest"]  # gradients were averaged: identical weights
    assert ranks[0]["loss"] != ranks[1]["loss"]  # ... although each rank saw other batches
    assert (tmp_path / "runs" / "05_transformer" / "transformer.pt").is_file()
    assert json.loads((tmp_path / "runs" / "05_transformer" / "results.json").read_text())["world_size"] == 2


def test_ddp_refuses_a_time_limit(monkeypatch):
    from course_lib.distributed import main

    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit, match="--minutes is for one process"):  # ranks cannot agree on a time
        main(["--model", "rnn", "--profile", "laptop", "--minutes", "3"])
