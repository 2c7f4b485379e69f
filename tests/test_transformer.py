"""course_lib.transformer and course_lib.params: against torch's own modules and closed forms."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib import seed_everything
from course_lib.attention import MultiHeadAttention, causal_mask, padding_mask
from course_lib.kv_cache import CachedMultiHeadAttention
from course_lib.params import LLAMA_TABLE, decoder_only_param_count, gpt_param_count, llama_param_count
from course_lib.transformer import (TRANSFORMER_PRESETS, DecoderLayer, EncoderLayer, PositionwiseFeedForward,
                                    Transformer, TransformerConfig, label_smoothed_cross_entropy, noam_lr,
                                    transformer_param_count)


def tiny(**kw) -> TransformerConfig:
    base = dict(src_vocab_size=13, tgt_vocab_size=17, d_model=16, n_heads=2, d_ff=24, n_encoder_layers=2,
                n_decoder_layers=2, dropout=0.0, max_len=64)
    return TransformerConfig(**{**base, **kw})


def batch(B=3, S=7, T=6, pad_rows=(0,), seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 13, (B, S), generator=g)
    for r in pad_rows:
        src[r, S - 2:] = 0
    tgt = torch.randint(4, 17, (B, T), generator=g)
    tgt[:, 0] = 1
    return src, tgt


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "none"])
@pytest.mark.parametrize("tie", [True, False])
def test_param_count_closed_form(norm_first, positional, tie):
    cfg = tiny(norm_first=norm_first, positional=positional, tie_output=tie)
    model = Transformer(cfg)
    assert transformer_param_count(cfg) == sum(p.numel() for p in model.parameters())
    assert (model.out.weight is model.tgt_embed.weight) == tie


@pytest.mark.parametrize("profile", ["smoke", "laptop", "gpu"])
@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")
def test_param_count_against_nn_transformer(profile):
    cfg = TRANSFORMER_PRESETS[profile].with_vocab(300, 450)
    torch_core = nn.Transformer(cfg.d_model, cfg.n_heads, cfg.n_encoder_layers, cfg.n_decoder_layers,
                                cfg.d_ff, batch_first=True, norm_first=cfg.norm_first)
    embeddings_and_output = (300 + 450) * cfg.d_model  # tied output: counted once
    assert transformer_param_count(cfg) == sum(
        p.numel() for p in torch_core.parameters()) + embeddings_and_output
    post = TRANSFORMER_PRESETS[profile].with_vocab(300, 450)
    # nn.Transformer keeps its two final LayerNorms even for post-LN; the paper has none
    post.norm_first = False
    assert transformer_param_count(post) == transformer_param_count(cfg) - 4 * cfg.d_model


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention):
    theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
    theirs.out_proj.bias.copy_(ours.out_proj.bias)


def _copy_common(ours, theirs):
    _copy_attention(ours.self_attn, theirs.self_attn)
    theirs.linear1.load_state_dict(ours.ff.linear1.state_dict())
    theirs.linear2.load_state_dict(ours.ff.linear2.state_dict())
    theirs.norm1.load_state_dict(ours.norm1.state_dict())
    theirs.norm2.load_state_dict(ours.norm2.state_dict())


@torch.no_grad()
@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_layer_equals_torch(norm_first):
    seed_everything(0)
    ours = EncoderLayer(16, 4, 40, norm_first=norm_first).eval()
    theirs = nn.TransformerEncoderLayer(16, 4, 40, dropout=0.0, batch_first=True,
                                        norm_first=norm_first).eval()
    _copy_common(ours, theirs)
    x = torch.randn(3, 9, 16)
    src = torch.randint(1, 5, (3, 9))
    src[1, 6:] = 0
    got = ours(x, padding_mask(src))
    want = theirs(x, src_key_padding_mask=src == 0)  # torch: True = *ignore*
    real = src != 0
    torch.testing.assert_close(got[real], want[real], atol=1e-5, rtol=1e-4)


@torch.no_grad()
@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_layer_equals_torch(norm_first):
    seed_everything(1)
    ours = DecoderLayer(16, 2, 24, norm_first=norm_first).eval()
    theirs = nn.TransformerDecoderLayer(16, 2, 24, dropout=0.0, batch_first=True,
                                        norm_first=norm_first).eval()
    _copy_common(ours, theirs)
    _copy_attention(ours.cross_attn, theirs.multihead_attn)
    theirs.norm3.load_state_dict(ours.norm3.state_dict())
    x, memory = torch.randn(2, 6, 16), torch.randn(2, 8, 16)
    src = torch.randint(1, 5, (2, 8))
    src[0, 5:] = 0
    got = ours(x, memory, causal_mask(6), padding_mask(src))
    torch.testing.assert_close(ours(x, memory, None, padding_mask(src), causal=True), got, atol=1e-6,
                               rtol=1e-5)
    want = theirs(x, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(6), tgt_is_causal=True,
                  memory_key_padding_mask=src == 0)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_feed_forward():
    seed_everything(2)
    ff = PositionwiseFeedForward(8, 32)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(ff(x), ff.linear2(torch.relu(ff.linear1(x))))


@torch.no_grad()
@pytest.mark.parametrize("positional", ["sinusoidal", "rope", "learned"])
def test_decoder_is_causal_and_encoder_ignores_padding(positional):
    seed_everything(4)
    model = Transformer(tiny(positional=positional)).eval()
    src, tgt = batch()
    logits = model(src, tgt)
    changed = tgt.clone()
    changed[:, 3:] = torch.randint(4, 17, changed[:, 3:].shape)
    torch.testing.assert_close(model(src, changed)[:, :3], logits[:, :3])
    assert (model(src, changed)[:, 3:] - logits[:, 3:]).abs().max() > 1e-3
    # more padding, or other tokens hidden under the padding mask, change nothing
    longer = torch.cat([src, torch.zeros(3, 4, dtype=torch.long)], dim=1)
    torch.testing.assert_close(model(longer, tgt), logits, atol=1e-5, rtol=1e-4)
    memory = model.encode(src)
    torch.testing.assert_close(model.encode(longer)[:, :7][src != 0], memory[src != 0], atol=1e-5, rtol=1e-4)


@torch.no_grad()
def test_embeddings_scaled_by_sqrt_d_model():
    seed_everything(5)
    model = Transformer(tiny(positional="none", n_encoder_layers=0)).eval()
    model.encoder_norm = nn.Identity()
    src, _ = batch()
    torch.testing.assert_close(model.encode(src), model.src_embed(src) * math.sqrt(16))


@torch.no_grad()
def test_fused_self_attention_equals_parent_class():
    seed_everything(6)
    cached = CachedMultiHeadAttention(16, 4).eval()
    plain = MultiHeadAttention(16, 4).eval()
    plain.load_state_dict(cached.state_dict())
    x, y = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    mask = torch.rand(2, 1, 5, 5) > 0.3
    mask[..., 0] = True
    torch.testing.assert_close(cached(x, x, x, mask)[0], plain(x, x, x, mask)[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(cached(x, y, y)[0], plain(x, y, y)[0], atol=1e-5, rtol=1e-4)
    out, weights = cached(x, x, x, is_causal=True, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out,
                               plain(x, x, x,
                                     torch.ones(5, 5, dtype=torch.bool).tril())[0], atol=1e-5, rtol=1e-4)
    assert weights.shape == (2, 4, 5, 5) and torch.all(weights.triu(1) == 0)


def test_attention_maps():
    model = Transformer(tiny())
    src, tgt = batch()
    maps = model.attention_maps(src, tgt)
    assert [len(v) for v in maps.values()] == [2, 2, 2]
    assert maps["encoder"][0].shape == (3, 2, 7, 7)
    assert maps["decoder_cross"][1].shape == (3, 2, 6, 7)
    torch.testing.assert_close(maps["decoder_self"][0].sum(-1), torch.ones(3, 2, 6))
    assert torch.all(maps["decoder_cross"][0][0, :, :, 5:] == 0)  # padded source positions get no weight
    assert not any(hasattr(m, "last_weights") for m in model.modules())


def test_label_smoothing():
    seed_everything(7)
    logits = torch.randn(2, 5, 11)
    target = torch.randint(1, 11, (2, 5))
    target[1, 3:] = 0
    eps = 0.1
    logp = logits.log_softmax(-1)
    per_token = -(1 - eps) * logp.gather(-1, target[..., None])[..., 0] - eps * logp.mean(-1)
    want = per_token[target != 0].mean()
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, target, eps), want)
    torch.testing.assert_close(label_smoothed_cross_entropy(logits, target, 0.0),
                               F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=0))


def test_noam_lr():
    d, w = 512, 4000
    assert noam_lr(w, d, w) == pytest.approx(d ** -0.5 * w ** -0.5)
    assert max(range(1, 3 * w), key=lambda s: noam_lr(s, d, w)) == w
    assert noam_lr(10, d, w) == pytest.approx(10 * noam_lr(1, d, w))  # linear warm-up
    assert noam_lr(4 * w, d, w) == pytest.approx(noam_lr(w, d, w) / 2)  # 1/sqrt(step) decay
    assert noam_lr(0, d, w) == noam_lr(1, d, w)
    assert noam_lr(w, d, w, factor=2.0) == pytest.approx(2 * noam_lr(w, d, w))


def test_gpt_formula_is_a_gpt2_block_stack_without_position_embeddings():
    """nanoGPT's formula against a GPT-2-shaped model built from torch's own modules."""
    V, T, d, L = 50, 16, 32, 3
    block = nn.TransformerEncoderLayer(d, 4, 4 * d, activation="gelu", batch_first=True, norm_first=True)
    gpt = nn.ModuleDict(dict(wte=nn.Embedding(V, d), wpe=nn.Embedding(T, d),
                             blocks=nn.TransformerEncoder(block, L, enable_nested_tensor=False),
                             ln_f=nn.LayerNorm(d), lm_head=nn.Linear(d, V, bias=False)))
    gpt.lm_head.weight = gpt.wte.weight  # tied, as in GPT-2
    total = sum(p.numel() for p in gpt.parameters())
    assert gpt_param_count(T, V, d, L) == total - T * d  # the position table is what it leaves out
    assert decoder_only_param_count(V, d, L, 4 * d, 4, max_len=T) == total


class _LlamaBlock(nn.Module):
    def __init__(self, d, hidden, n_heads, n_kv_heads):
        super().__init__()
        d_kv = n_kv_heads * d // n_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False), nn.Linear(d, d_kv, bias=False),
                                              nn.Linear(d, d_kv, bias=False), nn.Linear(d, d, bias=False))
        self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        self.attention_norm, self.ffn_norm = nn.RMSNorm(d), nn.RMSNorm(d)


def test_llama_formula_against_modules_and_seed_table():
    V, d, hidden, L, h, kv = 40, 32, 88, 2, 8, 2
    model = nn.ModuleList([nn.Embedding(V, d), *[_LlamaBlock(d, hidden, h, kv) for _ in range(L)],
                           nn.RMSNorm(d), nn.Linear(d, V, bias=False)])
    assert llama_param_count(d, hidden, L, h, kv, V) == sum(p.numel() for p in model.parameters())
    for row in LLAMA_TABLE[:3]:
        assert llama_param_count(**row) == pytest.approx(row["published"], rel=0.01)
    big = LLAMA_TABLE[3]
    assert llama_param_count(**big) / 1e9 == pytest.approx(
        55.9, abs=0.1)  # n_kv_heads = 8 does not give 65.2B
    assert llama_param_count(**{**big, "n_kv_heads": 64}) == pytest.approx(big["published"], rel=0.01)


def test_bf16_autocast_trains_on_cpu():
    seed_everything(8)
    model = Transformer(tiny())
    src, tgt = batch()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = label_smoothed_cross_entropy(model(src, tgt), tgt)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
