"""Plausible wrong implementations of notebook 07's graded classes and functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``math``, ``np``, ``apply_rope``, ``KVCache`` and the graded names exist. ``TEMPLATES`` holds the
correct code of each target; every bug is its template with one mistake substituted in
(``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant


# ----------------------------------------------------------------------------------------------- RMSNorm
_RMS = '''
class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
'''
_RMS_BUGS = [
    Bug("RMSNorm", "subtracts the mean first (LayerNorm without bias)",
        variant(_RMS, "return x * torch.rsqrt(", "x = x - x.mean(dim=-1, keepdim=True)\n        return x * torch.rsqrt(")),
    Bug("RMSNorm", "eps added outside the square root",
        variant(_RMS, "return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight",
                "return x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps) * self.weight")),
    Bug("RMSNorm", "no eps at all", variant(_RMS, "keepdim=True) + self.eps)", "keepdim=True))")),
    Bug("RMSNorm", "normalises over the first axis", variant(_RMS, "mean(dim=-1, keepdim=True)", "mean(dim=0, keepdim=True)")),
    Bug("RMSNorm", "weight initialised to zeros", variant(_RMS, "torch.ones(d)", "torch.zeros(d)")),
]

# ----------------------------------------------------------------------------------------------- SwiGLU
_SWIGLU = '''
class SwiGLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))
'''
_SWIGLU_BUGS = [
    Bug("SwiGLU", "SiLU on the value branch w3 instead of the gate w1",
        variant(_SWIGLU, "F.silu(self.w1(x)) * self.w3(x)", "self.w1(x) * F.silu(self.w3(x))")),
    Bug("SwiGLU", "no SiLU: a bilinear unit", variant(_SWIGLU, "F.silu(self.w1(x))", "self.w1(x)")),
    Bug("SwiGLU", "ReLU gate (ReGLU)", variant(_SWIGLU, "F.silu(", "F.relu(")),
    Bug("SwiGLU", "linear layers with biases",
        variant(_SWIGLU, "self.w1 = nn.Linear(d_model, d_ff, bias=False)", "self.w1 = nn.Linear(d_model, d_ff)")),
    Bug("SwiGLU", "an extra learnable parameter (a SiLU slope that starts at 1, as in Swish-beta)",
        variant(variant(_SWIGLU, "        self.w2 = nn.Linear(d_ff, d_model, bias=False)\n",
                        "        self.w2 = nn.Linear(d_ff, d_model, bias=False)\n        self.beta = nn.Parameter(torch.ones(()))\n"),
                "F.silu(self.w1(x)) * self.w3(x)",
                "self.w1(x) * torch.sigmoid(self.beta * self.w1(x)) * self.w3(x)")),
]

# ----------------------------------------------------------------------------------------------- CausalSelfAttention
_ATTN = '''
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads=None, rope=True):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads or n_heads
        self.d_head = d_model // n_heads
        self.rope = rope
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=False)
        self.v_proj = nn.Linear(d_model, self.n_kv_heads * self.d_head, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        B, T, d_model = x.shape
        start = cache.length if cache is not None else 0
        q = self.q_proj(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.d_head).transpose(1, 2)
        if self.rope:
            positions = torch.arange(start, start + T, device=x.device)
            q, k = apply_rope(q, positions), apply_rope(k, positions)
        if cache is not None:
            k, v = cache.append(k, v)
        group = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        T_k = k.shape[2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        may = torch.ones(T, T_k, dtype=torch.bool, device=x.device).tril(T_k - T)
        weights = scores.masked_fill(~may, float("-inf")).softmax(dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, d_model)
        return self.out_proj(y)
'''
_ATTN_BUGS = [
    Bug("CausalSelfAttention", "RoPE applied to the values too",
        variant(_ATTN, "q, k = apply_rope(q, positions), apply_rope(k, positions)",
                "q, k, v = apply_rope(q, positions), apply_rope(k, positions), apply_rope(v, positions)")),
    Bug("CausalSelfAttention", "GQA heads grouped in the wrong order (repeat instead of repeat_interleave)",
        variant(variant(_ATTN, "k = k.repeat_interleave(group, dim=1)", "k = k.repeat(1, group, 1, 1)"),
                "v = v.repeat_interleave(group, dim=1)", "v = v.repeat(1, group, 1, 1)")),
    Bug("CausalSelfAttention", "causal mask off by one: a position cannot see itself",
        variant(_ATTN, ".tril(T_k - T)", ".tril(T_k - T - 1)")),
    Bug("CausalSelfAttention", "causal mask off by one: a position sees the next one",
        variant(_ATTN, ".tril(T_k - T)", ".tril(T_k - T + 1)")),
    Bug("CausalSelfAttention", "cache positions not advanced: RoPE positions restart at 0 every call",
        variant(_ATTN, "positions = torch.arange(start, start + T, device=x.device)",
                "positions = torch.arange(T, device=x.device)")),
    Bug("CausalSelfAttention", "mask ignores the cached keys' offset",
        variant(_ATTN, ".tril(T_k - T)", ".tril()")),
    Bug("CausalSelfAttention", "scores scaled by sqrt(d_model) instead of sqrt(d_head)",
        variant(_ATTN, "/ math.sqrt(self.d_head)", "/ math.sqrt(d_model)")),
    Bug("CausalSelfAttention", "k/v heads repeated before the cache: it holds n_heads heads, not n_kv_heads",
        variant(variant(_ATTN, "        group = self.n_heads // self.n_kv_heads\n        k = k.repeat_interleave(group, dim=1)\n"
                               "        v = v.repeat_interleave(group, dim=1)\n", ""),
                "        if cache is not None:\n            k, v = cache.append(k, v)\n",
                "        group = self.n_heads // self.n_kv_heads\n        k = k.repeat_interleave(group, dim=1)\n"
                "        v = v.repeat_interleave(group, dim=1)\n"
                "        if cache is not None:\n            k, v = cache.append(k, v)\n")),
    Bug("CausalSelfAttention", "keys cached before RoPE and rotated again at every call (same outputs)",
        variant(variant(_ATTN, "            q, k = apply_rope(q, positions), apply_rope(k, positions)\n",
                        "            q = apply_rope(q, positions)\n"),
                "            k, v = cache.append(k, v)\n",
                "            k, v = cache.append(k, v)\n"
                "        if self.rope:\n            k = apply_rope(k, torch.arange(k.shape[2], device=x.device))\n")),
    Bug("CausalSelfAttention", "RoPE positions counted from 1 (same outputs: only the cached keys differ)",
        variant(_ATTN, "positions = torch.arange(start, start + T, device=x.device)",
                "positions = torch.arange(start + 1, start + T + 1, device=x.device)")),
    Bug("CausalSelfAttention", "RoPE applied whatever self.rope says",
        variant(_ATTN, "        if self.rope:\n            positions", "        if True:\n            positions")),
    Bug("CausalSelfAttention", "new keys and values not added to the cache",
        variant(_ATTN, "k, v = cache.append(k, v)", "k, v = (torch.cat([cache.k, k], 2), torch.cat([cache.v, v], 2)) if cache.k is not None else (k, v)")),
]

# ----------------------------------------------------------------------------------------------- GPTBlock
_BLOCK = '''
class GPTBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, n_kv_heads=None, rope=True):
        super().__init__()
        self.attn_norm = RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, n_kv_heads, rope)
        self.ffn_norm = RMSNorm(d_model)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, cache=None):
        x = x + self.attn(self.attn_norm(x), cache)
        return x + self.ffn(self.ffn_norm(x))
'''
_BLOCK_BUGS = [
    Bug("GPTBlock", "post-norm: norm(x + sublayer(x))",
        variant(variant(_BLOCK, "x = x + self.attn(self.attn_norm(x), cache)", "x = self.attn_norm(x + self.attn(x, cache))"),
                "return x + self.ffn(self.ffn_norm(x))", "return self.ffn_norm(x + self.ffn(x))")),
    Bug("GPTBlock", "the attention norm reused before the FFN",
        variant(_BLOCK, "self.ffn(self.ffn_norm(x))", "self.ffn(self.attn_norm(x))")),
    Bug("GPTBlock", "no residual around the FFN", variant(_BLOCK, "return x + self.ffn(", "return self.ffn(")),
    Bug("GPTBlock", "cache not passed to attention",
        variant(_BLOCK, "self.attn(self.attn_norm(x), cache)", "self.attn(self.attn_norm(x))")),
    Bug("GPTBlock", "one RMSNorm shared by both sublayers (same names, one weight: equal at initialisation)",
        variant(_BLOCK, "self.ffn_norm = RMSNorm(d_model)", "self.ffn_norm = self.attn_norm")),
]

# ----------------------------------------------------------------------------------------------- GPT
_GPT = '''
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        d = config.d_model
        self.tok_embed = nn.Embedding(config.vocab_size, d)
        if config.positional == "learned":
            self.pos_embed = nn.Embedding(config.max_len, d)
        self.blocks = nn.ModuleList([
            GPTBlock(d, config.n_heads, config.d_ff, config.n_kv_heads, rope=config.positional == "rope")
            for _ in range(config.n_layers)])
        self.norm = RMSNorm(d)
        self.out = nn.Linear(d, config.vocab_size, bias=False)
        if config.tie_output:
            self.out.weight = self.tok_embed.weight

    def forward(self, tokens, caches=None):
        T = tokens.shape[1]
        start = caches[0].length if caches else 0
        x = self.tok_embed(tokens)
        if self.config.positional == "learned":
            x = x + self.pos_embed(torch.arange(start, start + T, device=tokens.device))
        for i, block in enumerate(self.blocks):
            x = block(x, caches[i] if caches else None)
        return self.out(self.norm(x))
'''
_GPT_BUGS = [
    Bug("GPT", "no final norm before the output layer", variant(_GPT, "return self.out(self.norm(x))", "return self.out(x)")),
    Bug("GPT", "always tied, whatever tie_output says",
        variant(_GPT, "        if config.tie_output:\n            self.out.weight", "        if True:\n            self.out.weight")),
    Bug("GPT", "learned positions restart at 0 with a cache",
        variant(_GPT, "self.pos_embed(torch.arange(start, start + T, device=tokens.device))",
                "self.pos_embed(torch.arange(T, device=tokens.device))")),
    Bug("GPT", "RoPE in the blocks even with learned positions",
        variant(_GPT, "rope=config.positional == \"rope\")", "rope=True)")),
    Bug("GPT", "embeddings scaled by sqrt(d_model), as notebook 05's Transformer did",
        variant(_GPT, "x = self.tok_embed(tokens)\n", "x = self.tok_embed(tokens) * math.sqrt(self.config.d_model)\n")),
    Bug("GPT", "every block gets the first block's cache",
        variant(_GPT, "caches[i] if caches else None", "caches[0] if caches else None")),
]

# ----------------------------------------------------------------------------------------------- sample_next
_SAMPLE = """
def sample_next(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(dim=-1)
    if top_p is not None:
        sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)
        keep_sorted = sorted_p.cumsum(dim=-1) - sorted_p < top_p
        probs = probs * keep_sorted.scatter(-1, order, keep_sorted)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
"""
_SAMPLE_BUGS = [
    Bug("sample_next", "temperature applied after the softmax (then renormalised: no effect)",
        variant(variant(_SAMPLE, "logits = logits.float() / temperature", "logits = logits.float()"),
                "probs = logits.softmax(dim=-1)", "probs = logits.softmax(dim=-1) / temperature\n    probs = probs / probs.sum(-1, keepdim=True)")),
    Bug("sample_next", "top-p drops the token that crosses p",
        variant(_SAMPLE, "keep_sorted = sorted_p.cumsum(dim=-1) - sorted_p < top_p", "keep_sorted = sorted_p.cumsum(dim=-1) <= top_p")),
    Bug("sample_next", "top-p keeps a token whose predecessors total exactly p (≤ instead of <)",
        variant(_SAMPLE, "sorted_p.cumsum(dim=-1) - sorted_p < top_p", "sorted_p.cumsum(dim=-1) - sorted_p <= top_p")),
    Bug("sample_next", "top-p keeps equally probable tokens together (mass strictly above < p)",
        variant(_SAMPLE, "        sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)\n"
                         "        keep_sorted = sorted_p.cumsum(dim=-1) - sorted_p < top_p\n"
                         "        probs = probs * keep_sorted.scatter(-1, order, keep_sorted)\n",
                "        above = (probs[:, None, :] * (probs[:, None, :] > probs[:, :, None])).sum(-1)\n"
                "        probs = probs * (above < top_p)\n")),
    Bug("sample_next", "top-p on the probabilities before top-k, not renormalised after it",
        variant(variant(_SAMPLE, "    if top_k is not None:\n", "    unfiltered = logits\n    if top_k is not None:\n"),
                "probs.sort(dim=-1, descending=True, stable=True)",
                "unfiltered.softmax(dim=-1).sort(dim=-1, descending=True, stable=True)")),
    Bug("sample_next", "top-k keeps exactly k tokens by torch.topk's indices (a tie at the k-th logit split, top_k > V raises)",
        variant(_SAMPLE, "        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]\n"
                         "        logits = logits.masked_fill(logits < kth, float(\"-inf\"))\n",
                "        kept = torch.topk(logits, top_k, dim=-1).indices\n"
                "        logits = torch.full_like(logits, float(\"-inf\")).scatter(-1, kept, logits.gather(-1, kept))\n")),
    Bug("sample_next", "top-k keeps k - 1 tokens",
        variant(_SAMPLE, "logits = logits.masked_fill(logits < kth, float(\"-inf\"))",
                "logits = logits.masked_fill(logits <= kth, float(\"-inf\"))")),
    Bug("sample_next", "top-p before the temperature",
        variant(variant(_SAMPLE, "logits = logits.float() / temperature", "logits = logits.float()"),
                "    return torch.multinomial(", "    probs = probs ** (1 / temperature)\n    probs = probs / probs.sum(-1, keepdim=True)\n    return torch.multinomial(")),
    Bug("sample_next", "temperature 0 not special-cased: samples at temperature 1",
        variant(_SAMPLE, "    if temperature == 0:\n        return logits.argmax(dim=-1)\n    logits = logits.float() / temperature",
                "    logits = logits.float() / (temperature or 1.0)")),
    Bug("sample_next", "top-k by item assignment into the caller's logits when temperature is 1 (nanoGPT's style)",
        variant(variant(_SAMPLE, "    logits = logits.float() / temperature\n",
                        "    if temperature != 1.0:\n        logits = logits.float() / temperature\n"),
                "logits = logits.masked_fill(logits < kth, float(\"-inf\"))", "logits[logits < kth] = float(\"-inf\")")),
    Bug("sample_next", "draws by inverse CDF from the generator's torch.rand, not torch.multinomial",
        variant(_SAMPLE, "    return torch.multinomial(probs, 1, generator=generator)[:, 0]\n",
                "    u = torch.rand(probs.shape[0], 1, generator=generator, dtype=torch.float64)\n"
                "    return (probs.double().cumsum(dim=-1) < u).sum(dim=-1).clamp(max=probs.shape[-1] - 1)\n")),
    Bug("sample_next", "generator not passed to torch.multinomial",
        variant(_SAMPLE, "torch.multinomial(probs, 1, generator=generator)", "torch.multinomial(probs, 1)")),
    Bug("sample_next", "squeezes the result: a batch of one gives a 0-d tensor",
        variant(_SAMPLE, "torch.multinomial(probs, 1, generator=generator)[:, 0]", "torch.multinomial(probs, 1, generator=generator).squeeze()")),
    Bug("sample_next", "returns int32 token ids",
        variant(_SAMPLE, "torch.multinomial(probs, 1, generator=generator)[:, 0]", "torch.multinomial(probs, 1, generator=generator)[:, 0].int()")),
]

# ----------------------------------------------------------------------------------------------- generate
_GENERATE = '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, use_cache=True, generator=None):
    caches = [KVCache() for _ in model.blocks] if use_cache else None
    out, step_input = prompt, prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(step_input, caches=caches)[:, -1]
            token = sample_next(logits, temperature, top_k, top_p, generator)[:, None]
            out = torch.cat([out, token], dim=1)
            step_input = token if use_cache else out
    return out
'''
_GENERATE_BUGS = [
    Bug("generate", "feeds the whole sequence through the cache at every step",
        variant(_GENERATE, "step_input = token if use_cache else out", "step_input = out")),
    Bug("generate", "samples from the first position's logits", variant(_GENERATE, "caches=caches)[:, -1]", "caches=caches)[:, 0]")),
    Bug("generate", "temperature and filters not passed to sample_next",
        variant(_GENERATE, "sample_next(logits, temperature, top_k, top_p, generator)", "sample_next(logits)")),
    Bug("generate", "returns only the new tokens", variant(_GENERATE, "    return out\n", "    return out[:, prompt.shape[1]:]\n")),
    Bug("generate", "temperature applied twice: logits divided before sample_next divides again",
        variant(_GENERATE, "logits = model(step_input, caches=caches)[:, -1]",
                "logits = model(step_input, caches=caches)[:, -1] / (temperature or 1.0)")),
    Bug("generate", "generator not passed on to sample_next",
        variant(_GENERATE, "sample_next(logits, temperature, top_k, top_p, generator)", "sample_next(logits, temperature, top_k, top_p)")),
    Bug("generate", "without the cache feeds only the last token",
        variant(_GENERATE, "step_input = token if use_cache else out", "step_input = token")),
]

# ----------------------------------------------------------------------------------------------- configure_optimizer
_OPT_BODY = '''    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay = [p for p in model.parameters() if p.dim() >= 2 and id(p) not in embeddings]
    no_decay = [p for p in model.parameters() if p.dim() < 2 or id(p) in embeddings]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
'''
_OPT = "\ndef configure_optimizer(model, lr, weight_decay):\n" + _OPT_BODY
_OPT_BUGS = [
    Bug("configure_optimizer", "weight decay on every parameter",
        variant(_OPT, _OPT_BODY, "    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)\n")),
    Bug("configure_optimizer", "embeddings decayed too (every matrix)",
        variant(variant(_OPT, "p.dim() >= 2 and id(p) not in embeddings", "p.dim() >= 2"),
                "p.dim() < 2 or id(p) in embeddings", "p.dim() < 2")),
    Bug("configure_optimizer", "weight decay on LayerNorm/RMSNorm weights (every 'weight')",
        variant(_OPT, _OPT_BODY,
                "    decay = [p for n, p in model.named_parameters() if n.endswith('weight') and 'embed' not in n]\n"
                "    rest = [p for n, p in model.named_parameters() if not (n.endswith('weight') and 'embed' not in n)]\n"
                "    return torch.optim.AdamW([{'params': decay, 'weight_decay': weight_decay}, {'params': rest, 'weight_decay': 0.0}], lr=lr)\n")),
    Bug("configure_optimizer", "Adam instead of AdamW",
        variant(_OPT, "return torch.optim.AdamW(", "return torch.optim.Adam(")),
    Bug("configure_optimizer", "a tied matrix listed twice (through every module's weight)",
        variant(_OPT, _OPT_BODY,
                "    decay = [m.weight for m in model.modules() if isinstance(m, nn.Linear)]\n"
                "    rest = [p for p in model.parameters() if p.dim() < 2] + [m.weight for m in model.modules() if isinstance(m, nn.Embedding)]\n"
                "    return torch.optim.AdamW([{'params': decay, 'weight_decay': weight_decay}, {'params': rest, 'weight_decay': 0.0}], lr=lr)\n")),
]

# ----------------------------------------------------------------------------------------------- cosine_lr
_COSINE = '''
def cosine_lr(step, max_lr, warmup, total, min_lr):
    if step < warmup:
        return max_lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / (total - warmup)
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)
'''
_COSINE_BUGS = [
    Bug("cosine_lr", "warm-up off by one: step / warmup (0 at the first step)",
        variant(_COSINE, "max_lr * (step + 1) / warmup", "max_lr * step / warmup")),
    Bug("cosine_lr", "cosine over all steps, not from the end of the warm-up",
        variant(_COSINE, "progress = (step - warmup) / (total - warmup)", "progress = step / total")),
    Bug("cosine_lr", "decays to 0, min_lr ignored",
        variant(_COSINE, "return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)",
                "return 0.5 * (1 + math.cos(math.pi * progress)) * max_lr")),
    Bug("cosine_lr", "returns a 0-d tensor after the warm-up (torch.cos)",
        variant(_COSINE, "0.5 * (1 + math.cos(math.pi * progress))", "0.5 * (1 + torch.cos(torch.tensor(math.pi * progress)))")),
    Bug("cosine_lr", "a straight line from max_lr to min_lr instead of half a cosine",
        variant(_COSINE, "return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)",
                "return max_lr - progress * (max_lr - min_lr)")),
    Bug("cosine_lr", "after total the cosine climbs again",
        variant(_COSINE, "    if step >= total:\n        return min_lr\n", "")),
]

# ----------------------------------------------------------------------------------------------- train_step
_STEP = '''
def train_step(model, batch, optimizer, clip):
    x, y = batch
    optimizer.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()
'''
_STEP_BUGS = [
    Bug("train_step", "clips after the step",
        variant(_STEP, "    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)\n    optimizer.step()\n",
                "    optimizer.step()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)\n")),
    Bug("train_step", "gradients never zeroed", variant(_STEP, "    optimizer.zero_grad()\n", "")),
    Bug("train_step", "loss summed over positions instead of averaged",
        variant(_STEP, "y.reshape(-1))", "y.reshape(-1), reduction='sum')")),
    Bug("train_step", "clips each value instead of the global norm",
        variant(_STEP, "clip_grad_norm_(model.parameters(), clip)", "clip_grad_value_(model.parameters(), clip)")),
    Bug("train_step", "returns the loss tensor", variant(_STEP, "return loss.item()", "return loss")),
    Bug("train_step", "predicts the input instead of the next token",
        variant(_STEP, "y.reshape(-1))", "x.reshape(-1))")),
]

# ----------------------------------------------------------------------------------------------- train_bpe
_TRAIN_BPE = '''
def train_bpe(text, n_merges):
    ids = list(text.encode("utf-8"))
    merges = []
    for i in range(n_merges):
        counts = {}
        for pair in zip(ids, ids[1:]):
            counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], pair))
        merged, j = [], 0
        while j < len(ids):
            if j + 1 < len(ids) and (ids[j], ids[j + 1]) == best:
                merged.append(256 + i)
                j += 2
            else:
                merged.append(ids[j])
                j += 1
        ids = merged
        merges.append(best)
    return merges
'''
_TRAIN_BPE_BUGS = [
    Bug("train_bpe", "ties broken towards the largest pair",
        variant(_TRAIN_BPE, "min(counts, key=lambda pair: (-counts[pair], pair))",
                "max(counts, key=lambda pair: (counts[pair], pair))")),
    Bug("train_bpe", "ties broken by first occurrence in the text (dict order)",
        variant(_TRAIN_BPE, "min(counts, key=lambda pair: (-counts[pair], pair))",
                "max(counts, key=counts.get)")),
    Bug("train_bpe", "overlapping pairs counted once ('aaa' holds (a, a) once)",
        variant(_TRAIN_BPE, '''        for pair in zip(ids, ids[1:]):
            counts[pair] = counts.get(pair, 0) + 1
''', '''        k = 0
        while k + 1 < len(ids):
            pair = (ids[k], ids[k + 1])
            counts[pair] = counts.get(pair, 0) + 1
            k += 2 if ids[k] == ids[k + 1] else 1
''')),
    Bug("train_bpe", "off by one: the last pair of the sequence never counted",
        variant(_TRAIN_BPE, "for pair in zip(ids, ids[1:]):", "for pair in zip(ids[:-1], ids[1:-1]):")),
    Bug("train_bpe", "merges right to left ('aaa' becomes [a, X])",
        variant(_TRAIN_BPE, '''        merged, j = [], 0
        while j < len(ids):
            if j + 1 < len(ids) and (ids[j], ids[j + 1]) == best:
                merged.append(256 + i)
                j += 2
            else:
                merged.append(ids[j])
                j += 1
        ids = merged
''', '''        merged, j = [], len(ids) - 1
        while j >= 0:
            if j >= 1 and (ids[j - 1], ids[j]) == best:
                merged.append(256 + i)
                j -= 2
            else:
                merged.append(ids[j])
                j -= 1
        ids = merged[::-1]
''')),
    Bug("train_bpe", "characters' code points instead of UTF-8 bytes",
        variant(_TRAIN_BPE, 'ids = list(text.encode("utf-8"))', "ids = [ord(c) for c in text]")),
    Bug("train_bpe", "new tokens numbered from 255",
        variant(_TRAIN_BPE, "merged.append(256 + i)", "merged.append(255 + i)")),
]

# ----------------------------------------------------------------------------------------------- bpe_encode
_BPE_ENCODE = '''
def bpe_encode(text, merges):
    ids = list(text.encode("utf-8"))
    for i, pair in enumerate(merges):
        merged, j = [], 0
        while j < len(ids):
            if j + 1 < len(ids) and (ids[j], ids[j + 1]) == tuple(pair):
                merged.append(256 + i)
                j += 2
            else:
                merged.append(ids[j])
                j += 1
        ids = merged
    return ids
'''
_BPE_ENCODE_BUGS = [
    Bug("bpe_encode", "merges applied out of order: the leftmost pair that is a merge first",
        variant(_BPE_ENCODE, '''    for i, pair in enumerate(merges):
        merged, j = [], 0
        while j < len(ids):
            if j + 1 < len(ids) and (ids[j], ids[j + 1]) == tuple(pair):
                merged.append(256 + i)
                j += 2
            else:
                merged.append(ids[j])
                j += 1
        ids = merged
''', '''    rank = {tuple(pair): i for i, pair in enumerate(merges)}
    while True:
        at = next((j for j in range(len(ids) - 1) if (ids[j], ids[j + 1]) in rank), None)
        if at is None:
            break
        ids[at:at + 2] = [256 + rank[(ids[at], ids[at + 1])]]
''')),
    Bug("bpe_encode", "merges applied in reverse order",
        variant(_BPE_ENCODE, "for i, pair in enumerate(merges):", "for i, pair in reversed(list(enumerate(merges))):")),
    Bug("bpe_encode", "encodes code points (ord of each character), not UTF-8 bytes",
        variant(_BPE_ENCODE, 'ids = list(text.encode("utf-8"))', "ids = [ord(c) for c in text]")),
    Bug("bpe_encode", "merged ids mapped to their bytes and back through a bytes -> id table (two tokens may share bytes)",
        variant(_BPE_ENCODE, "    return ids\n", '''    pieces = [bytes([b]) for b in range(256)]
    for left, right in merges:
        pieces.append(pieces[left] + pieces[right])
    id_of = {piece: t for t, piece in enumerate(pieces)}
    return [id_of[pieces[t]] for t in ids]
''')),
    Bug("bpe_encode", "overlapping occurrences all merged ('aaa' becomes [X, X])",
        variant(_BPE_ENCODE, '''                merged.append(256 + i)
                j += 2''', '''                merged.append(256 + i)
                j += 2 if j + 2 >= len(ids) or (ids[j + 1], ids[j + 2]) != tuple(pair) else 1''')),
]

# ----------------------------------------------------------------------------------------------- bpe_decode
_BPE_DECODE = '''
def bpe_decode(ids, merges):
    pieces = [bytes([b]) for b in range(256)]
    for left, right in merges:
        pieces.append(pieces[left] + pieces[right])
    return b"".join(pieces[t] for t in ids).decode("utf-8", errors="replace")
'''
_BPE_DECODE_BUGS = [
    Bug("bpe_decode", "each token decoded on its own (a split character becomes U+FFFD)",
        variant(_BPE_DECODE, 'return b"".join(pieces[t] for t in ids).decode("utf-8", errors="replace")',
                'return "".join(pieces[t].decode("utf-8", errors="replace") for t in ids)')),
    Bug("bpe_decode", "strict UTF-8: invalid bytes raise",
        variant(_BPE_DECODE, '.decode("utf-8", errors="replace")', '.decode("utf-8")')),
    Bug("bpe_decode", "Latin-1 instead of UTF-8",
        variant(_BPE_DECODE, '.decode("utf-8", errors="replace")', '.decode("latin-1")')),
    Bug("bpe_decode", "read as 'utf-8-sig': a leading byte-order mark dropped",
        variant(_BPE_DECODE, '.decode("utf-8", errors="replace")', '.decode("utf-8-sig", errors="replace")')),
    Bug("bpe_decode", "invalid bytes dropped (errors='ignore')",
        variant(_BPE_DECODE, 'errors="replace"', 'errors="ignore"')),
    Bug("bpe_decode", "a merge's halves joined in the wrong order",
        variant(_BPE_DECODE, "pieces[left] + pieces[right]", "pieces[right] + pieces[left]")),
]

# ----------------------------------------------------------------------------------------------- training_mfu
_MFU = '''
def training_mfu(n_params, n_tokens, n_gpus, days, peak_flops):
    needed = 6 * n_params * n_tokens
    available = n_gpus * peak_flops * days * 24 * 3600
    return float(needed / available)
'''
_MFU_BUGS = [
    Bug("training_mfu", "the forward pass only: 2ND", variant(_MFU, "needed = 6 * n_params", "needed = 2 * n_params")),
    Bug("training_mfu", "one backward product per forward one: 4ND",
        variant(_MFU, "needed = 6 * n_params", "needed = 4 * n_params")),
    Bug("training_mfu", "days taken as hours", variant(_MFU, "days * 24 * 3600", "days * 3600")),
    Bug("training_mfu", "the peak of one GPU for the whole cluster", variant(_MFU, "n_gpus * peak_flops", "peak_flops")),
    Bug("training_mfu", "a NumPy float32 (not a Python float; 7 significant digits)",
        variant(_MFU, "return float(needed / available)", "return np.float32(needed / available)")),
    Bug("training_mfu", "a percentage instead of a fraction",
        variant(_MFU, "return float(needed / available)", "return float(100 * needed / available)")),
]

# ----------------------------------------------------------------------------------------------- compute_optimal
_OPTIMAL = '''
def compute_optimal(flops, tokens_per_param):
    n_params = math.sqrt(flops / (6 * tokens_per_param))
    return float(n_params), float(tokens_per_param * n_params)
'''
_OPTIMAL_BUGS = [
    Bug("compute_optimal", "the forward pass only: C = 2ND", variant(_OPTIMAL, "(6 * tokens_per_param)", "(2 * tokens_per_param)")),
    Bug("compute_optimal", "no square root: N = C / 6r",
        variant(_OPTIMAL, "math.sqrt(flops / (6 * tokens_per_param))", "flops / (6 * tokens_per_param)")),
    Bug("compute_optimal", "the ratio outside the root: N = sqrt(C / 6) / r",
        variant(_OPTIMAL, "math.sqrt(flops / (6 * tokens_per_param))", "math.sqrt(flops / 6) / tokens_per_param")),
    Bug("compute_optimal", "tokens first, then parameters",
        variant(_OPTIMAL, "return float(n_params), float(tokens_per_param * n_params)",
                "return float(tokens_per_param * n_params), float(n_params)")),
    Bug("compute_optimal", "the ratio read upside down: D = N / r",
        variant(_OPTIMAL, "float(tokens_per_param * n_params)", "float(n_params / tokens_per_param)")),
    Bug("compute_optimal", "rounded to whole parameters and tokens (ints)",
        variant(_OPTIMAL, "return float(n_params), float(tokens_per_param * n_params)",
                "return round(n_params), round(tokens_per_param * n_params)")),
]

# ----------------------------------------------------------------------------------------------- model_state_bytes
_STATE = '''
def model_state_bytes(n_params, n_gpus, zero_stage):
    weights, gradients, optimizer = 2 * n_params, 2 * n_params, 12 * n_params
    if zero_stage >= 1:
        optimizer /= n_gpus
    if zero_stage >= 2:
        gradients /= n_gpus
    if zero_stage >= 3:
        weights /= n_gpus
    return float(weights + gradients + optimizer)
'''
_STATE_BUGS = [
    Bug("model_state_bytes", "stage 1 shards the gradients too", variant(_STATE, "if zero_stage >= 2:", "if zero_stage >= 1:")),
    Bug("model_state_bytes", "no fp32 master copy of the weights: K = 8",
        variant(_STATE, "12 * n_params", "8 * n_params")),
    Bug("model_state_bytes", "fp32 gradients: 4 bytes each",
        variant(_STATE, "2 * n_params, 2 * n_params, 12", "2 * n_params, 4 * n_params, 12")),
    Bug("model_state_bytes", "stage 3 keeps the weights whole",
        variant(_STATE, "        weights /= n_gpus\n", "        pass\n")),
    Bug("model_state_bytes", "everything split across the GPUs at every stage, stage 0 included",
        variant(_STATE, "return float(weights + gradients + optimizer)", "return float(16 * n_params / n_gpus)")),
    Bug("model_state_bytes", "gigabytes instead of bytes",
        variant(_STATE, "return float(weights + gradients + optimizer)", "return float((weights + gradients + optimizer) / 1e9)")),
    Bug("model_state_bytes", "bytes as a NumPy float32 (not a Python float; 7 significant digits)",
        variant(_STATE, "return float(weights + gradients + optimizer)", "return np.float32(weights + gradients + optimizer)")),
]

TEMPLATES = {"RMSNorm": _RMS, "SwiGLU": _SWIGLU, "CausalSelfAttention": _ATTN, "GPTBlock": _BLOCK, "GPT": _GPT,
             "sample_next": _SAMPLE, "generate": _GENERATE, "configure_optimizer": _OPT, "cosine_lr": _COSINE,
             "train_step": _STEP, "train_bpe": _TRAIN_BPE, "bpe_encode": _BPE_ENCODE, "bpe_decode": _BPE_DECODE,
             "training_mfu": _MFU, "compute_optimal": _OPTIMAL, "model_state_bytes": _STATE}

BUGS = (_RMS_BUGS + _SWIGLU_BUGS + _ATTN_BUGS + _BLOCK_BUGS + _GPT_BUGS + _SAMPLE_BUGS + _GENERATE_BUGS + _OPT_BUGS
        + _COSINE_BUGS + _STEP_BUGS + _TRAIN_BPE_BUGS + _BPE_ENCODE_BUGS + _BPE_DECODE_BUGS
        + _MFU_BUGS + _OPTIMAL_BUGS + _STATE_BUGS)
