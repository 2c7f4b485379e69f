"""Correct implementations of notebook 02's graded names in other styles; each must pass every graded cell.

Each ``code`` runs in the kernel of the executed solution notebook (see tests/bugs/02_attention.py
for the names that exist there).
"""
from tests.alternatives import Alternative

_INIT_ADDITIVE = '''
    def __init__(self, d_query, d_key, d_attn):
        super().__init__()
        self.W_q = nn.Linear(d_query, d_attn, bias=False)
        self.W_k = nn.Linear(d_key, d_attn, bias=False)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def project_keys(self, keys):
        return self.W_k(keys)

    def forward(self, query, keys, values, mask=None):
        return self.attend(query, self.project_keys(keys), values, mask)
'''

ALTERNATIVES = [
    # ------------------------------------------------------------------ softmax
    Alternative("softmax", "exp in place on its own tensor, never on x", '''
def softmax(x, dim=-1):
    z = x - x.amax(dim=dim, keepdim=True)
    z.exp_()
    return z / z.sum(dim=dim, keepdim=True)
'''),
    Alternative("softmax", "float64 inside, cast back; max via .max().values", '''
def softmax(x, dim=-1):
    x64 = x.double()
    e = torch.exp(x64 - x64.max(dim=dim, keepdim=True).values)
    return (e / e.sum(dim=dim, keepdim=True)).to(x.dtype)
'''),
    Alternative("softmax", "log-sum-exp of the shifted scores, with a type-hinted helper", '''
def _log_normaliser(x: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.logsumexp(x, dim=dim, keepdim=True)

def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    y = x - x.detach().amax(dim=dim, keepdim=True)     # exp(x - lse(x)) alone loses digits at |x| ~ 1e4
    return torch.exp(y - _log_normaliser(y, dim))
'''),
    Alternative("softmax", "moves the axis last and back", '''
def softmax(x, dim=-1):
    y = x.movedim(dim, -1)
    y = torch.exp(y - y.amax(-1, keepdim=True))
    return (y / y.sum(-1, keepdim=True)).movedim(-1, dim)
'''),
    # ------------------------------------------------------------------ masked_softmax
    Alternative("masked_softmax", "float64 inside, finite floor for the row maximum", '''
def masked_softmax(scores, mask=None):
    if mask is None:
        return softmax(scores, dim=-1)
    x = scores.double().masked_fill(~mask, float("-inf"))
    m = x.amax(dim=-1, keepdim=True).clamp_min(-1e300)
    e = torch.exp(x - m)
    return (e / e.sum(dim=-1, keepdim=True).clamp_min(1e-300)).to(scores.dtype)
'''),
    Alternative("masked_softmax", "reuses softmax, zeroes fully masked rows with a row flag", '''
def masked_softmax(scores, mask=None, dim=-1):
    if mask is None:
        return softmax(scores, dim=dim)
    any_key = mask.any(dim=dim, keepdim=True)                    # False for fully masked rows
    filled = scores.masked_fill(~mask, float("-inf")).masked_fill(~any_key, 0.0)
    return softmax(filled, dim=dim) * any_key
'''),
    # ------------------------------------------------------------------ attention_lookup
    Alternative("attention_lookup", "einsum", '''
def attention_lookup(query, keys, values):
    weights = softmax(torch.einsum("nd,d->n", keys, query), dim=0)
    return torch.einsum("n,n...->...", weights, values), weights
'''),
    Alternative("attention_lookup", "broadcast products and sums, no matmul", '''
def attention_lookup(query, keys, values):
    weights = softmax((keys * query).sum(dim=1))
    flat = values.reshape(values.shape[0], -1)
    return (weights[:, None] * flat).sum(dim=0).reshape(values.shape[1:]), weights
'''),
    # ------------------------------------------------------------------ scaled_dot_product_attention
    Alternative("attention_lookup", "returns a list [output, weights] (a tuple or a list is free)", '''
def attention_lookup(query, keys, values):
    weights = softmax(keys @ query, dim=-1)
    return [torch.tensordot(weights, values, dims=1), weights]
'''),
    Alternative("scaled_dot_product_attention", "einsum, multiplies by d_k^-0.5", '''
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    weights = masked_softmax(scores, mask)
    return torch.einsum("...qk,...kv->...qv", weights, v), weights
'''),
    Alternative("scaled_dot_product_attention", "scales q first, softmax when unmasked, extra keyword", '''
def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
    scale = 1.0 / math.sqrt(k.size(-1)) if scale is None else scale
    scores = torch.matmul(q * scale, k.transpose(-1, -2))
    weights = softmax(scores, dim=-1) if mask is None else masked_softmax(scores, mask)
    return torch.matmul(weights, v), weights
'''),
    # ------------------------------------------------------------------ AdditiveAttention
    Alternative("AdditiveAttention", "a loop over the queries, bmm", '''
class AdditiveAttention(nn.Module):
''' + _INIT_ADDITIVE + '''
    def attend(self, query, projected_keys, values, mask=None):
        rows = []
        for i in range(query.shape[1]):
            hidden = torch.tanh(self.W_q(query[:, i:i + 1]) + projected_keys)   # (B, T_k, d_attn)
            rows.append(self.v(hidden).squeeze(-1))                               # (B, T_k)
        weights = masked_softmax(torch.stack(rows, dim=1), mask)
        return torch.bmm(weights, values), weights
'''),
    Alternative("AdditiveAttention", "einsum with v's weight vector, type hints", '''
class AdditiveAttention(nn.Module):
''' + _INIT_ADDITIVE + '''
    def attend(self, query: torch.Tensor, projected_keys: torch.Tensor, values: torch.Tensor,
               mask: "torch.Tensor | None" = None) -> "tuple[torch.Tensor, torch.Tensor]":
        q = self.W_q(query)
        hidden = torch.tanh(q[:, :, None, :] + projected_keys[:, None, :, :])
        scores = torch.einsum("bqkd,d->bqk", hidden, self.v.weight[0])
        weights = masked_softmax(scores, mask)
        return torch.einsum("bqk,bkv->bqv", weights, values), weights
'''),
    # ------------------------------------------------------------------ Seq2SeqAttentionRNN
    Alternative("Seq2SeqAttentionRNN", "output layers inside the loop; h_n permuted", '''
class Seq2SeqAttentionRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        H, E = cfg.d_hidden, cfg.d_emb
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, E, padding_idx=PAD_ID)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * H, H)
        self.attention = AdditiveAttention(d_query=H, d_key=2 * H, d_attn=cfg.d_attn)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, E, padding_idx=PAD_ID)
        self.decoder = nn.GRUCell(E + 2 * H, H)
        self.pre_out = nn.Linear(H + 2 * H + E, H)
        self.out = nn.Linear(H, cfg.tgt_vocab_size)
        self.drop = nn.Dropout(cfg.dropout)

    def encode(self, src, src_lengths=None):
        lengths = src.ne(PAD_ID).sum(1) if src_lengths is None else src_lengths
        emb = self.drop(self.src_embedding(src))
        packed = pack_padded_sequence(emb, lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))
        B = src.size(0)
        hidden = torch.tanh(self.bridge(h_n.permute(1, 0, 2).reshape(B, -1)))
        return AttentionState(hidden=hidden, memory=memory, keys=self.attention.project_keys(memory),
                              mask=src.ne(PAD_ID)[:, None, :])

    def decode(self, tgt_in, state, return_weights=False):
        s, logits, weights = state.hidden, [], []
        for t in range(tgt_in.size(1)):
            emb = self.drop(self.tgt_embedding(tgt_in[:, t]))
            context, w = self.attention.attend(s[:, None], state.keys, state.memory, state.mask)
            context = context[:, 0]
            s = self.decoder(torch.cat([emb, context], dim=-1), s)
            features = torch.tanh(self.pre_out(torch.cat([s, context, emb], dim=-1)))
            logits.append(self.out(self.drop(features)))
            weights.append(w[:, 0])
        logits = torch.stack(logits, dim=1)
        new_state = AttentionState(s, state.memory, state.keys, state.mask)
        return (logits, new_state, torch.stack(weights, dim=1)) if return_weights else (logits, new_state)

    def forward(self, src, tgt_in, src_lengths=None):
        return self.decode(tgt_in, self.encode(src, src_lengths=src_lengths))[0]
'''),
    Alternative("Seq2SeqAttentionRNN", "submodules created in another order, a step helper", '''
class Seq2SeqAttentionRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        H, E = cfg.d_hidden, cfg.d_emb
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(H, cfg.tgt_vocab_size)
        self.pre_out = nn.Linear(H + 2 * H + E, H)
        self.decoder = nn.GRUCell(E + 2 * H, H)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, E, padding_idx=PAD_ID)
        self.attention = AdditiveAttention(d_query=H, d_key=2 * H, d_attn=cfg.d_attn)
        self.bridge = nn.Linear(2 * H, H)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, E, padding_idx=PAD_ID)

    def encode(self, src, src_lengths=None):
        if src_lengths is None:
            src_lengths = (src != PAD_ID).long().sum(dim=-1)
        packed = pack_padded_sequence(self.drop(self.src_embedding(src)), src_lengths.clamp(min=1).cpu(),
                                      batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True)
        memory = F.pad(memory, (0, 0, 0, src.shape[1] - memory.shape[1]))
        hidden = torch.tanh(self.bridge(torch.cat(list(h_n), dim=-1)))
        return AttentionState(hidden, memory, self.attention.project_keys(memory), (src != PAD_ID).unsqueeze(-2))

    def _step(self, emb_t, s, state):
        context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
        s = self.decoder(torch.cat([emb_t, context.squeeze(1)], -1), s)
        return s, context.squeeze(1), w.squeeze(1)

    def decode(self, tgt_in, state, return_weights=False):
        emb = self.drop(self.tgt_embedding(tgt_in))
        s, outs = state.hidden, []
        for t in range(tgt_in.shape[1]):
            s, context, w = self._step(emb[:, t], s, state)
            outs.append((s, context, w))
        states, contexts, weights = (torch.stack(z, dim=1) for z in zip(*outs))
        logits = self.out(self.drop(torch.tanh(self.pre_out(torch.cat([states, contexts, emb], dim=-1)))))
        if return_weights:
            return logits, state._replace(hidden=s), weights
        return logits, state._replace(hidden=s)

    def forward(self, src, tgt_in, src_lengths=None):
        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits
'''),
    # ------------------------------------------------------------------ dot_product_score_std
    Alternative("dot_product_score_std", "standard deviations multiplied directly, one expression", '''
def dot_product_score_std(d_k, q_std=1.0, k_std=1.0, scaled=True):
    return q_std * k_std * (1.0 if scaled else math.sqrt(d_k))
'''),
    Alternative("dot_product_score_std", "numpy, the sum of d_k equal variances, extra keyword", '''
def dot_product_score_std(d_k, q_std=1.0, k_std=1.0, scaled=True, eps=0.0):
    variances = np.full(d_k, np.float64(q_std) ** 2 * np.float64(k_std) ** 2)   # Var[q_i k_i]
    total = variances.sum() / (d_k if scaled else 1)
    return float(np.sqrt(total + eps))
'''),
    # ------------------------------------------------------------------ recency_window (question 2)
    Alternative("recency_window", "float32 softmax of the key terms, newest first, searchsorted", '''
def recency_window(slope, position, coverage):
    key_terms = slope * torch.arange(position + 1, dtype=torch.float32)        # the query term cancels
    newest_first = torch.softmax(key_terms, dim=0).flip(0).cumsum(0)           # (position + 1,)
    w = int(torch.searchsorted(newest_first, torch.tensor([coverage], dtype=torch.float32))) + 1
    return min(w, position + 1)
'''),
    Alternative("recency_window", "a loop back from the newest key, weights relative to it", '''
def recency_window(slope: float, position: int, coverage: float) -> int:
    ratio = math.exp(-slope)                      # each older key weighs e^{-s} times the next one
    total = (1 - ratio ** (position + 1)) / (1 - ratio)
    held, weight = 0.0, 1.0
    for w in range(1, position + 2):
        held += weight
        if held >= coverage * total:
            return w
        weight *= ratio
    return position + 1
'''),
    Alternative("recency_window", "numpy weights with the maximum subtracted, first index reaching coverage", '''
def recency_window(slope, position, coverage, eps=0.0):
    scores = slope * np.arange(position + 1, dtype=np.float64)
    weights = np.exp(scores - scores.max())
    shares = np.cumsum(weights[::-1]) / weights.sum()
    return int(np.argmax(shares >= coverage - eps)) + 1
'''),
]
