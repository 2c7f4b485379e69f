"""Plausible wrong implementations of notebook 02's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``AttentionState``, ``PAD_ID`` and the
(correct) ``softmax``, ``masked_softmax`` and ``AdditiveAttention`` exist. ``TEMPLATES`` holds the
correct code of each target; every bug is its template with one mistake substituted in
(``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant

# ----------------------------------------------------------------------------- softmax
_SOFTMAX = '''
def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
'''
_ROW_MAX = "x.amax(dim=dim, keepdim=True)"
_SOFTMAX_BUGS = [
    Bug("softmax", "no maximum subtracted (overflows)", variant(_SOFTMAX, f"torch.exp(x - {_ROW_MAX})", "torch.exp(x)")),
    Bug("softmax", "subtracts the minimum instead of the maximum", variant(_SOFTMAX, "x.amax(", "x.amin(")),
    Bug("softmax", "always normalises the last axis, ignoring dim",
        variant(variant(_SOFTMAX, "x.amax(dim=dim", "x.amax(dim=-1"), "e.sum(dim=dim", "e.sum(dim=-1")),
    Bug("softmax", "normalises over the whole tensor",
        variant(variant(_SOFTMAX, _ROW_MAX, "x.max()"), "e.sum(dim=dim, keepdim=True)", "e.sum()")),
    Bug("softmax", "subtracts the global maximum (other rows underflow to 0/0)", variant(_SOFTMAX, _ROW_MAX, "x.max()")),
    Bug("softmax", "subtracts the maximum in place (x -= ...), changing the caller's scores",
        variant(_SOFTMAX, f"    e = torch.exp(x - {_ROW_MAX})", f"    x -= {_ROW_MAX}\n    e = torch.exp(x)")),
]

# ----------------------------------------------------------------------------- masked_softmax
_MASKED = '''
def masked_softmax(scores, mask=None):
    if mask is None:
        return softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)
'''
# the guard that keeps a fully masked row at zeros instead of 0/0
_STABLE = '''    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)
'''
_MASKED_BUGS = [
    Bug("masked_softmax", "detaches the weights (no gradient reaches the scores)",
        variant(_MASKED, "return e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)",
                "return (e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)).detach()")),
    Bug("masked_softmax", "mask inverted (True = hidden)", variant(_MASKED, "masked_fill(~mask,", "masked_fill(mask,")),
    Bug("masked_softmax", "mask applied after the softmax (rows no longer sum to 1)",
        variant(variant(_MASKED, '    scores = scores.masked_fill(~mask, float("-inf"))\n', ""),
                ".clamp_min(1e-30)", ".clamp_min(1e-30) * mask")),
    Bug("masked_softmax", "-inf fill then softmax: NaN on fully masked rows",
        variant(_MASKED, _STABLE, "    return softmax(scores, dim=-1)\n")),
    Bug("masked_softmax", "fills with -1e9: fully masked rows become uniform", variant(_MASKED, 'float("-inf")', "-1e9")),
    Bug("masked_softmax", "multiplies the scores by the mask",
        variant(_MASKED, 'scores = scores.masked_fill(~mask, float("-inf"))', "scores = scores * mask")),
]

# ----------------------------------------------------------------------------- attention_lookup
_LOOKUP = '''
def attention_lookup(query, keys, values):
    weights = softmax(keys @ query, dim=-1)
    return weights @ values, weights
'''
_LOOKUP_BUGS = [
    Bug("attention_lookup", "raw dot products as weights (no softmax)",
        variant(_LOOKUP, "softmax(keys @ query, dim=-1)", "keys @ query")),
    Bug("attention_lookup", "scaled by sqrt(d_k) (not asked for here)",
        variant(_LOOKUP, "keys @ query,", "keys @ query / math.sqrt(query.shape[-1]),")),
    Bug("attention_lookup", "averages the weighted values instead of summing them",
        variant(_LOOKUP, "return weights @ values,",
                "return (weights.reshape(-1, *[1] * (values.dim() - 1)) * values).mean(0),")),
    Bug("attention_lookup", "a Python float, not a 0-d tensor, for one number per entry",
        variant(_LOOKUP, "return weights @ values, weights",
                "output = weights @ values\n    return (output.item() if output.dim() == 0 else output), weights")),
    Bug("attention_lookup", "returns (weights, output)",
        variant(_LOOKUP, "return weights @ values, weights", "return weights, weights @ values")),
]

# ----------------------------------------------------------------------------- scaled_dot_product_attention
_SDPA = '''
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = masked_softmax(scores, mask)
    return weights @ v, weights
'''
_SDPA_BUGS = [
    Bug("scaled_dot_product_attention", "no scaling", variant(_SDPA, " / math.sqrt(q.shape[-1])", "")),
    Bug("scaled_dot_product_attention", "scaled by d_k instead of its square root",
        variant(_SDPA, "math.sqrt(q.shape[-1])", "q.shape[-1]")),
    Bug("scaled_dot_product_attention", "scaled by sqrt(d_v)", variant(_SDPA, "math.sqrt(q.shape[-1])", "math.sqrt(v.shape[-1])")),
    Bug("scaled_dot_product_attention", "softmax over the queries axis",
        variant(_SDPA, "weights = masked_softmax(scores, mask)",
                "weights = masked_softmax(scores.transpose(-2, -1), None if mask is None else mask.transpose(-2, -1))"
                ".transpose(-2, -1)")),
    Bug("scaled_dot_product_attention", "mask applied after the softmax",
        variant(_SDPA, "    weights = masked_softmax(scores, mask)\n",
                "    weights = softmax(scores, dim=-1)\n    if mask is not None:\n        weights = weights * mask\n")),
    Bug("scaled_dot_product_attention", "returns the weights detached (for plotting)",
        variant(_SDPA, "return weights @ v, weights", "return weights @ v, weights.detach()")),
    Bug("scaled_dot_product_attention", "mask inverted",
        variant(_SDPA, "masked_softmax(scores, mask)", "masked_softmax(scores, None if mask is None else ~mask)")),
    Bug("scaled_dot_product_attention", "own -inf fill: NaN for a query that sees nothing",
        variant(_SDPA, "    weights = masked_softmax(scores, mask)\n",
                '    if mask is not None:\n        scores = scores.masked_fill(~mask, float("-inf"))\n'
                "    weights = softmax(scores, dim=-1)\n")),
]

# ----------------------------------------------------------------------------- AdditiveAttention
_ADDITIVE = '''
class AdditiveAttention(nn.Module):
    def __init__(self, d_query, d_key, d_attn):
        super().__init__()
        self.W_q = nn.Linear(d_query, d_attn, bias=False)
        self.W_k = nn.Linear(d_key, d_attn, bias=False)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def project_keys(self, keys):
        return self.W_k(keys)

    def attend(self, query, projected_keys, values, mask=None):
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))
        scores = self.v(hidden).squeeze(-1)
        weights = masked_softmax(scores, mask)
        return weights @ values, weights

    def forward(self, query, keys, values, mask=None):
        return self.attend(query, self.project_keys(keys), values, mask)
'''
_ADDITIVE_BUGS = [
    Bug("AdditiveAttention", "no tanh",
        variant(_ADDITIVE, "hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))",
                "hidden = self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1)")),
    Bug("AdditiveAttention", "softmax over the queries",
        variant(_ADDITIVE, "        weights = masked_softmax(scores, mask)\n",
                "        full = None if mask is None else mask.expand(scores.shape).transpose(1, 2)\n"
                "        weights = masked_softmax(scores.transpose(1, 2), full).transpose(1, 2)\n")),
    Bug("AdditiveAttention", "detaches context and weights (W_q, W_k and v get no gradient)",
        variant(_ADDITIVE, "return weights @ values, weights", "return (weights @ values).detach(), weights.detach()")),
    Bug("AdditiveAttention", "mask ignored", variant(_ADDITIVE, "masked_softmax(scores, mask)", "masked_softmax(scores, None)")),
    Bug("AdditiveAttention", "sums the hidden units instead of applying v",
        variant(_ADDITIVE, "scores = self.v(hidden).squeeze(-1)", "scores = hidden.sum(-1)")),
    Bug("AdditiveAttention", "factorised score v·tanh(W_q q) + v·tanh(W_k k)",
        variant(_ADDITIVE, "        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))\n"
                           "        scores = self.v(hidden).squeeze(-1)\n",
                "        scores = self.v(torch.tanh(self.W_q(query))) + self.v(torch.tanh(projected_keys)).transpose(1, 2)\n")),
    # the grader copies W_q, W_k and v into the student's module for each call and has nothing to put in
    # a parameter of the student's own: the text fixes the parameters, and the check pairs them as it does
    Bug("AdditiveAttention", "an extra learnable parameter (a score scale that starts at 1)",
        variant(variant(_ADDITIVE, "        self.v = nn.Linear(d_attn, 1, bias=False)\n",
                        "        self.v = nn.Linear(d_attn, 1, bias=False)\n"
                        "        self.scale = nn.Parameter(torch.ones(()))\n"),
                "scores = self.v(hidden).squeeze(-1)", "scores = self.scale * self.v(hidden).squeeze(-1)")),
]

# ----------------------------------------------------------------------------- Seq2SeqAttentionRNN
_MODEL = '''
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
        if src_lengths is None:
            src_lengths = (src != PAD_ID).sum(dim=1)
        emb = self.drop(self.src_embedding(src))
        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        hidden = torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], dim=-1)))
        mask = (src != PAD_ID).unsqueeze(1)
        return AttentionState(hidden, memory, self.attention.project_keys(memory), mask)

    def decode(self, tgt_in, state, return_weights=False):
        emb = self.drop(self.tgt_embedding(tgt_in))
        s = state.hidden
        context = torch.zeros(s.shape[0], state.memory.shape[-1])
        states, contexts, weights = [], [], []
        for t in range(tgt_in.shape[1]):
            context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
            context = context.squeeze(1)
            s = self.decoder(torch.cat([emb[:, t], context], dim=-1), s)
            states.append(s)
            contexts.append(context)
            weights.append(w.squeeze(1))
        states, contexts = torch.stack(states, dim=1), torch.stack(contexts, dim=1)
        features = torch.tanh(self.pre_out(torch.cat([states, contexts, emb], dim=-1)))
        logits = self.out(self.drop(features))
        new_state = state._replace(hidden=s)
        if return_weights:
            return logits, new_state, torch.stack(weights, dim=1)
        return logits, new_state

    def forward(self, src, tgt_in, src_lengths=None):
        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits
'''
_ATTEND = '''            context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
            context = context.squeeze(1)
'''
_GRU_STEP = "            s = self.decoder(torch.cat([emb[:, t], context], dim=-1), s)\n"
_MODEL_BUGS = [
    Bug("Seq2SeqAttentionRNN", "padding keys not masked",
        variant(_MODEL, "mask = (src != PAD_ID).unsqueeze(1)", "mask = torch.ones_like(src, dtype=torch.bool).unsqueeze(1)")),
    Bug("Seq2SeqAttentionRNN", "encoder not packed: the backward direction starts on padding",
        variant(_MODEL, "        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True, "
                        "enforce_sorted=False)\n"
                        "        out, h_n = self.encoder(packed)\n"
                        "        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])\n",
                "        memory, h_n = self.encoder(emb)\n")),
    Bug("Seq2SeqAttentionRNN", "s_0 from [backward; forward] instead of [forward; backward]",
        variant(_MODEL, "torch.cat([h_n[0], h_n[1]], dim=-1)", "torch.cat([h_n[1], h_n[0]], dim=-1)")),
    Bug("Seq2SeqAttentionRNN", "attends with the new state s_i instead of s_{i-1}",
        variant(_MODEL, _ATTEND + _GRU_STEP, _GRU_STEP + _ATTEND)),
    Bug("Seq2SeqAttentionRNN", "context not fed into the GRU cell",
        variant(_MODEL, "torch.cat([emb[:, t], context], dim=-1)", "torch.cat([emb[:, t], torch.zeros_like(context)], dim=-1)")),
    Bug("Seq2SeqAttentionRNN", "the state's mask (B, S), without the query axis, unsqueezed in decode",
        variant(variant(_MODEL, "mask = (src != PAD_ID).unsqueeze(1)", "mask = src != PAD_ID"),
                "state.keys, state.memory, state.mask)", "state.keys, state.memory, state.mask.unsqueeze(1))")),
    Bug("Seq2SeqAttentionRNN", "decode returns the state it was given",
        variant(_MODEL, "state._replace(hidden=s)", "state._replace(hidden=state.hidden)")),
]

# ----------------------------------------------------------------------------- dot_product_score_std
_STD = '''
def dot_product_score_std(d_k, q_std=1.0, k_std=1.0, scaled=True):
    variance = d_k * q_std**2 * k_std**2
    if scaled:
        variance = variance / d_k
    return math.sqrt(variance)
'''
_STD_BUGS = [
    Bug("dot_product_score_std", "returns the variance, not the standard deviation",
        variant(_STD, "return math.sqrt(variance)", "return variance")),
    Bug("dot_product_score_std", "divides the variance by sqrt(d_k), as if it were a standard deviation",
        variant(_STD, "variance / d_k", "variance / math.sqrt(d_k)")),
    Bug("dot_product_score_std", "standard deviations not squared in the variance",
        variant(_STD, "q_std**2 * k_std**2", "q_std * k_std")),
    Bug("dot_product_score_std", "the components' standard deviations ignored",
        variant(_STD, "d_k * q_std**2 * k_std**2", "d_k")),
    Bug("dot_product_score_std", "scaled and unscaled swapped", variant(_STD, "if scaled:", "if not scaled:")),
    Bug("dot_product_score_std", "a 0-d tensor, not a Python float",
        variant(_STD, "return math.sqrt(variance)", "return torch.tensor(variance).sqrt()")),
]

# ----------------------------------------------------------------------------- recency_window (question 2)
_WINDOW = '''
def recency_window(slope, position, coverage):
    key_terms = slope * torch.arange(position + 1, dtype=torch.float64)
    weights = torch.softmax(key_terms, dim=0)
    newest_first = weights.flip(0).cumsum(0)
    return min(int((newest_first < coverage).sum()) + 1, position + 1)
'''
_WINDOW_BUGS = [
    Bug("recency_window", "an unlimited past: the window of a query with keys all the way back",
        variant(_WINDOW, "return min(int((newest_first < coverage).sum()) + 1, position + 1)",
                "return min(math.ceil(-math.log(1 - coverage) / slope), position + 1)")),
    Bug("recency_window", "uniform weights: the key term left out", variant(_WINDOW, "slope * torch.arange", "0 * torch.arange")),
    Bug("recency_window", "counts from the oldest key", variant(_WINDOW, "weights.flip(0).cumsum(0)", "weights.cumsum(0)")),
    Bug("recency_window", "one key short: the largest window below coverage",
        variant(_WINDOW, "(newest_first < coverage).sum()) + 1", "(newest_first < coverage).sum())")),
    Bug("recency_window", "exponentials without the maximum subtracted (overflow)",
        variant(_WINDOW, "torch.softmax(key_terms, dim=0)", "torch.exp(key_terms) / torch.exp(key_terms).sum()")),
    Bug("recency_window", "a 0-d tensor, not a Python int",
        variant(_WINDOW, "return min(int((newest_first < coverage).sum()) + 1, position + 1)",
                "return torch.clamp((newest_first < coverage).sum() + 1, max=position + 1)")),
]

TEMPLATES = {"softmax": _SOFTMAX, "masked_softmax": _MASKED, "attention_lookup": _LOOKUP,
             "scaled_dot_product_attention": _SDPA, "AdditiveAttention": _ADDITIVE, "Seq2SeqAttentionRNN": _MODEL,
             "dot_product_score_std": _STD, "recency_window": _WINDOW}

BUGS = (_SOFTMAX_BUGS + _MASKED_BUGS + _LOOKUP_BUGS + _SDPA_BUGS + _ADDITIVE_BUGS + _MODEL_BUGS + _STD_BUGS
        + _WINDOW_BUGS)
