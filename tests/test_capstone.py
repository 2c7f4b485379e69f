import dataclasses

import pytest

from course_lib import capstone, recipes, rnn
from course_lib.capstone import COURSE_MODELS, load_or_retrain, unavailable
from course_lib.data import translation_pairs
from course_lib.text import TranslationData
from course_lib.checkpoints import runs_dir, save_checkpoint

RNN = COURSE_MODELS[0]
TINY = dict(n_train=300, steps=2)  # a quick retrain's overrides of the recipe


def test_rows_name_distinct_recipes_that_resolve():
    names, recipe_names = {spec.name for spec in COURSE_MODELS}, {spec.recipe for spec in COURSE_MODELS}
    assert len(names) == len(recipe_names) == len(COURSE_MODELS)
    assert recipe_names <= set(recipes.RECIPES)
    assert unavailable(RNN) is None and unavailable(COURSE_MODELS[1]) is None


def test_missing_code_is_reported_not_raised(monkeypatch):
    assert "no recipe" in unavailable(dataclasses.replace(RNN, recipe="no-such-model"))
    ghost = dataclasses.replace(recipes.RECIPES["rnn"], name="ghost", model="course_lib.no_such_module:Model")
    monkeypatch.setitem(recipes.RECIPES, "ghost", ghost)
    assert "course_lib.no_such_module" in unavailable(dataclasses.replace(RNN, recipe="ghost"))
    renamed = dataclasses.replace(recipes.RECIPES["rnn"], name="renamed",
                                  decode="course_lib.rnn:no_such_decoder")
    monkeypatch.setitem(recipes.RECIPES, "renamed", renamed)
    assert "no_such_decoder" in unavailable(dataclasses.replace(RNN, recipe="renamed"))


def test_retrains_when_missing_then_reuses_the_retrain():
    first = load_or_retrain(RNN, TINY, device="cpu", progress=False)
    assert first.origin.startswith("quick retrain (smoke: 2 updates") and "no seq2seq.pt" in first.origin
    assert first.path.is_file() and first.path.is_relative_to(runs_dir() / "06_bleu")
    assert not (runs_dir() / "01_rnn_baselines").exists()  # the notebook's folder is left alone
    hyps = first.translate(["the cat sleeps .", "a dog eats an apple ."], max_len=5)
    assert len(hyps) == 2 and all(isinstance(h, str) for h in hyps)
    again = load_or_retrain(RNN, TINY, device="cpu", progress=False)
    assert again.origin == "earlier quick retrain (smoke profile)"
    assert again.translate(["the cat sleeps ."], max_len=5) == hyps[:1]


def _tiny_model():
    data = TranslationData.from_pairs(translation_pairs("train", n=200))
    cfg = rnn.SEQ2SEQ_PRESETS["smoke"].with_vocab(len(data.src_vocab), len(data.tgt_vocab))
    return rnn.Seq2SeqRNN(cfg), cfg, data.src_vocab, data.tgt_vocab


def _notebook_checkpoint(profile: str, model=None):
    tiny, cfg, src_vocab, tgt_vocab = _tiny_model()
    path = runs_dir() / "01_rnn_baselines" / "seq2seq.pt"
    save_checkpoint(path, model or tiny, config=cfg, vocabs={"src": src_vocab, "tgt": tgt_vocab},
                    extra={"profile": profile})
    return path


@pytest.fixture
def instant_retrain(monkeypatch):
    """An untrained model instead of a training run (tested above): these tests are about the choice."""
    monkeypatch.setattr(capstone, "retrain",
                        lambda spec, hp, device, progress=True: (*_tiny_model(), "quick retrain (stub)"))


def test_prefers_the_notebooks_checkpoint(instant_retrain):
    path = _notebook_checkpoint("laptop")
    loaded = load_or_retrain(RNN, TINY, device="cpu", progress=False)
    assert loaded.path == path and loaded.origin == "notebook 01 (laptop profile)"


def test_corrupt_checkpoint_is_retrained_with_the_reason(instant_retrain):
    path = _notebook_checkpoint("smoke")
    path.write_bytes(path.read_bytes()[:-100])  # truncated
    loaded = load_or_retrain(RNN, TINY, device="cpu", progress=False)
    assert loaded.origin.startswith("quick retrain") and "checksum mismatch" in loaded.origin


def test_smoke_checkpoint_is_not_used_outside_smoke(instant_retrain, monkeypatch):
    _notebook_checkpoint("smoke")
    monkeypatch.setenv("COURSE_PROFILE", "laptop")
    loaded = load_or_retrain(RNN, TINY, device="cpu", progress=False)
    assert loaded.origin.startswith("quick retrain") and "smoke run" in loaded.origin


def test_weights_of_another_model_are_retrained(instant_retrain):
    _notebook_checkpoint("laptop", model=rnn.ElmanRNNLM(10, 4, 4))
    loaded = load_or_retrain(RNN, TINY, device="cpu", progress=False)
    assert loaded.origin.startswith("quick retrain") and "does not fit" in loaded.origin
