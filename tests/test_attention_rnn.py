"""course_lib.attention_rnn: the Bahdanau encoder-decoder, checked step by step on unpadded sentences."""
import math

import pytest
import torch
from torch.testing import assert_close

from course_lib import seed_everything
from course_lib.attention_rnn import ATTENTION_RNN_PRESETS, AttentionRNNConfig, Seq2SeqAttentionRNN
from course_lib.rnn import greedy_decode
from course_lib.text import BOS_ID, EOS_ID, PAD_ID


def _model(seed=0, **sizes):
    seed_everything(seed)
    cfg = AttentionRNNConfig(**{"d_emb": 6, "d_hidden": 8, "d_attn": 5, **sizes}).with_vocab(13, 11)
    return Seq2SeqAttentionRNN(cfg).eval()


def _batch(lengths, T, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths) + 2), PAD_ID)  # extra padding on purpose
    for row, n in enumerate(lengths):
        src[row, :n] = torch.randint(4, 13, (n,), generator=g)
    tgt_in = torch.randint(4, 11, (len(lengths), T), generator=g)
    tgt_in[:, 0] = BOS_ID
    return src, tgt_in


def _by_hand(model, src_row, tgt_row):
    """One unpadded sentence through the model's modules, the equations written out."""
    H = model.cfg.d_hidden
    out, h_n = model.encoder(model.src_embedding(src_row[None]))  # (1, S, 2H), (2, 1, H)
    memory = out[0]  # (S, 2H)
    s = torch.tanh(model.bridge(torch.cat([h_n[0, 0], h_n[1, 0]])))  # (H,)
    W_q, W_k, v = model.attention.W_q.weight, model.attention.W_k.weight, model.attention.v.weight[0]
    logits, weights = [], []
    for y in tgt_row:
        e = torch.stack([v @ torch.tanh(W_q @ s + W_k @ m) for m in memory])  # (S,)
        a = torch.softmax(e, dim=0)
        c = a @ memory  # (2H,)
        emb = model.tgt_embedding.weight[y]
        s = model.decoder(torch.cat([emb, c])[None], s[None])[0]
        logits.append(model.out(torch.tanh(model.pre_out(torch.cat([s, c, emb])))))
        weights.append(a)
    assert s.shape == (H,)
    return torch.stack(logits), torch.stack(weights)


def test_forward_equals_the_equations_sentence_by_sentence():
    model = _model()
    lengths = [5, 2, 1, 4]
    src, tgt_in = _batch(lengths, T=4)
    with torch.no_grad():
        logits = model(src, tgt_in)
        decoded, _, weights = model.decode(tgt_in, model.encode(src), return_weights=True)
        assert_close(decoded, logits)
        assert logits.shape == (4, 4, 11) and weights.shape == (4, 4, src.shape[1])
        for row, n in enumerate(lengths):
            want_logits, want_weights = _by_hand(model, src[row, :n], tgt_in[row])
            assert_close(logits[row], want_logits, atol=1e-5, rtol=1e-4)
            assert_close(weights[row, :, :n], want_weights, atol=1e-6, rtol=1e-5)
            assert_close(weights[row, :, n:], torch.zeros(4, src.shape[1] - n))  # padding gets nothing


def test_step_by_step_decoding_equals_teacher_forcing():
    model = _model(seed=2)
    src, tgt_in = _batch([3, 6], T=5, seed=3)
    with torch.no_grad():
        full = model(src, tgt_in)
        state = model.encode(src)
        steps = []
        for t in range(tgt_in.shape[1]):
            logits, state = model.decode(tgt_in[:, t:t + 1], state)
            steps.append(logits)
    assert_close(torch.cat(steps, dim=1), full)


def test_greedy_decode_of_course_lib_rnn_works_unchanged():
    model = _model(seed=4)
    src, _ = _batch([4, 2, 3], T=1, seed=5)
    ys = greedy_decode(model, src, max_len=6)
    assert ys.shape[0] == 3 and ys.shape[1] <= 6
    prefix = torch.full((3, 1), BOS_ID)
    with torch.no_grad():
        for _ in range(ys.shape[1]):
            prefix = torch.cat([prefix, model(src, prefix)[:, -1].argmax(-1, keepdim=True)], dim=1)
    for row in range(3):
        ref = prefix[row, 1:].tolist()
        n = ref.index(EOS_ID) + 1 if EOS_ID in ref else len(ref)
        assert ys[row, :n].tolist() == ref[:n]


def test_gradients_reach_every_parameter():
    model = _model(seed=6, dropout=0.1).train()
    src, tgt_in = _batch([3, 5], T=4, seed=7)
    logits = model(src, tgt_in)
    logits.logsumexp(-1).sum().backward()
    missing = [
        name for name, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()
    ]
    assert not missing


def test_presets_and_missing_vocabulary():
    assert set(ATTENTION_RNN_PRESETS) == {"smoke", "laptop", "gpu"}
    with pytest.raises(ValueError, match="vocabulary"):
        Seq2SeqAttentionRNN(AttentionRNNConfig())
    assert math.isfinite(sum(p.sum().item() for p in _model().parameters()))
