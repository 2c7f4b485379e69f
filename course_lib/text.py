"""Tokenizer, vocabulary, padding and length-bucketed batches for translation.

The corpus is lowercase with space-separated tokens and French elision written attached
(``l'homme``, ``n'aime``). ``tokenize`` splits elision and punctuation off so that ``l'`` is one
vocabulary entry shared by every noun; ``detokenize`` re-attaches elision, giving back corpus text.

    data = TranslationData.from_pairs(pairs)                      # tokenize, build vocabs, encode
    for batch in BucketedBatches(data, max_tokens=4000, seed=0):  # one epoch per loop
        batch.src, batch.tgt_in, batch.tgt_out                     # (B, S), (B, T), (B, T)
"""
from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, fields
from typing import Iterable, Iterator, Sequence

import torch

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")

# French words that elide before a vowel; a closed list, so that English "john's" or "don't" and
# French "aujourd'hui" stay whole.
_ELIDING = ("l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu", "puisqu")
_ELISION = re.compile(r"^((?:%s)')(.+)$" % "|".join(_ELIDING), re.IGNORECASE)
_PUNCT = re.compile(r"([.,?!])")


def tokenize(sentence: str) -> list[str]:
    """Split a sentence into tokens, keeping case.

    Whitespace separates tokens; ``.`` ``,`` ``?`` ``!`` become tokens of their own and a French
    elided article or pronoun is split off with its apostrophe: ``"qu'il n'aime pas."`` ->
    ``["qu'", "il", "n'", "aime", "pas", "."]``.
    """
    tokens = []
    for word in _PUNCT.sub(r" \1 ", sentence).split():
        m = _ELISION.match(word)
        tokens += [m.group(1), m.group(2)] if m else [word]
    return tokens


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens back into corpus text: spaces between tokens, none after an elided ``l'``.

    Punctuation stays space-separated, as in the corpus (``"le chat dort ."``), so
    ``detokenize(tokenize(s)) == s`` for every corpus sentence.
    """
    out = []
    for i, token in enumerate(tokens):
        out.append(token)
        if i + 1 < len(tokens) and not token.endswith("'"):
            out.append(" ")
    return "".join(out)


class Vocab:
    """A token <-> id table whose first four entries are ``SPECIALS`` with their fixed ids.

    ``itos[i]`` is the token of id ``i``; ``stoi[token]`` its id.
    """

    def __init__(self, itos: Sequence[str]):
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {tuple(itos[:4])}")
        self.itos = list(itos)
        self.stoi = {token: i for i, token in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 1,
              max_size: int | None = None) -> "Vocab":
        """Vocabulary of the tokens seen at least ``min_freq`` times, most frequent first.

        Ties are broken alphabetically so the ids do not depend on the order of the corpus;
        ``max_size`` caps the whole table, specials included.
        """
        counts = Counter(token for tokens in token_lists for token in tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        ranked = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(SPECIALS))]
        return cls(SPECIALS + tuple(ranked))

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.itos[4:12])} ...)"

    def encode(self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of ``tokens``; a token not in the table becomes ``UNK_ID``."""
        ids = [self.stoi.get(token, UNK_ID) for token in tokens]
        return [BOS_ID] * add_bos + ids + [EOS_ID] * add_eos

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> list[str]:
        """Tokens of ``ids``. With ``strip_special``, stop at the first ``<eos>`` and drop
        ``<pad>``/``<bos>`` (``<unk>`` stays: it stands for a real word)."""
        tokens = []
        for i in ids:
            i = int(i)
            if strip_special and i == EOS_ID:
                break
            if strip_special and i in (PAD_ID, BOS_ID):
                continue
            tokens.append(self.itos[i])
        return tokens

    def state_dict(self) -> dict:
        """A plain dict (a list of strings) for checkpoints: ``torch.load(weights_only=True)`` reads it."""
        return {"itos": list(self.itos)}

    @classmethod
    def from_state_dict(cls, state: dict) -> "Vocab":
        return cls(state["itos"])


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> torch.Tensor:
    """Stack id lists of different lengths, padding on the right: returns ``(B, T_max)`` int64."""
    out = torch.full((len(seqs), max((len(s) for s in seqs), default=0)), pad_id, dtype=torch.long)
    for row, seq in enumerate(seqs):
        out[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return out


@dataclass
class TranslationBatch:
    """One padded batch of sentence pairs (teacher forcing: ``tgt_in`` predicts ``tgt_out``)."""

    src: torch.Tensor  # (B, S) source ids, right-padded with PAD_ID
    tgt_in: torch.Tensor  # (B, T) <bos> + target ids: the decoder's input
    tgt_out: torch.Tensor  # (B, T) target ids + <eos>: what the decoder must predict
    src_lengths: torch.Tensor  # (B,) number of real (non-pad) source tokens
    index: torch.Tensor  # (B,) position of each example in the dataset, to restore order

    def to(self, device: torch.device | str) -> "TranslationBatch":
        """The same batch with every tensor on ``device``."""
        return TranslationBatch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def __len__(self) -> int:
        return self.src.shape[0]

    @property
    def n_target_tokens(self) -> int:
        """Number of predicted tokens (non-pad entries of ``tgt_out``): the loss's denominator."""
        return int((self.tgt_out != PAD_ID).sum())


class TranslationData:
    """Sentence pairs tokenized and encoded once, with their vocabularies.

    ``pairs[i]`` is ``(source, target)`` text; ``src[i]`` / ``tgt[i]`` their ids (no specials).
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], src_vocab: Vocab | None = None,
                 tgt_vocab: Vocab | None = None, min_freq: int = 1):
        self.pairs = list(pairs)
        src_tokens = [tokenize(s) for s, _ in self.pairs]
        tgt_tokens = [tokenize(t) for _, t in self.pairs]
        # Validation and test data must reuse the training vocabularies, never build their own.
        self.src_vocab = src_vocab or Vocab.build(src_tokens, min_freq=min_freq)
        self.tgt_vocab = tgt_vocab or Vocab.build(tgt_tokens, min_freq=min_freq)
        self.src = [self.src_vocab.encode(t) for t in src_tokens]
        self.tgt = [self.tgt_vocab.encode(t) for t in tgt_tokens]

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[str, str]], src_vocab: Vocab | None = None,
                   tgt_vocab: Vocab | None = None, min_freq: int = 1) -> "TranslationData":
        """Tokenize and encode ``pairs``, building vocabularies unless given."""
        return cls(pairs, src_vocab, tgt_vocab, min_freq)

    def __len__(self) -> int:
        return len(self.pairs)

    def batch(self, indices: Sequence[int]) -> TranslationBatch:
        """The padded ``TranslationBatch`` of the examples at ``indices``."""
        src = [self.src[i] for i in indices]
        tgt = [self.tgt[i] for i in indices]
        return TranslationBatch(
            src=pad_batch(src),
            tgt_in=pad_batch([[BOS_ID] + t for t in tgt]),
            tgt_out=pad_batch([t + [EOS_ID] for t in tgt]),
            src_lengths=torch.tensor([len(s) for s in src], dtype=torch.long),
            index=torch.tensor(list(indices), dtype=torch.long),
        )


class BucketedBatches:
    """Batches of examples of similar length, reshuffled every epoch; iterate once per epoch.

    With ``shuffle=True`` the examples are shuffled, cut into chunks of ``chunk_batches`` batches'
    worth, sorted by length within each chunk (so little padding, yet batches still differ between
    epochs), batched, and the batches shuffled; epoch ``e`` uses the seed ``seed + e``. With
    ``shuffle=False`` batches follow the dataset's order (for evaluation); either way
    ``batch.index`` says where each example came from.

    Give ``batch_size`` (examples per batch) or ``max_tokens`` (a budget of padded tokens:
    ``B * max(S, T)`` stays within it, though a single over-long example still gets its own batch).
    """

    def __init__(self, data: TranslationData, batch_size: int | None = None,
                 max_tokens: int | None = None, shuffle: bool = True, seed: int = 0,
                 chunk_batches: int = 100):
        if (batch_size is None) == (max_tokens is None):
            raise ValueError("give exactly one of batch_size and max_tokens")
        self.data = data
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self.shuffle = shuffle
        self.seed = seed
        self.chunk_batches = chunk_batches
        self.epoch = 0  # advanced after each complete pass, so each epoch has a new order

    def _length(self, i: int) -> int:
        # A batch is as long as its longest source or target (+1 for <bos>/<eos>).
        return max(len(self.data.src[i]), len(self.data.tgt[i]) + 1)

    def _cut(self, order: Sequence[int]) -> list[list[int]]:
        """Greedily cut ``order`` into consecutive batches that respect the size limit."""
        batches, current, longest = [], [], 0
        for i in order:
            longest_with_i = max(longest, self._length(i))
            full = (len(current) == self.batch_size if self.batch_size
                    else longest_with_i * (len(current) + 1) > self.max_tokens)
            if current and full:
                batches.append(current)
                current, longest_with_i = [], self._length(i)
            current.append(i)
            longest = longest_with_i
        return batches + [current] * bool(current)

    def plan(self, epoch: int) -> list[list[int]]:
        """The example indices of each batch of ``epoch``, in order."""
        order = list(range(len(self.data)))
        if not self.shuffle:
            return self._cut(order)
        rng = random.Random(self.seed + epoch)
        rng.shuffle(order)
        if self.batch_size:
            per_batch = self.batch_size
        else:  # examples of average length that fit the budget, roughly
            mean_length = sum(map(self._length, order)) / max(1, len(order))
            per_batch = max(1, int(self.max_tokens / mean_length))
        chunk = per_batch * self.chunk_batches
        batches = []
        for start in range(0, len(order), chunk):
            piece = sorted(order[start : start + chunk], key=self._length)
            batches += self._cut(piece)
        rng.shuffle(batches)
        return batches

    def __len__(self) -> int:
        return len(self.plan(self.epoch))

    def __iter__(self) -> Iterator[TranslationBatch]:
        for indices in self.plan(self.epoch):
            yield self.data.batch(indices)
        self.epoch += 1
