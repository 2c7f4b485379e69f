"""Correct implementations of notebook 07's graded names in other styles; each must pass every graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``np``, ``apply_rope``, ``KVCache`` and the graded names exist.
"""
from tests.alternatives import Alternative

ALTERNATIVES = [
    # ------------------------------------------------------------------ RMSNorm
    Alternative("RMSNorm", "sqrt and division, weight registered by name", '''
class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.register_parameter("weight", nn.Parameter(torch.ones(d)))
        self.eps = eps

    def forward(self, x):
        ms = (x * x).sum(dim=-1, keepdim=True) / x.shape[-1]
        return self.weight * (x / torch.sqrt(ms + self.eps))
'''),
    Alternative("RMSNorm", "float64 inside, vector norm", '''
class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.d, self.eps = d, eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x64 = x.double()
        rms = (torch.linalg.vector_norm(x64, dim=-1, keepdim=True).pow(2) / self.d + self.eps).sqrt()
        return (x64 / rms).to(x.dtype) * self.weight
'''),
    # ------------------------------------------------------------------ SwiGLU
    Alternative("SwiGLU", "F.linear and an explicit sigmoid", '''
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        gate = F.linear(x, self.w1.weight)
        return F.linear(gate * torch.sigmoid(gate) * F.linear(x, self.w3.weight), self.w2.weight)
'''),
    Alternative("SwiGLU", "nn.SiLU module and a helper method", '''
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.act = nn.SiLU()

    def gated(self, x):
        return self.act(self.w1(x)) * self.w3(x)

    def forward(self, x):
        return self.w2(self.gated(x))
'''),
    # ------------------------------------------------------------------ CausalSelfAttention
    Alternative("CausalSelfAttention", "einsum, expand+reshape grouping, mask from position indices", '''
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads=None, rope=True):
        super().__init__()
        self.n_heads = self.h = n_heads
        self.n_kv_heads = self.kv = n_kv_heads if n_kv_heads is not None else n_heads
        self.d_head = self.dh = d_model // n_heads
        self.rope = rope
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, self.kv * self.dh, bias=False)
        self.v_proj = nn.Linear(d_model, self.kv * self.dh, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        offset = 0 if cache is None else cache.length
        q = self.q_proj(x).reshape(B, T, self.h, self.dh).permute(0, 2, 1, 3)
        k = self.k_proj(x).reshape(B, T, self.kv, self.dh).permute(0, 2, 1, 3)
        v = self.v_proj(x).reshape(B, T, self.kv, self.dh).permute(0, 2, 1, 3)
        pos_q = torch.arange(T) + offset
        if self.rope:
            q = apply_rope(q, pos_q)
            k = apply_rope(k, pos_q)
        if cache is not None:
            k, v = cache.append(k, v)
        S = k.shape[2]
        g = self.h // self.kv
        k = k[:, :, None].expand(B, self.kv, g, S, self.dh).reshape(B, self.h, S, self.dh)
        v = v[:, :, None].expand(B, self.kv, g, S, self.dh).reshape(B, self.h, S, self.dh)
        scores = torch.einsum("bhtd,bhsd->bhts", q, k) * self.dh ** -0.5
        future = torch.arange(S)[None, :] > (pos_q[:, None])
        scores = scores.masked_fill(future, -1e30)
        out = torch.einsum("bhts,bhsd->bhtd", torch.softmax(scores, dim=-1), v)
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, T, D))
'''),
    Alternative("CausalSelfAttention", "a loop over query heads, cache fields kept by hand", '''
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads=None, rope=True):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads or n_heads
        self.d_head, self.rope = d_model // n_heads, rope
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=False)
        self.v_proj = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        start = cache.length if cache is not None else 0
        positions = torch.arange(start, start + T)
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)
        if self.rope:
            q, k = apply_rope(q, positions), apply_rope(k, positions)
        if cache is not None:
            k, v = cache.append(k, v)
        T_k = k.shape[2]
        allowed = torch.arange(T_k)[None, :] <= positions[:, None]
        group = self.n_heads // self.n_kv_heads
        heads = []
        for i in range(self.n_heads):
            j = i // group
            s = q[:, i] @ k[:, j].transpose(-1, -2) / math.sqrt(self.d_head)
            s = torch.where(allowed, s, torch.tensor(float("-inf")))
            w = torch.exp(s - s.max(dim=-1, keepdim=True).values)
            heads.append((w / w.sum(-1, keepdim=True)) @ v[:, j])
        return self.out_proj(torch.cat(heads, dim=-1))
'''),
    # ------------------------------------------------------------------ GPTBlock
    Alternative("GPTBlock", "submodules created in another order, named intermediates", '''
class GPTBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, n_kv_heads=None, rope=True):
        super().__init__()
        self.ffn = SwiGLU(d_model, d_ff)
        self.ffn_norm = RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, n_kv_heads=n_kv_heads, rope=rope)
        self.attn_norm = RMSNorm(d_model)

    def forward(self, x, cache=None):
        attended = self.attn(self.attn_norm(x), cache=cache)
        h = x + attended
        return h + self.ffn(self.ffn_norm(h))
'''),
    Alternative("GPTBlock", "a residual helper, extra dropout keyword", '''
class GPTBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, n_kv_heads=None, rope=True, dropout=0.0):
        super().__init__()
        self.attn_norm, self.ffn_norm = RMSNorm(d_model), RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, n_kv_heads, rope)
        self.ffn = SwiGLU(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)

    @staticmethod
    def _residual(x, norm, sublayer, drop):
        return x + drop(sublayer(norm(x)))

    def forward(self, x, cache=None):
        x = self._residual(x, self.attn_norm, lambda h: self.attn(h, cache), self.dropout)
        return self._residual(x, self.ffn_norm, self.ffn, self.dropout)
'''),
    # ------------------------------------------------------------------ GPT
    Alternative("GPT", "positions by slicing the table, tie in the other direction", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.tok_embed = nn.Embedding(c.vocab_size, c.d_model)
        if c.positional == "learned":
            self.pos_embed = nn.Embedding(c.max_len, c.d_model)
        blocks = []
        for _ in range(c.n_layers):
            blocks.append(GPTBlock(c.d_model, c.n_heads, c.d_ff, n_kv_heads=c.n_kv_heads, rope=(c.positional == "rope")))
        self.blocks = nn.ModuleList(blocks)
        self.norm = RMSNorm(c.d_model)
        self.out = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_output:
            self.tok_embed.weight = self.out.weight

    def forward(self, tokens, caches=None):
        B, T = tokens.shape
        x = self.tok_embed(tokens)
        if hasattr(self, "pos_embed"):
            start = 0 if caches is None else caches[0].length
            x = x + self.pos_embed.weight[start:start + T]
        for block, cache in zip(self.blocks, caches if caches is not None else [None] * len(self.blocks)):
            x = block(x, cache)
        return self.out(self.norm(x))
'''),
    Alternative("GPT", "F.linear with the embedding matrix when tied, extra keyword", '''
class GPT(nn.Module):
    def __init__(self, config, init_std=0.02):
        super().__init__()
        self.config = config
        self.tok_embed = nn.Embedding(config.vocab_size, config.d_model)
        nn.init.normal_(self.tok_embed.weight, std=init_std)
        if config.positional == "learned":
            self.pos_embed = nn.Embedding(config.max_len, config.d_model)
        self.blocks = nn.ModuleList(GPTBlock(config.d_model, config.n_heads, config.d_ff, config.n_kv_heads,
                                             config.positional == "rope") for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model)
        self.out = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_output:
            self.out.weight = self.tok_embed.weight

    def forward(self, tokens, caches=None):
        start = caches[0].length if caches else 0
        h = self.tok_embed(tokens)
        if self.config.positional == "learned":
            idx = start + torch.arange(tokens.shape[1], device=tokens.device)
            h = h + self.pos_embed(idx)[None]
        for i in range(len(self.blocks)):
            h = self.blocks[i](h, None if not caches else caches[i])
        return F.linear(self.norm(h), self.out.weight)
'''),
    Alternative("GPT", "a persistent buffer of positions, blocks called through a helper", '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.tok_embed = nn.Embedding(config.vocab_size, config.d_model)
        if config.positional == "learned":
            self.pos_embed = nn.Embedding(config.max_len, config.d_model)
        self.register_buffer("positions", torch.arange(config.max_len))
        self.blocks = nn.ModuleList([GPTBlock(config.d_model, config.n_heads, config.d_ff, config.n_kv_heads,
                                              rope=config.positional == "rope") for _ in range(config.n_layers)])
        self.norm = RMSNorm(config.d_model)
        self.out = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_output:
            self.out.weight = self.tok_embed.weight

    def _run_blocks(self, x, caches):
        for i, block in enumerate(self.blocks):
            x = block(x, cache=None if caches is None else caches[i])
        return x

    def forward(self, tokens, caches=None):
        start = 0 if caches is None else caches[0].length
        x = self.tok_embed(tokens)
        if self.config.positional == "learned":
            x = x + self.pos_embed(self.positions[start:start + tokens.shape[1]])
        return self.out(self.norm(self._run_blocks(x, caches)))
'''),
    # ------------------------------------------------------------------ sample_next
    Alternative("sample_next", "stable sort, searchsorted on the cumulative sum, keep the first m sorted tokens", '''
def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature == 0:
        return torch.argmax(logits, dim=-1)
    z = logits.float() / temperature
    if top_k is not None and top_k < z.shape[-1]:
        z = torch.where(z < torch.topk(z, top_k, dim=-1).values[:, [-1]], torch.full_like(z, float("-inf")), z)
    probs = F.softmax(z, dim=-1)
    if top_p is not None and top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        mass = sorted_p.cumsum(-1)
        m = torch.searchsorted(mass, torch.full((mass.shape[0], 1), float(top_p), dtype=mass.dtype), side="left")
        kept = torch.arange(mass.shape[-1]) <= m
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p * kept)
        probs = probs / probs.sum(-1, keepdim=True)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)
'''),
    Alternative("sample_next", "filtered row by row in Python floats with a stable sorted(), then one multinomial", '''
def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    tokens, kept = [], []
    for row in logits.double().tolist():
        if temperature == 0:
            tokens.append(max(range(len(row)), key=row.__getitem__))
            continue
        z = [v / temperature for v in row]
        if top_k:
            kth = sorted(z, reverse=True)[min(top_k, len(z)) - 1]
            z = [v if v >= kth else -math.inf for v in z]
        top = max(z)
        p = [math.exp(v - top) for v in z]
        norm = sum(p)
        p = [v / norm for v in p]
        if top_p is not None:
            keep, total = [0.0] * len(p), 0.0
            for i in sorted(range(len(p)), key=lambda i: -p[i]):
                if total >= top_p:
                    break
                keep[i] = p[i]
                total += p[i]
            p = keep
        kept.append(p)
    if temperature == 0:
        return torch.tensor(tokens, dtype=torch.long)
    return torch.multinomial(torch.tensor(kept, dtype=torch.float64), 1, generator=generator)[:, 0]
'''),
    Alternative("sample_next", "a clone filtered in place, the sorted mask shifted by one instead of subtracted", '''
def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature == 0:
        return logits.argmax(-1)
    scores = logits.detach().clone().float()
    scores /= temperature
    if top_k is not None:
        values, _ = torch.topk(scores, min(top_k, scores.size(-1)))
        scores[scores < values[:, [-1]]] = -float("inf")
    probs = scores.softmax(-1)
    if top_p is not None:
        sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)
        crossed = sorted_p.cumsum(-1) >= top_p
        drop = torch.zeros_like(crossed)
        drop[:, 1:] = crossed[:, :-1]
        probs.scatter_(-1, order, sorted_p.masked_fill(drop, 0.0))
        probs /= probs.sum(-1, keepdim=True)
    return torch.multinomial(probs, 1, generator=generator).view(-1)
'''),
    # ------------------------------------------------------------------ generate
    Alternative("generate", "a list of new tokens, inference mode, separate branches", '''
@torch.inference_mode()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, use_cache=True, generator=None):
    new = []
    if use_cache:
        caches = [KVCache() for _ in range(len(model.blocks))]
        logits = model(prompt, caches=caches)
        for _ in range(max_new_tokens):
            token = sample_next(logits[:, -1, :], temperature=temperature, top_k=top_k, top_p=top_p, generator=generator)
            new.append(token)
            if len(new) < max_new_tokens:
                logits = model(token[:, None], caches=caches)
    else:
        seq = prompt
        for _ in range(max_new_tokens):
            token = sample_next(model(seq)[:, -1], temperature, top_k, top_p, generator)
            new.append(token)
            seq = torch.cat([seq, token[:, None]], dim=-1)
    if not new:
        return prompt.clone()
    return torch.cat([prompt, torch.stack(new, dim=1)], dim=1)
'''),
    Alternative("generate", "a preallocated output tensor, caches=None passed explicitly", '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, use_cache=True, generator=None):
    B, T0 = prompt.shape
    out = torch.empty(B, T0 + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    out[:, :T0] = prompt
    caches = [KVCache() for _ in model.blocks] if use_cache else None
    fed = 0
    with torch.no_grad():
        for t in range(T0, T0 + max_new_tokens):
            chunk = out[:, fed:t] if use_cache else out[:, :t]
            logits = model(chunk, caches=caches)
            if use_cache:
                fed = t
            out[:, t] = sample_next(logits[:, -1], temperature, top_k, top_p, generator)
    return out
'''),
    # ------------------------------------------------------------------ configure_optimizer
    Alternative("configure_optimizer", "by name and module type, one pass", '''
def configure_optimizer(model, lr, weight_decay):
    embedding_ids = set()
    for module in model.modules():
        if isinstance(module, nn.Embedding):
            embedding_ids.add(id(module.weight))
    matrices, others = [], []
    for name, p in model.named_parameters():
        if p.ndim >= 2 and id(p) not in embedding_ids:
            matrices.append(p)
        else:
            others.append(p)
    return torch.optim.AdamW([dict(params=matrices, weight_decay=weight_decay), dict(params=others, weight_decay=0.0)],
                             lr=lr, betas=(0.9, 0.95))
'''),
    Alternative("configure_optimizer", "a dict of parameters, the second group added later", '''
def configure_optimizer(model, lr, weight_decay):
    params = {id(p): p for p in model.parameters() if p.requires_grad}
    skip = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay = [p for i, p in params.items() if p.dim() > 1 and i not in skip]
    decay_ids = {id(p) for p in decay}
    rest = [p for i, p in params.items() if i not in decay_ids]
    optimizer = torch.optim.AdamW(decay, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.95))
    optimizer.add_param_group({"params": rest, "weight_decay": 0.0})
    return optimizer
'''),
    Alternative("configure_optimizer", "the undecayed group first", '''
def configure_optimizer(model, lr, weight_decay):
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    quiet = [p for p in model.parameters() if p.dim() < 2 or id(p) in embeddings]
    decayed = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in embeddings]
    return torch.optim.AdamW([{"params": quiet, "weight_decay": 0.0}, {"params": decayed, "weight_decay": weight_decay}],
                             lr=lr, betas=(0.9, 0.95))
'''),
    Alternative("configure_optimizer", "three groups: matrices, embeddings, vectors", '''
def configure_optimizer(model, lr, weight_decay):
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    groups = {"matrices": [], "embeddings": [], "vectors": []}
    for p in model.parameters():
        kind = "embeddings" if id(p) in embeddings else "matrices" if p.dim() >= 2 else "vectors"
        groups[kind].append(p)
    return torch.optim.AdamW([dict(params=groups["matrices"], weight_decay=weight_decay),
                              dict(params=groups["embeddings"], weight_decay=0.0),
                              dict(params=groups["vectors"], weight_decay=0.0)], lr=lr, betas=(0.9, 0.95))
'''),
    # ------------------------------------------------------------------ cosine_lr
    Alternative("cosine_lr", "clamped progress, numpy cosine", '''
def cosine_lr(step, max_lr, warmup, total, min_lr):
    if step + 1 <= warmup:
        return float(max_lr * (step + 1) / warmup)
    progress = min(1.0, max(0.0, (step - warmup) / max(1, total - warmup)))
    return float(min_lr + (max_lr - min_lr) * (1 + np.cos(np.pi * progress)) / 2)
'''),
    Alternative("cosine_lr", "cos² form of the half cosine", '''
def cosine_lr(step: int, max_lr: float, warmup: int, total: int, min_lr: float) -> float:
    warm = max_lr * (step + 1) / warmup if warmup > 0 else max_lr
    if step < warmup:
        return warm
    if step >= total:
        return min_lr
    angle = math.pi * (step - warmup) / (total - warmup) / 2
    return min_lr + (max_lr - min_lr) * math.cos(angle) ** 2
'''),
    Alternative("cosine_lr", "NumPy throughout, a NumPy float64 returned", '''
def cosine_lr(step, max_lr, warmup, total, min_lr):
    if step < warmup:
        return np.float64(max_lr) * (step + 1) / warmup
    progress = np.clip((step - warmup) / (total - warmup), 0.0, 1.0)
    return np.float64(min_lr) + (max_lr - min_lr) * (1.0 + np.cos(np.pi * progress)) / 2.0
'''),
    # ------------------------------------------------------------------ train_step
    Alternative("train_step", "manual global-norm clipping, log_softmax and nll", '''
def train_step(model, batch, optimizer, clip):
    inputs, targets = batch
    for p in model.parameters():
        p.grad = None
    logp = F.log_softmax(model(inputs), dim=-1)
    loss = F.nll_loss(logp.flatten(0, 1), targets.flatten())
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((g.detach() ** 2).sum() for g in grads))
    factor = torch.clamp(clip / (norm + 1e-6), max=1.0)
    for g in grads:
        g.mul_(factor)
    optimizer.step()
    return float(loss.detach())
'''),
    Alternative("train_step", "model.train(), zero_grad(set_to_none=False), mean of per-token losses", '''
def train_step(model, batch, optimizer, clip):
    x, y = batch
    model.train()
    optimizer.zero_grad(set_to_none=False)
    logits = model(x)
    per_token = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")
    loss = per_token.mean()
    loss.backward()
    nn.utils.clip_grad_norm_(list(model.parameters()), max_norm=clip)
    optimizer.step()
    return loss.item()
'''),
    Alternative("train_step", "gradients freed after the step (set_to_none before and after)", '''
def train_step(model, batch, optimizer, clip):
    x, y = batch
    optimizer.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss)
'''),
    # ------------------------------------------------------------------ train_bpe
    Alternative("train_bpe", "Counter, max with a negated-pair key, merges in place with del", """
import collections

def train_bpe(text, n_merges):
    ids = list(text.encode())
    merges = []
    for new in range(256, 256 + n_merges):
        counts = collections.Counter(zip(ids, ids[1:]))
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))
        i = 0
        while i < len(ids) - 1:
            if ids[i] == pair[0] and ids[i + 1] == pair[1]:
                ids[i] = new
                del ids[i + 1]
            i += 1
        merges.append(pair)
    return merges
"""),
    Alternative("train_bpe", "dict counts recounted after each merge, the pick by sorting", """
def train_bpe(text, n_merges):
    ids = list(text.encode("utf-8"))
    counts = {}
    for a, b in zip(ids, ids[1:]):
        counts[(a, b)] = counts.get((a, b), 0) + 1
    merges = []
    for k in range(n_merges):
        live = {p: c for p, c in counts.items() if c > 0}
        if not live:
            break
        best = sorted(live.items(), key=lambda item: (-item[1], item[0]))[0][0]
        new, out, i = 256 + k, [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i], ids[i + 1]) == best:
                out.append(new)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
        counts = {}
        for a, b in zip(ids, ids[1:]):
            counts[(a, b)] = counts.get((a, b), 0) + 1
        merges.append(tuple(best))
    return merges
"""),
    # ------------------------------------------------------------------ bpe_encode
    Alternative("bpe_encode", "one pass per merge, in the order learnt", """
def bpe_encode(text, merges):
    ids = list(bytes(text, "utf-8"))
    for k, (left, right) in enumerate(merges):
        out, i = [], 0
        while i < len(ids):
            if i < len(ids) - 1 and ids[i] == left and ids[i + 1] == right:
                out.append(256 + k)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        ids = out
    return ids
"""),
    Alternative("bpe_encode", "earliest-learnt pair first, found by scanning positions", """
def bpe_encode(text, merges):
    rank = {(a, b): k for k, (a, b) in enumerate(merges)}
    ids = [int(b) for b in text.encode("utf-8")]
    while True:
        found = [rank[(a, b)] for a, b in zip(ids, ids[1:]) if (a, b) in rank]
        if not found:
            return ids
        k = min(found)
        pair, merged, i = merges[k], [], 0
        while i < len(ids):
            if ids[i:i + 2] == [pair[0], pair[1]]:
                merged.append(256 + k)
                i += 2
            else:
                merged.append(ids[i])
                i += 1
        ids = merged
"""),
    # ------------------------------------------------------------------ bpe_decode
    Alternative("bpe_decode", "recursive expansion into a bytearray", """
def bpe_decode(ids, merges):
    def expand(token, out):
        if token < 256:
            out.append(token)
        else:
            left, right = merges[token - 256]
            expand(left, out)
            expand(right, out)
    out = bytearray()
    for token in ids:
        expand(token, out)
    return out.decode("utf-8", "replace")
"""),
    Alternative("bpe_decode", "a dict of token bytes and bytes.join, read with str(data, encoding)", """
def bpe_decode(ids, merges):
    vocab = {b: bytes([b]) for b in range(256)}
    for k, (a, b) in enumerate(merges):
        vocab[256 + k] = vocab[a] + vocab[b]
    return str(bytes().join(vocab[t] for t in ids), "utf-8", "replace")
"""),
    # ------------------------------------------------------------------ training_mfu
    Alternative("training_mfu", "achieved FLOP/s per GPU over the peak, seconds from hours and minutes", """
def training_mfu(n_params, n_tokens, n_gpus, days, peak_flops):
    seconds = days * 24 * 60 * 60
    achieved_per_gpu = 3 * (2 * n_params) * n_tokens / seconds / n_gpus
    return achieved_per_gpu / peak_flops
"""),
    Alternative("training_mfu", "NumPy float64 arithmetic, a NumPy float64 returned (a Python float)", """
def training_mfu(n_params, n_tokens, n_gpus, days, peak_flops):
    flops = np.float64(6) * n_params * n_tokens
    return flops / np.prod([n_gpus, days, 86400.0, peak_flops], dtype=np.float64)
"""),
    Alternative("training_mfu", "GPU-seconds the run would need at peak over those it had", """
def training_mfu(n_params, n_tokens, n_gpus, days, peak_flops):
    gpu_seconds_at_peak = 6.0 * n_params * n_tokens / peak_flops
    gpu_seconds_used = n_gpus * days * 86400.0
    return gpu_seconds_at_peak / gpu_seconds_used
"""),
    # ------------------------------------------------------------------ compute_optimal
    Alternative("compute_optimal", "tokens first: D = sqrt(C·r / 6), then N = D / r", """
def compute_optimal(flops, tokens_per_param):
    n_tokens = (flops * tokens_per_param / 6) ** 0.5
    return (n_tokens / tokens_per_param, n_tokens)
"""),
    Alternative("compute_optimal", "NumPy float64 arithmetic (NumPy floats are Python floats)", """
def compute_optimal(flops, tokens_per_param):
    n = np.sqrt(np.float64(flops) / np.float64(6 * tokens_per_param))
    return n, n * tokens_per_param
"""),
    Alternative("compute_optimal", "through logarithms: log N = (log C - log 6r) / 2", """
def compute_optimal(flops: float, tokens_per_param: float) -> tuple[float, float]:
    log_n = 0.5 * (math.log(flops) - math.log(6.0 * tokens_per_param))
    n_params = math.exp(log_n)
    return n_params, n_params * tokens_per_param
"""),
    # ------------------------------------------------------------------ model_state_bytes
    Alternative("model_state_bytes", "a table of the bytes split at each stage", """
def model_state_bytes(n_params, n_gpus, zero_stage):
    split = {0: 0, 1: 12, 2: 14, 3: 16}[zero_stage]
    return (16 - split) * n_params + split * n_params / n_gpus
"""),
    Alternative("model_state_bytes", "a loop over the three parts and the stage each is split from", """
def model_state_bytes(n_params: float, n_gpus: int, zero_stage: int) -> float:
    total = 0.0
    for bytes_each, split_from in ((12, 1), (2, 2), (2, 3)):
        total += bytes_each * n_params / (n_gpus if zero_stage >= split_from else 1)
    return total
"""),
]
