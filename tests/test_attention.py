"""course_lib.attention against torch's own softmax, scaled_dot_product_attention and MultiheadAttention."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from course_lib import seed_everything
from course_lib.attention import (
    AdditiveAttention, MultiHeadAttention, attention_lookup, causal_mask, masked_softmax, merge_heads,
    padding_mask, scaled_dot_product_attention, softmax, split_heads,
)


def random_mask(*shape, seed=0):
    """A boolean mask with at least one True per row (torch's kernels give NaN on empty rows)."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, generator=g) < 0.6
    mask[..., 0] = True
    return mask


# --------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_equals_torch(dim):
    seed_everything(0)
    x = 5 * torch.randn(3, 4, 6)
    assert_close(softmax(x, dim=dim), torch.softmax(x, dim=dim))


def test_softmax_is_stable_for_huge_scores():
    x = torch.tensor([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]])
    assert_close(softmax(x), torch.softmax(x, dim=-1))
    naive = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
    assert torch.isnan(naive).any()  # the overflow the max-shift prevents


def test_masked_softmax_equals_torch_with_minus_inf_fill():
    seed_everything(1)
    scores, mask = torch.randn(2, 3, 5, 7), random_mask(2, 3, 5, 7)
    expected = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
    assert_close(masked_softmax(scores, mask), expected)
    assert_close(masked_softmax(scores, None), torch.softmax(scores, dim=-1))


def test_fully_masked_row_gives_zero_weights_and_finite_gradients():
    scores = torch.randn(2, 4, requires_grad=True)
    mask = torch.tensor([[True, False, True, False], [False, False, False, False]])
    weights = masked_softmax(scores, mask)
    assert_close(weights[1], torch.zeros(4))
    assert_close(weights[0].sum(), torch.tensor(1.0))
    weights.sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_masked_softmax_broadcasts_the_mask():
    seed_everything(2)
    scores = torch.randn(2, 3, 4, 5)  # (B, h, T_q, T_k)
    key_mask = random_mask(2, 1, 1, 5)  # (B, 1, 1, T_k)
    assert_close(masked_softmax(scores, key_mask), masked_softmax(scores, key_mask.expand(2, 3, 4, 5)))


# --------------------------------------------------------------------------- lookup and sdpa
def test_attention_lookup_on_the_lecture_table():
    weights = torch.tensor([0.05, 0.8, 0.05, 0.1])
    keys, query = torch.eye(4), torch.log(weights)  # softmax(keys @ query) = weights
    values = torch.tensor([171.0, 23.0, 130.0, 1.0])
    out, w = attention_lookup(query, keys, values)
    assert_close(w, weights)
    assert_close(out, torch.tensor(0.05 * 171 + 0.8 * 23 + 0.05 * 130 + 0.1 * 1))


@pytest.mark.parametrize("with_mask", [False, True])
def test_sdpa_equals_torch_outputs_and_gradients(with_mask):
    seed_everything(3)
    B, h, T_q, T_k, d_k, d_v = 2, 3, 4, 6, 8, 5
    q, k, v = (torch.randn(B, h, T, d, dtype=torch.float64, requires_grad=True)
               for T, d in [(T_q, d_k), (T_k, d_k), (T_k, d_v)])
    mask = random_mask(B, 1, T_q, T_k, seed=4) if with_mask else None
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_close(out, expected)
    grad = torch.randn_like(out)
    got_grads = torch.autograd.grad(out, (q, k, v), grad)
    want_grads = torch.autograd.grad(expected, (q, k, v), grad)
    assert_close(got_grads, want_grads)
    assert weights.shape == (B, h, T_q, T_k)
    assert_close(weights.sum(-1), torch.ones(B, h, T_q, dtype=torch.float64))


def test_sdpa_fully_masked_query_outputs_zero():
    seed_everything(5)
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 5, 4), torch.randn(1, 5, 2)
    mask = torch.ones(1, 3, 5, dtype=torch.bool)
    mask[0, 1] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert_close(out[0, 1], torch.zeros(2))
    assert_close(weights[0, 1], torch.zeros(5))
    assert torch.isfinite(out).all()


# --------------------------------------------------------------------------- additive attention
def test_additive_attention_follows_its_formula():
    seed_everything(6)
    B, T_q, T_k, d_q, d_k, d_a, d_v = 2, 3, 5, 4, 6, 7, 3
    att = AdditiveAttention(d_q, d_k, d_a)
    q, keys, values = torch.randn(B, T_q, d_q), torch.randn(B, T_k, d_k), torch.randn(B, T_k, d_v)
    mask = random_mask(B, 1, T_k, seed=7)
    context, weights = att(q, keys, values, mask)
    W_q, W_k, v = att.W_q.weight, att.W_k.weight, att.v.weight[0]
    expected_w = torch.zeros(B, T_q, T_k)
    for b in range(B):
        for i in range(T_q):
            e = torch.stack([v @ torch.tanh(W_q @ q[b, i] + W_k @ keys[b, j]) for j in range(T_k)])
            expected_w[b, i] = torch.softmax(e.masked_fill(~mask[b, 0], -math.inf), dim=-1)
    assert_close(weights, expected_w)
    assert_close(context, expected_w @ values)
    # attend() with keys projected once gives the same
    assert_close(att.attend(q, att.project_keys(keys), values, mask)[0], context)


# --------------------------------------------------------------------------- masks and heads
def test_causal_and_padding_masks_match_torch_conventions():
    assert torch.equal(causal_mask(4), ~nn.Transformer.generate_square_subsequent_mask(4).isinf())
    tokens = torch.tensor([[5, 6, 0], [7, 0, 0]])
    assert torch.equal(
        padding_mask(tokens), torch.tensor([[[[True, True, False]]], [[[True, False, False]]]]))


def test_split_and_merge_heads_are_inverse_and_keep_features_together():
    x = torch.arange(2 * 3 * 8, dtype=torch.float32).view(2, 3, 8)
    heads = split_heads(x, 4)
    assert heads.shape == (2, 4, 3, 2)
    assert torch.equal(heads[1, 2, 0], x[1, 0, 4:6])  # head 2 holds features 4 and 5
    assert torch.equal(merge_heads(heads), x)


# --------------------------------------------------------------------------- multi-head attention
def _pair(d_model, n_heads, bias=True, seed=0):
    seed_everything(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).eval()
    ours = MultiHeadAttention(d_model, n_heads, bias=bias).eval().load_from_torch(ref)
    return ours, ref


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("average", [True, False])
def test_mha_matches_torch_with_causal_and_padding_masks(bias, average):
    B, T, d_model, h = 3, 6, 16, 4
    ours, ref = _pair(d_model, h, bias=bias, seed=8)
    x = torch.randn(B, T, d_model)
    tokens = torch.tensor([[5, 6, 7, 8, 9, 4], [5, 6, 7, 0, 0, 0], [4, 4, 0, 0, 0, 0]])
    mask = causal_mask(T) & padding_mask(tokens)  # (B, 1, T, T)
    want_out, want_w = ref(x, x, x, attn_mask=~causal_mask(T), key_padding_mask=tokens == 0,
                           average_attn_weights=average)
    got_out, got_w = ours(x, x, x, mask, average_attn_weights=average)
    assert_close(got_out, want_out, atol=1e-5, rtol=1e-5)
    assert_close(got_w, want_w, atol=1e-5, rtol=1e-5)
    fused, none = ours(x, x, x, mask, need_weights=False)
    assert none is None
    assert_close(fused, want_out, atol=1e-5, rtol=1e-5)


def test_mha_cross_attention_with_different_lengths():
    B, T_q, T_k, d_model, h = 2, 3, 7, 12, 3
    ours, ref = _pair(d_model, h, seed=9)
    query, memory = torch.randn(B, T_q, d_model), torch.randn(B, T_k, d_model)
    src = torch.tensor([[5] * 7, [5] * 4 + [0] * 3])
    want_out, want_w = ref(query, memory, memory, key_padding_mask=src == 0, average_attn_weights=False)
    got_out, got_w = ours(query, memory, memory, padding_mask(src), average_attn_weights=False)
    assert_close(got_out, want_out, atol=1e-5, rtol=1e-5)
    assert_close(got_w, want_w, atol=1e-5, rtol=1e-5)
    assert_close(ours(query, memory, memory, padding_mask(src), need_weights=False)[0], want_out,
                 atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("train_mode", [False, True])
def test_mha_fully_masked_row_on_the_fused_path_is_finite_and_equals_the_explicit_path(train_mode):
    """An empty source sentence is all padding: its cross-attention rows mask every key. The
    explicit path gives zero weights; the fused kernel must give the same output and no NaN
    (older torch versions returned NaN here), in the forward and the backward pass."""
    seed_everything(12)
    mha = MultiHeadAttention(8, 2).train(train_mode)
    query = torch.randn(2, 3, 8, requires_grad=True)
    memory = torch.randn(2, 4, 8)
    mask = padding_mask(torch.tensor([[5, 5, 5, 0], [0, 0, 0, 0]]))  # (B, 1, 1, T_k); row 1: nothing to see
    fused, _ = mha(query, memory, memory, mask, need_weights=False)
    explicit, weights = mha(query, memory, memory, mask, need_weights=True)
    assert_close(weights[1], torch.zeros(3, 4))
    assert_close(fused, explicit)
    assert_close(fused[1], mha.out_proj.bias.expand(3, 8))  # attention output 0, then the output projection
    fused.square().sum().backward()
    assert torch.isfinite(query.grad).all()


def test_mha_gradients_match_torch_on_the_fused_path():
    ours, ref = _pair(8, 2, seed=10)
    ours.train(), ref.train()
    x = torch.randn(2, 5, 8)
    ours(x, x, x, causal_mask(5), need_weights=False)[0].square().sum().backward()
    ref(x, x, x, attn_mask=~causal_mask(5), need_weights=False)[0].square().sum().backward()
    grads = torch.cat([ours.q_proj.weight.grad, ours.k_proj.weight.grad, ours.v_proj.weight.grad])
    assert_close(grads, ref.in_proj_weight.grad, atol=1e-5, rtol=1e-4)
    assert_close(ours.out_proj.weight.grad, ref.out_proj.weight.grad, atol=1e-5, rtol=1e-4)


def test_mha_rejects_indivisible_width_and_mismatched_loads():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError):
        MultiHeadAttention(8, 2).load_from_torch(nn.MultiheadAttention(8, 4, batch_first=True))
