"""Plausible wrong implementations of notebook 01's graded functions; each must fail a graded cell.

Each ``code`` runs in the kernel of the executed solution notebook, where ``torch``, ``nn``, ``F``,
``pack_padded_sequence``, ``PAD_ID``/``BOS_ID``/``EOS_ID`` and the (correct) ``rnn_cell_step`` exist.
"""
from tests.bugs import Bug

# ----------------------------------------------------------------------------- rnn_cell_step
_CELL = '''
def rnn_cell_step(x_t, h_prev, W_e, W_h, b):
    return {expr}
'''

# ----------------------------------------------------------------------------- rnn_forward
_FORWARD = '''
def rnn_forward(xs, h0, W_e, W_h, b):
{body}
'''

# ----------------------------------------------------------------------------- ElmanRNNLM
_LM = '''
class ElmanRNNLM(nn.Module):
    def __init__(self, vocab_size, d_emb, d_hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_emb)
        self.rnn = nn.RNN(d_emb, d_hidden, {rnn_args})
        self.out = nn.Linear(d_hidden, vocab_size)

    def forward(self, tokens):
        hs, _ = self.rnn(self.embedding(tokens))
        return {result}
'''

# ----------------------------------------------------------------------------- perplexity
_PPL = '''
def perplexity(logits, targets, pad_id=PAD_ID):
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    real = targets != pad_id
{body}
'''

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
{encode}

    def decode(self, tgt_in, state):
{decode}

    def forward(self, src, tgt_in, src_lengths=None):
{forward}
'''
_ENCODE_OK = '''        if src_lengths is None:
            src_lengths = (src != PAD_ID).sum(dim=1)
        emb = self.drop(self.src_embedding(src))
        packed = pack_padded_sequence(emb, src_lengths.clamp(min=1).cpu(), batch_first=True, enforce_sorted=False)
        _, h = self.encoder(packed)
        return h'''
_DECODE_OK = '''        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state)
        return self.out(self.drop(hs)), state'''
_FORWARD_OK = '''        logits, _ = self.decode(tgt_in, self.encode(src, src_lengths))
        return logits'''


def _s2s(encode=_ENCODE_OK, decode=_DECODE_OK, forward=_FORWARD_OK) -> str:
    return _S2S.format(encode=encode, decode=decode, forward=forward)


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
        for _ in range({steps}):
            logits, state = model.decode(token, state)
            nxt = logits[:, -1].argmax(dim=-1){mask}
            out.append(nxt)
            finished = finished | (nxt == EOS_ID)
            token = {feed}
            {stop}
    return {result}
'''
_GREEDY_OK = dict(steps="max_len", mask=".masked_fill(finished, PAD_ID)", feed="nxt.unsqueeze(1)",
                  stop="if finished.all(): break", result="torch.stack(out, dim=1)")


def _greedy(**changes: str) -> str:
    return _GREEDY.format(**{**_GREEDY_OK, **changes})


BUGS = [
    # rnn_cell_step
    Bug("rnn_cell_step", "sigmoid instead of tanh", _CELL.format(expr="torch.sigmoid(x_t @ W_e + h_prev @ W_h + b)")),
    Bug("rnn_cell_step", "ReLU instead of tanh", _CELL.format(expr="torch.relu(x_t @ W_e + h_prev @ W_h + b)")),
    Bug("rnn_cell_step", "bias forgotten", _CELL.format(expr="torch.tanh(x_t @ W_e + h_prev @ W_h)")),
    Bug("rnn_cell_step", "W_h transposed", _CELL.format(expr="torch.tanh(x_t @ W_e + h_prev @ W_h.T + b)")),
    Bug("rnn_cell_step", "previous state ignored", _CELL.format(expr="torch.tanh(x_t @ W_e + b)")),
    Bug("rnn_cell_step", "no nonlinearity", _CELL.format(expr="x_t @ W_e + h_prev @ W_h + b")),
    # rnn_forward
    Bug("rnn_forward", "h0 ignored, starts from zeros", _FORWARD.format(body='''
    h = torch.zeros_like(h0)
    states = []
    for t in range(xs.shape[1]):
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
        states.append(h)
    return torch.stack(states, dim=1), h''')),
    Bug("rnn_forward", "states shifted by one: h0 kept, last state dropped", _FORWARD.format(body='''
    h = h0
    states = []
    for t in range(xs.shape[1]):
        states.append(h)
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
    return torch.stack(states, dim=1), h''')),
    Bug("rnn_forward", "h_T is the first state, not the last", _FORWARD.format(body='''
    h = h0
    states = []
    for t in range(xs.shape[1]):
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
        states.append(h)
    return torch.stack(states, dim=1), states[0]''')),
    Bug("rnn_forward", "state never fed back (every step from h0)", _FORWARD.format(body='''
    states = [rnn_cell_step(xs[:, t], h0, W_e, W_h, b) for t in range(xs.shape[1])]
    return torch.stack(states, dim=1), states[-1]''')),
    Bug("rnn_forward", "last time step dropped", _FORWARD.format(body='''
    h = h0
    states = []
    for t in range(xs.shape[1] - 1):
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
        states.append(h)
    return torch.stack(states, dim=1) if states else xs.new_zeros(xs.shape[0], 0, h0.shape[1]), h''')),
    Bug("rnn_forward", "time read backwards", _FORWARD.format(body='''
    h = h0
    states = []
    for t in reversed(range(xs.shape[1])):
        h = rnn_cell_step(xs[:, t], h, W_e, W_h, b)
        states.append(h)
    return torch.stack(states, dim=1), h''')),
    # ElmanRNNLM
    Bug("ElmanRNNLM", "output layer skipped", _LM.format(rnn_args="batch_first=True", result="hs")),
    Bug("ElmanRNNLM", "softmax applied to the logits", _LM.format(rnn_args="batch_first=True",
                                                                  result="torch.softmax(self.out(hs), dim=-1)")),
    Bug("ElmanRNNLM", "nn.RNN without batch_first", _LM.format(rnn_args="", result="self.out(hs)")),
    Bug("ElmanRNNLM", "ReLU recurrence", _LM.format(rnn_args="batch_first=True, nonlinearity='relu'",
                                                   result="self.out(hs)")),
    Bug("ElmanRNNLM", "tanh on the logits", _LM.format(rnn_args="batch_first=True",
                                                      result="torch.tanh(self.out(hs))")),
    # perplexity
    Bug("perplexity", "padding averaged in", _PPL.format(body="    return float(torch.exp(nll.mean()))")),
    Bug("perplexity", "exp forgotten (returns the cross-entropy)", _PPL.format(body="    return float(nll[real].mean())")),
    Bug("perplexity", "base 2 instead of e", _PPL.format(body="    return float(2 ** nll[real].mean())")),
    Bug("perplexity", "mean of per-sentence averages",
        _PPL.format(body="    return float(torch.exp(((nll * real).sum(1) / real.sum(1)).mean()))")),
    Bug("perplexity", "padding zeroed but still counted in N",
        _PPL.format(body="    return float(torch.exp((nll * real).sum() / real.numel()))")),
    Bug("perplexity", "returns a tensor, not a float", _PPL.format(body="    return torch.exp(nll[real].mean())")),
    # Seq2SeqRNN
    Bug("Seq2SeqRNN", "decoder starts from zeros, not the encoder state", _s2s(decode='''
        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), torch.zeros_like(state))
        return self.out(self.drop(hs)), state''')),
    Bug("Seq2SeqRNN", "encoder runs over the padding", _s2s(encode='''
        _, h = self.encoder(self.drop(self.src_embedding(src)))
        return h''')),
    Bug("Seq2SeqRNN", "decoder input shifted left (sees the word it must predict)", _s2s(forward='''
        shifted = torch.cat([tgt_in[:, 1:], torch.full_like(tgt_in[:, :1], EOS_ID)], dim=1)
        logits, _ = self.decode(shifted, self.encode(src, src_lengths))
        return logits''')),
    Bug("Seq2SeqRNN", "target words embedded with the source table", _s2s(decode='''
        hs, state = self.decoder(self.drop(self.src_embedding(tgt_in.clamp(max=self.cfg.src_vocab_size - 1))), state)
        return self.out(self.drop(hs)), state''')),
    Bug("Seq2SeqRNN", "log-softmax applied to the logits", _s2s(decode='''
        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state)
        return torch.log_softmax(self.out(self.drop(hs)), dim=-1), state''')),
    Bug("Seq2SeqRNN", "source read from the first layer of a 2-layer encoder only", _s2s(decode='''
        hs, state = self.decoder(self.drop(self.tgt_embedding(tgt_in)), state[:1].expand_as(state).contiguous())
        return self.out(self.drop(hs)), state''')),
    # greedy_decode
    Bug("greedy_decode", "never stops at <eos> and never pads", _greedy(mask="", stop="pass")),
    Bug("greedy_decode", "feeds <bos> at every step instead of its prediction", _greedy(feed="token")),
    Bug("greedy_decode", "keeps <bos> in the output",
        _greedy(result="torch.cat([torch.full((B, 1), BOS_ID), torch.stack(out, dim=1)], dim=1)")),
    Bug("greedy_decode", "no padding after <eos>", _greedy(mask="")),
    Bug("greedy_decode", "always runs max_len steps", _greedy(stop="pass")),
    Bug("greedy_decode", "one step short", _greedy(steps="max_len - 1")),
]
