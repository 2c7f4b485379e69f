"""The course's parallel data: a generated English→French corpus, and real corpora from disk or the web.

The default everywhere is the **generated** corpus (``course_lib.grammar``): offline, deterministic
for a seed, and hard enough that an RNN without attention degrades with sentence length::

    pairs = translation_pairs("train")            # 200k (english, french) pairs
    refs = reference_sets("test")                 # every French reference of each test source

Splits are disjoint by English source *by construction*: a source belongs to ``train``, ``valid``
or ``test`` according to a stable hash of its text (``zlib.crc32``), so the same sentence can never
land in two splits, whatever the seed. ``test_long`` holds only sources longer than
``MAX_TRAIN_TOKENS``, the cap of every other split, to measure length generalisation.

Real corpora in the Tatoeba "fra.txt" layout (English TAB French TAB attribution) load with
``load_parallel_tsv``; ``download`` fetches one into a cache with a checksum and a progress bar.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import random
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zlib

from . import grammar

SPLITS = ("train", "valid", "test", "test_long")
DEFAULT_SIZES = {"train": 200_000, "valid": 2_000, "test": 2_000, "test_long": 1_000}
MAX_SIZES = {"train": 2_000_000, "valid": 50_000, "test": 50_000, "test_long": 50_000}
MAX_TRAIN_TOKENS = 40  # longest source (English tokens incl. the final ".") in train/valid/test
LONG_TOKENS = (MAX_TRAIN_TOKENS + 1, 64)  # source length range of test_long (up to 1.6x the cap)
# share (in %) of the hash space per split: crc32(source) % 100 < 90 → train, < 95 → valid, else test
_HASH_BOUNDS = {"train": (0, 90), "valid": (90, 95), "test": (95, 100)}
_MAX_MISSES = 20_000  # consecutive rejected draws before we declare a split exhausted


def split_sizes() -> dict[str, int]:
    """The default number of pairs of each split (``n=None``)."""
    return dict(DEFAULT_SIZES)


def split_of(source: str) -> str:
    """Which of train/valid/test an English source of at most MAX_TRAIN_TOKENS belongs to."""
    bucket = zlib.crc32(source.encode("utf-8")) % 100
    return next(s for s, (lo, hi) in _HASH_BOUNDS.items() if lo <= bucket < hi)


def _check(split: str, n: int | None) -> int:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    if n is None:
        return DEFAULT_SIZES[split]
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int or None, got {n!r}")
    if n > MAX_SIZES[split]:
        raise ValueError(
            f"split {split!r} offers at most {MAX_SIZES[split]:,} unique pairs; asked for n={n:,}")
    return n


def _generate(split: str, seed: int, n: int, with_refs: bool):
    """The first ``n`` pairs of the deterministic stream of (split, seed), plus references.

    One ``random.Random`` seeded by a string (hashed with SHA-512, so the same in every process)
    drives the stream; a sentence is kept when it falls in this split and is new.
    """
    rng = random.Random(f"course_lib.data:{split}:{seed}")
    r = rng.random
    long = split == "test_long"
    lo, hi = _HASH_BOUNDS.get(split, (0, 100))
    seen: set[str] = set()

    def accept(en: str) -> bool:  # in this split and new
        return (long or lo <= zlib.crc32(en.encode("utf-8")) % 100 < hi) and en not in seen

    pairs, refs, misses = [], [], 0
    while len(pairs) < n:
        if long:
            target = LONG_TOKENS[0] + int(r() * (LONG_TOKENS[1] - LONG_TOKENS[0] + 1))
            got = grammar.sample_pair(rng, target, LONG_TOKENS[1], LONG_TOKENS[0], accept)
        else:  # target lengths 3..40, skewed a little towards shorter sentences
            target = 3 + int((MAX_TRAIN_TOKENS - 2) * r() ** 1.2)
            got = grammar.sample_pair(rng, target, MAX_TRAIN_TOKENS, accept=accept)
        if got is None:
            misses += 1
            if misses > _MAX_MISSES:
                raise RuntimeError(f"split {split!r} (seed {seed}) ran out of new sentences "
                                   f"after {len(pairs)} pairs")
            continue
        tree, en, fr = got
        seen.add(en)
        pairs.append((en, fr))
        if with_refs:
            alt = grammar.realise(tree, variant=1)[1]
            refs.append([fr] if alt == fr else [fr, alt])
        misses = 0
    return pairs, refs


_CACHE: dict[tuple[str, int, bool], tuple[list, list]] = {}  # the longest stream prefix made so far


def _corpus(split: str, n: int | None, seed: int, with_refs: bool):
    n = _check(split, n)
    key = (split, seed, with_refs)
    cached = _CACHE.get(key)
    if cached is None or len(cached[0]) < n:
        # generate at least the default size, so later calls with n=None are instant
        cached = _CACHE[key] = _generate(split, seed,
                                         max(n, DEFAULT_SIZES[split]) if n > 5_000 else n, with_refs)
    return cached[0][:n], cached[1][:n]


def translation_pairs(split: str, n: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """The first ``n`` (default: ``DEFAULT_SIZES[split]``) (english, french) pairs of ``split``.

    Lowercase, space-separated tokens ending in " ."; ``n=1000`` is a prefix of ``n=5000``.
    """
    if (split, seed, True) in _CACHE and len(_CACHE[split, seed, True][0]) >= _check(split, n):
        return _corpus(split, n, seed, True)[0]
    return _corpus(split, n, seed, False)[0]


def reference_sets(split: str, n: int | None = None, seed: int = 0) -> list[list[str]]:
    """All French references of each source of ``split``; the first is ``translation_pairs``'s.

    A second reference exists when the sentence uses a word with a synonym (voiture/auto) or a
    pronoun with two translations (you → vous/tu, they → ils/elles).
    """
    return [list(r) for r in _corpus(split, n, seed, True)[1]]


# ----------------------------------------------------------------------------------------------
# Real corpora
# ----------------------------------------------------------------------------------------------
def load_parallel_tsv(path, limit: int | None = None) -> list[tuple[str, str]]:
    """(english, french) pairs from a UTF-8 file of ``English<TAB>French[<TAB>attribution]`` lines.

    This is the layout of Tatoeba's ``fra.txt`` (manythings.org). Blank lines are skipped; any
    other line without exactly 2 or 3 columns, or with an empty side, raises ValueError naming the
    file and line. ``limit`` stops after that many pairs.
    """
    path = pathlib.Path(path)
    pairs: list[tuple[str, str]] = []
    with open(path, encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, start=1):
            if limit is not None and len(pairs) >= limit:
                break
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) not in (2, 3) or not cols[0].strip() or not cols[1].strip():
                raise ValueError(
                    f"{path}, line {lineno}: expected 'English<TAB>French[<TAB>attribution]', "
                    f"got {len(cols)} column(s): {line[:80]!r}")
            pairs.append((cols[0].strip(), cols[1].strip()))
    return pairs


class DownloadError(OSError):
    """A download failed (network, HTTP status) or its checksum did not match."""


def data_dir(path=None) -> pathlib.Path:
    """Where downloads go: ``path``, else ``$COURSE_DATA_DIR``, else ``~/.cache/course_lib``."""
    path = path or os.environ.get("COURSE_DATA_DIR") or pathlib.Path.home() / ".cache" / "course_lib"
    return pathlib.Path(path).expanduser()


def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, sha256: str, cache_dir=None, timeout: float = 30.0) -> pathlib.Path:
    """Download ``url`` into the cache once and return its path; verify its SHA-256.

    The file is streamed to a temporary file next to its destination (with a tqdm progress bar)
    and moved into place only after its checksum matched, so the cache never holds a partial or
    corrupt file. A cached file with the right checksum is returned without any network access.
    """
    from tqdm.auto import tqdm

    folder = data_dir(cache_dir)
    name = os.path.basename(urllib.parse.unquote(urllib.parse.urlparse(url).path)) or "download"
    target = folder / name
    sha256 = sha256.lower()
    if target.exists():
        if _sha256(target) == sha256:
            return target
        target.unlink()  # stale or corrupt: fetch it again
    folder.mkdir(parents=True, exist_ok=True)
    by_hand = f"Without network access, download {url} yourself and put it at {target} (sha256 {sha256})."
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=name) as bar:
                for block in iter(lambda: resp.read(1 << 16), b""):
                    out.write(block)
                    h.update(block)
                    bar.update(len(block))
        if h.hexdigest() != sha256:
            raise DownloadError(
                f"checksum mismatch for {url}: expected sha256 {sha256}, got {h.hexdigest()}; "
                f"the file was discarded. {by_hand}")
        os.replace(tmp, target)
        return target
    except DownloadError:
        raise
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise DownloadError(f"could not download {url}: {err}. {by_hand}") from err
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


__all__ = [
    "SPLITS", "DEFAULT_SIZES", "MAX_TRAIN_TOKENS", "LONG_TOKENS", "DownloadError", "data_dir", "download",
    "load_parallel_tsv", "reference_sets", "split_of", "split_sizes", "translation_pairs"
]
