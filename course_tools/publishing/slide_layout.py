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

import copy
import re

from nbformat import NotebookNode

from .slide_heights import (
    BUDGET,
    CELL_PAD,
    CODE_NOTE_CLASS,
    CONTINUED_CLASS,
    EXERCISE_LINES,
    HIDE_INPUT_TAGS,
    block_height,
    block_kind,
    code_height,
    code_lines,
    input_rule,
    markdown_blocks,
    markdown_height,
    outputs_height,
    set_slide_type,
    slide_type,
    truncate_outputs,
)

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
    cell = NotebookNode(
        {"cell_type": "markdown", "id": cell_id, "metadata": NotebookNode(), "source": source})
    return set_slide_type(cell, kind)


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
        notes.append(
            _notes(f"Code of this slide ({len(lines)} lines):\n\n```python\n" + "\n".join(lines) + "\n```",
                   f"{cell.get('id', 'cell')}-code"))
        pieces.append(
            Piece(
                _markdown(
                    f'<p class="{CODE_NOTE_CLASS}">{len(lines)} lines of code: in the notebook '
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
        pieces.append(Piece(piece_cell,
                            CELL_PAD / 2 + code_height(part) + outputs_height(piece_cell.outputs)))
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
        if not groups or (kind in ("slide", "subslide") and any(slide_type(c) != "notes"
                                                                for c in groups[-1])):
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
        fragment = slide_type(
            cell) == "fragment"  # its first piece starts the fragment, the rest follow in it
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
                set_slide_type(piece.cell, "fragment" if fragment and number == 0 else "-")
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
        set_slide_type(opener, first_kind if number == 0 else "subslide")
        if number == 0 and first_kind not in ("slide", "subslide"):
            set_slide_type(opener, "-")
        cells.extend(p.cell for p in page)
    return cells
