"""Greedy decoding, beam search and the KV cache (course_lib.decoding, course_lib.kv_cache)."""
import functools
import itertools

import pytest
import torch

from course_lib import seed_everything
from course_lib.attention import padding_mask
from course_lib.decoding import beam_search, translate
from course_lib.kv_cache import DecoderCache
from course_lib.text import BOS_ID, EOS_ID, PAD_ID, Vocab
from course_lib.transformer import Transformer, TransformerConfig, greedy_decode


def model_and_src(seed=0, V=17, **kw):
    seed_everything(seed)
    cfg = TransformerConfig(13, V, d_model=16, n_heads=2, d_ff=24, n_encoder_layers=2, n_decoder_layers=2,
                            dropout=0.0, max_len=64, **kw)
    src = torch.randint(4, 13, (4, 6))
    src[1, 4:] = PAD_ID
    src[3, 2:] = PAD_ID
    return Transformer(cfg).eval(), src


@torch.no_grad()
@pytest.mark.parametrize("kw", [dict(), dict(positional="rope"), dict(positional="learned"),
                                dict(norm_first=False), dict(tie_output=False)])
def test_cached_incremental_decoding_equals_full_recomputation(kw):
    model, src = model_and_src(**kw)
    tgt = torch.randint(4, 17, (4, 9))
    tgt[:, 0] = BOS_ID
    memory, mask = model.encode(src), padding_mask(src)
    full = model.decode(tgt, memory, mask)  # (B, 9, V)
    cache = DecoderCache()
    pieces = [model.decode(tgt[:, :3], memory, mask,
                           cache=cache)]  # a prefix at once, then one token at a time
    pieces += [model.decode(tgt[:, t:t + 1], memory, mask, cache=cache) for t in range(3, 6)]
    pieces += [model.decode(tgt[:, 6:], memory, mask, cache=cache)]  # several new tokens after cached ones
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-4)
    assert cache.length == 9


@pytest.mark.parametrize("seed", range(4))
def test_beam_size_one_is_greedy(seed):
    model, src = model_and_src(seed, positional="rope" if seed % 2 else "sinusoidal")
    full = greedy_decode(model, src, 12, use_cache=False)
    assert torch.equal(greedy_decode(model, src, 12), full)
    assert torch.equal(beam_search(model, src, 12, beam_size=1), full)
    assert torch.equal(beam_search(model, src, 12, beam_size=1, alpha=0.0), full)


def _normalised_score(model, src_row, ys, alpha):
    """log p(ys | src) up to and including <eos> (or all of ys), divided by GNMT's length penalty."""
    tokens = ys.tolist()
    length = tokens.index(EOS_ID) + 1 if EOS_ID in tokens else len(tokens)
    tgt_in = torch.tensor([[BOS_ID] + tokens[: length - 1]])
    logp = model(src_row[None], tgt_in).log_softmax(-1)[0]  # (length, V)
    total = logp[torch.arange(length), torch.tensor(tokens[:length])].sum()
    return float(total / ((5 + length) / 6) ** alpha)


@torch.no_grad()
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_is_exact_search(alpha):
    """With a beam wider than the number of prefixes, beam search must find the best hypothesis of
    all V^L (ties aside), which checks the cache reordering and the length normalisation."""
    V, L = 5, 3
    model, src = model_and_src(seed=3, V=V)
    with torch.no_grad():  # make <eos> likely enough that some hypotheses end early
        model.out.weight[EOS_ID] += 0.5
    ys = beam_search(model, src, L, beam_size=V ** L, alpha=alpha)
    for row in range(src.shape[0]):
        best = max(_normalised_score(model, src[row], torch.tensor(seq), alpha)
                   for seq in itertools.product(range(V), repeat=L))
        assert _normalised_score(model, src[row], ys[row], alpha) == pytest.approx(best, abs=1e-4)
        after = ys[row].tolist()
        if EOS_ID in after:
            assert all(t == PAD_ID for t in after[after.index(EOS_ID) + 1:])


class MarkovModel(torch.nn.Module):
    """Next-token distribution depends only on the previous token: a scripted trap for greedy search."""

    def __init__(self, table):
        super().__init__()
        self.logp = torch.log(torch.tensor(table) + 1e-9)  # (V, V): row = previous token

    def encode(self, src):
        return torch.zeros(src.shape[0], 1, 1)

    def decode(self, tokens, memory, src_mask, cache=None):
        if cache is not None:
            cache.length += tokens.shape[1]
        return self.logp[tokens]  # (B, T, V)


def test_beam_escapes_the_greedy_trap_and_length_penalty_matters():
    A, B, C = 3, 4, 5
    table = torch.zeros(6, 6)
    table[BOS_ID, A], table[BOS_ID, B] = 0.6, 0.4  # greedy takes A ...
    table[A, C], table[A, EOS_ID], table[A, B] = 0.36, 0.34, 0.30
    table[B, EOS_ID], table[B, C] = 0.9, 0.1  # ... but B <eos> (0.36) beats A C <eos> (0.216)
    table[C, EOS_ID] = 1.0
    table[EOS_ID, PAD_ID] = table[PAD_ID, PAD_ID] = 1.0
    model = MarkovModel(table.tolist())
    src = torch.ones(1, 2, dtype=torch.long)
    assert greedy_decode(model, src, 5).tolist() == [[A, C, EOS_ID]]
    assert beam_search(model, src, 5, beam_size=2, alpha=0.0).tolist() == [[B, EOS_ID, PAD_ID]]
    # a long hypothesis with a slightly lower raw score wins once lengths are normalised
    table = torch.zeros(6, 6)
    table[BOS_ID, A], table[BOS_ID, EOS_ID] = 0.52, 0.48
    table[A, B] = table[B, C] = table[C, EOS_ID] = 0.92
    table[A, EOS_ID] = table[B, EOS_ID] = table[C, B] = 0.08
    table[EOS_ID, PAD_ID] = table[PAD_ID, PAD_ID] = 1.0
    model = MarkovModel(table.tolist())
    assert beam_search(model, src, 6, beam_size=3, alpha=0.0)[0, 0].item() == EOS_ID
    assert beam_search(model, src, 6, beam_size=3, alpha=2.0)[0].tolist()[:4] == [A, B, C, EOS_ID]


def test_kv_cache_reorder():
    cache = DecoderCache()
    self_slot, cross_slot = cache.layer(1)
    assert len(cache.self_attn) == 2 and cache.layer(1)[0] is self_slot
    self_slot.k = self_slot.v = torch.arange(3.0).view(3, 1, 1, 1)
    cache.reorder(torch.tensor([2, 2, 0]))
    assert self_slot.k.flatten().tolist() == [2.0, 2.0, 0.0]
    assert cross_slot.k is None


def test_translate_with_beam_search():
    model, _ = model_and_src()
    src_vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"e{i}" for i in range(9)])
    tgt_vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"f{i}" for i in range(13)])
    sources = ["e1 e2 e3", "e4", "e5 e6 e7 e8 e0"]
    greedy = translate(greedy_decode, model, sources, src_vocab, tgt_vocab, max_len=8)
    beam1 = translate(functools.partial(beam_search, beam_size=1), model, sources, src_vocab, tgt_vocab,
                      max_len=8)
    beam4 = translate(functools.partial(beam_search, beam_size=4), model, sources, src_vocab, tgt_vocab,
                      max_len=8)
    assert greedy == beam1 and len(beam4) == 3


def test_an_empty_sentence_decodes_without_nan_next_to_real_ones():
    """translate() pads an empty source to an all-padding row: every cross-attention row of it is
    fully masked. Its neighbours' translations must not change, and no NaN may reach argmax."""
    model, _ = model_and_src()
    src_vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"e{i}" for i in range(9)])
    tgt_vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"f{i}" for i in range(13)])
    alone = translate(greedy_decode, model, ["e1 e2 e3", "e4"], src_vocab, tgt_vocab, max_len=8)
    with_empty = translate(greedy_decode, model, ["e1 e2 e3", "", "e4"], src_vocab, tgt_vocab, max_len=8)
    assert [with_empty[0], with_empty[2]] == alone
    src = torch.full((1, 5), PAD_ID)
    memory = model.encode(src)
    assert torch.isfinite(model.decode(torch.full((1, 1), BOS_ID), memory, padding_mask(src))).all()


class Interrupted(Exception):
    """Stands for a KeyboardInterrupt (the stop button) in the middle of decoding."""


def _failing_decode(model, calls_before_failing=2):
    """Make ``model.decode`` raise ``Interrupted`` on its call number ``calls_before_failing + 1``."""
    decode, calls = model.decode, itertools.count()

    def flaky(*args, **kwargs):
        if next(calls) == calls_before_failing:
            raise Interrupted
        return decode(*args, **kwargs)

    model.decode = flaky
    return model


def _rnn_model_and_src():
    from course_lib.rnn import Seq2SeqConfig, Seq2SeqRNN

    seed_everything(0)
    model = Seq2SeqRNN(Seq2SeqConfig(13, 17, d_emb=8, d_hidden=12, dropout=0.1))
    return model, torch.randint(4, 13, (3, 5))


@pytest.mark.parametrize("decoder", ["transformer greedy", "transformer greedy (no cache)", "beam search",
                                     "rnn greedy", "translate"])
@pytest.mark.parametrize("was_training", [True, False])
def test_an_exception_while_decoding_leaves_the_model_in_its_previous_mode(decoder, was_training):
    """A decode stopped halfway must not leave the model in eval mode: the next training cell would
    then train without dropout."""
    from course_lib import rnn

    if decoder == "rnn greedy":
        model, src = _rnn_model_and_src()
        run = functools.partial(rnn.greedy_decode, max_len=8)
    else:
        model, src = model_and_src()
        run = {"transformer greedy": functools.partial(greedy_decode, max_len=8),
               "transformer greedy (no cache)": functools.partial(greedy_decode, max_len=8, use_cache=False),
               "beam search": functools.partial(beam_search, max_len=8, beam_size=3)}.get(decoder)
    if decoder == "translate":
        vocab = Vocab.build([["a", "b", "c"]])
        run = lambda m, s: translate(functools.partial(greedy_decode, use_cache=False), m, ["a b", "c"],  # noqa: E731
                                     vocab, vocab, max_len=8)
    model.train(was_training)
    _failing_decode(model)
    with pytest.raises(Interrupted):
        run(model, src)
    assert model.training is was_training
    assert all(m.training is was_training for m in model.modules())


def test_eval_mode_restores_the_mode_it_found():
    from course_lib.train import eval_mode

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)).train()
    with eval_mode(model) as inside:
        assert inside is model and not model.training and not model[1].training
    assert model.training and model[1].training
    model.eval()
    with eval_mode(model):
        pass
    assert not model.training
