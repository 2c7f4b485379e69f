"""How tall a slide's content is: the height model of the deck's CSS (calibrated on the rendered
decks in Chromium) for code, Markdown blocks, images and outputs, the rules that decide what of a
cell a slide shows (:func:`input_rule`), and long outputs cut at ``MAX_OUTPUT_LINES``.
:mod:`.slide_layout` cuts the cells into slides with it.
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
# 19px on 22.6px lines (input wraps at about 80 characters, output at 72: the template wraps both), prose 20px
# on 26px
# lines at about 80 characters, h1 50px, h2 32px, h3 26px, display maths about 50px a row.
CODE_LINE, INPUT_CHARS, OUTPUT_CHARS, CODE_PAD = 22.6, 76, 72, 20
TEXT_LINE, TEXT_CHARS = 26, 78
CELL_PAD = 34
FIGURE_PAD = 52  # an image output's own margins
HEADINGS = {1: (60, 30), 2: (40, 52), 3: (34, 62), 4: (30, 70)}  # level: (line height, characters a line)


# ---------------------------------------------------------------- what a cell is

def slide_type(cell: NotebookNode) -> str:
    return cell.metadata.get("slideshow", {}).get("slide_type", "-") or "-"


def set_slide_type(cell: NotebookNode, kind: str) -> NotebookNode:
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
        return 20 + line * _wrapped(_plain(lines[0].lstrip("#").strip()),
                                    chars) + TEXT_LINE * (len(lines) - 1)
    if kind == "code":
        return code_height(lines[1:-1]) + 20
    if kind == "maths":
        formulas = max(1, block.count("$$") // 2)
        rows = block.count("\\\\") + formulas
        prose = re.sub(r"\$\$.*?\$\$", "", block, flags=re.DOTALL)
        return 16 + 36 * rows + 24 * formulas + (
            TEXT_LINE * _wrapped(_plain(prose), TEXT_CHARS) if prose.strip() else 0)
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
