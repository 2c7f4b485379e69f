"""Correct implementations of notebook 03's graded names in other styles; each must pass every graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``PAD_ID``, ``masked_softmax`` (course_lib's) and the graded names exist.
"""
from tests.alternatives import Alternative

ALTERNATIVES = [
    # ------------------------------------------------------------------ causal_mask
    Alternative("causal_mask", "compares position indices, extra device keyword", '''
def causal_mask(T, device=None):
    i = torch.arange(T, device=device)
    return i[None, :] <= i[:, None]
'''),
    Alternative("causal_mask", "negated strict upper triangle", '''
def causal_mask(T: int) -> torch.Tensor:
    return ~torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
'''),
    # ------------------------------------------------------------------ padding_mask
    Alternative("padding_mask", "ne and two unsqueezes", '''
def padding_mask(tokens, pad_id=PAD_ID):
    return tokens.ne(pad_id).unsqueeze(1).unsqueeze(2)
'''),
    Alternative("padding_mask", "view to (B, 1, 1, T) with a default literal 0", '''
def padding_mask(tokens, pad_id=0):
    B, T = tokens.shape
    return (tokens != pad_id).view(B, 1, 1, T)
'''),
    # ------------------------------------------------------------------ split_heads
    Alternative("split_heads", "reshape and permute", '''
def split_heads(x, h):
    B, T, _ = x.shape
    return x.reshape(B, T, h, -1).permute(0, 2, 1, 3)
'''),
    Alternative("split_heads", "chunks stacked on a new axis", '''
def split_heads(x, h):
    return torch.stack(x.chunk(h, dim=-1), dim=1)
'''),
    # ------------------------------------------------------------------ merge_heads
    Alternative("merge_heads", "unbind the heads and concatenate", '''
def merge_heads(x):
    return torch.cat(x.unbind(dim=1), dim=-1)
'''),
    Alternative("merge_heads", "permute and flatten", '''
def merge_heads(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 2, 1, 3).flatten(start_dim=2)
'''),
    # ------------------------------------------------------------------ MultiHeadAttention
    Alternative("MultiHeadAttention", "projections created in reverse order; einsum; own masked softmax helper", '''
def _masked_weights(scores, mask):
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    m = scores.amax(-1, keepdim=True)
    e = torch.exp(scores - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
    return e / e.sum(-1, keepdim=True).clamp_min(1e-30)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0, bias=True):
        super().__init__()
        assert d_model % n_heads == 0
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None, average_attn_weights=True):
        q = split_heads(self.q_proj(query), self.n_heads)
        k = split_heads(self.k_proj(key), self.n_heads)
        v = split_heads(self.v_proj(value), self.n_heads)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_model // self.n_heads)
        weights = _masked_weights(scores, mask)
        out = torch.einsum("bhqk,bhkd->bhqd", F.dropout(weights, self.dropout, self.training), v)
        return self.out_proj(merge_heads(out)), (weights.mean(1) if average_attn_weights else weights)

    def load_from_torch(self, mha: nn.MultiheadAttention) -> "MultiHeadAttention":
        d = self.d_model
        with torch.no_grad():
            for i, proj in enumerate((self.q_proj, self.k_proj, self.v_proj)):
                proj.weight.copy_(mha.in_proj_weight[i * d:(i + 1) * d])
                if proj.bias is not None:
                    proj.bias.copy_(mha.in_proj_bias[i * d:(i + 1) * d])
            self.out_proj.load_state_dict(mha.out_proj.state_dict())
        return self
'''),
    Alternative("MultiHeadAttention", "heads by view/transpose inline, float64 scores, extra keyword", '''
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0, bias=True):
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.d_head = d_model // n_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (
            nn.Linear(d_model, d_model, bias=bias) for _ in range(4))

    def _heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None, average_attn_weights=True, need_weights=True):
        q, k, v = self._heads(self.q_proj(query)), self._heads(self.k_proj(key)), self._heads(self.v_proj(value))
        scores = (q.double() @ k.double().transpose(-2, -1)) / self.d_head ** 0.5
        weights = masked_softmax(scores, mask).to(q.dtype)
        out = F.dropout(weights, p=self.dropout, training=self.training) @ v
        B, _, T_q, _ = out.shape
        out = self.out_proj(out.transpose(1, 2).reshape(B, T_q, self.d_model))
        if not need_weights:
            return out, None
        return out, weights.mean(dim=1) if average_attn_weights else weights

    def load_from_torch(self, mha):
        w_q, w_k, w_v = mha.in_proj_weight.detach().split(self.d_model)
        state = {"q_proj.weight": w_q, "k_proj.weight": w_k, "v_proj.weight": w_v,
                 "out_proj.weight": mha.out_proj.weight.detach()}
        if mha.in_proj_bias is not None:
            b_q, b_k, b_v = mha.in_proj_bias.detach().split(self.d_model)
            state.update({"q_proj.bias": b_q, "k_proj.bias": b_k, "v_proj.bias": b_v,
                          "out_proj.bias": mha.out_proj.bias.detach()})
        self.load_state_dict(state)
        return self
'''),
    Alternative("MultiHeadAttention", "projections under other names (w_q, w_k, w_v, w_o), in the order given", '''
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0, bias=True):
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None, average_attn_weights=True):
        q, k, v = (split_heads(w(t), self.n_heads) for w, t in ((self.w_q, query), (self.w_k, key), (self.w_v, value)))
        weights = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), mask)
        out = self.w_o(merge_heads(F.dropout(weights, self.dropout, self.training) @ v))
        return out, weights.mean(dim=1) if average_attn_weights else weights

    def load_from_torch(self, mha):
        with torch.no_grad():
            for proj, w in zip((self.w_q, self.w_k, self.w_v), mha.in_proj_weight.chunk(3)):
                proj.weight.copy_(w)
            self.w_o.weight.copy_(mha.out_proj.weight)
            if self.w_o.bias is not None:
                for proj, b in zip((self.w_q, self.w_k, self.w_v), mha.in_proj_bias.chunk(3)):
                    proj.bias.copy_(b)
                self.w_o.bias.copy_(mha.out_proj.bias)
        return self
'''),
    # ------------------------------------------------------------------ attention_flops / ffn_flops
    Alternative("attention_flops", "sum of the products, one helper per matmul", '''
def _matmul_flops(m, k, n):
    return 2 * m * k * n

def attention_flops(T, d_model):
    projections = 4 * _matmul_flops(T, d_model, d_model)       # W_q, W_k, W_v, W_o
    scores = _matmul_flops(T, d_model, T)                       # all heads together: T x T x d_model
    weighted_sum = _matmul_flops(T, T, d_model)
    return projections + scores + weighted_sum
'''),
    Alternative("attention_flops", "an int() of a float expression", '''
def attention_flops(T, d_model):
    return int(2.0 * T * d_model * (4 * d_model + 2 * T))
'''),
    Alternative("ffn_flops", "two matmuls via a helper", '''
def _linear_flops(T, d_in, d_out):
    return 2 * T * d_in * d_out

def ffn_flops(T, d_model, d_ff):
    return _linear_flops(T, d_model, d_ff) + _linear_flops(T, d_ff, d_model)
'''),
    Alternative("ffn_flops", "numpy integer product", '''
def ffn_flops(T, d_model, d_ff):
    return int(np.prod([4, T, d_model, d_ff], dtype=np.int64))
'''),
    # ------------------------------------------------------------------ block_param_counts
    Alternative("block_param_counts", "a linear-layer helper, extra keys", '''
def _linear_params(d_in, d_out):
    return d_in * d_out + d_out

def block_param_counts(d_model, d_ff):
    attention = 4 * _linear_params(d_model, d_model)
    ffn = _linear_params(d_model, d_ff) + _linear_params(d_ff, d_model)
    norms = 2 * (2 * d_model)
    return {"attention": attention, "ffn": ffn, "norms": norms, "total": attention + ffn + norms,
            "attention_share": attention / (attention + ffn + norms)}
'''),
    Alternative("block_param_counts", "dict() built from keyword arguments, total last", '''
def block_param_counts(d_model, d_ff):
    parts = dict(norms=4 * d_model, ffn=d_model * d_ff * 2 + d_model + d_ff, attention=4 * d_model * (d_model + 1))
    parts["total"] = parts["norms"] + parts["ffn"] + parts["attention"]
    return parts
'''),
    # ------------------------------------------------------------------ visible_positions
    Alternative("visible_positions", "row i of the combined masks, nonzero", '''
def visible_positions(tokens, i, pad_id=PAD_ID):
    row = causal_mask(len(tokens))[i] & padding_mask(tokens[None], pad_id=pad_id)[0, 0, 0]
    return row.nonzero().flatten().tolist()
'''),
    Alternative("visible_positions", "loop over enumerate of the NumPy array, with break", '''
def visible_positions(tokens, i, pad_id=PAD_ID):
    seen = []
    for j, token in enumerate(tokens.numpy()):
        if j > i:
            break
        if token != pad_id:
            seen.append(j)
    return seen
'''),
    Alternative("visible_positions", "a tuple of ints (the text leaves list or tuple free)", '''
def visible_positions(tokens, i, pad_id=PAD_ID):
    return tuple(j for j, token in enumerate(tokens[:i + 1].tolist()) if token != pad_id)
'''),
    # ------------------------------------------------------------------ causal_attention_flops (question 2)
    Alternative("causal_attention_flops", "Exercise 5's count minus the pairs above the diagonal", '''
def causal_attention_flops(T, d_model):
    masked_pairs = T * (T - 1) // 2                    # j > i: none in row T - 1, T - 1 in row 0
    return attention_flops(T, d_model) - masked_pairs * 4 * d_model
'''),
    Alternative("causal_attention_flops", "row by row: query i against its i + 1 keys", '''
def causal_attention_flops(T: int, d_model: int) -> int:
    total = 4 * (2 * T * d_model * d_model)            # four (T, d) x (d, d) projections
    for i in range(T):
        keys = i + 1
        total += 2 * keys * d_model                    # (1, d) x (d, keys): the scores of query i
        total += 2 * keys * d_model                    # (1, keys) x (keys, d): its weighted sum
    return total
'''),
    Alternative("causal_attention_flops", "numpy integers, the triangle as d·T·(T+1)·2, converted to int", '''
def causal_attention_flops(T, d_model):
    T, d = np.int64(T), np.int64(d_model)
    return int(8 * T * d * d + 2 * d * T * (T + 1))
'''),
    # ------------------------------------------------------------------ max_path_length
    Alternative("max_path_length", "integer arithmetic, a dict of the three kinds", '''
def max_path_length(kind, n, kernel=3):
    half = kernel // 2
    return {"self-attention": 1, "recurrent": n, "convolution": 1 if n == 1 else (n - 2) // half + 1}[kind]
'''),
    Alternative("max_path_length", "stacking convolutions until the reach covers the sequence", '''
def max_path_length(kind, n, kernel=3):
    if kind == "recurrent":
        return n
    if kind == "self-attention":
        return 1
    layers, reach = 1, kernel // 2            # the last input position one layer's outputs can see from position 0
    while reach < n - 1:
        layers, reach = layers + 1, reach + kernel // 2
    return layers
'''),
]
