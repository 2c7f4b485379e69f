"""Numbers in a notebook's prose that nothing in the notebook backs: a report for a person to review.

Every number a notebook's markdown quotes should come from a cell of the same notebook (an output
it prints, or a constant its code sets), or say where it comes from. This module reads an
*executed* notebook (``course build`` writes them to ``build/executed/<id>/<id>.ipynb``) and lists
the numbers of its markdown cells that pass none of these rules. It is a report, not a test: a
listed number may be fine (a person decides), and the outputs change with the profile the
notebook ran in, so numbers measured in another profile are only backed by a source label.

Which numbers are looked at (everything else is ignored, to keep false alarms rare):

* decimals (``87.4``, ``0.005``), percentages (``30 %``), and integers of 100 or more (``1,024``),
  each with an optional magnitude suffix (``65.2B``, ``124M``, ``10k``);
* outside mathematics (``$…$``, ``$$…$$``: the constants of an equation), inline code and code
  blocks, link targets and HTML tags, and headings;
* not a year: an integer from 1900 to 2099 is read as one.

A number is backed when any of these holds:

1. **an output shows it**: some number printed by a code cell (stream, text/plain, text/markdown
   or text/html output) rounds to it at the precision it is written with, as is, times 100 (a
   fraction quoted as a percentage) or divided by 100;
2. **the code sets it**: it is a literal of a code cell of the notebook (a hyperparameter, a size);
3. **it is labelled with a source**: its paragraph (text between blank lines; a table also takes
   the label of the paragraph just before it) names one: an author citation (*et al.*, or a name
   or parenthesis followed by a year), the paper, the notes, the slides, the deck, the lecture, a
   seed, a recorded run, ``benchmarks/results/`` or an explicit ``source:``.
"""
from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, TextIO

from course_tools.notebooks import read_notebook

# A number as prose writes it: digits with optional thousands separators and decimals, then an
# optional percent sign or magnitude suffix; not glued to a word, an identifier or another number.
_NUMBER = re.compile(
    r"(?<![\w.,/\\^$-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:\s?(%)|([kMB])\b)?(?![\w.]\d|[\w])")
_OUTPUT_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERAL = re.compile(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SOURCE = re.compile(
    r"\bet al\b|\b[A-Z][A-Za-z'-]+(?:,| and| &)?\s*\(?(?:19|20)\d\d\b|\((?:[^()]*,\s*)?(?:19|20)\d\d\)"
    r"|\bthe (?:paper|papers|notes|slides|slide|deck|lecture)\b|\bpaper's\b|\bseed \d{3}\b|\brecorded\b"
    r"|benchmarks/results/|\bsource:", re.IGNORECASE)
_HIDDEN = [  # spans whose digits are not prose numbers, replaced by spaces before the search
    re.compile(r"```.*?```", re.DOTALL),
    re.compile(r"\$\$.*?\$\$", re.DOTALL),
    re.compile(r"(?<!\\)\$.+?(?<!\\)\$", re.DOTALL),
    re.compile(r"`[^`]*`"),
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"<[^>]+>"),
    re.compile(r"https?://\S+"),
    re.compile(r"^\s{0,3}#.*$", re.MULTILINE),
]


@dataclass(frozen=True)
class ProseNumber:
    text: str        # as written, e.g. "87.4", "30 %", "65.2B"
    value: float     # the number without its suffix: 87.4, 30, 65.2
    decimals: int    # digits after the point as written
    paragraph: str   # the paragraph it sits in (for the source label and the report)


@dataclass(frozen=True)
class Finding:
    cell: int        # cell number from 1, markdown included, as in the notebook file
    number: str      # the number as written
    context: str     # the words around it


def _blank(text: str) -> str:
    for pattern in _HIDDEN:
        text = pattern.sub(lambda m: re.sub(r"\S", " ", m.group(0)), text)
    return text


def _paragraphs(source: str) -> list[tuple[str, str]]:
    """(raw paragraph, the label text it may borrow): list items and table rows stay with their block."""
    blocks = [b for b in re.split(r"\n\s*\n", source) if b.strip()]
    out = []
    for i, block in enumerate(blocks):
        borrowed = blocks[i - 1] if i and block.lstrip().startswith("|") else ""
        items = re.split(r"\n(?=\s{0,3}(?:[*+-]|\d+\.)\s)", block)  # list items are paragraphs of their own
        out.extend((item, borrowed) for item in items)
    return out


def prose_numbers(source: str) -> list[ProseNumber]:
    """The numbers of one markdown cell that the rules look at, labelled or not."""
    found = []
    for paragraph, _ in _paragraphs(source):
        for m in _NUMBER.finditer(_blank(paragraph)):
            whole, frac, percent, suffix = m.groups()
            digits = whole.replace(",", "")
            value = float(digits + (frac or ""))
            if not (frac or percent or suffix) and (value < 100 or 1900 <= value <= 2099):
                continue  # small integers count and name things; four digits from 1900 are years
            found.append(ProseNumber(m.group(0).strip(), value, len(frac or ".") - 1, paragraph))
    return found


def _labelled(source: str) -> set[str]:
    """The paragraphs of a cell that name a source (a table borrows the label of the paragraph before it)."""
    return {
        p
        for p, borrowed in _paragraphs(source)
        if _SOURCE.search(_blank_math_only(p)) or (borrowed and _SOURCE.search(_blank_math_only(borrowed)))
    }


def _blank_math_only(text: str) -> str:
    # code spans stay: `benchmarks/results/…` in backticks is a label
    for pattern in _HIDDEN[:3]:
        text = pattern.sub(" ", text)
    return text


def output_values(notebook) -> set[float]:
    """Every number that a code cell of the executed notebook printed or displayed."""
    values = set()
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            texts = [output.get("text", "")]
            data = output.get("data", {})
            texts += [data.get(kind, "") for kind in ("text/plain", "text/markdown")]
            texts.append(re.sub(r"<[^>]+>", " ", html.unescape(_joined(data.get("text/html", "")))))
            for text in texts:
                for m in _OUTPUT_NUMBER.finditer(_joined(text)):
                    try:
                        values.add(float(m.group(0).replace(",", "")))
                    except ValueError:
                        pass
    return values


def code_literals(notebook) -> set[float]:
    """Numeric literals written in the notebook's code cells."""
    values = set()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for m in _LITERAL.finditer(_joined(cell.source)):
                try:
                    values.add(float(m.group(0).replace("_", "")))
                except ValueError:
                    pass
    return values


def _joined(text) -> str:
    return "".join(text) if isinstance(text, list) else str(text or "")


def _shown(number: ProseNumber, values: Iterable[float]) -> bool:
    """True if some value rounds to the number at the precision it is written with (or ×100, ÷100)."""
    tolerance = 0.5 * 10 ** -number.decimals + 1e-9
    for x in values:
        for candidate in (x, 100 * x, x / 100):
            if abs(candidate - number.value) <= tolerance:
                return True
    return False


def _context(paragraph: str, text: str, width: int = 70) -> str:
    flat = " ".join(paragraph.split())
    at = flat.find(text)
    start, end = max(0, at - width), min(len(flat), at + len(text) + width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def unbacked_numbers(notebook) -> list[Finding]:
    """The numbers of the markdown cells that no output shows, no code sets and no source labels."""
    outputs, literals = output_values(notebook), code_literals(notebook)
    findings = []
    for index, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "markdown":
            continue
        labelled = _labelled(cell.source)
        for number in prose_numbers(cell.source):
            if number.paragraph in labelled or _shown(number, outputs) or number.value in literals:
                continue
            findings.append(Finding(index, number.text, _context(number.paragraph, number.text)))
    return findings


def report(name: str, path: Path, findings: list[Finding]) -> str:
    profile = (read_notebook(path).metadata.get("course") or {}).get("profile", "unknown profile")
    head = f"{name} ({path}, executed in {profile}): "
    if not findings:
        return head + "every number in the prose is backed by an output, the code or a source label"
    lines = [head + f"{len(findings)} number(s) to review"]
    lines += [f"  cell {f.cell:>3}: {f.number:<10} {f.context}" for f in findings]
    return "\n".join(lines)


def provenance(root: Path, selected, executed_dir: Path | None = None, out: TextIO | None = None) -> int:
    """``course provenance``: print the report of each selected assignment's executed notebook; 0."""
    out = out or sys.stdout
    executed_dir = Path(executed_dir) if executed_dir else root / "build" / "executed"
    total = 0
    for assignment in selected:
        path = executed_dir / assignment.id / assignment.source.name
        if not path.is_file():
            flat = executed_dir / assignment.source.name
            path = flat if flat.is_file() else path
        if not path.is_file():
            print(f"{assignment.id}: no executed notebook at {path} (run `course build {assignment.id}`, "
                  "or `course build --profile smoke` for a quick one)", file=out)
            continue
        findings = unbacked_numbers(read_notebook(path))
        total += len(findings)
        print(report(assignment.id, path, findings), file=out)
    print(f"\n{total} number(s) for a person to review: quote them from an output, or label their source.",
          file=out)
    return 0


__all__ = [
    "Finding", "ProseNumber", "code_literals", "output_values", "prose_numbers", "provenance", "report",
    "unbacked_numbers"
]
