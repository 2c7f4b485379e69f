"""Correct implementations of notebook 04's graded names in other styles; each must pass every graded cell."""
from tests.alternatives import Alternative

ALTERNATIVES = [
    # ------------------------------------------------------------------ sinusoidal_positional_encoding
    Alternative("sinusoidal_positional_encoding", "float64 inside, exp-log frequencies, interleaved by stack", '''
def sinusoidal_positional_encoding(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = pos * freq
    return torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(max_len, d_model).float()
'''),
    Alternative("sinusoidal_positional_encoding", "numpy, column by column", '''
def sinusoidal_positional_encoding(max_len, d_model):
    pe = np.zeros((max_len, d_model), dtype=np.float64)
    pos = np.arange(max_len)
    for j in range(0, d_model, 2):
        angle = pos / 10000 ** (j / d_model)
        pe[:, j], pe[:, j + 1] = np.sin(angle), np.cos(angle)
    return torch.from_numpy(pe.astype(np.float32))
'''),
    Alternative("sinusoidal_positional_encoding", "a float64 table (the dtype is free: values are compared)", '''
def sinusoidal_positional_encoding(max_len, d_model):
    angle = torch.arange(max_len, dtype=torch.float64)[:, None] / 10000.0 ** (
        torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)
'''),
    # ------------------------------------------------------------------ relative_rotation
    Alternative("relative_rotation", "block_diag of 2x2 blocks", '''
def relative_rotation(k, d_model):
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    blocks = [torch.tensor([[math.cos(k * w), math.sin(k * w)], [-math.sin(k * w), math.cos(k * w)]])
              for w in omega.tolist()]
    return torch.block_diag(*blocks).float()
'''),
    Alternative("relative_rotation", "vectorised fill of the diagonals", '''
def relative_rotation(k: int, d_model: int) -> torch.Tensor:
    half = torch.arange(d_model // 2)
    angle = k * 10000.0 ** (-(2 * half).double() / d_model)
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    R[2 * half, 2 * half] = angle.cos()
    R[2 * half + 1, 2 * half + 1] = angle.cos()
    R[2 * half, 2 * half + 1] = angle.sin()
    R[2 * half + 1, 2 * half] = -angle.sin()
    return R.to(torch.float32)
'''),
    Alternative("relative_rotation", "a float64 matrix (the dtype is free: values are compared)", '''
def relative_rotation(k, d_model):
    angle = k * 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    cos, sin = angle.cos(), angle.sin()
    return torch.block_diag(*torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2))
'''),
    # ------------------------------------------------------------------ apply_rope
    Alternative("apply_rope", "complex multiplication", '''
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    angle = torch.as_tensor(positions, device=x.device).double()[..., None] * omega
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2).to(x.dtype)
'''),
    Alternative("apply_rope", "rotate-pairs helper with repeat_interleave'd cos/sin", '''
def _rotate_pairs(x):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([-x2, x1], dim=-1).flatten(-2)

def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    omega = 1.0 / base ** (torch.arange(0, d, 2, device=x.device).float() / d)
    angle = torch.as_tensor(positions, device=x.device).to(torch.float32).unsqueeze(-1) * omega
    cos, sin = angle.cos().repeat_interleave(2, -1), angle.sin().repeat_interleave(2, -1)
    return x * cos + _rotate_pairs(x) * sin
'''),
    # ------------------------------------------------------------------ LearnedPositionalEmbedding
    Alternative("LearnedPositionalEmbedding", "a raw nn.Parameter named table, IndexError", '''
class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d_model))

    def forward(self, x, positions=None):
        if positions is None:
            positions = torch.arange(x.shape[1], device=x.device)
        if positions.numel() and int(positions.max()) >= self.table.shape[0]:
            raise IndexError(f"position {int(positions.max())} is beyond the table ({self.table.shape[0]} rows)")
        return x + self.table[positions]
'''),
    Alternative("LearnedPositionalEmbedding", "nn.Embedding under another name, lets it raise", '''
class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model):
        super().__init__()
        self.rows = nn.Embedding(max_len, d_model)

    def forward(self, x, positions=None, offset=0):
        if positions is None:
            positions = offset + torch.arange(x.size(1), device=x.device)
        return x + self.rows(positions)
'''),

    # ------------------------------------------------------------------ encoding_distance (question 1)
    Alternative("encoding_distance", "law of cosines: ‖a‖² + ‖b‖² − 2a·b with a·b = Σ cos(kω_i), numpy", '''
def encoding_distance(m, n, d_model, base=10000.0):
    omega = np.power(float(base), -np.arange(0, d_model, 2) / d_model)
    dot = np.cos((m - n) * omega).sum()                # PE_m · PE_n depends on m - n only
    return float(np.sqrt(max(d_model - 2 * dot, 0.0)))  # both rows have norm² d_model / 2
'''),
    Alternative("encoding_distance", "translation invariance: the rows of 0 and m − n in float64 torch", '''
def encoding_distance(m: int, n: int, d_model: int, base: float = 10000.0) -> float:
    k = m - n                                          # PE_m, PE_n are PE_k, PE_0 turned by the same rotation
    frequencies = torch.exp(-math.log(base) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = torch.tensor([0.0, float(k)], dtype=torch.float64)[:, None] * frequencies
    rows = torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(2, d_model)
    return torch.dist(rows[0], rows[1]).item()
'''),
    # ------------------------------------------------------------------ pairs_that_cycle (question 2)
    Alternative("pairs_that_cycle", "closed form: the largest i with base^(2i/d) <= max_len / 2π, checked", '''
def pairs_that_cycle(max_len, d_model, base=10000.0):
    pairs = d_model // 2
    ratio = max_len / (2 * math.pi)
    if ratio < 1:
        return 0
    if base <= 1:
        return pairs
    count = min(pairs, math.floor(math.log(ratio) / math.log(base) * d_model / 2) + 1)
    # guard the rounding of the logarithms against the formula itself
    while count > 0 and 2 * math.pi * base ** (2 * (count - 1) / d_model) > max_len:
        count -= 1
    while count < pairs and 2 * math.pi * base ** (2 * count / d_model) <= max_len:
        count += 1
    return count
'''),
    Alternative("pairs_that_cycle", "torch tensor of wavelengths, counted and converted to int", '''
def pairs_that_cycle(max_len, d_model, base=10000.0):
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    wavelengths = 2 * math.pi * torch.pow(torch.tensor(base, dtype=torch.float64), two_i / d_model)
    return int((wavelengths <= max_len).sum())
'''),
    Alternative("pairs_that_cycle", "stops at the first slow pair", '''
def pairs_that_cycle(max_len, d_model, base=10000.0):
    count = 0
    for i in range(d_model // 2):
        if math.tau * base ** (i / (d_model / 2)) > max_len:
            break                      # the wavelengths grow with i: every later pair is slower
        count += 1
    return count
'''),
]
