"""Plausible wrong implementations of notebook 02's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``AttentionState``, ``PAD_ID`` and the
(correct) ``softmax``, ``masked_softmax`` and ``AdditiveAttention`` exist.
"""
from tests.bugs import Bug

# ----------------------------------------------------------------------------- softmax
_SOFTMAX = '''
def softmax(x, dim=-1):
{body}
'''

# ----------------------------------------------------------------------------- masked_softmax
_MASKED = '''
def masked_softmax(scores, mask=None):
    if mask is None:
        return softmax(scores, dim=-1)
{body}
'''

# ----------------------------------------------------------------------------- attention_lookup
_LOOKUP = '''
def attention_lookup(query, keys, values):
{body}
'''

# ----------------------------------------------------------------------------- scaled_dot_product_attention
_SDPA = '''
def scaled_dot_product_attention(q, k, v, mask=None):
{body}
'''

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
{body}

    def forward(self, query, keys, values, mask=None):
        return self.attend(query, self.project_keys(keys), values, mask)
'''

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
{encoder}
        hidden = torch.tanh(self.bridge({bridge_input}))
        mask = {mask}
        return AttentionState(hidden, memory, self.attention.project_keys(memory), mask)

    def decode(self, tgt_in, state, return_weights=False):
        emb = self.drop(self.tgt_embedding(tgt_in))
        s = state.hidden
        context = torch.zeros(s.shape[0], state.memory.shape[-1])
        states, contexts, weights = [], [], []
        for t in range(tgt_in.shape[1]):
{step}
            states.append(s)
            contexts.append(context)
            weights.append(w.squeeze(1))
        states, contexts = torch.stack(states, dim=1), torch.stack(contexts, dim=1)
        features = torch.tanh(self.pre_out(torch.cat([states, contexts, emb], dim=-1)))
        logits = self.out(self.drop(features))
        new_state = state._replace(hidden={final})
        if return_weights:
            return logits, new_state, torch.stack(weights, dim=1)
        return logits, new_state

    def forward(self, src, tgt_in, src_lengths=None):
        logits, _, weights = self.decode(tgt_in, self.encode(src, src_lengths), return_weights=True)
        return logits, weights
'''
_PACKED = '''        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])'''
_STEP = '''            context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
            context = context.squeeze(1)
            s = self.decoder(torch.cat([emb[:, t], context], dim=-1), s)'''


def _model(encoder=_PACKED, bridge_input="torch.cat([h_n[0], h_n[1]], dim=-1)",
           mask="(src != PAD_ID).unsqueeze(1)", step=_STEP, final="s") -> str:
    return _MODEL.format(encoder=encoder, bridge_input=bridge_input, mask=mask, step=step, final=final)


BUGS = [
    # softmax
    Bug("softmax", "no maximum subtracted (overflows)", _SOFTMAX.format(body='''
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)''')),
    Bug("softmax", "subtracts the minimum instead of the maximum", _SOFTMAX.format(body='''
    e = torch.exp(x - x.amin(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)''')),
    Bug("softmax", "always normalises the last axis, ignoring dim", _SOFTMAX.format(body='''
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)''')),
    Bug("softmax", "normalises over the whole tensor", _SOFTMAX.format(body='''
    e = torch.exp(x - x.max())
    return e / e.sum()''')),
    Bug("softmax", "subtracts the global maximum (other rows underflow to 0/0)", _SOFTMAX.format(body='''
    e = torch.exp(x - x.max())
    return e / e.sum(dim=dim, keepdim=True)''')),
    # masked_softmax
    Bug("masked_softmax", "mask inverted (True = hidden)", _MASKED.format(body='''
    scores = scores.masked_fill(mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)
    return e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)''')),
    Bug("masked_softmax", "mask applied after the softmax (rows no longer sum to 1)", _MASKED.format(body='''
    return softmax(scores, dim=-1) * mask''')),
    Bug("masked_softmax", "-inf fill then softmax: NaN on fully masked rows", _MASKED.format(body='''
    return softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)''')),
    Bug("masked_softmax", "fills with -1e9: fully masked rows become uniform", _MASKED.format(body='''
    return softmax(scores.masked_fill(~mask, -1e9), dim=-1)''')),
    Bug("masked_softmax", "multiplies the scores by the mask", _MASKED.format(body='''
    return softmax(scores * mask, dim=-1)''')),
    # attention_lookup
    Bug("attention_lookup", "raw dot products as weights (no softmax)", _LOOKUP.format(body='''
    weights = keys @ query
    return weights @ values, weights''')),
    Bug("attention_lookup", "scaled by sqrt(d_k) (not asked for here)", _LOOKUP.format(body='''
    weights = softmax(keys @ query / math.sqrt(query.shape[-1]), dim=-1)
    return weights @ values, weights''')),
    Bug("attention_lookup", "averages the weighted values instead of summing them", _LOOKUP.format(body='''
    weights = softmax(keys @ query, dim=-1)
    return (weights.reshape(-1, *[1] * (values.dim() - 1)) * values).mean(0), weights''')),
    Bug("attention_lookup", "returns (weights, output)", _LOOKUP.format(body='''
    weights = softmax(keys @ query, dim=-1)
    return weights, weights @ values''')),
    # scaled_dot_product_attention
    Bug("scaled_dot_product_attention", "no scaling", _SDPA.format(body='''
    weights = masked_softmax(q @ k.transpose(-2, -1), mask)
    return weights @ v, weights''')),
    Bug("scaled_dot_product_attention", "scaled by d_k instead of its square root", _SDPA.format(body='''
    weights = masked_softmax(q @ k.transpose(-2, -1) / q.shape[-1], mask)
    return weights @ v, weights''')),
    Bug("scaled_dot_product_attention", "scaled by sqrt(d_v)", _SDPA.format(body='''
    weights = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1]), mask)
    return weights @ v, weights''')),
    Bug("scaled_dot_product_attention", "softmax over the queries axis", _SDPA.format(body='''
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).transpose(-2, -1)
    weights = masked_softmax(scores, None if mask is None else mask.transpose(-2, -1)).transpose(-2, -1)
    return weights @ v, weights''')),
    Bug("scaled_dot_product_attention", "mask applied after the softmax", _SDPA.format(body='''
    weights = softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights''')),
    Bug("scaled_dot_product_attention", "mask inverted", _SDPA.format(body='''
    weights = masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), None if mask is None else ~mask)
    return weights @ v, weights''')),
    Bug("scaled_dot_product_attention", "own -inf fill: NaN for a query that sees nothing", _SDPA.format(body='''
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights''')),
    # AdditiveAttention
    Bug("AdditiveAttention", "no tanh", _ADDITIVE.format(body='''
        hidden = self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1)
        weights = masked_softmax(self.v(hidden).squeeze(-1), mask)
        return weights @ values, weights''')),
    Bug("AdditiveAttention", "softmax over the queries", _ADDITIVE.format(body='''
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))
        scores = self.v(hidden).squeeze(-1)
        full = None if mask is None else mask.expand(scores.shape).transpose(1, 2)
        weights = masked_softmax(scores.transpose(1, 2), full).transpose(1, 2)
        return weights @ values, weights''')),
    Bug("AdditiveAttention", "mask ignored", _ADDITIVE.format(body='''
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))
        weights = masked_softmax(self.v(hidden).squeeze(-1), None)
        return weights @ values, weights''')),
    Bug("AdditiveAttention", "sums the hidden units instead of applying v", _ADDITIVE.format(body='''
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + projected_keys.unsqueeze(1))
        weights = masked_softmax(hidden.sum(-1), mask)
        return weights @ values, weights''')),
    Bug("AdditiveAttention", "factorised score v·tanh(W_q q) + v·tanh(W_k k)", _ADDITIVE.format(body='''
        scores = self.v(torch.tanh(self.W_q(query))) + self.v(torch.tanh(projected_keys)).transpose(1, 2)
        weights = masked_softmax(scores, mask)
        return weights @ values, weights''')),
    # Seq2SeqAttentionRNN
    Bug("Seq2SeqAttentionRNN", "padding keys not masked", _model(mask="torch.ones_like(src, dtype=torch.bool).unsqueeze(1)")),
    Bug("Seq2SeqAttentionRNN", "encoder not packed: the backward direction starts on padding", _model(encoder='''
        memory, h_n = self.encoder(emb)''')),
    Bug("Seq2SeqAttentionRNN", "s_0 from [backward; forward] instead of [forward; backward]",
        _model(bridge_input="torch.cat([h_n[1], h_n[0]], dim=-1)")),
    Bug("Seq2SeqAttentionRNN", "attends with the new state s_i instead of s_{i-1}", _model(step='''
            s = self.decoder(torch.cat([emb[:, t], context], dim=-1), s)
            context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
            context = context.squeeze(1)''')),
    Bug("Seq2SeqAttentionRNN", "context not fed into the GRU cell", _model(step='''
            context, w = self.attention.attend(s.unsqueeze(1), state.keys, state.memory, state.mask)
            context = context.squeeze(1)
            s = self.decoder(torch.cat([emb[:, t], torch.zeros_like(context)], dim=-1), s)''')),
    Bug("Seq2SeqAttentionRNN", "decode returns the state it was given", _model(final="state.hidden")),
]
