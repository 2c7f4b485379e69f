"""Plausible wrong implementations of notebook 03's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``masked_softmax``, ``PAD_ID`` and the (correct) ``split_heads`` and ``merge_heads`` exist.
``TEMPLATES`` holds the correct code of each target; every bug is its template with one mistake
substituted in (``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant

# ----------------------------------------------------------------------------- causal_mask
_CAUSAL = '''
def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()
'''
_CAUSAL_BUGS = [
    Bug("causal_mask", "inverted: True above the diagonal", variant(_CAUSAL, "return torch.ones(", "return ~torch.ones(")),
    Bug("causal_mask", "strict: a position may not see itself", variant(_CAUSAL, ".tril()", ".tril(-1)")),
    Bug("causal_mask", "upper triangle: attends to the future", variant(_CAUSAL, ".tril()", ".triu()")),
    Bug("causal_mask", "the additive 0/-inf float mask instead of a bool one",
        variant(_CAUSAL, "return torch.ones(T, T, dtype=torch.bool).tril()",
                'return torch.zeros(T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))')),
]

# ----------------------------------------------------------------------------- padding_mask
_PADDING = '''
def padding_mask(tokens, pad_id=PAD_ID):
    return (tokens != pad_id)[:, None, None, :]
'''
_PADDING_BUGS = [
    Bug("padding_mask", "inverted: True at the padding", variant(_PADDING, "tokens != pad_id", "tokens == pad_id")),
    Bug("padding_mask", "shape (B, T) without the broadcast axes",
        variant(_PADDING, "(tokens != pad_id)[:, None, None, :]", "tokens != pad_id")),
    Bug("padding_mask", "masks queries (B, 1, T, 1) instead of keys", variant(_PADDING, "[:, None, None, :]", "[:, None, :, None]")),
    Bug("padding_mask", "ignores pad_id and always uses 0", variant(_PADDING, "tokens != pad_id", "tokens != 0")),
]

# ----------------------------------------------------------------------------- split_heads
_SPLIT = '''
def split_heads(x, h):
    B, T, d_model = x.shape
    return x.view(B, T, h, d_model // h).transpose(1, 2)
'''
_SPLIT_BUGS = [
    Bug("split_heads", "view without transpose",
        variant(_SPLIT, "x.view(B, T, h, d_model // h).transpose(1, 2)", "x.view(B, h, T, d_model // h)")),
    Bug("split_heads", "interleaved heads (d_head-major view)",
        variant(_SPLIT, "x.view(B, T, h, d_model // h).transpose(1, 2)", "x.view(B, T, d_model // h, h).permute(0, 3, 1, 2)")),
    Bug("split_heads", "transpose of the whole (T, d_model) block, then reshape",
        variant(_SPLIT, "x.view(B, T, h, d_model // h).transpose(1, 2)", "x.transpose(1, 2).reshape(B, h, T, d_model // h)")),
]

# ----------------------------------------------------------------------------- merge_heads
_MERGE = '''
def merge_heads(x):
    B, h, T, d_head = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_head)
'''
_MERGE_BUGS = [
    Bug("merge_heads", "reshape without transpose", variant(_MERGE, "x.transpose(1, 2).reshape(", "x.reshape(")),
    Bug("merge_heads", "heads merged in the wrong order (interleaved)", variant(_MERGE, ".transpose(1, 2)", ".permute(0, 2, 3, 1)")),
    Bug("merge_heads", "view on the transposed (non-contiguous) tensor", variant(_MERGE, ".reshape(", ".view(")),
]

# ----------------------------------------------------------------------------- MultiHeadAttention
_MHA = '''
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0, bias=True):
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None, average_attn_weights=True):
        h = self.n_heads
        q = split_heads(self.q_proj(query), h)
        k = split_heads(self.k_proj(key), h)
        v = split_heads(self.v_proj(value), h)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = masked_softmax(scores, mask)
        out = F.dropout(weights, self.dropout, self.training) @ v
        output = self.out_proj(merge_heads(out))
        return output, weights.mean(dim=1) if average_attn_weights else weights

    def load_from_torch(self, mha):
        with torch.no_grad():
            for proj, w in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_weight.chunk(3)):
                proj.weight.copy_(w)
            self.out_proj.weight.copy_(mha.out_proj.weight)
            if mha.in_proj_bias is not None:
                for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), mha.in_proj_bias.chunk(3)):
                    proj.bias.copy_(b)
                self.out_proj.bias.copy_(mha.out_proj.bias)
        return self
'''
_QKV, _KQV = "(self.q_proj, self.k_proj, self.v_proj)", "(self.k_proj, self.q_proj, self.v_proj)"
# the projections under names of the student's own (free), in the order given: correct code
_RENAMED = _MHA
for _given, _own in (("q_proj", "w_q"), ("k_proj", "w_k"), ("v_proj", "w_v"), ("out_proj", "w_o")):
    _RENAMED = _RENAMED.replace(f"self.{_given}", f"self.{_own}")
_RENAMED_CREATION = "".join(f"        self.{name} = nn.Linear(d_model, d_model, bias=bias)\n"
                            for name in ("w_q", "w_k", "w_v", "w_o"))
_MHA_BUGS = [
    Bug("MultiHeadAttention", "no output projection", variant(_MHA, "self.out_proj(merge_heads(out))", "merge_heads(out)")),
    Bug("MultiHeadAttention", "scaled by sqrt(d_model) instead of sqrt(d_head)",
        variant(_MHA, "math.sqrt(q.shape[-1])", "math.sqrt(self.d_model)")),
    Bug("MultiHeadAttention", "keys projected with q_proj", variant(_MHA, "self.k_proj(key)", "self.q_proj(key)")),
    Bug("MultiHeadAttention", "heads merged without transpose",
        variant(_MHA, "self.out_proj(merge_heads(out))", "self.out_proj(out.reshape(out.shape[0], -1, self.d_model))")),
    Bug("MultiHeadAttention", "weights averaged over the batch, not the heads",
        variant(_MHA, "weights.mean(dim=1)", "weights.mean(dim=0)")),
    Bug("MultiHeadAttention", "load_from_torch: query and key blocks swapped",
        variant(variant(_MHA, f"{_QKV}, mha.in_proj_weight", f"{_KQV}, mha.in_proj_weight"),
                f"{_QKV}, mha.in_proj_bias", f"{_KQV}, mha.in_proj_bias")),
    Bug("MultiHeadAttention", "load_from_torch: weights transposed", variant(_MHA, "proj.weight.copy_(w)", "proj.weight.copy_(w.T)")),
    Bug("MultiHeadAttention", "load_from_torch: biases not copied",
        variant(_MHA, "if mha.in_proj_bias is not None:", "if mha.in_proj_bias is not None and False:")),
    # a case bias=False, which the text names, only the hidden checks had: only the grade caught it
    Bug("MultiHeadAttention", "load_from_torch: copies biases that bias=False does not have",
        variant(_MHA, "if mha.in_proj_bias is not None:", "if True:")),
    # renamed and created output first: the grader pairs renamed parameters by their order of creation,
    # so it would copy the queries' weights into w_o; the text fixes that order, the check pairs as it
    Bug("MultiHeadAttention", "projections renamed and created in another order (output first)",
        variant(_RENAMED, _RENAMED_CREATION,
                "".join(f"        self.{name} = nn.Linear(d_model, d_model, bias=bias)\n"
                        for name in ("w_o", "w_q", "w_k", "w_v")))),
    Bug("MultiHeadAttention", "an extra learnable parameter (a temperature that starts at 1)",
        variant(variant(_MHA, "        self.out_proj = nn.Linear(d_model, d_model, bias=bias)\n",
                        "        self.out_proj = nn.Linear(d_model, d_model, bias=bias)\n"
                        "        self.temperature = nn.Parameter(torch.ones(()))\n"),
                "/ math.sqrt(q.shape[-1])", "/ (math.sqrt(q.shape[-1]) * self.temperature)")),
]

# ----------------------------------------------------------------------------- attention_flops
_ATTENTION_FLOPS = '''
def attention_flops(T, d_model):
    return 8 * T * d_model**2 + 4 * T**2 * d_model
'''
_ATTENTION_FLOPS_BUGS = [
    Bug("attention_flops", "one FLOP per multiply-add in attention",
        variant(_ATTENTION_FLOPS, "8 * T * d_model**2 + 4 * T**2", "4 * T * d_model**2 + 2 * T**2")),
    Bug("attention_flops", "only the T² part, no projections", variant(_ATTENTION_FLOPS, "8 * T * d_model**2 + ", "")),
    Bug("attention_flops", "forgets the output projection", variant(_ATTENTION_FLOPS, "8 * T * d_model**2", "6 * T * d_model**2")),
    Bug("attention_flops", "counts the scores but not the weighted sum",
        variant(_ATTENTION_FLOPS, "4 * T**2 * d_model", "2 * T**2 * d_model")),
    Bug("attention_flops", "a float: T² written as T ** 2.0",
        variant(_ATTENTION_FLOPS, "4 * T**2 * d_model", "4 * T ** 2.0 * d_model")),
]

# ----------------------------------------------------------------------------- ffn_flops
_FFN_FLOPS = '''
def ffn_flops(T, d_model, d_ff):
    return 4 * T * d_model * d_ff
'''
_FFN_FLOPS_BUGS = [
    Bug("ffn_flops", "one FLOP per multiply-add in the FFN", variant(_FFN_FLOPS, "4 * T", "2 * T")),
    Bug("ffn_flops", "assumes d_ff = 4·d_model", variant(_FFN_FLOPS, "4 * T * d_model * d_ff", "16 * T * d_model**2")),
    Bug("ffn_flops", "d_model² instead of d_model·d_ff", variant(_FFN_FLOPS, "d_model * d_ff", "d_model**2")),
]

# ----------------------------------------------------------------------------- block_param_counts
_PARAMS = '''
def block_param_counts(d_model, d_ff):
    counts = {"attention": 4 * d_model * d_model + 4 * d_model,
              "ffn": 2 * d_model * d_ff + d_ff + d_model,
              "norms": 2 * 2 * d_model}
    counts["total"] = sum(counts.values())
    return counts
'''
_PARAMS_BUGS = [
    Bug("block_param_counts", "no biases",
        variant(variant(_PARAMS, "4 * d_model * d_model + 4 * d_model", "4 * d_model * d_model"),
                "2 * d_model * d_ff + d_ff + d_model", "2 * d_model * d_ff")),
    Bug("block_param_counts", "three projections, no W_o",
        variant(_PARAMS, "4 * d_model * d_model + 4 * d_model", "3 * d_model * d_model + 3 * d_model")),
    Bug("block_param_counts", "layer norms without their biases", variant(_PARAMS, '"norms": 2 * 2 * d_model', '"norms": 2 * d_model')),
    Bug("block_param_counts", "total leaves out the norms",
        variant(_PARAMS, "sum(counts.values())", 'counts["attention"] + counts["ffn"]')),
]

# ----------------------------------------------------------------------------- visible_positions
_VISIBLE = '''
def visible_positions(tokens, i, pad_id=PAD_ID):
    return [j for j in range(i + 1) if tokens[j] != pad_id]
'''
_VISIBLE_BUGS = [
    Bug("visible_positions", "strict causal rule: the query does not see itself",
        variant(_VISIBLE, "range(i + 1)", "range(i)")),
    Bug("visible_positions", "sees one position into the future",
        variant(_VISIBLE, "range(i + 1)", "range(min(i + 2, len(tokens)))")),
    Bug("visible_positions", "padding ignored", variant(_VISIBLE, " if tokens[j] != pad_id]", "]")),
    Bug("visible_positions", "a padded query sees nothing",
        variant(_VISIBLE, "return [j", "return [] if tokens[i] == pad_id else [j")),
    Bug("visible_positions", "compares with PAD_ID, not the pad_id given",
        variant(_VISIBLE, "tokens[j] != pad_id", "tokens[j] != PAD_ID")),
    Bug("visible_positions", "NumPy integers, not Python ints",
        variant(_VISIBLE, "return [j for j in range(i + 1) if tokens[j] != pad_id]",
                "return [j for j in np.arange(i + 1) if tokens[j] != pad_id]")),
]

# ----------------------------------------------------------------------------- causal_attention_flops (question 2)
_CAUSAL_FLOPS = '''
def causal_attention_flops(T, d_model):
    pairs = T * (T + 1) // 2
    scores = 2 * pairs * d_model
    weighted_sum = 2 * pairs * d_model
    return 8 * T * d_model * d_model + scores + weighted_sum
'''
_CAUSAL_FLOPS_BUGS = [
    Bug("causal_attention_flops", "the diagonal masked too: T(T - 1)/2 pairs",
        variant(_CAUSAL_FLOPS, "T * (T + 1) // 2", "T * (T - 1) // 2")),
    Bug("causal_attention_flops", "half of the T² pairs, T²/2", variant(_CAUSAL_FLOPS, "T * (T + 1) // 2", "T * T // 2")),
    Bug("causal_attention_flops", "the projections halved too",
        variant(_CAUSAL_FLOPS, "8 * T * d_model * d_model", "4 * T * d_model * d_model")),
    Bug("causal_attention_flops", "the weighted sum AV still over all T² pairs",
        variant(_CAUSAL_FLOPS, "weighted_sum = 2 * pairs * d_model", "weighted_sum = 2 * T * T * d_model")),
    Bug("causal_attention_flops", "one FLOP per multiply-add in the scores",
        variant(_CAUSAL_FLOPS, "scores = 2 * pairs * d_model", "scores = pairs * d_model")),
]

# ----------------------------------------------------------------------------- max_path_length
_PATH = '''
def max_path_length(kind, n, kernel=3):
    if kind == "self-attention":
        return 1
    if kind == "recurrent":
        return n
    return max(1, math.ceil((n - 1) / (kernel // 2)))
'''
_PATH_BUGS = [
    Bug("max_path_length", "recurrent: n - 1, the edge into the first state forgotten",
        variant(_PATH, "return n\n", "return n - 1\n")),
    Bug("max_path_length", "self-attention: 0", variant(_PATH, "return 1\n", "return 0\n")),
    Bug("max_path_length", "convolution: floor division instead of the ceiling",
        variant(_PATH, "math.ceil((n - 1) / (kernel // 2))", "(n - 1) // (kernel // 2)")),
    Bug("max_path_length", "convolution: n / kernel layers, rounded up",
        variant(_PATH, "math.ceil((n - 1) / (kernel // 2))", "math.ceil(n / kernel)")),
    Bug("max_path_length", "convolution: no layer at all for n = 1",
        variant(_PATH, "max(1, math.ceil((n - 1) / (kernel // 2)))", "math.ceil((n - 1) / (kernel // 2))")),
    Bug("max_path_length", "convolution: reach of kernel - 1 per layer",
        variant(_PATH, "(kernel // 2)", "(kernel - 1)")),
]

TEMPLATES = {"causal_mask": _CAUSAL, "padding_mask": _PADDING, "split_heads": _SPLIT, "merge_heads": _MERGE,
             "MultiHeadAttention": _MHA, "attention_flops": _ATTENTION_FLOPS, "ffn_flops": _FFN_FLOPS,
             "block_param_counts": _PARAMS, "visible_positions": _VISIBLE, "causal_attention_flops": _CAUSAL_FLOPS,
             "max_path_length": _PATH}

BUGS = (_CAUSAL_BUGS + _PADDING_BUGS + _SPLIT_BUGS + _MERGE_BUGS + _MHA_BUGS + _ATTENTION_FLOPS_BUGS + _FFN_FLOPS_BUGS
        + _PARAMS_BUGS + _VISIBLE_BUGS + _CAUSAL_FLOPS_BUGS + _PATH_BUGS)
