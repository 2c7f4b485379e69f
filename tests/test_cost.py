"""course_lib.cost: FLOP formulas against torch's FlopCounterMode, parameter counts against
nn.TransformerEncoderLayer, and the measuring helpers."""
import ast

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from course_lib.attention import scaled_dot_product_attention
from course_tools.notebooks import read_notebook
from course_lib.cost import (attention_flops, attention_pair_flops, block_param_counts,
                             causal_attention_flops, compute_optimal, ffn_flops, median_ms,
                             model_state_bytes, saved_megabytes)

from .conftest import ROOT


@pytest.mark.parametrize("T, d_model, n_heads", [(10, 16, 4), (7, 24, 3)])
def test_attention_flops_match_torchs_flop_counter(T, d_model, n_heads):
    mha = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    x = torch.randn(1, T, d_model)
    with FlopCounterMode(display=False) as counter:
        mha(x, x, x, need_weights=True)  # the explicit path: every matmul is visible to the counter
    assert attention_flops(T, d_model) == counter.get_total_flops()


def test_causal_attention_flops_by_hand_and_by_torch():
    # T = 3, d = 2: the mask keeps 1 + 2 + 3 = 6 pairs; each costs a score (2 multiply-adds: 4 FLOPs) and
    # row of AV (4 FLOPs): 48; the projections 4 · 2·3·2·2 = 96. Without the mask, 9 pairs: 72.
    assert attention_pair_flops(3, 2) == 48 and attention_pair_flops(3, 2, causal=False) == 72
    assert causal_attention_flops(3, 2) == 96 + 48 and attention_flops(3, 2) == 96 + 72
    assert attention_pair_flops(1, 5) == 20                                # one token: it sees itself
    T, d, h = 9, 12, 3                                                     # one query at a time, keys j <= i
    q, k, v = (torch.randn(1, h, T, d // h) for _ in range(3))
    with FlopCounterMode(display=False) as counter:
        for i in range(T):
            (q[:, :, i:i + 1] @ k[:, :, :i + 1].transpose(-2, -1)).softmax(-1) @ v[:, :, :i + 1]
    assert attention_pair_flops(T, d) == counter.get_total_flops()
    assert attention_pair_flops(T, d) / T == 2 * d * (T + 1)               # (T + 1)/2 keys a token


def test_ffn_flops_match_torchs_flop_counter():
    ffn = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 16))
    with FlopCounterMode(display=False) as counter:
        ffn(torch.randn(1, 9, 16))
    assert ffn_flops(9, 16, 64) == counter.get_total_flops()


@pytest.mark.parametrize("d_model, d_ff", [(512, 2048), (64, 100)])
def test_block_param_counts_match_transformer_encoder_layer(d_model, d_ff):
    layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=d_ff)
    count = lambda *modules: sum(p.numel() for m in modules for p in m.parameters())
    got = block_param_counts(d_model, d_ff)
    assert got["attention"] == count(layer.self_attn)
    assert got["ffn"] == count(layer.linear1, layer.linear2)
    assert got["norms"] == count(layer.norm1, layer.norm2)
    assert got["total"] == count(layer)


def test_saved_megabytes_sees_the_attention_matrix_only_on_the_naive_path():
    B, h, T, d = 2, 2, 256, 8
    q = torch.randn(B, h, T, d, requires_grad=True)
    naive = saved_megabytes(lambda: scaled_dot_product_attention(q, q, q))
    fused = saved_megabytes(lambda: F.scaled_dot_product_attention(q, q, q))
    t_by_t = B * h * T * T * 4 / 2**20  # one float32 (T, T) matrix per head
    assert naive >= 2 * t_by_t  # at least the scores and the weights
    assert fused < t_by_t  # the fused kernel keeps no (T, T) matrix
    assert saved_megabytes(lambda: None) == 0


def test_median_ms_times_a_call():
    calls = []
    assert median_ms(lambda: calls.append(1), repeats=3, warmup=2) >= 0
    assert len(calls) == 5


def test_compute_optimal_spends_the_budget_at_the_ratio():
    n, d = compute_optimal(6 * 20 * 1e9 ** 2)                # 1B parameters on 20B tokens
    assert n == pytest.approx(1e9, rel=1e-12) and d == pytest.approx(20e9, rel=1e-12)
    n, d = compute_optimal(6 * 65.2e9 * 1.4e12, 20.0)       # LLaMA-65B's budget: 67.6B on 1.35T
    assert 6 * n * d == pytest.approx(6 * 65.2e9 * 1.4e12, rel=1e-12) and d / n == pytest.approx(20)
    assert round(n / 1e9, 1) == 67.6 and round(d / 1e12, 2) == 1.35
    assert all(type(v) is float for v in compute_optimal(5e11, 7))


def test_model_state_bytes_is_zeros_figure_one():
    # Rajbhandari et al. (2020), figure 1: 7.5B parameters on 64 GPUs, K = 12
    gb = [model_state_bytes(7.5e9, 64, stage) / 1e9 for stage in range(4)]
    assert [round(v, 1) for v in gb] == [120.0, 31.4, 16.6, 1.9]
    assert all(model_state_bytes(1000, 1, stage) == 16000 for stage in range(4))
    with pytest.raises(ValueError, match="zero_stage"):
        model_state_bytes(10, 2, 4)


def test_sixteen_bytes_a_parameter_is_what_mixed_precision_adamw_holds():
    """bf16 weights and gradients for the products, an fp32 master copy that AdamW updates, and its
    two fp32 moments: measured on live tensors after one step."""
    master = nn.Linear(8, 5)
    low = nn.Linear(8, 5).to(torch.bfloat16)
    low.load_state_dict(master.state_dict())
    low(torch.randn(3, 8, dtype=torch.bfloat16)).sum().backward()
    for p, q in zip(master.parameters(), low.parameters()):
        p.grad = q.grad.float()
    optimizer = torch.optim.AdamW(master.parameters())
    optimizer.step()
    state = [t for s in optimizer.state.values() for k, t in s.items() if k != "step"]
    held = sum(t.nbytes for t in [*low.parameters(), *(p.grad for p in low.parameters()),
                                  *master.parameters(), *state])
    n = sum(p.numel() for p in master.parameters())
    assert held == model_state_bytes(n) == 16 * n


def _calls(source: str, name: str) -> int:
    """How many calls of ``name`` (bare, or an attribute such as course_lib.cost.name) ``source`` makes."""
    return sum(1 for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
               and (getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name))


@pytest.mark.parametrize("where", [
    "solutions/03_multihead_attention/03_multihead_attention.ipynb",
    "solutions/07_language_model/07_language_model.ipynb", "benchmarks/flops.py"])
def test_one_causal_count_of_attention_flops_for_03_07_and_the_benchmarks(where):
    """A decoder's attention FLOPs come from course_lib.cost.attention_pair_flops everywhere they are
    counted (notebook 03 after its question, 07's sections 7, 11, 15 and 16, the benchmarks' FLOPs)."""
    path = ROOT / where
    if path.suffix == ".ipynb":
        cells = [c.source for c in read_notebook(path).cells if c.cell_type == "code"]
        sources = ["\n".join(line for line in cell.splitlines() if not line.startswith(("%", "!")))
                   for cell in cells]
    else:
        sources = [path.read_text(encoding="utf-8")]
    assert sum(_calls(source, "attention_pair_flops") for source in sources) >= 1, \
        f"{where} counts attention FLOPs without course_lib.cost.attention_pair_flops"
