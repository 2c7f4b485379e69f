"""Correct implementations of notebook 05's graded names in other styles; each must pass every graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``np``, ``MultiHeadAttention``, ``causal_mask``, ``padding_mask``, ``make_positional``,
the token ids and the graded names exist.
"""
from tests.alternatives import Alternative

ALTERNATIVES = [
    # ------------------------------------------------------------------ PositionwiseFeedForward
    Alternative("PositionwiseFeedForward", "layers created in another order, torch.relu", '''
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.linear1 = nn.Linear(d_model, d_ff)

    def forward(self, x):
        h = torch.relu(self.linear1(x))
        return self.linear2(self.dropout(h))
'''),
    Alternative("PositionwiseFeedForward", "F.linear with the weights, clamp, extra keyword", '''
class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0, activation="relu"):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = F.linear(x, self.linear1.weight, self.linear1.bias).clamp(min=0)
        return F.linear(self.dropout(hidden), self.linear2.weight, self.linear2.bias)
'''),
    # ------------------------------------------------------------------ EncoderLayer
    Alternative("EncoderLayer", "submodules created in another order, a sublayer helper", '''
class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm2 = nn.LayerNorm(d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm_first = norm_first

    def _sublayer(self, x, norm, fn):
        if self.norm_first:
            return x + self.dropout(fn(norm(x)))
        return norm(x + self.dropout(fn(x)))

    def forward(self, x, mask=None):
        x = self._sublayer(x, self.norm1, lambda y: self.self_attn(y, y, y, mask)[0])
        return self._sublayer(x, self.norm2, self.ff)
'''),
    Alternative("EncoderLayer", "keyword mask, type hints naming nn.MultiheadAttention, extra keyword", '''
class EncoderLayer(nn.Module):
    """Unlike nn.MultiheadAttention (True = blocked), masks here mean True = may attend."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, norm_first: bool = False,
                 eps: float = 1e-5):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn: "MultiHeadAttention | nn.MultiheadAttention" = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model, eps=eps), nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: "torch.Tensor | None" = None) -> torch.Tensor:
        if not self.norm_first:
            attended, _ = self.self_attn(query=x, key=x, value=x, mask=mask)
            x = self.norm1(x + self.dropout(attended))
            return self.norm2(x + self.dropout(self.ff(x)))
        y = self.norm1(x)
        attended, _ = self.self_attn(query=y, key=y, value=y, mask=mask)
        x = x + self.dropout(attended)
        return x + self.dropout(self.ff(self.norm2(x)))
'''),
    # ------------------------------------------------------------------ DecoderLayer
    Alternative("DecoderLayer", "submodules created in another order, sublayers in a list", '''
class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm3, self.norm2, self.norm1 = (nn.LayerNorm(d_model) for _ in range(3))
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        steps = [(self.norm1, lambda y: self.self_attn(y, y, y, tgt_mask)[0]),
                 (self.norm2, lambda y: self.cross_attn(y, memory, memory, memory_mask)[0]),
                 (self.norm3, self.ff)]
        for norm, fn in steps:
            x = x + self.dropout(fn(norm(x))) if self.norm_first else norm(x + self.dropout(fn(x)))
        return x
'''),
    Alternative("DecoderLayer", "explicit residual variables, keyword masks", '''
class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ff = PositionwiseFeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        residual = x
        h = self.norm1(x) if self.norm_first else x
        h = residual + self.dropout(self.self_attn(h, h, h, mask=tgt_mask)[0])
        h = h if self.norm_first else self.norm1(h)
        residual = h
        q = self.norm2(h) if self.norm_first else h
        h = residual + self.dropout(self.cross_attn(q, memory, memory, mask=memory_mask)[0])
        h = h if self.norm_first else self.norm2(h)
        residual = h
        f = self.ff(self.norm3(h) if self.norm_first else h)
        h = residual + self.dropout(f)
        return h if self.norm_first else self.norm3(h)
'''),
    # ------------------------------------------------------------------ Transformer
    Alternative("Transformer", "tied output layer created before the embeddings, reversed creation order", '''
class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.dropout = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(d, cfg.tgt_vocab_size, bias=False)
        self.decoder_norm = nn.LayerNorm(d) if cfg.norm_first else nn.Identity()
        self.encoder_norm = nn.LayerNorm(d) if cfg.norm_first else nn.Identity()
        self.decoder_layers = nn.ModuleList()
        for _ in range(cfg.n_decoder_layers):
            self.decoder_layers.append(DecoderLayer(d, cfg.n_heads, cfg.d_ff, cfg.dropout, cfg.norm_first))
        self.encoder_layers = nn.ModuleList()
        for _ in range(cfg.n_encoder_layers):
            self.encoder_layers.append(EncoderLayer(d, cfg.n_heads, cfg.d_ff, cfg.dropout, cfg.norm_first))
        self.positional = make_positional(cfg.positional, d, cfg.max_len, n_heads=cfg.n_heads)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, d)
        self.src_embed = nn.Embedding(cfg.src_vocab_size, d)
        if cfg.tie_output:
            self.out.weight = self.tgt_embed.weight

    def encode(self, src):
        x = self.dropout(self.positional(self.src_embed(src) * self.cfg.d_model ** 0.5))
        mask = padding_mask(src)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return self.encoder_norm(x)

    def decode(self, tgt_in, memory, src_mask):
        y = self.dropout(self.positional(self.tgt_embed(tgt_in) * self.cfg.d_model ** 0.5))
        T = tgt_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt_in.device).tril()
        for layer in self.decoder_layers:
            y = layer(y, memory, causal, src_mask)
        return self.out(self.decoder_norm(y))

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), padding_mask(src))
'''),
    Alternative("Transformer", "the causal mask cached in a persistent buffer (extra buffers are free)", '''
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
        self.register_buffer("causal", torch.ones(cfg.max_len, cfg.max_len, dtype=torch.bool).tril())

    def encode(self, src):
        x = self.dropout(self.positional(self.src_embed(src) * math.sqrt(self.cfg.d_model)))
        mask = padding_mask(src)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        return self.encoder_norm(x)

    def decode(self, tgt_in, memory, src_mask):
        T = tgt_in.shape[1]
        y = self.dropout(self.positional(self.tgt_embed(tgt_in) * math.sqrt(self.cfg.d_model)))
        for layer in self.decoder_layers:
            y = layer(y, memory, self.causal[:T, :T], src_mask)
        return self.out(self.decoder_norm(y))

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, self.encode(src), padding_mask(src))
'''),
    Alternative("Transformer", "one embedding helper, keyword arguments, functools.reduce over layers", '''
import functools

class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, norm = cfg.d_model, (lambda: nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity())
        self.src_embed, self.tgt_embed = nn.Embedding(cfg.src_vocab_size, d), nn.Embedding(cfg.tgt_vocab_size, d)
        self.positional = make_positional(cfg.positional, d, cfg.max_len, n_heads=cfg.n_heads)
        kw = dict(dropout=cfg.dropout, norm_first=cfg.norm_first)
        self.encoder_layers = nn.ModuleList(EncoderLayer(d, cfg.n_heads, cfg.d_ff, **kw) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(d, cfg.n_heads, cfg.d_ff, **kw) for _ in range(cfg.n_decoder_layers))
        self.encoder_norm, self.decoder_norm = norm(), norm()
        self.out = nn.Linear(d, cfg.tgt_vocab_size, bias=False)
        if cfg.tie_output:
            self.out.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def _embed(self, table, tokens):
        return self.dropout(self.positional(table(tokens) * math.sqrt(self.cfg.d_model)))

    def encode(self, src):
        mask = padding_mask(src)
        x = functools.reduce(lambda h, layer: layer(h, mask), self.encoder_layers, self._embed(self.src_embed, src))
        return self.encoder_norm(x)

    def decode(self, tgt_in, memory, src_mask):
        tgt_mask = causal_mask(tgt_in.size(1), device=tgt_in.device)
        y = self._embed(self.tgt_embed, tgt_in)
        for layer in self.decoder_layers:
            y = layer(y, memory, tgt_mask=tgt_mask, memory_mask=src_mask)
        return self.out(self.decoder_norm(y))

    def forward(self, src, tgt_in):
        memory = self.encode(src)
        return self.decode(tgt_in, memory, padding_mask(src))
'''),
    # ------------------------------------------------------------------ transformer_param_count
    Alternative("transformer_param_count", "a table of parts summed", '''
def transformer_param_count(cfg):
    d = cfg.d_model
    linear = lambda i, o, bias=True: i * o + (o if bias else 0)
    attention = 4 * linear(d, d)
    ffn = linear(d, cfg.d_ff) + linear(cfg.d_ff, d)
    layer_norm = 2 * d
    parts = {
        "embeddings": cfg.src_vocab_size * d + cfg.tgt_vocab_size * d,
        "positions": cfg.max_len * d if cfg.positional == "learned" else 0,
        "encoder": cfg.n_encoder_layers * (attention + ffn + 2 * layer_norm),
        "decoder": cfg.n_decoder_layers * (2 * attention + ffn + 3 * layer_norm),
        "final norms": 2 * layer_norm if cfg.norm_first else 0,
        "output": 0 if cfg.tie_output else linear(d, cfg.tgt_vocab_size, bias=False),
    }
    return sum(parts.values())
'''),
    Alternative("transformer_param_count", "layer by layer in a loop, a NumPy total converted at the end", '''
def transformer_param_count(cfg):
    d, total = cfg.d_model, np.int64(0)
    for _ in range(cfg.n_encoder_layers):
        total += 4 * (d * d + d) + (d * cfg.d_ff + cfg.d_ff) + (cfg.d_ff * d + d) + 2 * (2 * d)
    for _ in range(cfg.n_decoder_layers):
        total += 8 * (d * d + d) + (d * cfg.d_ff + cfg.d_ff) + (cfg.d_ff * d + d) + 3 * (2 * d)
    total += d * (cfg.src_vocab_size + cfg.tgt_vocab_size * (1 if cfg.tie_output else 2))
    total += d * cfg.max_len * (cfg.positional == "learned") + 4 * d * bool(cfg.norm_first)
    return int(total)
'''),
    # ------------------------------------------------------------------ label_smoothed_cross_entropy
    Alternative("label_smoothed_cross_entropy", "float64 inside, cast back", '''
def label_smoothed_cross_entropy(logits, target, eps, pad_id=0):
    logp = torch.log_softmax(logits.double(), dim=-1)
    nll = -logp.gather(-1, target[..., None])[..., 0]
    smooth = -logp.mean(-1)
    keep = target.ne(pad_id)
    return ((1 - eps) * nll + eps * smooth).masked_select(keep).mean().to(logits.dtype)
'''),
    Alternative("label_smoothed_cross_entropy", "explicit smoothed target distribution, masked sum / count", '''
def label_smoothed_cross_entropy(logits, target, eps=0.1, pad_id=0):
    V = logits.shape[-1]
    logp = F.log_softmax(logits, dim=-1)
    q = torch.full_like(logp, eps / V).scatter(-1, target.unsqueeze(-1), 1 - eps + eps / V)
    loss = -(q * logp).sum(-1)
    keep = (target != pad_id).to(loss.dtype)
    return (loss * keep).sum() / keep.sum()
'''),
    # ------------------------------------------------------------------ noam_lr
    Alternative("noam_lr", "branches on the warm-up", '''
def noam_lr(step, d_model, warmup, factor=1.0):
    scale = factor / math.sqrt(d_model)
    if step < warmup:
        return scale * step / warmup ** 1.5
    return scale / math.sqrt(step)
'''),
    Alternative("noam_lr", "numpy minimum, float()", '''
def noam_lr(step, d_model, warmup, factor=1.0):
    return float(factor * np.power(d_model, -0.5) * np.minimum(np.power(step, -0.5), step * np.power(warmup, -1.5)))
'''),
    # ------------------------------------------------------------------ greedy_decode
    Alternative("greedy_decode", "restores the caller's train/eval mode", '''
def greedy_decode(model, src, max_len):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            memory, src_mask = model.encode(src), padding_mask(src)
            ys = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long, device=src.device)
            done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
            for _ in range(max_len):
                nxt = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)
                nxt = torch.where(done, torch.full_like(nxt, PAD_ID), nxt)
                ys = torch.cat([ys, nxt[:, None]], dim=1)
                done |= nxt == EOS_ID
                if bool(done.all()):
                    break
        return ys[:, 1:]
    finally:
        model.train(was_training)
'''),
    Alternative("greedy_decode", "a preallocated buffer, a while loop, inference_mode", '''
def greedy_decode(model, src, max_len, bos_id=BOS_ID):
    model.eval()
    B = src.size(0)
    with torch.inference_mode():
        memory, src_mask = model.encode(src), padding_mask(src)
        ys = torch.full((B, max_len + 1), PAD_ID, dtype=torch.long, device=src.device)
        ys[:, 0] = bos_id
        alive = torch.ones(B, dtype=torch.bool, device=src.device)
        t = 0
        while t < max_len and alive.any():
            nxt = model.decode(ys[:, : t + 1], memory, src_mask)[:, -1].argmax(-1)
            ys[:, t + 1] = torch.where(alive, nxt, torch.full_like(nxt, PAD_ID))
            alive = alive & (nxt != EOS_ID)
            t += 1
        return ys[:, 1 : t + 1].clone()
'''),

    # ------------------------------------------------------------------ ffn_share (question 1)
    Alternative("ffn_share", "counts of the modules' parts as Linear and LayerNorm sizes", '''
def ffn_share(d_model, d_ff, layer):
    def linear(a, b):
        return a * b + b
    def layer_norm(d):
        return 2 * d
    attention = 4 * linear(d_model, d_model)
    ffn = linear(d_model, d_ff) + linear(d_ff, d_model)
    n_attention, n_norms = (1, 2) if layer == "encoder" else (2, 3)
    return ffn / (n_attention * attention + ffn + n_norms * layer_norm(d_model))
'''),
    Alternative("ffn_share", "one minus the share of the rest, with a lookup table", '''
def ffn_share(d_model: int, d_ff: int, layer: str = "encoder") -> float:
    sublayers = {"encoder": (1, 2), "decoder": (2, 3)}
    attentions, norms = sublayers[layer]
    d = float(d_model)
    ffn = d * (2 * d_ff + 1) + d_ff
    rest = attentions * 4 * d * (d + 1) + norms * 2 * d
    return 1.0 - rest / (rest + ffn)
'''),
    # ------------------------------------------------------------------ positions_processed (question 2)
    Alternative("positions_processed", "a loop over the steps", '''
def positions_processed(length, use_cache):
    total = 0
    prefix = 1                     # <bos>
    for _ in range(length):
        total += 1 if use_cache else prefix
        prefix += 1
    return total
'''),
    Alternative("positions_processed", "sum of a range, keyword default", '''
def positions_processed(length: int, use_cache: bool = True) -> int:
    return length if use_cache else sum(range(1, length + 1))
'''),
    # ------------------------------------------------------------------ kv_cache_bytes_per_token (question 3)
    Alternative("kv_cache_bytes_per_token", "the key projection's width d_model·n_kv_heads/n_heads, per layer", '''
def kv_cache_bytes_per_token(n_layers, d_model, n_heads, n_kv_heads, bytes_per_number=2):
    kv_width = d_model * n_kv_heads // n_heads        # what k_proj (and v_proj) output per token
    return n_layers * (kv_width + kv_width) * bytes_per_number
'''),
    Alternative("kv_cache_bytes_per_token", "the numel of a one-token cache laid out as (layers, k/v, heads, d_head)", '''
def kv_cache_bytes_per_token(n_layers: int, d_model: int, n_heads: int, n_kv_heads: int,
                             bytes_per_number: int = 2) -> int:
    one_token = torch.empty(n_layers, 2, n_kv_heads, d_model // n_heads, device="meta")
    return int(one_token.numel()) * int(bytes_per_number)
'''),
]
