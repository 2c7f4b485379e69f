"""The slides' index page: each deck's title, its topics (its notebook's section headings) and the seed
lectures and notes it covers (:data:`SEEDS`, :data:`SEED_TOPICS`, after the course specification's
section 6), and how many slides a rendered deck holds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from nbformat import NotebookNode

from course_tools.notebooks import write_if_changed
from course_tools.pages import render

from .slide_heights import slide_type

# The seed material the course is built from (../shared/seeds/, by file-name prefix) ...
SEEDS = {
    "000": "Paper review: Attention Is All You Need (blog post, with a minGPT experiment)",
    "001": "Understanding squared attention (blog post)",
    "002": "Attention and Transformers (NYU lecture deck, Mosenia and Hegde)",
    "003": "Attention Is All You Need, with Llama 2 (reading notes, llama2.java)",
    "004": "Lecture 13: Attention and Transformers (LT3233 Computational Linguistics, Jixing Li)",
}


# ... and which of it each deck covers, as the course specification's section 6 assigns the topics.
SEED_TOPICS: dict[str, tuple[tuple[str, str], ...]] = {
    "01_rnn_baselines": (
        ("004", "the RNN language model equations; what recurrence buys and costs (vanishing gradients, "
         "O(length) steps between distant words)"),
        ("002", "the RNN's challenges; the encoder-decoder; teacher forcing"),
    ),
    "02_attention": (
        ("002", "attention as retrieval: a query against a table of keys and values; the bilinear score"),
        ("004", "attention as a soft lookup"),
        ("003", "scaled dot-product attention; the numerically stable softmax"),
        ("000", "additive (Bahdanau) against dot-product attention; the factorised additive score"),
    ),
    "03_multihead_attention": (
        ("004", "self-attention in four steps"),
        ("002", "masked multi-head attention with a 0/−∞ mask; the why-self-attention table"),
        ("000", "O(n²d) against O(nd²); the parameter share of attention and feed-forward"),
        ("001", "the quadratic cost of attention in the context length"),
    ),
    "04_positional_encoding": (
        ("000", "the sinusoidal formula; the rotation Rᵏ with Rᵏ·PE(pos) = PE(pos+k); learned embeddings do "
         "about as well"),
        ("002", "what a positional encoding must satisfy; the binary-counter picture"),
        ("003", "sinusoidal positions; RoPE"),
    ),
    "05_transformer": (
        ("003",
         "encoder and decoder stacks, residual + layer norm, position-wise FFN, embeddings and softmax, "
         "auto-regressive decoding, KV cache, sampling temperature"),
        ("001", "the GPT parameter formula"),
        ("002", "teacher forcing"),
    ),
    "06_bleu": (
        ("002",
         "BLEU: modified n-gram precision with clipping (\"The The The…\"), bigram precision, the brevity "
         "penalty and the geometric mean (the summary slide's formula corrected)"), ),
    "07_language_model": (
        ("000", "minGPT on Shakespeare: sinusoidal against learned positions, additive against dot-product "
         "attention, by perplexity"),
        ("001", "the GPT parameter formula"),
        ("003", "RMSNorm, RoPE, the KV cache, temperature and top-p, Llama-2 configurations with n_kv_heads, "
         "byte-level BPE and the 32,000-token vocabulary, LLaMA-65B's training compute as an MFU"),
    ),
}


def slide_count(notebook: NotebookNode) -> int:
    """How many slides reveal.js shows for a notebook (``Reveal.getTotalSlides()``).

    A slide (horizontal) or sub-slide (vertical) starts at the first cell that is neither ``skip``
    nor ``notes`` (whatever its own type) and at every later cell of type ``slide`` or
    ``subslide``; reveal counts each of them once, so a ``slide`` without sub-slides is one slide.
    """
    types = [slide_type(cell) for cell in notebook.cells]
    first = next((i for i, kind in enumerate(types) if kind not in ("skip", "notes")), None)
    if first is None:
        return 0
    return 1 + sum(kind in ("slide", "subslide") for kind in types[first + 1:])


class _LeafSections(HTMLParser):
    """Counts <section> elements with no <section> inside: the slides reveal.js shows."""

    def __init__(self):
        super().__init__()
        self.stack, self.leaves = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            if self.stack:
                self.stack[-1] = True  # the parent has a child section
            self.stack.append(False)

    def handle_endtag(self, tag):
        if tag == "section":
            self.leaves += not self.stack.pop()


def slides_in(deck_html: str) -> int:
    """How many slides a rendered deck holds (its innermost <section> elements)."""
    parser = _LeafSections()
    parser.feed(deck_html)
    return parser.leaves


def topics(notebook: NotebookNode) -> list[str]:
    """The notebook's sections: its ``## `` headings as plain text, without their numbers, takeaways left
    out."""
    found = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    topic = re.sub(r"^\d+\s*[·.:)-]\s*", "", line[3:].strip())
                    topic = re.sub(r"\$([^$]+)\$|`([^`]+)`", lambda m: m.group(1) or m.group(2),
                                   topic)  # no MathJax there
                    if topic and not re.match(r"(takeaways?|summary)\b", topic, re.IGNORECASE):
                        found.append(topic)
    return found


def title(notebook: NotebookNode, default: str) -> str:
    """The first Markdown heading of a notebook (its lecture title)."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return default


@dataclass(frozen=True)
class IndexEntry:
    """One deck on the index page."""

    deck_id: str
    title: str
    slides: int
    topics: list[str]
    handout: bool  # a PDF printed from the deck as it is now sits beside it
    seeds: list[tuple[str, str, str]]  # (seed number, the seed's title, what of it the deck covers)


def write_index(out: Path, decks: list[tuple[str, str, int, list[str]]]) -> Path:
    """``out/index.html`` (``templates/slide_index.html.j2``): one entry per deck (id, title, slide
    count, topics) in course order, with its topics, the seed material it covers (``SEED_TOPICS``),
    and its PDF where one was printed from the deck as it is now."""
    entries = []
    for deck_id, deck_title, count, deck_topics in decks:
        deck, pdf = out / f"{deck_id}.slides.html", out / f"{deck_id}.pdf"
        current = pdf.is_file() and pdf.stat().st_mtime >= deck.stat().st_mtime
        seeds = [(seed, SEEDS[seed], what) for seed, what in SEED_TOPICS.get(deck_id, ())]
        entries.append(IndexEntry(deck_id, deck_title, count, deck_topics, current, seeds))
    return publish(out / "index.html", render(__file__, "slide_index.html.j2", entries=entries))


def publish(path: Path, text: str) -> Path:
    """Write a page that any local web server may serve (readable by all, like the assets)."""
    write_if_changed(path, text)
    path.chmod(0o644)
    return path
