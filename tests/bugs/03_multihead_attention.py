"""Plausible wrong implementations of notebook 03's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``masked_softmax``, ``PAD_ID`` and the (correct) ``split_heads`` and ``merge_heads`` exist.
"""
from tests.bugs import Bug

_CAUSAL = '''
def causal_mask(T):
    return {expr}
'''

_PADDING = '''
def padding_mask(tokens, pad_id=PAD_ID):
    return {expr}
'''

_SPLIT = '''
def split_heads(x, h):
    B, T, d_model = x.shape
    return {expr}
'''

_MERGE = '''
def merge_heads(x):
    B, h, T, d_head = x.shape
    return {expr}
'''

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
        k = split_heads({key_proj}(key), h)
        v = split_heads(self.v_proj(value), h)
        scores = q @ k.transpose(-2, -1) / math.sqrt({scale})
        weights = masked_softmax(scores, mask)
        out = F.dropout(weights, self.dropout, self.training) @ v
        output = {output}
        return output, weights.mean(dim={average_dim}) if average_attn_weights else weights

    def load_from_torch(self, mha):
        with torch.no_grad():
            for proj, w in zip({order}, mha.in_proj_weight.chunk(3)):
                proj.weight.copy_({weight})
            self.out_proj.weight.copy_(mha.out_proj.weight)
            if mha.in_proj_bias is not None{skip_bias}:
                for proj, b in zip({order}, mha.in_proj_bias.chunk(3)):
                    proj.bias.copy_(b)
                self.out_proj.bias.copy_(mha.out_proj.bias)
        return self
'''


def _mha(key_proj="self.k_proj", scale="q.shape[-1]", output="self.out_proj(merge_heads(out))", average_dim=1,
         order="(self.q_proj, self.k_proj, self.v_proj)", weight="w", skip_bias="") -> str:
    return _MHA.format(key_proj=key_proj, scale=scale, output=output, average_dim=average_dim, order=order,
                       weight=weight, skip_bias=skip_bias)


_FLOPS = '''
def attention_flops(T, d_model):
    return {attention}


def ffn_flops(T, d_model, d_ff):
    return {ffn}
'''
_ATTENTION_OK, _FFN_OK = "8 * T * d_model**2 + 4 * T**2 * d_model", "4 * T * d_model * d_ff"

_PARAMS = '''
def block_param_counts(d_model, d_ff):
    counts = {{"attention": {attention}, "ffn": {ffn}, "norms": {norms}}}
    counts["total"] = {total}
    return counts
'''


def _params(attention="4 * d_model * d_model + 4 * d_model", ffn="2 * d_model * d_ff + d_ff + d_model",
            norms="2 * 2 * d_model", total="sum(counts.values())") -> str:
    return _PARAMS.format(attention=attention, ffn=ffn, norms=norms, total=total)


BUGS = [
    # causal_mask
    Bug("causal_mask", "inverted: True above the diagonal", _CAUSAL.format(expr="~torch.ones(T, T, dtype=torch.bool).tril()")),
    Bug("causal_mask", "strict: a position may not see itself", _CAUSAL.format(expr="torch.ones(T, T, dtype=torch.bool).tril(-1)")),
    Bug("causal_mask", "upper triangle: attends to the future", _CAUSAL.format(expr="torch.ones(T, T, dtype=torch.bool).triu()")),
    Bug("causal_mask", "the additive 0/-inf float mask instead of a bool one", _CAUSAL.format(
        expr='torch.zeros(T, T).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))')),
    # padding_mask
    Bug("padding_mask", "inverted: True at the padding", _PADDING.format(expr="(tokens == pad_id)[:, None, None, :]")),
    Bug("padding_mask", "shape (B, T) without the broadcast axes", _PADDING.format(expr="tokens != pad_id")),
    Bug("padding_mask", "masks queries (B, 1, T, 1) instead of keys", _PADDING.format(expr="(tokens != pad_id)[:, None, :, None]")),
    Bug("padding_mask", "ignores pad_id and always uses 0", _PADDING.format(expr="(tokens != 0)[:, None, None, :]")),
    # split_heads
    Bug("split_heads", "view without transpose", _SPLIT.format(expr="x.view(B, h, T, d_model // h)")),
    Bug("split_heads", "interleaved heads (d_head-major view)", _SPLIT.format(
        expr="x.view(B, T, d_model // h, h).permute(0, 3, 1, 2)")),
    Bug("split_heads", "transpose of the whole (T, d_model) block, then reshape", _SPLIT.format(
        expr="x.transpose(1, 2).reshape(B, h, T, d_model // h)")),
    # merge_heads
    Bug("merge_heads", "reshape without transpose", _MERGE.format(expr="x.reshape(B, T, h * d_head)")),
    Bug("merge_heads", "heads merged in the wrong order (interleaved)", _MERGE.format(
        expr="x.permute(0, 2, 3, 1).reshape(B, T, h * d_head)")),
    Bug("merge_heads", "view on the transposed (non-contiguous) tensor", _MERGE.format(
        expr="x.transpose(1, 2).view(B, T, h * d_head)")),
    # MultiHeadAttention
    Bug("MultiHeadAttention", "no output projection", _mha(output="merge_heads(out)")),
    Bug("MultiHeadAttention", "scaled by sqrt(d_model) instead of sqrt(d_head)", _mha(scale="self.d_model")),
    Bug("MultiHeadAttention", "keys projected with q_proj", _mha(key_proj="self.q_proj")),
    Bug("MultiHeadAttention", "heads merged without transpose", _mha(output="self.out_proj(out.reshape(out.shape[0], -1, self.d_model))")),
    Bug("MultiHeadAttention", "weights averaged over the batch, not the heads", _mha(average_dim=0)),
    Bug("MultiHeadAttention", "load_from_torch: query and key blocks swapped",
        _mha(order="(self.k_proj, self.q_proj, self.v_proj)")),
    Bug("MultiHeadAttention", "load_from_torch: weights transposed", _mha(weight="w.T")),
    Bug("MultiHeadAttention", "load_from_torch: biases not copied", _mha(skip_bias=" and False")),
    # attention_flops
    Bug("attention_flops", "one FLOP per multiply-add in attention", _FLOPS.format(
        attention="4 * T * d_model**2 + 2 * T**2 * d_model", ffn=_FFN_OK)),
    Bug("attention_flops", "only the T² part, no projections", _FLOPS.format(attention="4 * T**2 * d_model", ffn=_FFN_OK)),
    Bug("attention_flops", "forgets the output projection", _FLOPS.format(
        attention="6 * T * d_model**2 + 4 * T**2 * d_model", ffn=_FFN_OK)),
    Bug("attention_flops", "counts the scores but not the weighted sum", _FLOPS.format(
        attention="8 * T * d_model**2 + 2 * T**2 * d_model", ffn=_FFN_OK)),
    # ffn_flops
    Bug("ffn_flops", "one FLOP per multiply-add in the FFN", _FLOPS.format(attention=_ATTENTION_OK, ffn="2 * T * d_model * d_ff")),
    Bug("ffn_flops", "assumes d_ff = 4·d_model", _FLOPS.format(attention=_ATTENTION_OK, ffn="16 * T * d_model**2")),
    Bug("ffn_flops", "d_model² instead of d_model·d_ff", _FLOPS.format(attention=_ATTENTION_OK, ffn="4 * T * d_model**2")),
    # block_param_counts
    Bug("block_param_counts", "no biases", _params(attention="4 * d_model * d_model", ffn="2 * d_model * d_ff")),
    Bug("block_param_counts", "three projections, no W_o", _params(attention="3 * d_model * d_model + 3 * d_model")),
    Bug("block_param_counts", "layer norms without their biases", _params(norms="2 * d_model")),
    Bug("block_param_counts", "total leaves out the norms", _params(total='counts["attention"] + counts["ffn"]')),
]
