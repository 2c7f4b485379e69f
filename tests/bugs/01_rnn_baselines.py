"""Plausible wrong implementations of notebook 01's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``pack_padded_sequence``, ``PAD_ID``/``BOS_ID``/``EOS_ID`` and the (correct) ``rnn_cell_step`` exist.
``TEMPLATES`` holds the correct code of each target; every bug is its template with one mistake
substituted in (``variant``), so it differs from correct code by exactly that mistake.
"""
from tests.bugs import Bug, variant

# ----------------------------------------------------------------------------- rnn_cell_step
_CELL = '''
def rnn_cell_step(x_t, h_prev, W_e, W_h, b):
    return torch.tanh(x_t @ W_e + h_prev @ W_h + b)
'''
_CELL_BUGS = [
    Bug("rnn_cell_step", "sigmoid instead of tanh", variant(_CELL, "torch.tanh(", "torch.sigmoid(")),
    Bug("rnn_cell_step", "ReLU instead of tanh", variant(_CELL, "torch.tanh(", "torch.relu(")),
    Bug("rnn_cell_step", "bias forgotten", variant(_CELL, "h_prev @ W_h + b)", "h_prev @ W_h)")),
    Bug("rnn_cell_step", "W_h transposed", variant(_CELL, "h_prev @ W_h + b", "h_prev @ W_h.T + b")),
    Bug("rnn_cell_step", "previous state ignored", variant(_CELL, " + h_prev @ W_h", "")),
    Bug("rnn_cell_step", "no nonlinearity",
        variant(_CELL, "torch.tanh(x_t @ W_e + h_prev @ W_h + b)", "x_t @ W_e + h_prev @ W_h + b")),
]

# ----------------------------------------------------------------------------- rnn_forward
_FORWARD = '''
def rnn_forward(xs, h0, W_e, W_h, b):
    h = h0
    states = []
    for t in range(xs.shape[1]):
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
        states.append(h)
    return torch.stack(states, dim=1), h
'''
_FORWARD_BUGS = [
    Bug("rnn_forward", "h0 ignored, starts from zeros", variant(_FORWARD, "h = h0", "h = torch.zeros_like(h0)")),
    Bug("rnn_forward", "states shifted by one: h0 kept, last state dropped",
        variant(_FORWARD, "        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)\n        states.append(h)\n",
                "        states.append(h)\n        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)\n")),
    Bug("rnn_forward", "h_T is the first state, not the last",
        variant(_FORWARD, "return torch.stack(states, dim=1), h", "return torch.stack(states, dim=1), states[0]")),
    Bug("rnn_forward", "state never fed back (every step from h0)",
        variant(_FORWARD, "rnn_cell_step(xs[:, t], h, W_e", "rnn_cell_step(xs[:, t], h0, W_e")),
    Bug("rnn_forward", "last time step dropped",
        variant(variant(_FORWARD, "range(xs.shape[1])", "range(xs.shape[1] - 1)"),
                "return torch.stack(states, dim=1), h",
                "return torch.stack(states, dim=1) if states else xs.new_zeros(xs.shape[0], 0, h0.shape[1]), h")),
    Bug("rnn_forward", "time read backwards", variant(_FORWARD, "range(xs.shape[1])", "reversed(range(xs.shape[1]))")),
]

# ----------------------------------------------------------------------------- ElmanRNNLM
_LM = '''
class ElmanRNNLM(nn.Module):
    def __init__(self, vocab_size, d_emb, d_hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_emb)
        self.rnn = nn.RNN(d_emb, d_hidden, batch_first=True)
        self.out = nn.Linear(d_hidden, vocab_size)

    def forward(self, tokens):
        hs, _ = self.rnn(self.embedding(tokens))
        return self.out(hs)
'''
_LM_BUGS = [
    Bug("ElmanRNNLM", "output layer skipped", variant(_LM, "return self.out(hs)", "return hs")),
    Bug("ElmanRNNLM", "softmax applied to the logits",
        variant(_LM, "return self.out(hs)", "return torch.softmax(self.out(hs), dim=-1)")),
    Bug("ElmanRNNLM", "nn.RNN without batch_first", variant(_LM, "d_hidden, batch_first=True)", "d_hidden)")),
    Bug("ElmanRNNLM", "ReLU recurrence", variant(_LM, "batch_first=True)", "batch_first=True, nonlinearity='relu')")),
    Bug("ElmanRNNLM", "tanh on the logits", variant(_LM, "return self.out(hs)", "return torch.tanh(self.out(hs))")),
    # contract edge: the table's modules hold the only parameters (the grader compares them all)
    Bug("ElmanRNNLM", "a learned initial state, an extra parameter starting at zeros",
        variant(variant(_LM, "        self.out = nn.Linear(d_hidden, vocab_size)\n",
                        "        self.out = nn.Linear(d_hidden, vocab_size)\n"
                        "        self.h0 = nn.Parameter(torch.zeros(1, 1, d_hidden))\n"),
                "self.rnn(self.embedding(tokens))",
                "self.rnn(self.embedding(tokens), self.h0.expand(1, tokens.shape[0], -1).contiguous())")),
]

# ----------------------------------------------------------------------------- perplexity
_PPL = '''
def perplexity(logits, targets, pad_id=PAD_ID):
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    real = targets != pad_id
    return float(torch.exp(nll[real].mean()))
'''
_PPL_BUGS = [
    Bug("perplexity", "padding averaged in", variant(_PPL, "nll[real].mean()", "nll.mean()")),
    Bug("perplexity", "exp forgotten (returns the cross-entropy)",
        variant(_PPL, "float(torch.exp(nll[real].mean()))", "float(nll[real].mean())")),
    Bug("perplexity", "base 2 instead of e", variant(_PPL, "torch.exp(nll[real].mean())", "2 ** nll[real].mean()")),
    Bug("perplexity", "mean of per-sentence averages",
        variant(_PPL, "nll[real].mean()", "((nll * real).sum(1) / real.sum(1)).mean()")),
    Bug("perplexity", "padding zeroed but still counted in N",
        variant(_PPL, "nll[real].mean()", "(nll * real).sum() / real.numel()")),
    Bug("perplexity", "returns a tensor, not a float",
        variant(_PPL, "return float(torch.exp(nll[real].mean()))", "return torch.exp(nll[real].mean())")),
    Bug("perplexity", "masks PAD_ID, not the pad_id it is given", variant(_PPL, "targets != pad_id", "targets != PAD_ID")),
    Bug("perplexity", "shifts the caller's logits in place (logits -= max)",
        variant(_PPL, "    log_probs = torch.log_softmax(logits.float(), dim=-1)",
                "    logits -= logits.amax(dim=-1, keepdim=True)\n    log_probs = torch.log_softmax(logits.float(), dim=-1)")),
]

# ----------------------------------------------------------------------------- Seq2SeqRNN
_S2S = '''
class Seq2SeqRNN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        rnn_class = nn.GRU if cfg.cell == "gru" else nn.RNN
        between = cfg.dropout if cfg.n_layers > 1 else 0.0
        self.src_embedding = nn.Embedding(cfg.src_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.encoder = rnn_class(cfg.d_emb, cfg.d_hidden, num_layers=cfg.n_layers, batch_first=True, dropout=between)
        self.tgt_embedding = nn.Embedding(cfg.tgt_vocab_size, cfg.d_emb, padding_idx=PAD_ID)
        self.decoder = rnn_class(cfg.d_emb, cfg.d_hidden, num_layers=cfg.n_layers, batch_first=True, dropout=between)
        self.out = nn.Linear(cfg.d_hidden, cfg.tgt_vocab_size)
        self.drop = nn.Dropout(cfg.dropout)

    def encode(self, src, src_lengths=None):
        if src_lengths is None:
            src_lengths = (src != PAD_ID).sum(dim=1)
        emb = self.drop(self.src_embedding(src))
        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, h = self.encoder(packed)
        return h

    def decode(self, tgt_in, state):
        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state)
        return self.out(self.drop(hs)), state

    def forward(self, src, tgt_in, src_lengths=None):
        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits
'''
_S2S_BUGS = [
    Bug("Seq2SeqRNN", "decoder starts from zeros, not the encoder state",
        variant(_S2S, "self.tgt_embedding(tgt_in)), state)", "self.tgt_embedding(tgt_in)), torch.zeros_like(state))")),
    Bug("Seq2SeqRNN", "encoder runs over the padding",
        variant(_S2S, "        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True, "
                      "enforce_sorted=False)\n        _, h = self.encoder(packed)\n",
                "        _, h = self.encoder(emb)\n")),
    Bug("Seq2SeqRNN", "decoder input shifted left (sees the word it must predict)",
        variant(_S2S, "        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))\n",
                "        shifted = torch.cat([tgt_in[:, 1:], torch.full_like(tgt_in[:, :1], EOS_ID)], dim=1)\n"
                "        logits, _ = self.decode(shifted, self.encode(src, src_lengths))\n")),
    Bug("Seq2SeqRNN", "target words embedded with the source table",
        variant(_S2S, "self.drop(self.tgt_embedding(tgt_in))",
                "self.drop(self.src_embedding(tgt_in.clamp(max=self.cfg.src_vocab_size - 1)))")),
    Bug("Seq2SeqRNN", "log-softmax applied to the logits",
        variant(_S2S, "return self.out(self.drop(hs)), state",
                "return torch.log_softmax(self.out(self.drop(hs)), dim=-1), state")),
    Bug("Seq2SeqRNN", "source read from the first layer of a 2-layer encoder only",
        variant(_S2S, "self.tgt_embedding(tgt_in)), state)",
                "self.tgt_embedding(tgt_in)), state[:1].expand_as(state).contiguous())")),
    # contract edges: decode's new state, src_lengths, and no parameters beyond the table's
    Bug("Seq2SeqRNN", "decode returns the state it was given, not the decoder's new one",
        variant(_S2S, "        hs, state = self.decoder(", "        hs, _ = self.decoder(")),
    Bug("Seq2SeqRNN", "src_lengths ignored: always the non-pad counts",
        variant(_S2S, "        if src_lengths is None:\n            src_lengths = (src != PAD_ID).sum(dim=1)\n",
                "        src_lengths = (src != PAD_ID).sum(dim=1)\n")),
    Bug("Seq2SeqRNN", "an unused bridge layer left in: parameters beyond the table's",
        variant(_S2S, "        self.drop = nn.Dropout(cfg.dropout)\n",
                "        self.drop = nn.Dropout(cfg.dropout)\n        self.bridge = nn.Linear(cfg.d_hidden, cfg.d_hidden)\n")),
]

# ----------------------------------------------------------------------------- greedy_decode
_GREEDY = '''
def greedy_decode(model, src, max_len):
    model.eval()
    B = src.shape[0]
    with torch.no_grad():
        state = model.encode(src)
        token = torch.full((B, 1), BOS_ID, dtype=torch.long)
        finished = torch.zeros(B, dtype=torch.bool)
        out = []
        for _ in range(max_len):
            logits, state = model.decode(token, state)
            nxt = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD_ID)
            out.append(nxt)
            finished = finished | (nxt == EOS_ID)
            token = nxt.unsqueeze(1)
            if finished.all():
                break
    return torch.stack(out, dim=1)
'''
_NO_PAD = (".masked_fill(finished, PAD_ID)", "")
_NO_STOP = ("            if finished.all():\n                break\n", "")
_GREEDY_BUGS = [
    Bug("greedy_decode", "never stops at <eos> and never pads", variant(variant(_GREEDY, *_NO_PAD), *_NO_STOP)),
    Bug("greedy_decode", "feeds <bos> at every step instead of its prediction",
        variant(_GREEDY, "            token = nxt.unsqueeze(1)\n", "")),
    Bug("greedy_decode", "keeps <bos> in the output",
        variant(_GREEDY, "return torch.stack(out, dim=1)",
                "return torch.cat([torch.full((B, 1), BOS_ID), torch.stack(out, dim=1)], dim=1)")),
    Bug("greedy_decode", "no padding after <eos>", variant(_GREEDY, *_NO_PAD)),
    Bug("greedy_decode", "always runs max_len steps", variant(_GREEDY, *_NO_STOP)),
    Bug("greedy_decode", "one step short", variant(_GREEDY, "range(max_len)", "range(max_len - 1)")),
    Bug("greedy_decode", "int32 token ids (the text pins torch.long)",
        variant(_GREEDY, "return torch.stack(out, dim=1)", "return torch.stack(out, dim=1).int()")),
]

# ----------------------------------------------------------------------------- elman_lm_parameter_count
_COUNT = '''
def elman_lm_parameter_count(vocab_size, d_emb, d_hidden):
    embedding = vocab_size * d_emb
    rnn = d_emb * d_hidden + d_hidden * d_hidden + 2 * d_hidden
    out = d_hidden * vocab_size + vocab_size
    return embedding + rnn + out
'''
_COUNT_BUGS = [
    Bug("elman_lm_parameter_count", "one RNN bias vector, not nn.RNN's two", variant(_COUNT, "+ 2 * d_hidden", "+ d_hidden")),
    Bug("elman_lm_parameter_count", "output layer's bias forgotten",
        variant(_COUNT, "out = d_hidden * vocab_size + vocab_size", "out = d_hidden * vocab_size")),
    Bug("elman_lm_parameter_count", "W_h counted as d_emb x d_hidden",
        variant(_COUNT, "+ d_hidden * d_hidden +", "+ d_emb * d_hidden +")),
    Bug("elman_lm_parameter_count", "embedding tied to the output layer (not counted)",
        variant(_COUNT, "return embedding + rnn + out", "return rnn + out")),
    Bug("elman_lm_parameter_count", "RNN biases forgotten", variant(_COUNT, " + 2 * d_hidden\n", "\n")),
    # contract edges: the text pins a Python int
    Bug("elman_lm_parameter_count", "a float count (true division somewhere)",
        variant(_COUNT, "return embedding + rnn + out", "return float(embedding + rnn + out)")),
    Bug("elman_lm_parameter_count", "a NumPy integer", variant(_COUNT, "return embedding + rnn + out",
                                                              "return np.int64(embedding + rnn + out)")),
]

# ----------------------------------------------------------------------------- vanishing_distance
_VANISH = '''
def vanishing_distance(sigma, threshold):
    return math.floor(math.log(threshold) / math.log(sigma)) + 1
'''
_VANISH_BUGS = [
    Bug("vanishing_distance", "ceil: stops where sigma**k equals the threshold (<= instead of <)",
        variant(_VANISH, "math.floor(math.log(threshold) / math.log(sigma)) + 1",
                "math.ceil(math.log(threshold) / math.log(sigma))")),
    Bug("vanishing_distance", "floor without the + 1: the last distance not yet below",
        variant(_VANISH, "math.log(sigma)) + 1", "math.log(sigma))")),
    Bug("vanishing_distance", "logarithms swapped (log base threshold of sigma)",
        variant(_VANISH, "math.log(threshold) / math.log(sigma)", "math.log(sigma) / math.log(threshold)")),
    Bug("vanishing_distance", "log10 of the threshold over the natural log of sigma",
        variant(_VANISH, "math.log(threshold) /", "math.log10(threshold) /")),
    Bug("vanishing_distance", "a float: floor(...) + 1.0",
        variant(_VANISH, "math.log(sigma)) + 1", "math.log(sigma)) + 1.0")),
]

TEMPLATES = {"rnn_cell_step": _CELL, "rnn_forward": _FORWARD, "ElmanRNNLM": _LM, "perplexity": _PPL,
             "Seq2SeqRNN": _S2S, "greedy_decode": _GREEDY, "elman_lm_parameter_count": _COUNT,
             "vanishing_distance": _VANISH}

BUGS = (_CELL_BUGS + _FORWARD_BUGS + _LM_BUGS + _PPL_BUGS + _S2S_BUGS + _GREEDY_BUGS + _COUNT_BUGS
        + _VANISH_BUGS)
