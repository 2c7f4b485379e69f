"""Correct implementations of notebook 01's graded names in other styles; each must pass every graded cell."""
from tests.alternatives import Alternative

ALTERNATIVES = [
    # ------------------------------------------------------------------ rnn_cell_step
    Alternative("rnn_cell_step", "einsum, float64 inside then cast back", '''
def rnn_cell_step(x_t, h_prev, W_e, W_h, b):
    pre = torch.einsum("bi,ih->bh", x_t.double(), W_e.double()) + torch.einsum("bj,jh->bh", h_prev.double(), W_h.double())
    return torch.tanh(pre + b.double()).to(x_t.dtype)
'''),
    Alternative("rnn_cell_step", "one matmul on the concatenation, addmm", '''
def rnn_cell_step(x_t, h_prev, W_e, W_h, b):
    return torch.addmm(b, torch.cat([x_t, h_prev], dim=1), torch.cat([W_e, W_h], dim=0)).tanh()
'''),
    # ------------------------------------------------------------------ rnn_forward
    Alternative("rnn_forward", "the pair as a list, states collected by a while loop", '''
def rnn_forward(xs, h0, W_e, W_h, b):
    states, h, t = [], h0, 0
    while t < xs.shape[1]:
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
        states.append(h)
        t += 1
    return [torch.stack(states, dim=1), h]
'''),
    Alternative("rnn_forward", "preallocated output, input projection hoisted out of the loop", '''
def rnn_forward(xs, h0, W_e, W_h, b):
    B, T, _ = xs.shape
    projected = xs @ W_e + b                       # (B, T, d_h), no dependence on the state
    hs = xs.new_empty(B, T, h0.shape[1])
    h = h0
    for t in range(T):
        h = torch.tanh(projected[:, t] + h @ W_h)
        hs[:, t] = h
    return hs, h
'''),
    Alternative("rnn_forward", "unbind over time, rnn_cell_step, list comprehension of states", '''
def rnn_forward(xs, h0, W_e, W_h, b):
    states, h = [], h0
    for x_t in xs.unbind(dim=1):
        h = rnn_cell_step(x_t, h, W_e, W_h, b)
        states += [h]
    return torch.stack(states, 1), states[-1] if states else h0
'''),
    # ------------------------------------------------------------------ ElmanRNNLM
    Alternative("ElmanRNNLM", "modules created in reverse order, extra keyword", '''
class ElmanRNNLM(nn.Module):
    def __init__(self, vocab_size, d_emb, d_hidden, dropout=0.0):
        super().__init__()
        self.out = nn.Linear(d_hidden, vocab_size)
        self.rnn = nn.RNN(d_emb, d_hidden, batch_first=True)
        self.embedding = nn.Embedding(vocab_size, d_emb)
        self.drop = nn.Dropout(dropout)

    def forward(self, tokens):
        output, _ = self.rnn(self.drop(self.embedding(tokens)))
        return self.out(self.drop(output))
'''),
    Alternative("ElmanRNNLM", "explicit zero initial state, F.linear", '''
class ElmanRNNLM(nn.Module):
    def __init__(self, vocab_size: int, d_emb: int, d_hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_emb)
        self.rnn = nn.RNN(input_size=d_emb, hidden_size=d_hidden, num_layers=1, nonlinearity="tanh", batch_first=True)
        self.out = nn.Linear(d_hidden, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h0 = torch.zeros(1, tokens.shape[0], self.rnn.hidden_size)
        hs, _ = self.rnn(self.embedding(tokens), h0)
        return F.linear(hs, self.out.weight, self.out.bias)
'''),
    # ------------------------------------------------------------------ perplexity
    Alternative("perplexity", "float64 log-sum-exp by hand, masked sum / count", '''
def perplexity(logits, targets, pad_id=PAD_ID):
    x = logits.double()
    log_z = torch.logsumexp(x, dim=-1)
    picked = x.gather(-1, targets[..., None]).squeeze(-1)
    real = (targets != pad_id).double()
    return math.exp(((log_z - picked) * real).sum().item() / real.sum().item())
'''),
    Alternative("perplexity", "numpy", '''
def perplexity(logits, targets, pad_id=0):
    x = logits.detach().double().numpy()
    t = targets.numpy()
    m = x.max(-1, keepdims=True)
    logp = x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, t[..., None], axis=-1)[..., 0]
    return float(np.exp(nll[t != pad_id].mean()))
'''),
    # ------------------------------------------------------------------ Seq2SeqRNN
    Alternative("Seq2SeqRNN", "modules created in another order, a helper for the recurrent layers", '''
def _recurrent(cfg):
    kind = {"gru": nn.GRU, "rnn": nn.RNN}[cfg.cell]
    return kind(cfg.d_emb, cfg.d_hidden, num_layers=cfg.n_layers, batch_first=True,
                dropout=cfg.dropout if cfg.n_layers > 1 else 0.0)

class Seq2SeqRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(cfg.d_hidden, cfg.tgt_vocab_size)
        self.decoder = _recurrent(cfg)
        self.encoder = _recurrent(cfg)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, cfg.d_emb, padding_idx=PAD_ID)

    def encode(self, src, src_lengths=None):
        lengths = src.ne(PAD_ID).sum(-1) if src_lengths is None else src_lengths
        packed = pack_padded_sequence(self.drop(self.src_embedding(src)), lengths.clamp(min=1).cpu(),
                                      batch_first=True, enforce_sorted=False)
        return self.encoder(packed)[1]

    def decode(self, tgt_in, state):
        outputs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state)
        return self.out(self.drop(outputs)), state

    def forward(self, src, tgt_in, src_lengths=None):
        return self.decode(tgt_in, self.encode(src, src_lengths))[0]
'''),
    Alternative("Seq2SeqRNN", "sorts the batch itself (enforce_sorted=True) and unsorts the state", '''
class Seq2SeqRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        rnn = nn.GRU if cfg.cell == "gru" else nn.RNN
        between = cfg.dropout if cfg.n_layers > 1 else 0.0
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.encoder = rnn(cfg.d_emb, cfg.d_hidden, cfg.n_layers, batch_first=True, dropout=between)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.decoder = rnn(cfg.d_emb, cfg.d_hidden, cfg.n_layers, batch_first=True, dropout=between)
        self.out = nn.Linear(cfg.d_hidden, cfg.tgt_vocab_size)
        self.drop = nn.Dropout(cfg.dropout)

    def encode(self, src, src_lengths=None):
        if src_lengths is None:
            src_lengths = (src != PAD_ID).sum(dim=1)
        lengths, order = src_lengths.clamp(min=1).sort(descending=True)
        emb = self.drop(self.src_embedding(src[order]))
        _, h = self.encoder(pack_padded_sequence(emb, lengths.cpu(), batch_first=True))
        return h[:, order.argsort()]

    def decode(self, tgt_in, state):
        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state.contiguous())
        return self.out(self.drop(hs)), state

    def forward(self, src, tgt_in, src_lengths=None):
        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits
'''),
    Alternative("Seq2SeqRNN", "no dropout module and no padding_idx (free: the checks use dropout 0)", '''
class Seq2SeqRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        rnn = nn.GRU if cfg.cell == "gru" else nn.RNN
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, cfg.d_emb)
        self.encoder = rnn(cfg.d_emb, cfg.d_hidden, num_layers=cfg.n_layers, batch_first=True)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.d_emb)
        self.decoder = rnn(cfg.d_emb, cfg.d_hidden, num_layers=cfg.n_layers, batch_first=True)
        self.out = nn.Linear(cfg.d_hidden, cfg.tgt_vocab_size)

    def encode(self, src, src_lengths=None):
        lengths = (src != PAD_ID).sum(dim=1) if src_lengths is None else src_lengths
        packed = pack_padded_sequence(self.src_embedding(src), lengths.clamp(min=1).cpu(), batch_first=True,
                                      enforce_sorted=False)
        return self.encoder(packed)[1]

    def decode(self, tgt_in, state):
        hs, state = self.decoder(self.tgt_embedding(tgt_in), state)
        return self.out(hs), state

    def forward(self, src, tgt_in, src_lengths=None):
        return self.decode(tgt_in, self.encode(src, src_lengths))[0]
'''),
    # ------------------------------------------------------------------ greedy_decode
    Alternative("greedy_decode", "restores the caller's train/eval mode", '''
def greedy_decode(model, src, max_len):
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            state = model.encode(src)
            token = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long)
            finished = torch.zeros(src.shape[0], dtype=torch.bool)
            out = []
            for _ in range(max_len):
                logits, state = model.decode(token, state)
                nxt = torch.where(finished, torch.full_like(logits[:, -1, 0], PAD_ID, dtype=torch.long),
                                  logits[:, -1].argmax(-1))
                out.append(nxt)
                finished = finished | (nxt == EOS_ID)
                token = nxt[:, None]
                if finished.all():
                    break
        return torch.stack(out, 1) if out else torch.empty(src.shape[0], 0, dtype=torch.long)
    finally:
        model.train(was_training)
'''),
    Alternative("greedy_decode", "a preallocated buffer filled with PAD_ID, a while loop", '''
def greedy_decode(model, src, max_len, bos_id=BOS_ID):
    model.eval()
    B = src.size(0)
    ys = torch.full((B, max_len), PAD_ID, dtype=torch.long, device=src.device)
    with torch.no_grad():
        state, token = model.encode(src), torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        alive, t = torch.ones(B, dtype=torch.bool, device=src.device), 0
        while t < max_len and bool(alive.any()):
            logits, state = model.decode(token, state)
            nxt = logits[:, -1].argmax(dim=-1)
            ys[alive, t] = nxt[alive]
            alive = alive & (nxt != EOS_ID)
            token = ys[:, t : t + 1].clone()
            t += 1
    return ys[:, :t]
'''),
    # ------------------------------------------------------------------ elman_lm_parameter_count
    Alternative("elman_lm_parameter_count", "shapes listed as in named_parameters, math.prod", '''
def elman_lm_parameter_count(vocab_size, d_emb, d_hidden):
    shapes = {
        "embedding.weight": (vocab_size, d_emb),
        "rnn.weight_ih_l0": (d_hidden, d_emb), "rnn.weight_hh_l0": (d_hidden, d_hidden),
        "rnn.bias_ih_l0": (d_hidden,), "rnn.bias_hh_l0": (d_hidden,),
        "out.weight": (vocab_size, d_hidden), "out.bias": (vocab_size,),
    }
    return sum(math.prod(shape) for shape in shapes.values())
'''),
    Alternative("elman_lm_parameter_count", "factored by vocabulary and state, numpy integers", '''
def elman_lm_parameter_count(vocab_size, d_emb, d_hidden):
    per_token = np.int64(d_emb + d_hidden + 1)          # a row of E, a column of U and one bias of b_2
    per_unit = np.int64(d_emb + d_hidden + 2)           # a column of W_e and of W_h, and two biases
    return int(vocab_size * per_token + d_hidden * per_unit)
'''),
    # ------------------------------------------------------------------ vanishing_distance
    Alternative("vanishing_distance", "running product, extra keyword for a starting distance", '''
def vanishing_distance(sigma, threshold, start=1):
    k, bound = start, sigma ** start
    while not bound < threshold:
        bound *= sigma
        k += 1
    return k
'''),
    Alternative("vanishing_distance", "numpy logarithms, int() of the quotient plus one", '''
def vanishing_distance(sigma, threshold):
    ratio = np.log(threshold) / np.log(sigma)   # sigma**k < threshold  <=>  k > ratio
    return max(1, int(ratio) + 1)
'''),
    Alternative("vanishing_distance", "math.log with a base, ceil and an equality fix", '''
def vanishing_distance(sigma, threshold):
    k = max(1, math.ceil(math.log(threshold, sigma)))
    return k + 1 if sigma ** k >= threshold else k
'''),
]
