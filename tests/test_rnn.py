"""course_lib.rnn: the reference versions of notebook 01's exercises."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib import seed_everything
from course_lib.rnn import (SEQ2SEQ_PRESETS, ElmanRNNLM, Seq2SeqConfig, Seq2SeqRNN, greedy_decode, perplexity,
                            rnn_cell_step, rnn_forward)
from course_lib.text import EOS_ID, PAD_ID


def _copied_rnn(d_in: int, d_h: int):
    rnn = nn.RNN(d_in, d_h, batch_first=True)
    W_e = rnn.weight_ih_l0.detach().T  # (d_in, d_h)
    W_h = rnn.weight_hh_l0.detach().T  # (d_h, d_h)
    b = (rnn.bias_ih_l0 + rnn.bias_hh_l0).detach()  # (d_h,)
    return rnn, W_e, W_h, b


@pytest.mark.parametrize("B,T,d_in,d_h", [(1, 1, 3, 5), (4, 7, 6, 3), (3, 12, 10, 16)])
def test_rnn_forward_matches_nn_rnn(B, T, d_in, d_h):
    seed_everything(B * 100 + T)
    rnn, W_e, W_h, b = _copied_rnn(d_in, d_h)
    xs, h0 = torch.randn(B, T, d_in), torch.randn(B, d_h)
    hs, h_T = rnn_forward(xs, h0, W_e, W_h, b)
    with torch.no_grad():
        ref_hs, ref_h = rnn(xs, h0.unsqueeze(0))
    torch.testing.assert_close(hs, ref_hs)
    torch.testing.assert_close(h_T, ref_h[0])
    torch.testing.assert_close(hs[:, -1], h_T)


def test_rnn_cell_step_formula():
    seed_everything(0)
    x, h = torch.randn(2, 3), torch.randn(2, 4)
    W_e, W_h, b = torch.randn(3, 4), torch.randn(4, 4), torch.randn(4)
    torch.testing.assert_close(rnn_cell_step(x, h, W_e, W_h, b), torch.tanh(x @ W_e + h @ W_h + b))


def test_lm_shapes_and_causality():
    seed_everything(1)
    lm = ElmanRNNLM(vocab_size=11, d_emb=5, d_hidden=7)
    tokens = torch.randint(0, 11, (3, 6))
    logits = lm(tokens)
    assert logits.shape == (3, 6, 11)
    changed = tokens.clone()
    changed[:, 4] = (changed[:, 4] + 1) % 11
    with torch.no_grad():
        torch.testing.assert_close(lm(changed)[:, :4], logits[:, :4].detach())


def test_perplexity_ignores_padding():
    seed_everything(2)
    logits, targets = torch.randn(3, 5, 9), torch.randint(3, 9, (3, 5))
    targets[0, 3:] = PAD_ID
    targets[2, 1:] = PAD_ID
    ref = math.exp(F.cross_entropy(logits.reshape(-1, 9), targets.reshape(-1), ignore_index=PAD_ID).item())
    assert perplexity(logits, targets) == pytest.approx(ref, rel=1e-5)
    assert isinstance(perplexity(logits, targets), float)
    # changing the logits at padded positions must not change the perplexity
    noisy = logits.clone()
    noisy[targets == PAD_ID] += 100 * torch.randn_like(noisy[targets == PAD_ID])
    assert perplexity(noisy, targets) == pytest.approx(ref, rel=1e-5)
    # uniform logits give perplexity V
    assert perplexity(torch.zeros(2, 4, 9), torch.randint(3, 9, (2, 4))) == pytest.approx(9.0)


def _model(cell="gru", n_layers=1, seed=0):
    seed_everything(seed)
    cfg = Seq2SeqConfig(d_emb=8, d_hidden=12, n_layers=n_layers, cell=cell).with_vocab(13, 17)
    return Seq2SeqRNN(cfg).eval()


@pytest.mark.parametrize("cell,n_layers", [("gru", 1), ("rnn", 2)])
def test_seq2seq_shapes_and_padding_invariance(cell, n_layers):
    model = _model(cell, n_layers)
    src = torch.randint(3, 13, (4, 6))
    tgt_in = torch.randint(3, 17, (4, 5))
    logits = model(src, tgt_in)
    assert logits.shape == (4, 5, 17)
    assert model.encode(src).shape == (n_layers, 4, 12)
    padded = torch.cat([src, torch.full((4, 3), PAD_ID)], dim=1)
    torch.testing.assert_close(model(padded, tgt_in), logits)
    # a sentence in a batch with longer ones gets the same result as alone
    short = src[:1, :2]
    batch = src.clone()
    batch[0, 2:] = PAD_ID
    torch.testing.assert_close(model(batch, tgt_in)[:1], model(short, tgt_in[:1]))


def test_seq2seq_context_only_through_final_state():
    model = _model()
    src, tgt_in = torch.randint(3, 13, (2, 6)), torch.randint(3, 17, (2, 5))
    with torch.no_grad():
        _, h = model.encoder(model.src_embedding(src))
        dec, _ = model.decoder(model.tgt_embedding(tgt_in), h)
        torch.testing.assert_close(model(src, tgt_in), model.out(dec))


def test_presets_and_config():
    assert set(SEQ2SEQ_PRESETS) == {"smoke", "laptop", "gpu"}
    with pytest.raises(ValueError):
        Seq2SeqRNN(Seq2SeqConfig())
    with pytest.raises(ValueError):
        Seq2SeqRNN(Seq2SeqConfig(cell="lstm").with_vocab(5, 5))


def test_greedy_decode_matches_stepwise_argmax_and_stops_at_eos():
    model = _model(seed=3)
    with torch.no_grad():
        model.out.bias.zero_()
    src = torch.randint(3, 13, (3, 6))
    ys = greedy_decode(model, src, max_len=9)
    assert ys.shape[0] == 3 and ys.shape[1] <= 9
    # reference: rerun the full teacher-forced forward on the growing prefix
    prefix = torch.ones(3, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(ys.shape[1]):
            nxt = model(src, prefix)[:, -1].argmax(-1, keepdim=True)
            prefix = torch.cat([prefix, nxt], dim=1)
    ref = prefix[:, 1:]
    for row, ref_row in zip(ys.tolist(), ref.tolist()):
        n = ref_row.index(EOS_ID) + 1 if EOS_ID in ref_row else len(ref_row)
        assert row[:n] == ref_row[:n]
        assert all(t == PAD_ID for t in row[n:])
    # a model that always says <eos> stops after one step
    with torch.no_grad():
        model.out.bias[EOS_ID] = 1e4
    assert greedy_decode(model, src, max_len=9).tolist() == [[EOS_ID]] * 3


def test_tiny_seq2seq_learns_to_copy():
    seed_everything(0)
    V, B = 8, 32
    cfg = Seq2SeqConfig(d_emb=16, d_hidden=64).with_vocab(V, V)
    model = Seq2SeqRNN(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(250):
        src = torch.randint(3, V, (B, 4))
        tgt_in = torch.cat([torch.ones(B, 1, dtype=torch.long), src], dim=1)
        tgt_out = torch.cat([src, torch.full((B, 1), EOS_ID)], dim=1)
        loss = F.cross_entropy(model(src, tgt_in).reshape(-1, V), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    src = torch.randint(3, V, (64, 4))
    ys = greedy_decode(model, src, max_len=8)
    expected = torch.cat([src, torch.full((64, 1), EOS_ID)], dim=1)
    accuracy = (ys[:, :5] == expected).all(dim=1).float().mean().item()
    assert accuracy > 0.9, f"copy accuracy {accuracy:.2f}"


def test_translate_restores_order_and_limits_each_sentence():
    from course_lib.decoding import translate
    from course_lib.text import Vocab

    src_vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c"])
    tgt_vocab = Vocab(["<pad>", "<bos>", "<eos>", "<unk>", "x", "y", "z"])

    def echo(model, src, max_len):  # copies the source (a->x, b->y, c->z), then says x, never <eos>
        rows = [[t for t in row if t != PAD_ID] + [4] * max_len for row in src.tolist()]
        return torch.tensor([row[:max_len] for row in rows])

    sources = ["a b c a b c a", "b", "c a", "a"]
    hyps = translate(echo, nn.Linear(1, 1), sources, src_vocab, tgt_vocab, batch_size=2)
    assert hyps[1] == "y" + " x" * 11  # its own limit, 2 * 1 + 10 tokens, not its batch-mates'
    assert hyps[2].startswith("z x") and hyps[0].startswith("x y z x y z x")
    assert [len(h.split()) for h in hyps] == [24, 12, 14, 12]
    assert translate(echo, nn.Linear(1, 1), sources, src_vocab, tgt_vocab, max_len=3)[0] == "x y z"
