"""Plausible wrong implementations of notebook 04's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``
and ``math`` exist. ``TEMPLATES`` holds the correct code of each target; every bug is its template
with one mistake substituted in (``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant

# ----------------------------------------------------------------------------- sinusoidal_positional_encoding
_PE = '''
def sinusoidal_positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]   # (max_len, 1)
    i = torch.arange(d_model // 2, dtype=torch.float32)         # pair index
    angle = pos / 10000 ** (2 * i / d_model)                    # (max_len, d_model/2)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe
'''
_PE_BUGS = [
    Bug("sinusoidal_positional_encoding", "sin and cos swapped",
        variant(variant(_PE, "pe[:, 0::2] = torch.sin(", "pe[:, 0::2] = torch.cos("),
                "pe[:, 1::2] = torch.cos(", "pe[:, 1::2] = torch.sin(")),
    Bug("sinusoidal_positional_encoding", "exponent i/d instead of 2i/d", variant(_PE, "(2 * i / d_model)", "(i / d_model)")),
    Bug("sinusoidal_positional_encoding", "multiplies by 10000^(2i/d) instead of dividing",
        variant(_PE, "pos / 10000", "pos * 10000")),
    Bug("sinusoidal_positional_encoding", "positions counted from 1",
        variant(_PE, "torch.arange(max_len,", "torch.arange(1, max_len + 1,")),
    Bug("sinusoidal_positional_encoding", "column index in the exponent (odd columns use 2i+1)",
        variant(_PE, "pe[:, 1::2] = torch.cos(angle)", "pe[:, 1::2] = torch.cos(pos / 10000 ** ((2 * i + 1) / d_model))")),
    Bug("sinusoidal_positional_encoding", "sines in the first half, cosines in the second",  # tensor2tensor's layout
        variant(variant(_PE, "pe[:, 0::2]", "pe[:, : d_model // 2]"), "pe[:, 1::2]", "pe[:, d_model // 2:]")),
]

# ----------------------------------------------------------------------------- relative_rotation
_ROT = '''
def relative_rotation(k, d_model):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angle = k / 10000 ** (2 * i / d_model)
    cos, sin = torch.cos(angle), torch.sin(angle)
    R = torch.zeros(d_model, d_model)
    for n in range(d_model // 2):
        R[2 * n, 2 * n], R[2 * n, 2 * n + 1] = cos[n], sin[n]
        R[2 * n + 1, 2 * n], R[2 * n + 1, 2 * n + 1] = -sin[n], cos[n]
    return R
'''
_ROT_BUGS = [
    Bug("relative_rotation", "textbook block [[cos, -sin], [sin, cos]]: moves backwards",
        variant(variant(_ROT, "= cos[n], sin[n]", "= cos[n], -sin[n]"), "= -sin[n], cos[n]", "= sin[n], cos[n]")),
    Bug("relative_rotation", "one angle k shared by every block",
        variant(_ROT, "angle = k / 10000 ** (2 * i / d_model)", "angle = k + 0 * i")),
    Bug("relative_rotation", "block angles use exponent i/d, not 2i/d", variant(_ROT, "(2 * i / d_model)", "(i / d_model)")),
    Bug("relative_rotation", "column index 2i used as i: exponent 4i/d", variant(_ROT, "(2 * i / d_model)", "(4 * i / d_model)")),
]

# ----------------------------------------------------------------------------- apply_rope
_ROPE = '''
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angle = torch.as_tensor(positions).float()[..., None] * omega
    cos, sin = torch.cos(angle), torch.sin(angle)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1)
    return rotated.flatten(-2)
'''
_ROPE_BUGS = [
    Bug("apply_rope", "rotate-half layout: pairs (i, i + d/2) instead of (2i, 2i+1)",
        variant(variant(_ROPE, "x[..., 0::2], x[..., 1::2]", "x[..., : d // 2], x[..., d // 2:]"),
                "return rotated.flatten(-2)", "return torch.cat([rotated[..., 0], rotated[..., 1]], dim=-1)")),
    Bug("apply_rope", "one shared frequency: every pair turned by m", variant(_ROPE, "float32) / d", "float32) * 0 / d")),
    Bug("apply_rope", "turned clockwise",
        variant(_ROPE, "x_even * cos - x_odd * sin, x_even * sin + x_odd * cos",
                "x_even * cos + x_odd * sin, -x_even * sin + x_odd * cos")),
    Bug("apply_rope", "sign slip in the odd row: not a rotation",
        variant(_ROPE, "x_even * sin + x_odd * cos", "x_odd * cos - x_even * sin")),
    Bug("apply_rope", "positions ignored: uses 0..T-1", variant(_ROPE, "torch.as_tensor(positions)", "torch.arange(x.shape[-2])")),
    Bug("apply_rope", "frequencies use exponent i/d, not 2i/d", variant(_ROPE, "float32) / d", "float32) / 2 / d")),
    Bug("apply_rope", "base argument ignored", variant(_ROPE, "omega = base **", "omega = 10000.0 **")),
    Bug("apply_rope", "writes the rotated vectors back into x (in place)",
        variant(_ROPE, "    return rotated.flatten(-2)", "    x.copy_(rotated.flatten(-2))\n    return x")),
]

# ----------------------------------------------------------------------------- LearnedPositionalEmbedding
_LEARNED = '''
class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)

    def forward(self, x, positions=None):
        positions = torch.arange(x.shape[1]) if positions is None else positions
        if int(positions.max()) >= self.max_len:
            raise ValueError("no embedding for this position")
        return x + self.embedding(positions)
'''
_LEARNED_BUGS = [
    Bug("LearnedPositionalEmbedding", "positions counted from 1 (off by one)",
        variant(_LEARNED, "torch.arange(x.shape[1])", "torch.arange(1, x.shape[1] + 1)")),
    Bug("LearnedPositionalEmbedding", "every position gets row 0",
        variant(_LEARNED, "self.embedding(positions)", "self.embedding(torch.zeros_like(positions))")),
    Bug("LearnedPositionalEmbedding", "T read from the batch axis",
        variant(variant(_LEARNED, "torch.arange(x.shape[1])", "torch.arange(x.shape[0])"),
                "return x + self.embedding(positions)", "return x + self.embedding(positions)[:, None]")),
    Bug("LearnedPositionalEmbedding", "positions argument ignored", variant(_LEARNED, " if positions is None else positions", "")),
    Bug("LearnedPositionalEmbedding", "table stored as a buffer, not a parameter",
        variant(variant(_LEARNED, "self.embedding = nn.Embedding(max_len, d_model)",
                        "self.register_buffer('table', torch.randn(max_len, d_model))"),
                "self.embedding(positions)", "self.table[positions]")),
    Bug("LearnedPositionalEmbedding", "returns the position vectors without x",
        variant(_LEARNED, "return x + self.embedding(positions)", "return self.embedding(positions).expand_as(x)")),
    Bug("LearnedPositionalEmbedding", "adds the positions into the caller's x (x += ...)",
        variant(_LEARNED, "        return x + self.embedding(positions)",
                "        x += self.embedding(positions)\n        return x")),
]

# ----------------------------------------------------------------------------- encoding_distance (question 1)
_DISTANCE = '''
def encoding_distance(m, n, d_model, base=10000.0):
    total = 0.0
    for i in range(d_model // 2):
        omega = base ** (-2 * i / d_model)
        chord = 2 * math.sin((m - n) * omega / 2)
        total += chord ** 2
    return math.sqrt(total)
'''
_DISTANCE_BUGS = [
    Bug("encoding_distance", "the two rows evaluated at m and n (float64 angles lose it at large positions)",
        variant(_DISTANCE, "chord = 2 * math.sin((m - n) * omega / 2)\n        total += chord ** 2",
                "total += (math.sin(m * omega) - math.sin(n * omega)) ** 2 + (math.cos(m * omega) - math.cos(n * omega)) ** 2")),
    Bug("encoding_distance", "the squared distance", variant(_DISTANCE, "return math.sqrt(total)", "return total")),
    Bug("encoding_distance", "the chord without halving the angle: 2 sin(kω)",
        variant(_DISTANCE, "(m - n) * omega / 2", "(m - n) * omega")),
    Bug("encoding_distance", "d_model pairs instead of d_model / 2", variant(_DISTANCE, "range(d_model // 2)", "range(d_model)")),
    Bug("encoding_distance", "frequencies with the exponent i/d instead of 2i/d", variant(_DISTANCE, "(-2 * i / d_model)", "(-i / d_model)")),
    Bug("encoding_distance", "the dot product PE_m · PE_n instead of the distance",
        variant(variant(_DISTANCE, "chord = 2 * math.sin((m - n) * omega / 2)\n        total += chord ** 2",
                        "total += math.cos((m - n) * omega)"), "return math.sqrt(total)", "return total")),
]

# ----------------------------------------------------------------------------- pairs_that_cycle (question 2)
_CYCLE = '''
def pairs_that_cycle(max_len, d_model, base=10000.0):
    count = 0
    for i in range(d_model // 2):
        if 2 * math.pi * base ** (2 * i / d_model) <= max_len:
            count += 1
    return count
'''
_CYCLE_BUGS = [
    Bug("pairs_that_cycle", "counts columns, not pairs", variant(_CYCLE, "count += 1", "count += 2")),
    Bug("pairs_that_cycle", "compares with the last position max_len - 1 instead of the length",
        variant(_CYCLE, "<= max_len", "<= max_len - 1")),
    Bug("pairs_that_cycle", "one pair too many in the range (i up to d_model/2)",
        variant(_CYCLE, "range(d_model // 2)", "range(d_model // 2 + 1)")),
    Bug("pairs_that_cycle", "pair 0 left out of the range", variant(_CYCLE, "range(d_model // 2)", "range(1, d_model // 2)")),
    Bug("pairs_that_cycle", "counts the slow pairs instead", variant(_CYCLE, "<= max_len", "> max_len")),
    Bug("pairs_that_cycle", "wavelength with exponent i/d", variant(_CYCLE, "(2 * i / d_model)", "(i / d_model)")),
]

TEMPLATES = {"sinusoidal_positional_encoding": _PE, "relative_rotation": _ROT, "apply_rope": _ROPE,
             "LearnedPositionalEmbedding": _LEARNED,
             "encoding_distance": _DISTANCE, "pairs_that_cycle": _CYCLE}

BUGS = _PE_BUGS + _ROT_BUGS + _ROPE_BUGS + _LEARNED_BUGS + _DISTANCE_BUGS + _CYCLE_BUGS
