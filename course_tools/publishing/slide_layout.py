"""What a lecture slide shows: the rules that turn an executed solution notebook into slides that fit.

The notebooks are written to be read, so a cell is often taller than a slide. ``lay_out`` applies
these rules at render time, from the executed outputs and the cell metadata that already exist (it
never edits a notebook):

1. **Figures.** A code cell whose outputs include an image shows the image only: its input is
   hidden. Plotting code is not lecture material.
2. **Plumbing.** nbgrader test cells (``grade`` without ``solution``) never show their input, and
   the ``### BEGIN/END SOLUTION`` markers never appear.
3. **Long code.** Any other code cell longer than ``MAX_CODE_LINES`` lines is moved off the slide:
   the slide shows its outputs and a one-line note ("N lines of code: in the notebook and the
   speaker notes"); the code itself goes to the speaker notes.
4. **Exercises stay.** A graded solution cell (nbgrader ``solution``) is what the lecture walks
   through, so its code stays on the slide, cut into parts of at most ``EXERCISE_LINES`` lines at
   the blank line or top-level statement nearest the limit, one part per continuation sub-slide.
5. **Tags win.** A cell tagged ``remove-input`` (or ``remove_input``, ``hide-input``) never shows
   its input; a cell tagged ``show-input`` (or ``show_input``) always does (split like an exercise
   when long), whatever rules 1-4 say.
6. **Long outputs.** Text output beyond ``MAX_OUTPUT_LINES`` lines is cut there, with a line saying
   how many more the notebook holds.
7. **Derivations.** A Markdown cell with display maths is a derivation: the slide keeps its
   headings, formulas, lists, tables and code, and its paragraphs of prose go, verbatim, to the
   slide's speaker notes (reveal.js notes plugin, key ``S``), where the lecturer reads the argument
   while the audience sees the steps.
8. **Pagination.** The cells of a slide are measured with a height model of the deck's CSS (below,
   calibrated on the rendered decks in Chromium); what does not fit in ``BUDGET`` pixels goes to a
   continuation sub-slide headed "<heading> (continued)". A Markdown cell taller than a slide is cut
   between its blocks (paragraphs, lists, tables, formulas), never inside one.

The height model is an estimate; the browser test in tests/test_slides.py renders every slide of
every deck at 1280x720 and fails on any that overflows, so the estimate is checked, not trusted.
"""
from __future__ import annotations

import base64
import copy
import math
import re
import struct

from nbformat import NotebookNode

SLIDE_WIDTH, SLIDE_HEIGHT = 960, 700  # reveal.js's slide box (nbconvert's default), scaled to the window
BUDGET = 610  # estimated pixels of content per slide: the rest is the estimate's margin of error
MAX_CODE_LINES = 15  # longer code cells (not exercises) go to the speaker notes
EXERCISE_LINES = 18  # an exercise's solution is shown in parts of at most this many lines
MAX_OUTPUT_LINES = 12  # text output lines shown per cell
IMAGE_MAX_HEIGHT = 440  # CSS max-height of a figure on a slide (px); the template sets the same
SHOW_INPUT_TAGS = ("show-input", "show_input")
HIDE_INPUT_TAGS = ("remove-input", "remove_input", "hide-input", "hide_input")
SOLUTION_MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$")
CONTINUED_CLASS = "course-continued"
CODE_NOTE_CLASS = "course-code-note"

# The height model, in CSS pixels of the 960x700 slide, calibrated on the decks in Chromium: code
# 19px on 22.6px lines (input wraps at about 80 characters, output at 72: the template wraps both), prose 20px on 26px
# lines at about 80 characters, h1 50px, h2 32px, h3 26px, display maths about 50px a row.
CODE_LINE, INPUT_CHARS, OUTPUT_CHARS, CODE_PAD = 22.6, 76, 72, 20
TEXT_LINE, TEXT_CHARS = 26, 78
CELL_PAD = 34
FIGURE_PAD = 52  # an image output's own margins
HEADINGS = {1: (60, 30), 2: (40, 52), 3: (34, 62), 4: (30, 70)}  # level: (line height, characters a line)


# ---------------------------------------------------------------- what a cell is

def slide_type(cell: NotebookNode) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-") or "-"


def _set_type(cell: NotebookNode, kind: str) -> NotebookNode:
    cell.metadata["slideshow"] = {"slide_type": kind}
    return cell


def _tags(cell: NotebookNode) -> set[str]:
    return set(cell.metadata.get("tags", []))


def _nbgrader(cell: NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def is_exercise(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and bool(_nbgrader(cell).get("solution"))


def has_image(cell: NotebookNode) -> bool:
    return any({"image/png", "image/jpeg", "image/svg+xml"} & set(output.get("data", {}))
               for output in cell.get("outputs", []))


def code_lines(source: str) -> list[str]:
    """The lines a slide shows: no nbgrader solution markers, no trailing blank lines."""
    lines = [line for line in source.splitlines() if not SOLUTION_MARKER.match(line)]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def input_rule(cell: NotebookNode) -> str:
    """How a code cell's input appears: "show", "split" (in parts), "notes" (moved off) or "hide"."""
    tags = _tags(cell)
    if tags & set(HIDE_INPUT_TAGS):
        return "hide"
    long = len(code_lines(cell.source)) > (EXERCISE_LINES if is_exercise(cell) or tags & set(SHOW_INPUT_TAGS)
                                           else MAX_CODE_LINES)
    if tags & set(SHOW_INPUT_TAGS) or is_exercise(cell):
        return "split" if long else "show"
    if has_image(cell) or _nbgrader(cell).get("grade"):
        return "hide"
    return "notes" if long else "show"


# ---------------------------------------------------------------- heights

def _wrapped(text: str, chars: int) -> int:
    return max(1, math.ceil(len(text) / chars))


def code_height(lines: list[str]) -> float:
    return CODE_PAD + CODE_LINE * sum(_wrapped(line, INPUT_CHARS) for line in lines)


def text_lines(text: str) -> int:
    """Lines a text output takes on a slide, long lines wrapped."""
    return sum(_wrapped(line, OUTPUT_CHARS) for line in text.rstrip("\n").split("\n"))


def _plain(text: str) -> str:
    """Markdown as roughly the characters it shows, in widths of prose characters (links and
    emphasis dropped, TeX shortened, code spans widened: monospace is wider)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"\$([^$]+)\$", lambda m: "x" * max(1, len(m.group(1)) // 3), text)
    text = re.sub(r"`([^`]*)`", lambda m: "x" * round(1.4 * len(m.group(1))), text)
    return re.sub(r"[*_]", "", text)


def block_kind(block: str) -> str:
    first = block.lstrip().splitlines()[0] if block.strip() else ""
    if re.match(r"#{1,6}\s", first):
        return "heading"
    if first.startswith("```") or first.startswith("~~~"):
        return "code"
    if "$$" in block or "\\begin{" in block:
        return "maths"
    if first.startswith("|"):
        return "table"
    if re.match(r"\s*([-*+]|\d+[.)])\s", first):
        return "list"
    if first.startswith("<"):
        return "html"
    return "para"


def block_height(block: str) -> float:
    kind = block_kind(block)
    lines = block.strip().splitlines()
    if kind == "heading":
        level = len(lines[0]) - len(lines[0].lstrip("#"))
        line, chars = HEADINGS.get(level, HEADINGS[4])
        return 20 + line * _wrapped(_plain(lines[0].lstrip("#").strip()), chars) + TEXT_LINE * (len(lines) - 1)
    if kind == "code":
        return code_height(lines[1:-1]) + 20
    if kind == "maths":
        formulas = max(1, block.count("$$") // 2)
        rows = block.count("\\\\") + formulas
        prose = re.sub(r"\$\$.*?\$\$", "", block, flags=re.DOTALL)
        return 16 + 36 * rows + 24 * formulas + (TEXT_LINE * _wrapped(_plain(prose), TEXT_CHARS) if prose.strip() else 0)
    if kind == "table":
        rows = [line for line in lines if not re.match(r"\|?\s*:?-+", line)]
        columns = max(1, rows[0].strip().strip("|").count("|") + 1)
        return 24 + sum(12 + TEXT_LINE * _wrapped(_plain(row.replace("|", " ")), TEXT_CHARS - 6 * columns)
                        for row in rows)
    if kind == "list":
        items, current = [], ""
        for line in lines:
            if re.match(r"\s*([-*+]|\d+[.)])\s", line) and current:
                items.append(current)
                current = line
            else:
                current += " " + line.strip()
        items.append(current)
        return 20 + sum(12 + TEXT_LINE * _wrapped(_plain(item), TEXT_CHARS - 6) for item in items)
    return 20 + TEXT_LINE * _wrapped(_plain(" ".join(lines)), TEXT_CHARS)


def markdown_blocks(source: str) -> list[str]:
    """A Markdown source cut between blocks: blank lines, except inside fenced code or $$ … $$."""
    blocks, current, fenced, maths = [], [], False, False
    for line in source.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced:
            maths ^= line.count("$$") % 2 == 1
        if not line.strip() and not fenced and not maths:
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return [part for block in blocks for part in _list_parts(block)]


LIST_ITEM = re.compile(r"([-*+]|\d+[.)])\s")


def _list_parts(block: str) -> list[str]:
    """A list taller than half a slide as groups of its items (an ordered list keeps its numbers)."""
    if block_kind(block) != "list" or block_height(block) <= BUDGET / 2:
        return [block]
    items: list[list[str]] = []
    for line in block.splitlines():
        if LIST_ITEM.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    parts, current = [], []
    for item in items:
        if current and block_height("\n".join(current + item)) > BUDGET / 2:
            parts.append("\n".join(current))
            current = []
        current += item
    parts.append("\n".join(current))
    return parts


def markdown_height(source: str) -> float:
    return CELL_PAD + sum(block_height(block) for block in markdown_blocks(source))


def _image_height(output: NotebookNode) -> float:
    data = output.get("data", {})
    width, height = 640, 480
    if "image/png" in data:
        try:
            head = base64.b64decode(data["image/png"][:64])
            width, height = struct.unpack(">II", head[16:24])
        except (ValueError, struct.error):
            pass
        meta = output.get("metadata", {}).get("image/png", {})
        width, height = meta.get("width", width), meta.get("height", height)
    shown = height * min(1.0, (SLIDE_WIDTH - 40) / max(width, 1))
    return min(shown, IMAGE_MAX_HEIGHT) + FIGURE_PAD


def _output_text(output: NotebookNode) -> str | None:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return "\n".join(output.get("traceback", []))
    data = output.get("data", {})
    if set(data) & {"image/png", "image/jpeg", "image/svg+xml", "text/html", "text/markdown"}:
        return None
    return data.get("text/plain")


def outputs_height(outputs: list) -> float:
    total = 0.0
    for output in outputs:
        data = output.get("data", {})
        text = _output_text(output)
        if text is not None:
            total += 16 + CODE_LINE * text_lines(text)
        elif {"image/png", "image/jpeg", "image/svg+xml"} & set(data):
            total += _image_height(output)
        elif "text/markdown" in data:
            total += markdown_height(data["text/markdown"])
        elif "text/html" in data:
            total += 20 + 34 * data["text/html"].count("<tr")
    return total


def truncate_outputs(outputs: list, limit: int = MAX_OUTPUT_LINES) -> list:
    """The outputs with at most ``limit`` lines of text in all (long lines count as they wrap), the
    cut said where it happens; a Markdown output is cut between its lines to fit a slide."""
    kept, shown = [], 0
    for index, output in enumerate(outputs):
        data = output.get("data", {})
        if "text/markdown" in data and markdown_height(data["text/markdown"]) > BUDGET - 120:
            output = copy.deepcopy(output)
            lines, keep = data["text/markdown"].split("\n"), []
            for line in lines:
                if markdown_height("\n".join(keep + [line])) > BUDGET - 160:
                    break
                keep.append(line)
            more = len(lines) - len(keep)
            output["data"] = NotebookNode({**data, "text/markdown": "\n".join(keep) +
                                           f"\n\n*… {more} more line{'s' * (more != 1)} in the notebook*"})
        text = _output_text(output)
        if text is None:
            kept.append(output)
            continue
        if shown >= limit:
            continue
        lines = text.rstrip("\n").split("\n")
        if shown + text_lines(text) > limit:
            cut, used = 0, shown
            while cut < len(lines) and used + _wrapped(lines[cut], OUTPUT_CHARS) <= limit - 1:
                used += _wrapped(lines[cut], OUTPUT_CHARS)
                cut += 1
            rest = sum(len((_output_text(o) or "").rstrip("\n").split("\n"))
                       for o in outputs[index + 1:] if _output_text(o) is not None)
            more = len(lines) - cut + rest
            text = "\n".join(lines[:cut]) + f"\n… {more} more line{'s' * (more != 1)} in the notebook\n"
            output = copy.deepcopy(output)
            if output.get("output_type") == "stream":
                output["text"] = text
            elif output.get("output_type") == "error":
                output["traceback"] = text.split("\n")
            else:
                output["data"] = NotebookNode({"text/plain": text})
            shown = limit
        else:
            shown += text_lines(text)
        kept.append(output)
    return kept


# ---------------------------------------------------------------- cutting code into parts

def split_code(lines: list[str], limit: int = EXERCISE_LINES) -> list[list[str]]:
    """Parts of at most ``limit`` lines, each cut before the latest good boundary: a blank line, or
    a line at the shallowest indentation (a top-level statement, a method of a class)."""
    parts = []
    while len(lines) > limit:
        window = lines[1:limit + 1]
        shallowest = min((len(line) - len(line.lstrip()) for line in window if line.strip()), default=0)

        def score(index: int) -> tuple:
            line = lines[index]
            previous = lines[index - 1]
            blank = not previous.strip()
            top = line.strip() and len(line) - len(line.lstrip()) == shallowest \
                and not line.lstrip().startswith((")", "]", "}", "else", "elif", "except", "finally"))
            return (bool(blank and top), bool(top), blank, index)

        cut = max(range(max(1, limit // 3), limit + 1), key=score)
        head, lines = lines[:cut], lines[cut:]
        while head and not head[-1].strip():
            head.pop()
        while lines and not lines[0].strip():
            lines = lines[1:]
        parts.append(head)
    if lines:
        parts.append(lines)
    return parts


def _fitting(parts: list[list[str]]) -> list[list[str]]:
    """Parts cut further where their long lines wrap past what a slide holds under a heading."""
    fitted = []
    for part in parts:
        if code_height(part) > BUDGET - 110 and len(part) > 1:
            fitted += _fitting(split_code(part, max(1, len(part) * 2 // 3)))
        else:
            fitted.append(part)
    return fitted


# ---------------------------------------------------------------- laying a slide out

class Piece:
    """A cell as one slide shows it, its estimated height, and the notes that go with it."""

    def __init__(self, cell: NotebookNode, height: float, notes: list[NotebookNode] | None = None):
        self.cell, self.height, self.notes = cell, height, notes or []


def _markdown(source: str, cell_id: str, kind: str = "-") -> NotebookNode:
    cell = NotebookNode({"cell_type": "markdown", "id": cell_id, "metadata": NotebookNode(), "source": source})
    return _set_type(cell, kind)


def _notes(source: str, cell_id: str) -> NotebookNode:
    return _markdown(source, cell_id, "notes")


def _heading_text(source: str) -> str | None:
    for line in source.splitlines():
        if re.match(r"#{1,6}\s", line):
            return re.sub(r"[*_`]|\s*¶$", "", line.lstrip("#").strip())
    return None


def code_pieces(cell: NotebookNode) -> list[Piece]:
    """A code cell as slide pieces: the rule of ``input_rule``, outputs cut at ``MAX_OUTPUT_LINES``."""
    rule = input_rule(cell)
    outputs = truncate_outputs(cell.get("outputs", []))
    lines = code_lines(cell.source)
    base = copy.deepcopy(cell)
    base.outputs = outputs
    base.metadata["tags"] = [tag for tag in base.metadata.get("tags", []) if tag not in HIDE_INPUT_TAGS]
    pieces: list[Piece] = []
    notes = []
    if rule == "notes":
        notes.append(_notes(f"Code of this slide ({len(lines)} lines):\n\n```python\n" + "\n".join(lines) + "\n```",
                            f"{cell.get('id', 'cell')}-code"))
        pieces.append(Piece(_markdown(f'<p class="{CODE_NOTE_CLASS}">{len(lines)} lines of code: in the notebook '
                                      f'and the speaker notes</p>', f"{cell.get('id', 'cell')}-note"), 44, notes))
    parts = _fitting(split_code(lines) if rule == "split" else [lines] if rule == "show" else [])
    for number, part in enumerate(parts):
        last = number == len(parts) - 1
        piece_cell = copy.deepcopy(base)
        piece_cell.source = "\n".join(part)
        if len(parts) > 1:
            piece_cell.id = f"{cell.get('id', 'cell')}-part{number + 1}"
        piece_cell.outputs = outputs if last else []
        if last and outputs and code_height(part) + outputs_height(outputs) > BUDGET - 60:
            piece_cell.outputs = []  # the outputs follow as a piece of their own
            pieces.append(Piece(piece_cell, CELL_PAD / 2 + code_height(part)))
            break
        pieces.append(Piece(piece_cell, CELL_PAD / 2 + code_height(part) + outputs_height(piece_cell.outputs)))
    else:
        outputs_shown = any(piece.cell.cell_type == "code" and piece.cell.outputs for piece in pieces)
        if outputs_shown or not outputs:
            return pieces
    # the outputs alone, the input hidden, in as many pieces as they need
    groups: list[list] = [[]]
    for output in outputs:
        if groups[-1] and outputs_height(groups[-1] + [output]) > BUDGET - 60:
            groups.append([])
        groups[-1].append(output)
    for number, group in enumerate(groups):
        shown = copy.deepcopy(base)
        shown.id = f"{cell.get('id', 'cell')}-out{number + 1}" if parts or number else shown.get("id", "cell")
        shown.outputs = group
        shown.metadata["tags"] = [*shown.metadata.get("tags", []), HIDE_INPUT_TAGS[0]]
        pieces.append(Piece(shown, CELL_PAD / 2 + outputs_height(group)))
    return pieces


def markdown_pieces(cell: NotebookNode) -> list[Piece]:
    """A Markdown cell as slide pieces: whole if it fits a slide, else cut between blocks; a
    derivation's prose goes to the notes (rule 7)."""
    blocks = markdown_blocks(cell.source)
    cell_id = cell.get("id", "cell")
    notes = []
    if any(block_kind(block) == "maths" for block in blocks):
        prose = [block for block in blocks if block_kind(block) in ("para", "html")]
        if prose:
            notes.append(_notes("\n\n".join(prose), f"{cell_id}-notes"))
            blocks = [block for block in blocks if block_kind(block) not in ("para", "html")]
    if not blocks:
        return [Piece(_notes("", f"{cell_id}-empty"), 0, notes)]
    if CELL_PAD + sum(map(block_height, blocks)) <= BUDGET:
        shown = copy.deepcopy(cell)
        shown.source = "\n\n".join(blocks)
        return [Piece(shown, markdown_height(shown.source), notes)]
    # cut between blocks, each piece as large as a slide allows; a heading keeps with what follows
    pieces, current, height = [], [], CELL_PAD
    for block in blocks:
        if current and height + block_height(block) > BUDGET - 40 and block_kind(current[-1]) != "heading":
            pieces.append(current)
            current, height = [], CELL_PAD
        current.append(block)
        height += block_height(block)
    pieces.append(current)
    result = []
    for number, part in enumerate(pieces):
        shown = copy.deepcopy(cell)
        shown.id = f"{cell_id}-part{number + 1}"
        shown.source = "\n\n".join(part)
        result.append(Piece(shown, markdown_height(shown.source), notes if number == 0 else []))
    return result


def pieces_of(cell: NotebookNode) -> list[Piece]:
    if cell.cell_type == "code":
        return code_pieces(cell)
    if cell.cell_type == "markdown":
        return markdown_pieces(cell)
    return [Piece(copy.deepcopy(cell), 40)]


def lay_out(notebook: NotebookNode) -> NotebookNode:
    """A copy of ``notebook`` as the deck shows it: the rules above applied, every slide within
    ``BUDGET`` by the height model (continuation sub-slides where needed), speaker notes added."""
    notebook = copy.deepcopy(notebook)
    groups: list[list[NotebookNode]] = []  # the cells of each slide, in order
    for cell in notebook.cells:
        kind = slide_type(cell)
        if kind == "skip":
            continue
        if not groups or (kind in ("slide", "subslide") and any(slide_type(c) != "notes" for c in groups[-1])):
            groups.append([])
        groups[-1].append(cell)
    cells = []
    for group in groups:
        cells.extend(_paginate(group))
    notebook.cells = cells
    return notebook


def _paginate(group: list[NotebookNode]) -> list[NotebookNode]:
    first_kind = next((slide_type(c) for c in group if slide_type(c) != "notes"), "-")
    heading = next((h for c in group if c.cell_type == "markdown" and (h := _heading_text(c.source))), None)
    pages: list[list[Piece]] = [[]]
    height = 0.0
    for cell in group:
        if slide_type(cell) == "notes":
            pages[-1].append(Piece(copy.deepcopy(cell), 0))
            continue
        fragment = slide_type(cell) == "fragment"  # its first piece starts the fragment, the rest follow in it
        for number, piece in enumerate(pieces_of(cell)):
            shown = [p for p in pages[-1] if slide_type(p.cell) != "notes"]
            if shown and height + piece.height > BUDGET:
                pages.append([])
                height = 0.0
                if heading:
                    label = _markdown(f'<p class="{CONTINUED_CLASS}">{heading} (continued)</p>',
                                      f"{piece.cell.get('id', 'cell')}-cont")
                    pages[-1].append(Piece(label, 46))
                    height = 46
            if slide_type(piece.cell) != "notes":
                _set_type(piece.cell, "fragment" if fragment and number == 0 else "-")
            if piece.cell.cell_type == "markdown" and not piece.cell.source.strip() and piece.notes:
                pages[-1].extend(Piece(note, 0) for note in piece.notes)
                continue
            pages[-1].append(piece)
            pages[-1].extend(Piece(note, 0) for note in piece.notes)
            height += piece.height
    cells = []
    for number, page in enumerate(pages):
        opener = next((p.cell for p in page if slide_type(p.cell) != "notes"), None)
        if opener is None:
            continue
        _set_type(opener, first_kind if number == 0 else "subslide")
        if number == 0 and first_kind not in ("slide", "subslide"):
            _set_type(opener, "-")
        cells.extend(p.cell for p in page)
    return cells
