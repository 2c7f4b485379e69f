"""Byte-level byte-pair encoding (notebook 07, section 15): learn merges on a text, encode, decode.

    merges = train_bpe(text, n_merges=256)     # [(left, right), ...]: merge i makes token 256 + i
    ids = bpe_encode("To be, or not", merges)   # list of ints
    bpe_decode(ids, merges)                     # "To be, or not": exact for every string

Tokens 0-255 are the bytes of the text's UTF-8 encoding, so every string has an encoding and no
token is unknown. Training reads the whole text as one sequence (no pre-tokenisation: a merge may
cross a space) and repeats: count every adjacent pair of the current sequence, overlapping ones
included ("aaa" holds (a, a) twice); take the most frequent pair, the smallest ``(left, right)``
among equally frequent ones; replace its occurrences left to right without overlap ("aaa" becomes
"Xa") by a new token. Encoding applies the merges in the order they were learnt, each to the whole
sequence; decoding joins the tokens' bytes and reads them as UTF-8 (``errors="replace"``: a
sequence of ids that is not valid UTF-8 still decodes, the text of an encoding always exactly).

The notebook's exercise is the plain loop (count, pick, merge; O(N) per merge). This reference
gives the same merges and encodings faster, so that notebook 07 can run it on the training plays:
each position of the text is a node of a linked list, each pair keeps the set of positions where it
starts, and a merge touches only the occurrences of its pair and their two neighbours.
"""
from __future__ import annotations

import heapq
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

N_BYTES = 256  # tokens 0..255 are the bytes; merge i makes token N_BYTES + i

Pair = tuple[int, int]


def merge_sequence(data: bytes, merges: Sequence[Pair] | None = None,
                   n_merges: int = 0) -> tuple[list[int], list[Pair]]:
    """``data``'s bytes after merging: the given ``merges`` in their order (encoding), or, when
    ``merges`` is None, the most frequent pair ``n_merges`` times, fewer if no pair is left
    (training). Returns (the token ids, the merges made)."""
    tokens = list(data)                       # tokens[p]: the token starting at p (-1: merged away)
    n = len(tokens)
    after = list(range(1, n + 1))             # the next live position (n: none)
    before = list(range(-1, n - 1))           # the previous live position (-1: none)
    where: dict[Pair, set[int]] = {}          # pair -> the positions where it starts; its count is the size
    for p in range(n - 1):
        where.setdefault((tokens[p], tokens[p + 1]), set()).add(p)
    # training: a max-heap of (-count, pair); an entry whose count is stale is corrected when it surfaces
    heap = [(-len(at), pair) for pair, at in where.items()]
    heapq.heapify(heap)
    todo = iter(merges) if merges is not None else None
    made: list[Pair] = []
    while True:
        if todo is not None:
            pair = next(todo, None)
            if pair is None:
                break
            pair = (int(pair[0]), int(pair[1]))
        else:
            pair = _most_frequent(heap, where) if len(made) < n_merges else None
            if pair is None:
                break
        new = N_BYTES + len(made)
        made.append(pair)
        grown = _merge_everywhere(pair, new, tokens, after, before, where, n)
        if todo is None:
            for changed in grown:
                heapq.heappush(heap, (-len(where[changed]), changed))
    return [t for t in tokens if t >= 0], made


def _most_frequent(heap: list[tuple[int, Pair]], where: dict[Pair, set[int]]) -> Pair | None:
    """The most frequent pair, the smallest among equals; None when no pair is left."""
    while heap:
        negative_count, pair = heapq.heappop(heap)
        count = len(where.get(pair, ()))
        if count and count == -negative_count:
            return pair
        if count:  # stale: its count fell since it was pushed
            heapq.heappush(heap, (-count, pair))
    return None


def _merge_everywhere(pair: Pair, new: int, tokens: list[int], after: list[int], before: list[int],
                      where: dict[Pair, set[int]], n: int) -> set[Pair]:
    """Replace the occurrences of ``pair`` by ``new``, left to right; the pairs whose count grew."""
    left, right = pair
    grown: set[Pair] = set()
    for p in sorted(where.pop(pair, ())):
        q = after[p]
        if tokens[p] != left or q >= n or tokens[q] != right:
            continue  # merged away by the occurrence just before it ("aaa": the second (a, a))
        o, r = before[p], after[q]
        if o >= 0:                            # (o, left) becomes (o, new)
            where.get((tokens[o], left), set()).discard(o)
            where.setdefault((tokens[o], new), set()).add(o)
            grown.add((tokens[o], new))
        if r < n:                             # (right, r) becomes (new, r), now starting at p
            where.get((right, tokens[r]), set()).discard(q)
            where.setdefault((new, tokens[r]), set()).add(p)
            grown.add((new, tokens[r]))
            before[r] = p
        tokens[p], tokens[q] = new, -1
        after[p] = r
    return grown


def train_bpe(text: str, n_merges: int) -> list[Pair]:
    """The first ``n_merges`` merges of byte-level BPE trained on ``text`` (fewer if the text runs out
    of pairs): merge i joins the pair ``merges[i]`` into token 256 + i."""
    return merge_sequence(text.encode("utf-8"), n_merges=n_merges)[1]


def bpe_encode(text: str, merges: Sequence[Pair]) -> list[int]:
    """``text``'s UTF-8 bytes with ``merges`` applied in order: a list of token ids."""
    return merge_sequence(text.encode("utf-8"), merges=merges)[0]


def token_bytes(merges: Sequence[Pair]) -> list[bytes]:
    """The bytes of every token: 256 single bytes, then each merge's two halves joined."""
    table = [bytes([b]) for b in range(N_BYTES)]
    for left, right in merges:
        table.append(table[left] + table[right])
    return table


def bpe_decode(ids: Sequence[int], merges: Sequence[Pair]) -> str:
    """The text of token ``ids``: their bytes joined, read as UTF-8 (invalid bytes become U+FFFD)."""
    table = token_bytes(merges)
    return b"".join(table[i] for i in ids).decode("utf-8", errors="replace")


@torch.no_grad()
def nats_per_character(model: nn.Module, ids: torch.Tensor, n_characters: int, context: int,
                       batch_size: int = 64) -> float:
    """Total cross-entropy of ``model`` over the token sequence ``ids`` (1-D), divided by the number
    of characters those tokens spell: the unit in which models of different tokenisers compare.
    The sequence is cut into consecutive windows of ``context`` tokens (a last, shorter one too), and
    each token but the very first is predicted from the tokens before it in its window."""
    device = next(model.parameters()).device
    n_targets = len(ids) - 1
    starts = list(range(0, n_targets, context))
    full = [s for s in starts if s + context <= n_targets]          # windows of `context` tokens
    groups = [full[i:i + batch_size] for i in range(0, len(full), batch_size)]
    groups += [[s] for s in starts[len(full):]]                     # the last, shorter window
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for group in groups:
            span = min(context, n_targets - group[0])
            x = torch.stack([ids[s:s + span] for s in group]).to(device)            # (b, span)
            y = torch.stack([ids[s + 1:s + 1 + span] for s in group]).to(device)    # (b, span)
            logits = model(x)                                                       # (b, span, V)
            total += F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="sum").item()
    finally:
        model.train(was_training)
    return total / n_characters
