"""Plausible wrong implementations of notebook 04's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``
and ``math`` exist.
"""
from tests.bugs import Bug

# ----------------------------------------------------------------------------- sinusoidal_positional_encoding
_PE = '''
def sinusoidal_positional_encoding(max_len, d_model):
    pos = torch.arange({start}, max_len + {start}, dtype=torch.float32)[:, None]   # (max_len, 1)
    i = torch.arange(d_model // 2, dtype=torch.float32)                          # pair index
    angle = {angle}                                                               # (max_len, d_model/2)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.{even}(angle)
    pe[:, 1::2] = torch.{odd}(angle)
    return pe
'''


def _pe(angle="pos / 10000 ** (2 * i / d_model)", even="sin", odd="cos", start=0) -> str:
    return _PE.format(angle=angle, even=even, odd=odd, start=start)


_PE_BUGS = [
    Bug("sinusoidal_positional_encoding", "sin and cos swapped", _pe(even="cos", odd="sin")),
    Bug("sinusoidal_positional_encoding", "exponent i/d instead of 2i/d", _pe(angle="pos / 10000 ** (i / d_model)")),
    Bug("sinusoidal_positional_encoding", "multiplies by 10000^(2i/d) instead of dividing",
        _pe(angle="pos * 10000 ** (2 * i / d_model)")),
    Bug("sinusoidal_positional_encoding", "positions counted from 1", _pe(start=1)),
    Bug("sinusoidal_positional_encoding", "column index in the exponent (odd columns use 2i+1)", '''
def sinusoidal_positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    j = torch.arange(d_model, dtype=torch.float32)                     # column index, not 2i
    angle = pos / 10000 ** (j / d_model)                               # (max_len, d_model)
    pe = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, 1::2])
    return pe
'''),
    Bug("sinusoidal_positional_encoding", "sines in the first half, cosines in the second", '''
def sinusoidal_positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angle = pos / 10000 ** (two_i / d_model)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)     # tensor2tensor's layout, not interleaved
'''),
]

# ----------------------------------------------------------------------------- relative_rotation
_ROT = '''
def relative_rotation(k, d_model):
    i = torch.arange(d_model // 2, dtype=torch.float64)
    angle = {angle}
    cos, sin = torch.cos(angle), torch.sin(angle)
    R = torch.zeros(d_model, d_model)
    for n in range(d_model // 2):
        R[2 * n, 2 * n], R[2 * n, 2 * n + 1] = cos[n], {upper}
        R[2 * n + 1, 2 * n], R[2 * n + 1, 2 * n + 1] = {lower}, cos[n]
    return R
'''


def _rot(angle="k / 10000 ** (2 * i / d_model)", upper="sin[n]", lower="-sin[n]") -> str:
    return _ROT.format(angle=angle, upper=upper, lower=lower)


_ROT_BUGS = [
    Bug("relative_rotation", "textbook block [[cos, -sin], [sin, cos]]: moves backwards",
        _rot(upper="-sin[n]", lower="sin[n]")),
    Bug("relative_rotation", "one angle k shared by every block", _rot(angle="k + 0 * i")),
    Bug("relative_rotation", "block angles use exponent i/d, not 2i/d", _rot(angle="k / 10000 ** (i / d_model)")),
    Bug("relative_rotation", "column index 2i used as i: exponent 4i/d", _rot(angle="k / 10000 ** (4 * i / d_model)")),
]

# ----------------------------------------------------------------------------- apply_rope
_ROPE = '''
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    omega = {base} ** (-torch.arange(0, d, 2, dtype=torch.float32) {exponent} / d)
    angle = {positions}.float()[..., None] * omega
    cos, sin = torch.cos(angle), torch.sin(angle)
    {split}
    rotated = torch.stack([{even}, {odd}], dim=-1)
    return {join}
'''
_INTERLEAVED = dict(split="x_even, x_odd = x[..., 0::2], x[..., 1::2]", join="rotated.flatten(-2)")


def _rope(base="base", exponent="", positions="torch.as_tensor(positions)", even="x_even * cos - x_odd * sin",
          odd="x_even * sin + x_odd * cos", split=_INTERLEAVED["split"], join=_INTERLEAVED["join"]) -> str:
    return _ROPE.format(base=base, exponent=exponent, positions=positions, even=even, odd=odd, split=split, join=join)


_ROPE_BUGS = [
    Bug("apply_rope", "rotate-half layout: pairs (i, i + d/2) instead of (2i, 2i+1)",
        _rope(split="x_even, x_odd = x[..., : d // 2], x[..., d // 2:]",
              join="torch.cat([rotated[..., 0], rotated[..., 1]], dim=-1)")),
    Bug("apply_rope", "one shared frequency: every pair turned by m", _rope(exponent="* 0")),
    Bug("apply_rope", "turned clockwise", _rope(even="x_even * cos + x_odd * sin", odd="-x_even * sin + x_odd * cos")),
    Bug("apply_rope", "sign slip in the odd row: not a rotation", _rope(odd="x_odd * cos - x_even * sin")),
    Bug("apply_rope", "positions ignored: uses 0..T-1", _rope(positions="torch.arange(x.shape[-2])")),
    Bug("apply_rope", "frequencies use exponent i/d, not 2i/d", _rope(exponent="/ 2")),
    Bug("apply_rope", "base argument ignored", _rope(base="10000.0")),
]

# ----------------------------------------------------------------------------- LearnedPositionalEmbedding
_LEARNED = '''
class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.max_len = max_len
        {table}

    def forward(self, x, positions=None):
        {default}
        if int(positions.max()) >= self.max_len:
            raise ValueError("no embedding for this position")
        return {result}
'''


def _learned(table="self.embedding = nn.Embedding(max_len, d_model)",
             default="positions = torch.arange(x.shape[1]) if positions is None else positions",
             result="x + self.embedding(positions)") -> str:
    return _LEARNED.format(table=table, default=default, result=result)


_LEARNED_BUGS = [
    Bug("LearnedPositionalEmbedding", "positions counted from 1 (off by one)",
        _learned(default="positions = torch.arange(1, x.shape[1] + 1) if positions is None else positions")),
    Bug("LearnedPositionalEmbedding", "every position gets row 0",
        _learned(result="x + self.embedding(torch.zeros_like(positions))")),
    Bug("LearnedPositionalEmbedding", "T read from the batch axis",
        _learned(default="positions = torch.arange(x.shape[0]) if positions is None else positions",
                 result="x + self.embedding(positions)[:, None]")),
    Bug("LearnedPositionalEmbedding", "positions argument ignored",
        _learned(default="positions = torch.arange(x.shape[1])")),
    Bug("LearnedPositionalEmbedding", "table stored as a buffer, not a parameter",
        _learned(table="self.register_buffer('table', torch.randn(max_len, d_model))",
                 result="x + self.table[positions]")),
    Bug("LearnedPositionalEmbedding", "returns the position vectors without x",
        _learned(result="self.embedding(positions).expand_as(x)")),
]

BUGS = _PE_BUGS + _ROT_BUGS + _ROPE_BUGS + _LEARNED_BUGS
