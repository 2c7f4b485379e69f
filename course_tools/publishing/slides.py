"""``course slides``: the solution notebooks as reveal.js lecture decks that work offline.

Each deck is nbconvert's reveal.js export of the executed solution notebook (figures live, maths
typeset by MathJax 2). Every script, style sheet and font the decks load is copied from the npm
packages that ``scripts/setup_system.sh`` installs under ``build/vendor/`` into ``<out>/assets/``,
and the decks name them by relative paths, so a folder of slides opens from ``file://`` or any
web server without a network. Rendering refuses to write a deck that still names a remote asset.

What each slide shows (figures without their plotting code, long code in the speaker notes,
derivations' prose in the notes, continuation sub-slides so that nothing needs scrolling) is decided
at render time by the rules of ``slide_layout``; the notebooks themselves are not edited for slides.
The index page lists each deck's topics (its notebook's section headings) and the seed lectures and
notes it covers (``SEEDS`` and ``SEED_TOPICS`` below, after the course specification's section 6).
"""
from __future__ import annotations

import copy
import os
import re
import shutil
import sys
from pathlib import Path
from typing import TextIO

from nbformat import NotebookNode

from course_tools.course import Assignment, CourseError
from course_tools.notebooks import dumps, nbgrader_meta, read_notebook, write_if_changed

from .slide_heights import CODE_NOTE_CLASS, CONTINUED_CLASS, HIDE_INPUT_TAGS, IMAGE_MAX_HEIGHT
from .slide_index import publish, slides_in, title, topics, write_index
from .slide_layout import lay_out

VENDOR_ENV = "COURSE_SLIDES_VENDOR"  # folder holding node_modules/ (default: <course>/build/vendor)
SETUP_HINT = "run scripts/setup_system.sh (make setup does)"


# What the decks load, as paths inside node_modules/; each is copied to <out>/assets/<same path>.
# MathJax 2 is what nbconvert's templates drive; only its TeX input, CommonHTML output and the
# TeX web fonts are needed (the package also holds other outputs and fonts, ~70 MB).
ASSETS = (
    "reveal.js/dist/reveal.js",
    "reveal.js/dist/reveal.css",
    "reveal.js/dist/theme/white.css",  # "white" loads its font from beside it, others from the web
    "reveal.js/dist/theme/fonts/source-sans-pro",
    "reveal.js/plugin/notes/notes.js",
    "requirejs/require.js",
    "jquery/dist/jquery.min.js",
    "mathjax/MathJax.js",
    "mathjax/config/TeX-AMS_CHTML-full.js",
    "mathjax/config/Safe.js",
    "mathjax/extensions",
    "mathjax/jax/input/TeX",
    "mathjax/jax/element/mml",
    "mathjax/jax/output/CommonHTML",
    "mathjax/fonts/HTML-CSS/TeX/woff",
)


# nbconvert's reveal template with four changes: no mermaid import (an ES module import, which
# browsers refuse from file://; the course draws no mermaid diagrams), figures that fit a slide (the
# height slide_layout's model assumes) and the styles of its notes, an empty icon so that a browser
# does not ask the server for /favicon.ico, and a flag set when reveal.js has laid out the print
# pages (PRINT_READY waits for it).
TEMPLATE = (
    """{%- extends 'index.html.j2' -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}
<link rel="icon" href="data:,">
<script>document.addEventListener("pdf-ready", () => { window.coursePrintLaidOut = true; });</script>
<style type="text/css">
.reveal section img { max-height: IMAGE_MAX_HEIGHTpx; max-width: 100%; width: auto; }
.reveal .jp-InputArea-editor pre, .reveal .jp-OutputArea-output pre {
  white-space: pre-wrap; overflow-wrap: anywhere; }
.reveal p.CONTINUED_CLASS { color: #777; font-style: italic; margin: 0 0 .4em; }
.reveal p.CODE_NOTE_CLASS { color: #555; font-size: 16px; margin: .2em 0; }
.reveal p.CODE_NOTE_CLASS::before { content: "\\2328\\00a0 "; }
</style>
{%- endblock html_head_css -%}
""".replace("IMAGE_MAX_HEIGHT", str(IMAGE_MAX_HEIGHT))
    .replace("CONTINUED_CLASS", CONTINUED_CLASS)
    .replace("CODE_NOTE_CLASS", CODE_NOTE_CLASS)
)


# Loads of remote code, styles or fonts (links to papers in the prose are fine).
REMOTE_ASSET = re.compile(
    r"""<script[^>]*\bsrc=["']?(?:https?:)?//|<link[^>]*\bhref=["']?(?:https?:)?//"""
    r"""|@import\s+url\(["']?(?:https?:)?//|\bimport\s[^;\n]*\bfrom\s*["'](?:https?:)?//""",
    re.IGNORECASE,
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def vendor_dir(root: Path) -> Path:
    """The node_modules/ folder the setup filled, or CourseError saying how to fill it."""
    vendor = Path(os.environ.get(VENDOR_ENV) or root / "build" / "vendor") / "node_modules"
    missing = [asset for asset in ASSETS if not (vendor / asset).exists()]
    if missing:
        raise CourseError(
            f"slides need reveal.js, MathJax, require.js and jQuery in {vendor} "
            f"({missing[0]} is missing): {SETUP_HINT}"
        )
    return vendor


def copy_assets(vendor: Path, out: Path) -> None:
    """Copy what the decks load into ``out/assets`` (files already there and unchanged are kept)."""
    for asset in ASSETS:
        source, target = vendor / asset, out / "assets" / asset
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True, copy_function=_copy_if_changed)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_if_changed(source, target)


def _copy_if_changed(source, target) -> None:
    source, target = Path(source), Path(target)
    stat = source.stat()
    if target.is_file() and target.stat().st_size == stat.st_size and target.stat().st_mtime >= stat.st_mtime:
        return
    shutil.copy2(source, target)


def for_slides(notebook: NotebookNode) -> NotebookNode:
    """A copy to render: no widget views (their manager is a remote script), no stderr noise.

    Progress bars are widgets in a live kernel; their text/plain fallback stays. Warnings and
    progress text on stderr are for the person running the notebook, not for the audience.
    """
    notebook = copy.deepcopy(notebook)
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                continue
            if WIDGET_VIEW in output.get("data", {}):
                data = {k: v for k, v in output["data"].items() if k != WIDGET_VIEW}
                if not data:
                    continue
                output = NotebookNode(dict(output, data=NotebookNode(data)))
            outputs.append(output)
        cell.outputs = outputs
    return notebook


def render(notebook: NotebookNode, name: str) -> str:
    """The reveal.js deck of an executed notebook, naming its assets under ``assets/``."""
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    exporter = SlidesExporter(
        config=Config(
            {"TagRemovePreprocessor": {"enabled": True, "remove_input_tags": list(HIDE_INPUT_TAGS)}}
        ),
        reveal_url_prefix="assets/reveal.js",
        reveal_theme="white",
        reveal_number="c/t",
        reveal_scroll=False,  # slides are laid out to fit; nbconvert's scrolling would add scroll bars
        require_js_url="assets/requirejs/require.js",
        jquery_url="assets/jquery/dist/jquery.min.js",
        mathjax_url="assets/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe",
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
        jupyter_widgets_base_url="",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    exporter.raw_template = TEMPLATE
    shown = lay_out(for_slides(notebook))
    shown.metadata.setdefault("title", title(notebook, name))  # the browser tab's "<title> slides"
    text, _ = exporter.from_notebook_node(shown, resources={"metadata": {"name": name}})
    remote = REMOTE_ASSET.search(text)
    if remote:
        raise CourseError(f"{name}: the deck would load {remote.group(0)!r}… from the network")
    return text


def executed(
    root: Path, assignment: Assignment, profile: str, out: TextIO, cell_timeout: float = 900
) -> tuple[NotebookNode, list[str]]:
    """The solution executed in ``profile``, and what went wrong (the first line of each error a cell raised).

    ``course build`` and this step share ``build/executed/<id>/<id>.ipynb``; a copy is reused
    when it is newer than the source and its ``metadata.course.profile`` is ``profile``.
    """
    from .execute import execute

    cached = root / "build" / "executed" / assignment.id / assignment.source.name
    if cached.is_file() and cached.stat().st_mtime >= assignment.source.stat().st_mtime:
        notebook = read_notebook(cached)
        if notebook.metadata.get("course", {}).get("profile") == profile:
            print(f"{assignment.id}: reusing {cached.relative_to(root)}", file=out)
            return notebook, cell_errors(notebook)
    print(f"{assignment.id}: executing the solution in the {profile} profile …", file=out, flush=True)
    run = execute(assignment.source, profile=profile, cell_timeout=cell_timeout)
    notebook = run.notebook
    if run.stopped:  # the deck shows what ran; the half-run copy is not kept for reuse
        return notebook, cell_errors(notebook) + [f"{run.stopped}: the deck stops there"]
    notebook.metadata["course"] = {"profile": profile}
    write_if_changed(cached, dumps(notebook))
    return notebook, cell_errors(notebook)


def cell_errors(notebook: NotebookNode) -> list[str]:
    errors = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                where = nbgrader_meta(cell).get("grade_id") or f"cell {cell.get('id', '?')}"
                errors.append(f"a cell raised {where}: {output['ename']}: {output['evalue']}".splitlines()[0])
    return errors


# Printing races two scripts. reveal.js lays out the print pages on window load, measuring slides
# whose maths MathJax may not have typeset yet, so a slide can outgrow its page (Chromium then
# printed all of deck 05 blank); and maths typeset while reveal.js still hid the slides comes out
# zero-sized (deck 04 printed without most of its formulas, one run in two). So once reveal.js says
# the print layout is done ('pdf-ready', recorded by the template), render every formula again on the
# visible pages, then give each page that its slide outgrew as many @page heights as it needs.
# reveal.js's print view, each slide once with all its fragments shown: a copy per fragment (its
# default) duplicates the typeset maths' element ids, and MathJax then renders one copy and leaves
# the other empty. reveal.js reads configuration from the query string.
PRINT_QUERY = "?print-pdf&pdfSeparateFragments=false"
PRINT_READY = """new Promise(done => {
  if (!window.coursePrintLaidOut || !(window.MathJax && MathJax.isReady)) return done(false);
  MathJax.Hub.Queue(["Rerender", MathJax.Hub], () => {
    let unit = null;
    for (const sheet of document.styleSheets) {
      try {
        for (const rule of sheet.cssRules) {
          if (rule instanceof CSSPageRule)
            unit = parseFloat(rule.style.getPropertyValue('size').split(' ')[1]) || unit;
        }
      } catch (error) {}  // a style sheet the page may not read
    }
    for (const page of document.querySelectorAll('.pdf-page')) {
      const section = page.querySelector('section');
      const bottom = section ? section.getBoundingClientRect().bottom - page.getBoundingClientRect().top : 0;
      if (unit && bottom > page.offsetHeight) page.style.height = Math.ceil(bottom / unit) * unit + 'px';
    }
    done(true);
  });
})"""


def print_pdf(deck: Path, pdf: Path, *, timeout: float = 180) -> int:
    """Print a deck to PDF in reveal's print layout (a page per slide, more for tall ones); the page count."""
    from .chromium import pdf_pages, print_to_pdf

    data = print_to_pdf(deck.resolve().as_uri() + PRINT_QUERY, ready=PRINT_READY, timeout=timeout)
    pdf.write_bytes(data)
    return pdf_pages(data)


def slides(
    root: Path,
    selected: list[Assignment],
    profile: str,
    out_dir: Path,
    *,
    pdf: bool = False,
    out: TextIO | None = None,
    cell_timeout: float = 900,
) -> bool:
    """Render a deck per assignment (PDFs too with ``pdf``) and the index; False if a cell raised."""
    out = out or sys.stdout
    vendor = vendor_dir(root)
    if pdf:
        from .chromium import chromium

        chromium()  # fail before hours of execution, not after
    out_dir.mkdir(parents=True, exist_ok=True)
    copy_assets(vendor, out_dir)
    ok = True
    for assignment in selected:
        notebook, errors = executed(root, assignment, profile, out, cell_timeout)
        for error in errors:
            print(f"{assignment.id}: {error}", file=out)
        ok &= not errors
        deck = out_dir / f"{assignment.id}.slides.html"
        text = render(notebook, assignment.id)
        publish(deck, text)
        count = slides_in(text)
        print(f"{assignment.id}: {count} slides -> {deck}", file=out)
        if pdf:
            handout = out_dir / f"{assignment.id}.pdf"
            pages = print_pdf(deck, handout)
            if pages < count:
                raise CourseError(f"{handout}: {pages} pages for {count} slides")
            print(f"{assignment.id}: {pages} pages -> {handout}", file=out)
    # The index lists every deck in the folder whose notebook still exists, so rendering one
    # assignment keeps the links to the others.
    decks = []
    for deck in sorted(out_dir.glob("*.slides.html")):
        source = Assignment(deck.name.removesuffix(".slides.html"), root).source
        if source.is_file():
            notebook = read_notebook(source)
            decks.append(
                (
                    source.stem,
                    title(notebook, source.stem),
                    slides_in(deck.read_text(encoding="utf-8")),
                    topics(notebook),
                )
            )
    print(f"index -> {write_index(out_dir, decks)}", file=out)
    return ok
