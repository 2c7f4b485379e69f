import itertools
import json
from dataclasses import dataclass

import pytest
import torch
from torch import nn

from course_lib import recipes, seed_everything
from course_lib.order_task import OrderEncoder, OrderTaskConfig, ShiftBatches, shift_loss
from course_lib.text import BucketedBatches, TranslationData, Vocab
from course_lib.checkpoints import (CheckpointError, load_checkpoint, read_results, record_results, runs_dir,
                                    save_checkpoint)
from course_lib.train import History, TimeEstimate, estimate_time, linear_warmup, pick_device, train


@dataclass
class RunConfig:
    """A dataclass config, as the notebooks pass to save_checkpoint."""

    steps: int = 0


@pytest.fixture(autouse=True)
def isolated_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("COURSE_PROFILE", "smoke")


def toy_batches(n=8, seed=0):
    """Classify which of 4 features is largest: a task a linear layer learns in a few steps."""
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(32, 4, generator=g) for _ in range(n)]
    return [(x, x.argmax(dim=1)) for x in xs]


def toy_loss(model, batch):
    x, y = batch
    return nn.functional.cross_entropy(model(x), y)


def test_pick_device():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device().type in ("cpu", "cuda", "mps")


def test_tiny_model_learns():
    seed_everything(0)
    model = nn.Linear(4, 4)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    history = train(model, toy_batches(), toy_loss, opt, steps=60, device="cpu", progress=False, log_every=5)
    assert isinstance(history, History)
    assert history.step == list(range(5, 61, 5))
    assert history.loss[-1] < 0.5 * history.loss[0]
    assert all(t > 0 for t in history.tokens_per_s)
    assert not model.training  # left in eval mode


def test_gradient_norm_recorded_and_clipped():
    seed_everything(0)
    model = nn.Linear(4, 4)
    before = torch.cat([p.detach().flatten() for p in model.parameters()])
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    # A loss scaled by 1000 has a gradient norm far above the clip threshold.
    history = train(model, toy_batches(1), lambda m, b: 1000 * toy_loss(m, b), opt, steps=1,
                    clip_norm=0.1, device="cpu", progress=False, log_every=1)
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert history.grad_norm[0] > 10  # recorded before clipping
    assert (after - before).norm() == pytest.approx(0.1, rel=1e-4)  # SGD step = lr * clipped grad


def test_schedule_sets_lr_as_multiplier():
    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    history = train(model, toy_batches(), toy_loss, opt, steps=4, schedule=linear_warmup(4),
                    device="cpu", progress=False, log_every=1)
    assert history.lr == pytest.approx([0.125, 0.25, 0.375, 0.5])
    assert linear_warmup(0)(0) == 1.0 and linear_warmup(10)(100) == 1.0


def fake_clock(seconds_per_reading: float):
    """A clock that advances by ``seconds_per_reading`` each time it is read: time is counted, not raced."""
    readings = itertools.count()
    return lambda: next(readings) * seconds_per_reading


def _dropout_run(clock, **kwargs):
    """A model with dropout (the run draws random numbers) trained for 25 updates on 8 batches an epoch."""
    seed_everything(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.2), nn.Linear(16, 4))
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    history = train(model, toy_batches(), toy_loss, opt, steps=25, schedule=linear_warmup(5), device="cpu",
                    progress=False, log_every=5, on_eval=lambda m, step: {"w": float(m[0].weight.sum())},
                    eval_every=10, clock=clock, **kwargs)
    return model, history


def _result(history: History) -> tuple:
    """What a run learned, without what it measured (tokens/s, minutes)."""
    return history.step, history.loss, history.grad_norm, history.lr, history.eval, history.stopped_early


def test_the_result_does_not_depend_on_the_clock():
    """A machine ten times slower takes ten times as long for the same updates, the same weights, the same
    history."""
    fast_model, fast = _dropout_run(fake_clock(0.1))
    slow_model, slow = _dropout_run(fake_clock(1.0))
    assert _result(slow) == _result(fast) and fast.step[-1] == 25 and fast.stopped_early is None
    for a, b in zip(fast_model.parameters(), slow_model.parameters()):
        assert torch.equal(a, b)
    assert slow.minutes == pytest.approx(10 * fast.minutes)  # only the measurements differ
    assert slow.tokens_per_s == pytest.approx([t / 10 for t in fast.tokens_per_s])


def test_the_safety_net_stops_the_run_and_says_so_in_one_line(capsys):
    _, within = _dropout_run(fake_clock(0.1), max_minutes=1.0)  # 25 updates fit in a minute of this clock
    assert within.step[-1] == 25 and within.stopped_early is None and capsys.readouterr().err == ""
    _, stopped = _dropout_run(fake_clock(1.0), max_minutes=0.25)  # 15 s: a clock read or two per update
    assert stopped.step[-1] < 25 and stopped.eval[-1]["step"] == stopped.step[
        -1]  # logged and evaluated at the stop
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.strip() == stopped.stopped_early
    assert f"after {stopped.step[-1]} of 25 updates" in err and "not the 25-update result" in err
    # names the setting and the profile that fit
    assert "max_minutes" in err and "COURSE_PROFILE=smoke" in err


def test_steps_are_required():
    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError):
        train(model, toy_batches(), toy_loss, opt, max_minutes=1.0, device="cpu")  # minutes alone are no run
    with pytest.raises(ValueError, match="at least 1"):
        train(model, toy_batches(), toy_loss, opt, steps=0, device="cpu")


def _translation_setup():
    """Notebooks 01, 02, 05: a recipe's model (with dropout) on BucketedBatches, whose epoch ends a pass."""
    data = TranslationData.from_pairs([(f"a {'b ' * (i % 7)}.", f"c {'d ' * (i % 5)}.") for i in range(60)])
    model, _ = recipes.build("rnn", len(data.src_vocab), len(data.tgt_vocab), "smoke", dropout=0.3)
    return model, BucketedBatches(data, batch_size=8, seed=0), recipes.loss_function({})


def _order_task_setup():
    """Notebook 04: ShiftBatches, whose epoch advances when a pass starts."""
    cfg = OrderTaskConfig(d_model=16, d_ff=32, positional="learned")
    return OrderEncoder(cfg), ShiftBatches(cfg, batch_size=4, n_batches=6, seed=0), shift_loss


@pytest.mark.parametrize("setup", [_translation_setup, _order_task_setup])
def test_estimate_time_measures_a_copy_and_leaves_the_run_unchanged(setup):
    """The probe trains a copy under a forked random state: the run after it is the run without it."""
    def run(probe: bool):
        seed_everything(0)
        model, batches, loss = setup()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        estimate = None
        if probe:
            before = [p.detach().clone() for p in model.parameters()]
            estimate = estimate_time(model, batches, loss, opt, steps=30, probe_updates=4, device="cpu",
                                     clock=fake_clock(0.5))
            assert all(torch.equal(a, b) for a, b in zip(before, model.parameters())) and not opt.state
            assert batches.epoch == 0
        history = train(model, batches, loss, opt, steps=30, device="cpu", progress=False, log_every=5)
        return model, history, estimate

    plain_model, plain, _ = run(probe=False)
    probed_model, probed, estimate = run(probe=True)
    assert _result(probed) == _result(plain)
    assert all(torch.equal(a, b) for a, b in zip(plain_model.parameters(), probed_model.parameters()))
    # the fake clock is read just before and just after the 4 timed updates: 0.5 s for the 4
    assert estimate == TimeEstimate(updates=30, seconds_per_update=0.5 / 4, probe_updates=4)
    assert estimate.minutes == pytest.approx(30 * 0.125 / 60)
    assert "30 updates: about 0.1 min on this machine" in str(estimate) and "125 ms per update" in str(
        estimate)


def test_on_eval_runs_in_eval_mode():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    modes = []

    def on_eval(m, step):
        modes.append((m.training, torch.is_grad_enabled()))
        return {"acc": 1.0}

    history = train(model, toy_batches(), toy_loss, opt, steps=10, eval_every=4, on_eval=on_eval,
                    device="cpu", progress=False)
    assert [e["step"] for e in history.eval] == [4, 8, 10]
    assert modes == [(False, False)] * 3


def make_checkpoint(tmp_path):
    seed_everything(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    vocab = Vocab.build([["a", "b"]])
    path = save_checkpoint(tmp_path / "sub" / "model.pt", model, config=RunConfig(steps=5),
                           vocabs={"src": vocab}, extra={"bleu": 12.5})
    return model, vocab, path


def test_checkpoint_round_trip(tmp_path):
    model, vocab, path = make_checkpoint(tmp_path)
    fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    ckpt = load_checkpoint(path, fresh)
    for a, b in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(a, b)
    assert ckpt["config"]["steps"] == 5 and ckpt["extra"] == {"bleu": 12.5}
    assert ckpt["vocabs"]["src"] == vocab
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_corrupt_checkpoint_raises(tmp_path, damage):
    _, _, path = make_checkpoint(tmp_path)
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 0xFF
    elif damage == "truncate":
        raw = raw[: len(raw) - 100]
    elif damage == "empty":
        raw = b""
    else:
        raw = b"not a checkpoint at all" * 10
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="model.pt"):
        load_checkpoint(path)


def test_non_plain_metadata_rejected_at_save(tmp_path):
    with pytest.raises(TypeError, match="plain Python values"):
        save_checkpoint(tmp_path / "m.pt", nn.Linear(2, 2), extra={"data": tmp_path})  # a Path object
    assert not (tmp_path / "m.pt").exists()


def test_missing_checkpoint_raises(tmp_path):
    with pytest.raises(CheckpointError, match="nope.pt: no such file"):
        load_checkpoint(tmp_path / "nope.pt")


def test_mismatched_model_raises(tmp_path):
    _, _, path = make_checkpoint(tmp_path)
    wider = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    with pytest.raises(CheckpointError, match=r"0.weight has shape \(8, 4\) in the file but \(16, 4\)"):
        load_checkpoint(path, wider)
    deeper = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Linear(3, 3))
    with pytest.raises(CheckpointError, match="missing 3.weight, 3.bias"):
        load_checkpoint(path, deeper)
    with pytest.raises(CheckpointError, match="unexpected 2.weight"):
        load_checkpoint(path, nn.Sequential(nn.Linear(4, 8)))


def test_runs_dir(tmp_path, monkeypatch):
    assert runs_dir() == tmp_path / "runs" and runs_dir().is_dir()
    monkeypatch.delenv("COURSE_RUNS_DIR")
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "nbgrader_config.py").write_text("")
    deep = tmp_path / "course" / "notebooks" / "01"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    monkeypatch.setenv("COURSE_PROFILE", "laptop")
    assert runs_dir() == (tmp_path / "course" / "runs").resolve()
    monkeypatch.setenv("COURSE_PROFILE", "smoke")  # e.g. nbgrader's Validate: never over the real runs
    assert runs_dir() == (tmp_path / "course" / "runs" / "smoke").resolve()
    monkeypatch.delenv("COURSE_PROFILE")
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert runs_dir() == (tmp_path / "course" / "runs" / "smoke").resolve()


def test_record_results_merges(tmp_path):
    path = record_results("01_rnn", {"bleu": 10.0, "loss": torch.tensor(1.5)})
    record_results("01_rnn", {"bleu": 20.0, "headline": "BLEU 20"})
    results = read_results("01_rnn")
    assert results["bleu"] == 20.0 and results["loss"] == 1.5 and results["headline"] == "BLEU 20"
    assert results["profile"] == "smoke" and "timestamp" in results and "device" in results
    assert list(json.loads(path.read_text())) == sorted(results)
    assert read_results("never_ran") is None


def test_the_training_loop_imports_no_recipe():
    """train → distributed → recipes → train was a cycle: the loop imports neither recipes nor checkpoints."""
    import subprocess
    import sys

    code = ("import sys, course_lib.train; print(' '.join(m for m in sys.modules if "
            "m.startswith('course_lib')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert sorted(loaded) == ["course_lib", "course_lib.train"]
