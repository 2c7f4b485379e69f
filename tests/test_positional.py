"""course_lib.positional and course_lib.order_task: formulas, the rotation property, RoPE's relative
property, the PositionalEncoding interface notebook 05 uses, and the ablation's task and model."""
import math

import pytest
import torch
from torch.testing import assert_close

from course_lib import seed_everything
from course_lib.order_task import (IGNORE, OrderEncoder, OrderTaskConfig, ShiftBatches, accuracy,
                                   accuracy_by_position, shift_batch, shift_loss)
from course_lib.positional import (KINDS, LearnedPositionalEmbedding, apply_rope, make_positional,
                                   relative_rotation, sinusoidal_positional_encoding)
from course_lib.train import train


def pe_formula(positions, d_model):
    """The paper's formula entry by entry, in float64: (len(positions), d_model)."""
    table = torch.empty(len(positions), d_model, dtype=torch.float64)
    for row, pos in enumerate(positions):
        for j in range(d_model):
            angle = pos / 10000 ** (2 * (j // 2) / d_model)
            table[row, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return table


def rope_complex(x, positions, base=10000.0):
    """RoPE as complex multiplication of (x_2i + i x_2i+1) by e^{i m w_i}, in float64."""
    x = x.double()
    d = x.shape[-1]
    angle = torch.as_tensor(positions,
                            dtype=torch.float64)[..., None] * base**(-torch.arange(0, d, 2).double() / d)
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2)


# --------------------------------------------------------------------------- sinusoidal
@pytest.mark.parametrize("max_len, d_model", [(1, 2), (7, 2), (50, 16), (33, 6), (120, 64)])
def test_sinusoidal_matches_the_formula(max_len, d_model):
    pe = sinusoidal_positional_encoding(max_len, d_model)
    assert pe.shape == (max_len, d_model) and pe.dtype == torch.float32
    assert_close(pe.double(), pe_formula(range(max_len), d_model), atol=1e-6, rtol=0)


def test_sinusoidal_properties():
    pe = sinusoidal_positional_encoding(300, 128, dtype=torch.float64)
    assert_close(pe[0], torch.tensor([0.0, 1.0] * 64, dtype=torch.float64))
    assert_close(pe.norm(dim=1), torch.full((300,), 8.0, dtype=torch.float64))  # √(d/2)
    assert_close(pe[:, 0], torch.arange(300).double().sin())  # pair 0: wavelength 2π


@pytest.mark.parametrize("bad", [0, 3, 7])
def test_odd_widths_are_refused(bad):
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positional_encoding(4, bad)
    with pytest.raises(ValueError, match="even"):
        relative_rotation(1, bad)


# --------------------------------------------------------------------------- relative rotation
@pytest.mark.parametrize("seed", range(5))
def test_rotation_moves_every_position_by_k(seed):
    g = torch.Generator().manual_seed(seed)
    d = 2 * int(torch.randint(1, 65, (), generator=g))
    k = int(torch.randint(-80, 81, (), generator=g))
    positions = torch.randint(max(0, -k), 400, (10,), generator=g).tolist()
    R = relative_rotation(k, d, dtype=torch.float64)
    assert_close(pe_formula(positions, d) @ R.T, pe_formula([p + k for p in positions], d), atol=1e-9, rtol=0)


def test_rotation_is_block_diagonal_orthogonal_and_a_group():
    R = relative_rotation(7, 10, dtype=torch.float64)
    blocks = torch.block_diag(*[torch.ones(2, 2)] * 5).bool()
    assert (R[~blocks] == 0).all()
    assert_close(R @ R.T, torch.eye(10, dtype=torch.float64))
    assert_close(relative_rotation(-7, 10, dtype=torch.float64), R.T)
    assert_close(
        relative_rotation(3, 10, dtype=torch.float64) @ relative_rotation(-11, 10, dtype=torch.float64),
        relative_rotation(-8, 10, dtype=torch.float64))
    assert_close(relative_rotation(0, 6), torch.eye(6))


# --------------------------------------------------------------------------- RoPE
@pytest.mark.parametrize(
    "shape, positions",
    [
        ((5, 8), torch.arange(5)),
        ((2, 4, 6), torch.tensor([7, 0, 3, 12])),
        ((2, 3, 4, 16), torch.arange(4) + 100),
        # (B, 1, T): a different offset per row
        ((2, 3, 4, 16), torch.tensor([[[0, 1, 2, 3]], [[9, 10, 11, 12]]])),
    ])
def test_rope_matches_complex_multiplication(shape, positions):
    seed_everything(0)
    x = torch.randn(*shape)
    got = apply_rope(x, positions)
    assert got.shape == x.shape and got.dtype == x.dtype
    assert_close(got.double(), rope_complex(x, positions), atol=1e-5, rtol=1e-5)


def test_rope_base_and_dtype():
    x = torch.randn(3, 8, dtype=torch.float64)
    expected = rope_complex(x, torch.arange(3), base=100.0)
    assert_close(apply_rope(x, torch.arange(3), base=100.0), expected, atol=1e-12,
                 rtol=1e-12)  # float64 stays float64
    assert apply_rope(x.to(torch.bfloat16), torch.arange(3)).dtype == torch.bfloat16


def test_rope_keeps_norms_and_leaves_position_zero():
    seed_everything(1)
    x = torch.randn(4, 6, 32)
    assert_close(apply_rope(x, torch.randint(0, 1000, (6,))).norm(dim=-1), x.norm(dim=-1))
    assert_close(apply_rope(x, torch.zeros(6, dtype=torch.long)), x)


@pytest.mark.parametrize("seed", range(4))
def test_rope_scores_depend_only_on_the_distance(seed):
    g = torch.Generator().manual_seed(seed)
    d = 2 * int(torch.randint(1, 33, (), generator=g))
    q, k = (torch.randn(100, 1, d, generator=g, dtype=torch.float64)
            for _ in range(2))  # 100 vectors, T = 1 each
    m, n, c = (torch.randint(0, 500, (100, 1), generator=g) for _ in range(3))
    score = (apply_rope(q, m) * apply_rope(k, n)).sum(-1)
    assert_close((apply_rope(q, m + c) * apply_rope(k, n + c)).sum(-1), score, atol=1e-9, rtol=1e-9)
    assert_close(score, (q * apply_rope(k, n - m)).sum(-1), atol=1e-9, rtol=1e-9)  # <q, R_(n-m) k>


def test_rope_is_the_inverse_rotation_of_section_3():
    x = torch.randn(12, dtype=torch.float64)
    for m in (0, 1, 9, -4):
        assert_close(
            apply_rope(x[None], torch.tensor([m]))[0],
            relative_rotation(-m, 12, dtype=torch.float64) @ x)


# --------------------------------------------------------------------------- learned
def test_learned_embedding_adds_its_rows():
    module = LearnedPositionalEmbedding(10, 6)
    (table,) = list(module.parameters())
    assert table.shape == (10, 6)
    x = torch.randn(3, 7, 6)
    assert_close(module(x), x + table[:7])
    positions = torch.tensor([4, 2, 9, 0, 1, 5, 3])
    assert_close(module(x, positions), x + table[positions])
    per_row = torch.randint(0, 10, (3, 7))
    assert_close(module(x, per_row), x + table[per_row])
    module(x).sum().backward()
    assert (table.grad[:7] == 3).all() and (table.grad[7:] == 0).all()


def test_learned_embedding_refuses_positions_past_max_len():
    module = LearnedPositionalEmbedding(5, 4)
    module(torch.zeros(1, 5, 4))  # exactly max_len positions is fine
    with pytest.raises(ValueError, match="max_len=5"):
        module(torch.zeros(1, 6, 4))
    with pytest.raises(ValueError, match="position 7"):
        module(torch.zeros(1, 2, 4), torch.tensor([0, 7]))


# --------------------------------------------------------------------------- PositionalEncoding
def test_positional_encoding_kinds():
    seed_everything(2)
    x, q = torch.randn(2, 5, 8), torch.randn(2, 2, 5, 4)
    none, sin, rope = (make_positional(kind, 8, 16, n_heads=2) for kind in ("none", "sinusoidal", "rope"))
    learned = make_positional("learned", 8, 16, n_heads=2)
    assert_close(none(x), x) and assert_close(none.rotate(q), q)
    assert_close(sin(x), x + sinusoidal_positional_encoding(5, 8))
    assert_close(sin.rotate(q), q)
    assert_close(learned(x), x + learned.learned.embedding.weight[:5])
    assert_close(rope(x), x)
    assert_close(rope.rotate(q), apply_rope(q, torch.arange(5)))
    assert [p.shape for p in learned.parameters()] == [(16, 8)]
    assert not list(sin.parameters()) and not list(rope.parameters())
    assert not sin.state_dict() and not rope.state_dict()  # formulas, not weights: nothing in checkpoints


def test_positional_encoding_offsets_and_lengths_past_the_cache():
    x, q = torch.randn(1, 4, 8), torch.randn(1, 2, 4, 4)
    sin, rope = make_positional("sinusoidal", 8, 16), make_positional("rope", 8, 16, n_heads=2)
    offset = torch.arange(10, 14)  # decoding step by step continues where the prefix stopped
    assert_close(sin(x, offset), x + sinusoidal_positional_encoding(14, 8)[10:])
    assert_close(rope.rotate(q, offset), apply_rope(q, offset))
    long_x, long_q = torch.randn(1, 40, 8), torch.randn(1, 2, 40, 4)  # longer than max_len = 16
    assert_close(sin(long_x), long_x + sinusoidal_positional_encoding(40, 8))
    assert_close(rope.rotate(long_q), apply_rope(long_q, torch.arange(40)))
    with pytest.raises(ValueError):
        make_positional("learned", 8, 16)(long_x)


def test_positional_encoding_rejects_bad_settings():
    with pytest.raises(ValueError, match="kind"):
        make_positional("alibi", 8, 16)
    with pytest.raises(ValueError, match="divisible"):
        make_positional("rope", 10, 16, n_heads=4)
    with pytest.raises(ValueError, match="even"):
        make_positional("rope", 12, 16, n_heads=4)  # d_head = 3
    assert set(KINDS) == {"none", "sinusoidal", "learned", "rope"}


# --------------------------------------------------------------------------- the ablation's task and model
def test_shift_batch_targets():
    inputs, targets = shift_batch(4, 10, 16, 3, torch.Generator().manual_seed(0))
    assert inputs.shape == targets.shape == (4, 10)
    assert (targets[:, :3] == IGNORE).all()
    assert (targets[:, 3:] == inputs[:, :7]).all()
    assert 0 <= int(inputs.min()) and int(inputs.max()) < 16


def test_shift_batches_repeat_per_epoch_and_stay_in_range():
    cfg = OrderTaskConfig(min_len=5, max_train_len=9)
    first = list(ShiftBatches(cfg, 2, n_batches=20, seed=3))
    again = list(ShiftBatches(cfg, 2, n_batches=20, seed=3))
    assert all((a[0] == b[0]).all() for a, b in zip(first, again))
    assert {x.shape[1] for x, _ in first} <= set(range(5, 10))


@pytest.mark.parametrize("kind", KINDS)
def test_encoder_shapes_and_which_kinds_are_blind(kind):
    seed_everything(0)
    model = OrderEncoder(OrderTaskConfig(positional=kind)).eval()
    tokens = torch.randint(0, 16, (3, 12))
    perm = torch.randperm(12)
    with torch.no_grad():
        logits, shuffled = model(tokens), model(tokens[:, perm])
    assert logits.shape == (3, 12, 16)
    equivariant = torch.allclose(shuffled, logits[:, perm], atol=1e-5)
    assert equivariant == (kind == "none"), "only the model without positions may be permutation-equivariant"


@pytest.fixture
def one_thread():
    """A tiny model runs as fast on one thread, and far faster when other jobs share the cores."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def test_accuracy_by_position_and_a_short_training_run(one_thread):
    seed_everything(0)
    cfg = OrderTaskConfig(positional="rope", min_len=6, max_train_len=12, d_model=32, n_heads=2, n_layers=1,
                          d_ff=32)
    model = OrderEncoder(cfg)
    before = accuracy_by_position(model, 12, n=64)
    assert before.shape == (12,) and before[:3].isnan().all() and not before[3:].isnan().any()
    assert accuracy(model, 12, n=64) < 0.3
    train(model, ShiftBatches(cfg, 32, seed=0), shift_loss, torch.optim.Adam(model.parameters(), lr=1e-2),
          steps=60, progress=False, device="cpu")
    assert accuracy(model, 12, n=128) > 0.95, "a RoPE encoder should learn copy-with-offset within 60 updates"
