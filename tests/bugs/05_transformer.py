"""Plausible wrong implementations of notebook 05's graded classes and functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``MultiHeadAttention``, ``causal_mask``, ``padding_mask``, ``make_positional`` and the
token ids exist. ``TEMPLATES`` holds the correct code of each target; every bug is its template with
one mistake substituted in (``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant


# ----------------------------------------------------------------------------------------------- PositionwiseFeedForward
_FFN = '''
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))
'''
_FFN_BUGS = [
    Bug("PositionwiseFeedForward", "no ReLU between the two layers",
        variant(_FFN, "self.dropout(F.relu(self.linear1(x)))", "self.dropout(self.linear1(x))")),
    Bug("PositionwiseFeedForward", "ReLU on the output as well",
        variant(_FFN, "return self.linear2(self.dropout(F.relu(self.linear1(x))))",
                "return F.relu(self.linear2(self.dropout(F.relu(self.linear1(x)))))")),
    Bug("PositionwiseFeedForward", "GELU instead of the paper's ReLU", variant(_FFN, "F.relu(", "F.gelu(")),
    Bug("PositionwiseFeedForward", "hidden layer without a bias",
        variant(_FFN, "nn.Linear(d_model, d_ff)", "nn.Linear(d_model, d_ff, bias=False)")),
    Bug("PositionwiseFeedForward", "dropout rate ignored: nn.Dropout() at its default 0.5",
        variant(_FFN, "self.dropout = nn.Dropout(dropout)", "self.dropout = nn.Dropout()")),
    Bug("PositionwiseFeedForward", "an extra learnable parameter (an output gain that starts at 1)",
        variant(variant(_FFN, "        self.dropout = nn.Dropout(dropout)\n",
                        "        self.dropout = nn.Dropout(dropout)\n        self.gain = nn.Parameter(torch.ones(()))\n"),
                "return self.linear2(", "return self.gain * self.linear2(")),
]

# ----------------------------------------------------------------------------------------------- EncoderLayer
_ENC = '''
class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout(self.self_attn(h, h, h, mask)[0])
            return x + self.dropout(self.ff(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(x + self.dropout(self.ff(x)))
'''
_ENC_BUGS = [
    Bug("EncoderLayer", "always pre-LN: norm_first ignored", variant(_ENC, "if self.norm_first:", "if True:")),
    Bug("EncoderLayer", "always post-LN: norm_first ignored", variant(_ENC, "if self.norm_first:", "if False:")),
    Bug("EncoderLayer", "post-LN without the residual around attention",
        variant(_ENC, "x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)[0]))",
                "x = self.norm1(self.dropout(self.self_attn(x, x, x, mask)[0]))")),
    Bug("EncoderLayer", "pre-LN without the residual around the FFN",
        variant(_ENC, "return x + self.dropout(self.ff(self.norm2(x)))", "return self.dropout(self.ff(self.norm2(x)))")),
    Bug("EncoderLayer", "post-LN normalises the sublayer, not the sum: x + LN(S(x))",
        variant(_ENC, "x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)[0]))",
                "x = x + self.norm1(self.dropout(self.self_attn(x, x, x, mask)[0]))")),
    Bug("EncoderLayer", "padding mask not passed to attention",
        variant(_ENC, "x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)[0]))",
                "x = self.norm1(x + self.dropout(self.self_attn(x, x, x)[0]))")),
    Bug("EncoderLayer", "post-LN output zeroed at the padded positions (the contract fixes every position)",
        variant(_ENC, "return self.norm2(x + self.dropout(self.ff(x)))",
                "out = self.norm2(x + self.dropout(self.ff(x)))\n"
                "        return out if mask is None else out.masked_fill(~mask[:, 0, 0, :, None], 0.0)")),
]

# ----------------------------------------------------------------------------------------------- DecoderLayer
_DEC = '''
class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout(self.self_attn(h, h, h, tgt_mask)[0])
            h = self.norm2(x)
            x = x + self.dropout(self.cross_attn(h, memory, memory, memory_mask)[0])
            return x + self.dropout(self.ff(self.norm3(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)[0]))
        x = self.norm2(x + self.dropout(self.cross_attn(x, memory, memory, memory_mask)[0]))
        return self.norm3(x + self.dropout(self.ff(x)))
'''
_DEC_BUGS = [
    Bug("DecoderLayer", "cross-attention reads the decoder's own states as keys and values",
        variant(_DEC, "x = self.norm2(x + self.dropout(self.cross_attn(x, memory, memory, memory_mask)[0]))",
                "x = self.norm2(x + self.dropout(self.cross_attn(x, x, x, tgt_mask)[0]))")),
    Bug("DecoderLayer", "causal mask not applied in self-attention (post-LN)",
        variant(_DEC, "x = self.norm1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)[0]))",
                "x = self.norm1(x + self.dropout(self.self_attn(x, x, x)[0]))")),
    Bug("DecoderLayer", "source padding mask not applied in cross-attention (post-LN)",
        variant(_DEC, "self.cross_attn(x, memory, memory, memory_mask)", "self.cross_attn(x, memory, memory)")),
    Bug("DecoderLayer", "decoder always post-LN: norm_first ignored", variant(_DEC, "if self.norm_first:", "if False:")),
    Bug("DecoderLayer", "pre-LN without the residual around cross-attention",
        variant(_DEC, "x = x + self.dropout(self.cross_attn(h, memory, memory, memory_mask)[0])",
                "x = self.dropout(self.cross_attn(h, memory, memory, memory_mask)[0])")),
    Bug("DecoderLayer", "pre-LN feeds the un-normalised x to the FFN",
        variant(_DEC, "return x + self.dropout(self.ff(self.norm3(x)))", "return self.norm3(x + self.dropout(self.ff(x)))")),
]

# ----------------------------------------------------------------------------------------------- Transformer
_MODEL = '''
class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.src_embed = nn.Embedding(cfg.src_vocab_size, d)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, d)
        self.positional = make_positional(cfg.positional, d, cfg.max_len, n_heads=cfg.n_heads)
        args = (d, cfg.n_heads, cfg.d_ff, cfg.dropout, cfg.norm_first)
        self.encoder_layers = nn.ModuleList([EncoderLayer(*args) for _ in range(cfg.n_encoder_layers)])
        self.decoder_layers = nn.ModuleList([DecoderLayer(*args) for _ in range(cfg.n_decoder_layers)])
        self.encoder_norm = nn.LayerNorm(d) if cfg.norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d) if cfg.norm_first else nn.Identity()
        self.out = nn.Linear(d, cfg.tgt_vocab_size, bias=False)
        if cfg.tie_output:
            self.out.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def encode(self, src):
        x = self.dropout(self.positional(self.src_embed(src) * math.sqrt(self.cfg.d_model)))
        mask = padding_mask(src)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return self.encoder_norm(x)

    def decode(self, tgt_in, memory, src_mask):
        y = self.dropout(self.positional(self.tgt_embed(tgt_in) * math.sqrt(self.cfg.d_model)))
        tgt_mask = causal_mask(tgt_in.shape[1], device=tgt_in.device)
        for layer in self.decoder_layers:
            y = layer(y, memory, tgt_mask, src_mask)
        return self.out(self.decoder_norm(y))

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), padding_mask(src))
'''
_MODEL_BUGS = [
    Bug("Transformer", "right model, but raises the caller's cfg.max_len to 512 (room for long sentences)",
        variant(_MODEL, "        self.cfg = cfg\n", "        cfg.max_len = max(cfg.max_len, 512)\n        self.cfg = cfg\n")),
    Bug("Transformer", "cfg.positional ignored: always sinusoidal positions",
        variant(_MODEL, "make_positional(cfg.positional,", "make_positional(\"sinusoidal\",")),
    Bug("Transformer", "encode zeroes memory at the padded source positions (the contract fixes every position)",
        variant(_MODEL, "        return self.encoder_norm(x)\n",
                "        return self.encoder_norm(x).masked_fill(~mask[:, 0, 0, :, None], 0.0)\n")),
    Bug("Transformer", "embeddings not scaled by sqrt(d_model)",
        variant(_MODEL, "self.src_embed(src) * math.sqrt(self.cfg.d_model)", "self.src_embed(src)")),
    Bug("Transformer", "scaled after the positions are added",
        variant(_MODEL, "y = self.dropout(self.positional(self.tgt_embed(tgt_in) * math.sqrt(self.cfg.d_model)))",
                "y = self.dropout(self.positional(self.tgt_embed(tgt_in)) * math.sqrt(self.cfg.d_model))")),
    Bug("Transformer", "output layer never tied to the target embedding",
        variant(_MODEL, "if cfg.tie_output:", "if False:")),
    Bug("Transformer", "no causal mask in the decoder",
        variant(_MODEL, "y = layer(y, memory, tgt_mask, src_mask)", "y = layer(y, memory, None, src_mask)")),
    Bug("Transformer", "encoder self-attention ignores source padding",
        variant(_MODEL, "x = layer(x, mask)", "x = layer(x, None)")),
    Bug("Transformer", "no final LayerNorm in the pre-LN decoder stack",
        variant(_MODEL, "self.decoder_norm = nn.LayerNorm(d) if cfg.norm_first else nn.Identity()",
                "self.decoder_norm = nn.Identity()")),
    Bug("Transformer", "cross-attention sees the padded source positions",
        variant(_MODEL, "return self.decode(tgt_in, self.encode(src), padding_mask(src))",
                "return self.decode(tgt_in, self.encode(src), None)")),
]

# ----------------------------------------------------------------------------------------------- transformer_param_count
_COUNT = '''
def transformer_param_count(cfg):
    d, d_ff = cfg.d_model, cfg.d_ff
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * d_ff + d_ff + d
    norm = 2 * d
    total = cfg.n_encoder_layers * (attention + ffn + 2 * norm)
    total += cfg.n_decoder_layers * (2 * attention + ffn + 3 * norm)
    total += (cfg.src_vocab_size + cfg.tgt_vocab_size) * d
    if cfg.positional == "learned":
        total += cfg.max_len * d
    if cfg.norm_first:
        total += 2 * norm
    if not cfg.tie_output:
        total += cfg.tgt_vocab_size * d
    return total
'''
_COUNT_BUGS = [
    Bug("transformer_param_count", "biases forgotten",
        variant(variant(_COUNT, "attention = 4 * d * d + 4 * d", "attention = 4 * d * d"),
                "ffn = 2 * d * d_ff + d_ff + d", "ffn = 2 * d * d_ff")),
    Bug("transformer_param_count", "decoder layers without cross-attention",
        variant(_COUNT, "(2 * attention + ffn + 3 * norm)", "(attention + ffn + 2 * norm)")),
    Bug("transformer_param_count", "tied output layer counted twice", variant(_COUNT, "if not cfg.tie_output:", "if True:")),
    Bug("transformer_param_count", "final LayerNorms counted for post-LN too", variant(_COUNT, "if cfg.norm_first:", "if True:")),
    Bug("transformer_param_count", "learned position table forgotten",
        variant(_COUNT, 'if cfg.positional == "learned":', "if False:")),
    Bug("transformer_param_count", "LayerNorm counted as d (no beta)", variant(_COUNT, "norm = 2 * d", "norm = d")),
    Bug("transformer_param_count", "right count, but writes max_len = 0 into the caller's cfg when the table is not learned",
        variant(_COUNT, "    if cfg.positional == \"learned\":\n        total += cfg.max_len * d\n",
                "    if cfg.positional != \"learned\":\n        cfg.max_len = 0\n    total += cfg.max_len * d\n")),
    Bug("transformer_param_count", "a 0-d tensor, not a Python int",
        variant(_COUNT, "    return total", "    return torch.tensor(total)")),
]

# ----------------------------------------------------------------------------------------------- label_smoothed_cross_entropy
_LS = '''
def label_smoothed_cross_entropy(logits, target, eps, pad_id=0):
    logp = logits.log_softmax(dim=-1)
    nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -logp.mean(dim=-1)
    loss = (1 - eps) * nll + eps * uniform
    keep = target != pad_id
    return loss[keep].mean()
'''
_LS_BUGS = [
    Bug("label_smoothed_cross_entropy", "padding counted in the mean", variant(_LS, "return loss[keep].mean()", "return loss.mean()")),
    Bug("label_smoothed_cross_entropy", "pad_id ignored: padding taken to be token 0",
        variant(_LS, "keep = target != pad_id", "keep = target != 0")),
    Bug("label_smoothed_cross_entropy", "the loss rebuilt from .item(): no gradient reaches the logits",
        variant(_LS, "return loss[keep].mean()", "return torch.tensor(loss[keep].mean().item())")),
    Bug("label_smoothed_cross_entropy", "eps spread over the V-1 wrong classes only",
        variant(_LS, "uniform = -logp.mean(dim=-1)",
                "uniform = -(logp.sum(-1) - logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)) / (logp.shape[-1] - 1)")),
    Bug("label_smoothed_cross_entropy", "sum over tokens instead of the mean", variant(_LS, "return loss[keep].mean()", "return loss[keep].sum()")),
    Bug("label_smoothed_cross_entropy", "true class keeps weight 1 instead of 1 - eps",
        variant(_LS, "loss = (1 - eps) * nll + eps * uniform", "loss = nll + eps * uniform")),
    Bug("label_smoothed_cross_entropy", "smoothing term uses probabilities, not log-probabilities",
        variant(_LS, "uniform = -logp.mean(dim=-1)", "uniform = -logp.exp().mean(dim=-1)")),
    Bug("label_smoothed_cross_entropy", "shifts the caller's logits in place (logits -= max)",
        variant(_LS, "    logp = logits.log_softmax(dim=-1)\n",
                "    logits -= logits.amax(dim=-1, keepdim=True)\n    logp = logits.log_softmax(dim=-1)\n")),
]

# ----------------------------------------------------------------------------------------------- noam_lr
_NOAM = '''
def noam_lr(step, d_model, warmup, factor=1.0):
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
'''
_NOAM_BUGS = [
    Bug("noam_lr", "warm-up term missing", variant(_NOAM, "min(step ** -0.5, step * warmup ** -1.5)", "step ** -0.5")),
    Bug("noam_lr", "d_model^-0.5 factor missing", variant(_NOAM, "factor * d_model ** -0.5 * ", "factor * ")),
    Bug("noam_lr", "warmup^-0.5 instead of warmup^-1.5", variant(_NOAM, "warmup ** -1.5", "warmup ** -0.5")),
    Bug("noam_lr", "max instead of min", variant(_NOAM, "min(", "max(")),
    Bug("noam_lr", "factor ignored", variant(_NOAM, "return factor * ", "return ")),
    Bug("noam_lr", "a 0-d tensor, not a Python float",
        variant(_NOAM, "return factor * d_model", "return torch.tensor(factor) * d_model")),
]

# ----------------------------------------------------------------------------------------------- greedy_decode
_GREEDY = '''
def greedy_decode(model, src, max_len):
    model.eval()
    with torch.no_grad():
        memory, src_mask = model.encode(src), padding_mask(src)
        ys = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            nxt = model.decode(ys, memory, src_mask)[:, -1].argmax(dim=-1)
            nxt = nxt.masked_fill(finished, PAD_ID)
            ys = torch.cat([ys, nxt.unsqueeze(1)], dim=1)
            finished = finished | (nxt == EOS_ID)
            if finished.all():
                break
    return ys[:, 1:]
'''
_GREEDY_BUGS = [
    Bug("greedy_decode", "never stops at <eos>: always runs max_len steps",
        variant(_GREEDY, "            if finished.all():\n                break\n", "")),
    Bug("greedy_decode", "no padding after <eos>", variant(_GREEDY, "            nxt = nxt.masked_fill(finished, PAD_ID)\n", "")),
    Bug("greedy_decode", "returns the <bos> too", variant(_GREEDY, "return ys[:, 1:]", "return ys")),
    Bug("greedy_decode", "feeds only the last token, without a cache",
        variant(_GREEDY, "model.decode(ys, memory, src_mask)", "model.decode(ys[:, -1:], memory, src_mask)")),
    Bug("greedy_decode", "argmax of the first position instead of the last", variant(_GREEDY, "[:, -1].argmax", "[:, 0].argmax")),
    Bug("greedy_decode", "stops when the first row finishes", variant(_GREEDY, "if finished.all():", "if finished.any():")),
]

# ----------------------------------------------------------------------------------------------- ffn_share (question 1)
_SHARE = '''
def ffn_share(d_model, d_ff, layer):
    d = d_model
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * d_ff + d_ff + d
    norm = 2 * d
    if layer == "encoder":
        total = attention + ffn + 2 * norm
    else:
        total = 2 * attention + ffn + 3 * norm
    return ffn / total
'''
_SHARE_BUGS = [
    Bug("ffn_share", "decoder without its cross-attention",
        variant(_SHARE, "total = 2 * attention + ffn + 3 * norm", "total = attention + ffn + 3 * norm")),
    Bug("ffn_share", "LayerNorms left out", variant(_SHARE, "norm = 2 * d", "norm = 0")),
    Bug("ffn_share", "FFN biases left out", variant(_SHARE, "ffn = 2 * d * d_ff + d_ff + d", "ffn = 2 * d * d_ff")),
    Bug("ffn_share", "FFN counted as one d_model x d_ff matrix", variant(_SHARE, "ffn = 2 * d * d_ff + d_ff + d", "ffn = d * d_ff + d_ff + d")),
    Bug("ffn_share", "attention biases left out", variant(_SHARE, "attention = 4 * d * d + 4 * d", "attention = 4 * d * d")),
    Bug("ffn_share", "a LayerNorm of the layer counted as d parameters (gamma only)", variant(_SHARE, "norm = 2 * d", "norm = d")),
]

# ----------------------------------------------------------------------------------------------- positions_processed (question 2)
_POSITIONS = '''
def positions_processed(length, use_cache):
    if use_cache:
        return length
    return length * (length + 1) // 2
'''
_POSITIONS_BUGS = [
    Bug("positions_processed", "length squared without the cache", variant(_POSITIONS, "length * (length + 1) // 2", "length * length")),
    Bug("positions_processed", "the prefix without <bos>: length(length - 1)/2",
        variant(_POSITIONS, "length * (length + 1) // 2", "length * (length - 1) // 2")),
    Bug("positions_processed", "use_cache ignored: always re-runs the prefix", variant(_POSITIONS, "if use_cache:", "if False:")),
    Bug("positions_processed", "with the cache <bos> counted on top", variant(_POSITIONS, "return length\n", "return length + 1\n")),
]

# ----------------------------------------------------------------------------------------------- kv_cache_bytes_per_token (question 3)
_KV_BYTES = '''
def kv_cache_bytes_per_token(n_layers, d_model, n_heads, n_kv_heads, bytes_per_number=2):
    d_head = d_model // n_heads
    per_layer = 2 * n_kv_heads * d_head
    return n_layers * per_layer * bytes_per_number
'''
_KV_BYTES_BUGS = [
    Bug("kv_cache_bytes_per_token", "keys only: the values forgotten",
        variant(_KV_BYTES, "per_layer = 2 * n_kv_heads * d_head", "per_layer = n_kv_heads * d_head")),
    Bug("kv_cache_bytes_per_token", "grouped-query attention ignored: n_heads key/value heads",
        variant(_KV_BYTES, "2 * n_kv_heads * d_head", "2 * n_heads * d_head")),
    Bug("kv_cache_bytes_per_token", "head width d_model / n_kv_heads: the full width per layer",
        variant(_KV_BYTES, "d_head = d_model // n_heads", "d_head = d_model // n_kv_heads")),
    Bug("kv_cache_bytes_per_token", "one layer's cache", variant(_KV_BYTES, "return n_layers * per_layer", "return per_layer")),
    Bug("kv_cache_bytes_per_token", "bits instead of bytes",
        variant(_KV_BYTES, "* bytes_per_number\n", "* bytes_per_number * 8\n")),
    Bug("kv_cache_bytes_per_token", "a float: d_model / n_heads",
        variant(_KV_BYTES, "d_head = d_model // n_heads", "d_head = d_model / n_heads")),
]

TEMPLATES = {"PositionwiseFeedForward": _FFN, "EncoderLayer": _ENC, "DecoderLayer": _DEC, "Transformer": _MODEL,
             "transformer_param_count": _COUNT, "label_smoothed_cross_entropy": _LS, "noam_lr": _NOAM,
             "greedy_decode": _GREEDY,
             "ffn_share": _SHARE, "positions_processed": _POSITIONS, "kv_cache_bytes_per_token": _KV_BYTES}

BUGS = _FFN_BUGS + _ENC_BUGS + _DEC_BUGS + _MODEL_BUGS + _COUNT_BUGS + _LS_BUGS + _NOAM_BUGS + _GREEDY_BUGS + _SHARE_BUGS + _POSITIONS_BUGS + _KV_BYTES_BUGS
