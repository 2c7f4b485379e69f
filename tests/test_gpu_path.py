"""The gpu profile's code path, exercised on the CPU at a toy size.

No GPU runs this suite, so what only the gpu profile switches on (bf16 autocast) is
run here on the CPU, and every tensor the training and decoding code creates is checked to follow
the model's device: a forgotten ``.to(device)`` fails here, not on a student's GPU.
(Data-parallel training with two gloo processes is tests/test_train_cmd.py's.)
"""
import dataclasses

import pytest
import torch

from course_lib import recipes, seed_everything
from course_lib.checkpoints import load_checkpoint
from course_lib.decoding import beam_search, translate
from course_lib.gpt import GPT, GPTConfig
from course_lib.lm_train import LMTrainConfig, train_lm
from course_lib.rnn import greedy_decode as rnn_greedy_decode
from course_lib.sampling import generate
from course_lib.text import BucketedBatches, TranslationData
from course_lib.data import translation_pairs
from course_lib.train import train
from course_lib.transformer import TRANSFORMER_PRESETS, Transformer
from course_lib.transformer import greedy_decode as transformer_greedy_decode

TOY_SIZE = dict(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1)


@pytest.fixture
def toy_gpu_preset(monkeypatch):
    """The gpu preset with every setting kept (dropout, norms, positions) but a toy width and depth."""
    monkeypatch.setitem(
        TRANSFORMER_PRESETS, "gpu", dataclasses.replace(TRANSFORMER_PRESETS["gpu"], **TOY_SIZE))


def test_gpu_recipe_trains_with_bf16_autocast_then_reloads_and_decodes(toy_gpu_preset, tmp_path):
    hp = recipes.hparams("transformer", "gpu", n_train=400, max_tokens=800, steps=4, n_test=8, n_long=4)
    assert hp["autocast"] == "bfloat16"  # what the gpu profile switches on
    run = recipes.fit("transformer", hp=hp, device="cpu", progress=False)
    assert run.history.step[-1] == 4 and all(torch.isfinite(torch.tensor(run.history.loss)))
    assert all(p.dtype == torch.float32 for p in run.model.parameters())  # autocast leaves the weights fp32

    checkpoint, _ = recipes.save(run, recipes.evaluate(run, device="cpu"), directory=tmp_path)
    reloaded = Transformer(run.cfg)
    load_checkpoint(checkpoint, reloaded)
    sources = [en for en, _ in translation_pairs("test", n=4)]
    assert translate(
        transformer_greedy_decode, reloaded, sources, run.src_vocab, run.tgt_vocab, device="cpu"
    ) == translate(transformer_greedy_decode, run.model, sources, run.src_vocab, run.tgt_vocab, device="cpu")


# ---------------------------------------------------------------- every tensor follows the model's device
# The model and the data are placed on the CPU explicitly; then the default device becomes "meta".
# A tensor the code creates without a device (torch.zeros(n), torch.arange(T), torch.tensor(...))
# lands on "meta" and the next operation that mixes it with the CPU model fails, exactly where a
# CUDA run would have mixed cuda and cpu tensors.
@pytest.fixture
def default_device_meta():
    with torch.device("meta"):
        yield


def _translation_setup(name: str):
    seed_everything(0)
    hp = recipes.hparams(name, "smoke", n_train=200, max_tokens=400)
    data = TranslationData.from_pairs(translation_pairs("train", n=hp["n_train"]))
    model, cfg = recipes.build(name, len(data.src_vocab), len(data.tgt_vocab), "smoke")
    optimizer, schedule = recipes.optimizer_and_schedule(name, model, cfg, hp)
    batches = list(BucketedBatches(data, max_tokens=hp["max_tokens"], seed=0))  # made here, on the CPU
    loss = recipes.loss_function(hp)
    train(
        model, batches, loss, optimizer, steps=1, schedule=schedule, device="cpu", progress=False
    )  # optimizer state
    src = next(iter(batches)).src[:2]  # (2, S), on the CPU
    return model, batches, loss, optimizer, schedule, src


@pytest.mark.parametrize("name", sorted(recipes.RECIPES))
def test_translation_training_and_decoding_create_tensors_on_the_models_device(name, default_device_meta):
    with torch.device("cpu"):
        model, batches, loss, optimizer, schedule, src = _translation_setup(name)
    history = train(
        model,
        batches,
        loss,
        optimizer,
        steps=3,
        schedule=schedule,
        clip_norm=1.0,
        device="cpu",
        progress=False,
    )
    assert history.step[-1] == 3
    decode = recipes.resolve(recipes.RECIPES[name].decode)
    assert decode(model.eval(), src, max_len=6).device.type == "cpu"
    if name == "transformer":  # beam search and the uncached decode are the Transformer's
        assert beam_search(model, src, max_len=6, beam_size=2).device.type == "cpu"
        assert transformer_greedy_decode(model, src, max_len=6, use_cache=False).device.type == "cpu"
    else:
        assert rnn_greedy_decode(model, src, max_len=6).device.type == "cpu"


def test_language_model_training_and_generation_create_tensors_on_the_models_device(default_device_meta):
    with torch.device("cpu"):
        seed_everything(0)
        model = GPT(
            GPTConfig(vocab_size=11, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1, d_ff=32, max_len=32)
        )
        ids = torch.randint(0, 11, (400,))
        prompt = torch.zeros(1, 3, dtype=torch.long)
    history = train_lm(
        model,
        ids,
        ids,
        LMTrainConfig(steps=3, batch_size=2, context=8, eval_every=3, eval_batches=1),
        progress=False,
    )
    assert history.step == [3]
    for use_cache in (True, False):
        out = generate(
            model,
            prompt,
            4,
            temperature=0.8,
            top_p=0.9,
            use_cache=use_cache,
            generator=torch.Generator().manual_seed(0),
        )
        assert out.device.type == "cpu" and out.shape == (1, 7)
