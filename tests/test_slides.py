"""``course slides``: decks that follow the notebooks' slide metadata, load nothing from the network,
and work in a real browser (headless Chromium, every host but 127.0.0.1 unreachable)."""
import base64
import contextlib
import functools
import html
import http.server
import io
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import nbformat
import pytest

from course_tools.publishing import slide_heights
from course_tools.publishing import slides as slides_module
from course_tools.publishing.chromium import pdf_pages
from course_tools.cli import main
from course_tools.course import Assignment, CourseError, assignments
from course_tools.publishing.execute import Execution
from course_tools.notebooks import read_notebook
from course_tools.publishing.slide_layout import lay_out
from course_tools.publishing.slide_index import (SEED_TOPICS, SEEDS, slide_count, slides_in, topics,
                                                 write_index)
from course_tools.publishing.slides import copy_assets, executed, print_pdf, render, slides, vendor_dir

from . import browser
from .conftest import ASSIGNMENTS, ROOT
from .shared import built_once
from .toy_course import cell, make_toy_course, toy_notebook

# Screenshots are taken into a test's temporary folder, then copied here for a person to look at.
SCREENSHOTS = browser.SCREENSHOTS / "slides"
SEEDS_DIR = ROOT.parent / "shared" / "seeds"
VIEWPORT = {"width": 1280, "height": 720}
MATHS = r"$$\mathrm{softmax}(z)_i = \frac{e^{z_i}}{\sum_j e^{z_j}}$$"


# Display maths that is short as TeX source and tall once typeset: the last slide outgrows the print
# page that reveal.js measured before MathJax ran (Chromium then printed the whole deck blank).
TALL_MATHS = "\n\n".join(
    f"$$\\frac{{\\partial^2 y_{k}}}{{\\partial x_{k}^2}} = \\frac{{1}}{{1 + e^{{-x_{k}}}}}$$"
    for k in range(8))


def lecture_notebook() -> nbformat.NotebookNode:
    """The toy assignment as a small lecture: a hidden set-up cell, maths, a plot, notes, sub-slides."""
    notebook = toy_notebook()
    intro, imports, solution, test, results = notebook.cells
    notebook.cells = [
        cell("code", "%matplotlib inline\nimport matplotlib.pyplot as plt", "setup", slide="skip"),
        intro,  # slide 1
        cell("markdown", f"## The softmax\n\n{MATHS}\n\nInline too: $\\sum_i p_i = 1$.", "maths",
             slide="subslide"),  # slide 2
        cell("markdown", "Say where the exponentials come from.", "notes", slide="notes"),
        cell("code", "plt.plot([1, 3, 2]); plt.title('a figure'); plt.show()", "plot", slide="fragment"),
        cell("code", "print('helper output only')  # hidden input", "hidden", slide="-"),
        cell("markdown", "## Exercise: `double`", "exercise", slide="slide"),  # slide 3
        imports,
        solution,
        test,
        results,
        cell("markdown", f"## Takeaway\n\nTwice $x$ is $2x$.\n\n{TALL_MATHS}", "takeaway",
             slide="subslide"),  # slide 4
    ]
    notebook.cells[5].metadata["tags"] = ["remove-input"]  # a slide shows only this cell's output
    return notebook


# ---------------------------------------------------------------- slide count, without a browser

def _notebook_of(types: list[str]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    for index, kind in enumerate(types):
        cell = nbformat.v4.new_markdown_cell(f"cell {index}")
        if kind is not None:
            cell.metadata["slideshow"] = {"slide_type": kind}
        notebook.cells.append(cell)
    return notebook


@pytest.mark.parametrize("types, expected", [
    (["-"], 1),
    ([None, "-"], 1),  # no slideshow metadata reads as "-"
    (["skip", "notes", "-", "slide"], 2),  # the first visible cell starts a slide whatever its type
    (["subslide", "subslide", "fragment", "-"], 2),
    (["slide", "-", "skip", "subslide", "notes", "fragment", "slide", "slide"], 4),
    (["slide", "skip", "slide", "skip"], 2),  # a skipped cell never starts anything
    (["skip", "notes"], 0),
])
def test_slide_count_is_what_nbconvert_lays_out(types, expected):
    notebook = _notebook_of(types)
    assert slide_count(notebook) == expected
    if expected:
        deck = render(notebook, "count")
        assert slides_in(deck) == expected and deck.count("<section") == deck.count("</section>")


def test_the_lecture_notebook_has_four_slides():
    assert slide_count(lecture_notebook()) == 4


# ---------------------------------------------------------------- rendering and the step, without a kernel

def test_a_deck_names_only_local_assets_and_drops_widgets_and_stderr():
    notebook = lecture_notebook()
    plot = notebook.cells[4]
    plot.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: noise\n"),
        nbformat.v4.new_output(
            "display_data", data={
                "application/vnd.jupyter.widget-view+json": {
                    "model_id": "abc", "version_major": 2, "version_minor": 0
                }, "text/plain": "train: 100%|##########| 5/5"
            }),
    ]
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    notebook.cells[5].outputs = [nbformat.v4.new_output("stream", name="stdout", text="helper output only\n")]
    text = render(notebook, "toy")
    assert "helper output only" in text and "# hidden input" not in text
    loads = re.findall(r"""<(?:script|link|img)[^>]*\b(?:src|href)="([^"]+)\"""", text)
    assert loads and all(not re.match(r"(https?:)?//", url) for url in loads), loads
    assert {url.split("?")[0] for url in loads} - {"data:,"} <= {f"assets/{a}" for a in slides_module.ASSETS}
    assert "unpkg" not in text and "cdnjs" not in text and "mermaid.esm" not in text
    assert "train: 100%" in text and "UserWarning" not in text and "widget-view" not in text


def test_a_remote_asset_is_refused(monkeypatch):
    monkeypatch.setattr(slides_module, "TEMPLATE", slides_module.TEMPLATE.replace(
        "</style>", '</style><script src="https://cdn.example.org/x.js"></script>'))
    with pytest.raises(CourseError, match="from the network"):
        render(lecture_notebook(), "toy")


def test_missing_assets_are_one_clear_line(tmp_path, monkeypatch, capsys):
    make_toy_course(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(slides_module.VENDOR_ENV, str(tmp_path / "nowhere"))
    assert main(["slides", "--profile", "smoke"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "scripts/setup_system.sh" in error and "reveal.js" in error


def _fake_execute(calls):
    def execute(path, *, profile, **_):
        calls.append(profile)
        notebook = nbformat.read(path, as_version=4)
        return Execution(notebook, 0.0, {}, [])
    return execute


def test_executed_copies_are_reused_only_when_fresh_and_from_the_same_profile(tmp_path, monkeypatch):
    import io

    from course_tools.publishing import execute as execute_module

    make_toy_course(tmp_path)
    calls = []
    monkeypatch.setattr(execute_module, "execute", _fake_execute(calls))
    toy = Assignment("toy", tmp_path)
    log = io.StringIO()
    executed(tmp_path, toy, "smoke", log)
    cached = tmp_path / "build" / "executed" / "toy" / "toy.ipynb"
    assert calls == ["smoke"] and read_notebook(cached).metadata["course"] == {"profile": "smoke"}
    executed(tmp_path, toy, "smoke", log)
    assert calls == ["smoke"] and "reusing build/executed/toy/toy.ipynb" in log.getvalue()
    executed(tmp_path, toy, "laptop", log)  # another profile's figures differ
    assert calls == ["smoke", "laptop"]
    later = cached.stat().st_mtime + 5
    os.utime(toy.source, (later, later))  # the source was edited since
    executed(tmp_path, toy, "laptop", log)
    assert calls == ["smoke", "laptop", "laptop"]


def test_index_links_every_deck_in_course_order(tmp_path):
    for name in ("02_b.slides.html", "01_a.slides.html", "02_b.pdf", "01_a.pdf"):
        (tmp_path / name).write_text("x")
    os.utime(tmp_path / "01_a.pdf", (0, 0))  # printed from an older deck: not linked
    index = write_index(tmp_path, [("01_a", "One & only", 3, ["Sums & products"]),
                                   ("02_b", "Two", 5, [])]).read_text()
    assert index.index("01_a.slides.html") < index.index("02_b.slides.html")
    assert "One &amp; only" in index and "3 slides" in index and '<a href="02_b.pdf">' in index
    assert '<a href="01_a.pdf">' not in index and "http" not in index
    assert "Sums &amp; products" in index and "Seed material" not in index  # no seeds known for toy ids


def test_the_index_names_each_decks_topics_and_seeds(tmp_path):
    decks = []
    for assignment in ASSIGNMENTS:
        (tmp_path / f"{assignment.id}.slides.html").write_text("x")
        notebook = read_notebook(assignment.source)
        decks.append((assignment.id, slides_module.title(notebook, assignment.id), 1, topics(notebook)))
    index = write_index(tmp_path, decks).read_text()
    for deck_id, _, _, deck_topics in decks:
        entry = html.unescape(index[index.index(f'href="{deck_id}.slides.html"'):].split("</li>\n<li><a")[0])
        assert deck_topics and all(topic in entry for topic in deck_topics), deck_id
        assert "Takeaways" not in entry and "Seed material covered" in entry, deck_id
        for seed, _ in SEED_TOPICS[deck_id]:
            assert f"{seed} · {SEEDS[seed]}" in entry


def test_every_deck_has_its_seed_topics_and_they_name_real_seeds():
    assert set(SEED_TOPICS) == {a.id for a in ASSIGNMENTS}
    named = {seed for covered in SEED_TOPICS.values() for seed, _ in covered}
    assert named == set(SEEDS)  # every seed is taught somewhere, and only seeds that exist are named
    if SEEDS_DIR.is_dir():
        assert {path.name.split("_")[0] for path in SEEDS_DIR.glob("*.txt")} == set(SEEDS)


def test_topics_are_the_numbered_sections_without_the_takeaways():
    notebook = _notebook_of(["-", "-", "-"])
    notebook.cells[0].source = "# Title\n\n## 1 · Softmax, stably\n\ntext"
    notebook.cells[1].source = "## 2 · Moving $k$ positions with `rotate`\n### Exercise 1"
    notebook.cells[2].source = "## 3 · Takeaways"
    assert topics(notebook) == ["Softmax, stably", "Moving k positions with rotate"]


# ---------------------------------------------------------------- what a slide shows (slide_layout's rules)

PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d49484452000002800000019008060000")).decode()  # 640x400


def _code(source, outputs=(), tags=(), nbgrader=None, slide="-", cell_id=None):
    code = nbformat.v4.new_code_cell(source)
    code.outputs = list(outputs)
    code.metadata["slideshow"] = {"slide_type": slide}
    if tags:
        code.metadata["tags"] = list(tags)
    if nbgrader:
        code.metadata["nbgrader"] = nbgrader
    if cell_id:
        code.id = cell_id
    return code


def _figure():
    return nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})


def _lecture(*cells):
    notebook = nbformat.v4.new_notebook()
    heading = nbformat.v4.new_markdown_cell("## A section")
    heading.metadata["slideshow"] = {"slide_type": "slide"}
    notebook.cells = [heading, *cells]
    return notebook


def _outside_notes(text: str) -> str:
    return re.sub(r'<aside class="notes">.*?</aside>', "", text, flags=re.DOTALL)


def _notes(text: str) -> str:
    return " ".join(re.findall(r'<aside class="notes">(.*?)</aside>', text, flags=re.DOTALL))


LONG = "\n".join(f"plumbing_step_{i} = {i}" for i in range(30))
SOLUTION = {
    "solution": True, "grade": False, "grade_id": "sol", "locked": False, "schema_version": 3, "task": False
}
TEST = {
    "solution": False, "grade": True, "grade_id": "test", "locked": True, "points": 1, "schema_version": 3,
    "task": False
}


def test_a_figure_shows_without_its_code_unless_tagged_show_input():
    text = render(_lecture(_code("plot_it_now()", [_figure()]),
                           _code("keep_this_plot()", [_figure()], tags=["show-input"])), "rules")
    assert "plot_it_now" not in text and text.count("<img") == 2
    assert "keep_this_plot" in _outside_notes(text)


def test_remove_input_wins_over_everything_and_tests_never_show_their_code():
    text = render(_lecture(_code("secret_helper()", [nbformat.v4.new_output("stream", text="shown\n")],
                                 tags=["remove-input"]),
                           _code("def answer():\n    return 1", nbgrader=SOLUTION, tags=["remove_input"]),
                           _code("assert visible_test()", nbgrader=TEST)), "rules")
    assert "shown" in text and "secret_helper" not in text
    assert "answer" not in text and "visible_test" not in text


def test_long_code_goes_to_the_speaker_notes_and_its_output_stays():
    out = nbformat.v4.new_output("stream", text="the result\n")
    text = render(_lecture(_code(LONG, [out])), "rules")
    assert "plumbing_step_29" not in _outside_notes(text) and "plumbing_step_29" in _notes(text)
    assert "the result" in _outside_notes(text) and "30 lines of code: in the notebook" in text


def test_a_long_exercise_stays_on_the_slides_in_parts_without_the_solution_markers():
    source = "\n".join(
        ["def solve(x):", "    ### BEGIN SOLUTION"]
        + [f"    part_{i} = x + {i}" for i in range(40)]
        + ["    return x", "    ### END SOLUTION"]
    )
    shown = lay_out(_lecture(_code(source, nbgrader=SOLUTION, cell_id="ex")))
    parts = [c for c in shown.cells if c.cell_type == "code"]
    assert len(parts) >= 3 and all(len(c.source.splitlines()) <= slide_heights.EXERCISE_LINES for c in parts)
    assert "\n".join(c.source for c in parts).split() == [
        w for w in source.split() if w not in ("###", "BEGIN", "END", "SOLUTION")
    ]
    assert all(slide_heights.slide_type(c) == "subslide" for c in shown.cells if "(continued)" in c.source)
    text = render(_lecture(_code(source, nbgrader=SOLUTION, cell_id="ex")), "rules")
    assert "part_39" in _outside_notes(text) and "BEGIN SOLUTION" not in text
    assert slides_in(text) == slide_count(shown) >= 3


def test_long_output_is_cut_with_a_count_of_what_is_left():
    out = nbformat.v4.new_output("stream", text="".join(f"line {i}\n" for i in range(50)))
    (cell,) = [c for c in lay_out(_lecture(_code("x = 1", [out]))).cells if c.cell_type == "code"]
    text = cell.outputs[0]["text"]
    assert "line 0\n" in text and "line 49" not in text
    assert f"{50 - slide_heights.MAX_OUTPUT_LINES + 1} more lines in the notebook" in text


def test_a_derivations_prose_goes_to_the_notes_and_its_formulas_stay():
    derivation = nbformat.v4.new_markdown_cell(
        "### Why divide by the root\n\nThe dot product of two random vectors has variance $d_k$.\n\n"
        "$$\\operatorname{Var}(q \\cdot k) = d_k$$\n\nSo dividing by $\\sqrt{d_k}$ keeps it at one."
    )
    text = render(_lecture(derivation), "rules")
    slide, notes = _outside_notes(text), _notes(text)
    assert "Why divide by the root" in slide and "\\operatorname{Var}" in slide
    assert "has variance" in notes and "keeps it at one" in notes and "has variance" not in slide


def test_a_slide_too_full_continues_on_a_sub_slide():
    paragraphs = "\n\n".join(f"Paragraph {i} " + "words " * 60 for i in range(12))
    shown = lay_out(_lecture(nbformat.v4.new_markdown_cell(paragraphs)))
    assert slide_count(shown) >= 3 and sum("A section (continued)" in c.source for c in shown.cells) >= 2
    assert " ".join(c.source for c in shown.cells).count("Paragraph") == 12  # nothing dropped


# ---------------------------------------------------------------- in Chromium

WAIT_FOR_DECK = """
const done = arguments[arguments.length - 1];
const started = Date.now();
(function poll() {
  const ready = document.querySelector('.reveal.ready') && window.MathJax && MathJax.isReady;
  if (!ready) return Date.now() - started > 60000 ? done(null) : setTimeout(poll, 100);
  MathJax.Hub.Queue(() => {
    const reveal = require('assets/reveal.js/dist/reveal.js');
    reveal.configure({transition: 'none'});
    const jax = MathJax.Hub.getAllJax();
    const images = Array.from(document.querySelectorAll('.reveal section img'));
    const figures = document.querySelectorAll('.reveal section .jp-OutputArea-output img');
    const firstWith = selector => {
      const hit = document.querySelector('.reveal .slides section:not(.stack) ' + selector);
      return hit ? reveal.getIndices(hit.closest('section:not(.stack)')) : null;
    };
    done({
      isReady: reveal.isReady(),
      total: reveal.getTotalSlides(),
      horizontal: reveal.getHorizontalSlides().length,
      jax: jax.length,
      typeset: document.querySelectorAll('.MathJax_CHTML').length,
      badMaths: jax.filter(j => /<merror|mathcolor="red"/.test(j.root.toMathML(''))).map(j => j.originalText),
      rawMaths: Array.from(document.querySelectorAll('.jp-MarkdownOutput'))
                     .map(e => e.innerText).filter(t => t.includes('$$')),
      images: figures.length,
      brokenImages: images.filter(i => !(i.complete && i.naturalWidth > 0)).length,
      mathsSlide: firstWith('.MJXc-display') || firstWith('.MathJax_CHTML'),
      figureSlide: firstWith('.jp-OutputArea-output img'),
    });
  });
})();
"""


def _shown_images(notebook) -> int:
    """Image outputs of the cells a deck shows (skipped cells and notes show none)."""
    return sum(
        1
        for cell in notebook.cells
        if slide_heights.slide_type(cell) not in ("skip", "notes")
        for output in cell.get("outputs", [])
        if {"image/png", "image/jpeg"} & set(output.get("data", {}))
    )


# Waits for the print layout as print_pdf does, then measures what a bad print would lose.
PRINT_LAYOUT = f"""
const done = arguments[arguments.length - 1];
const started = Date.now();
(function poll() {{
  {slides_module.PRINT_READY}.then(ready => {{
    if (!ready) return Date.now() - started > 60000 ? done(null) : setTimeout(poll, 100);
    const pages = Array.from(document.querySelectorAll('.pdf-page'));
    done({{
      pages: pages.length,
      zeroSizedMaths: Array.from(document.querySelectorAll('.pdf-page .MathJax_CHTML'))
                           // notes do not print
                           .filter(m => m.offsetWidth === 0 && !m.closest('aside.notes'))
                           .map(m => m.id).slice(0, 5),
      overflowing: pages.filter(p => {{
        const section = p.querySelector('section');
        return section
          && section.getBoundingClientRect().bottom - p.getBoundingClientRect().top > p.offsetHeight + 1;
      }}).map(p => pages.indexOf(p)),
    }});
  }});
}})();
"""


def check_deck(driver, url: str, notebook, shots=None) -> dict:
    """Open a deck and assert everything a lecturer relies on; screenshots to ``<shots>-<what>.png``
    (a path in a temporary folder: keep_screenshots copies them for a person)."""
    browser.requested_urls(driver), browser.console_errors(driver)  # forget the start-up page
    driver.get(url)
    driver.set_script_timeout(90)
    deck = driver.execute_async_script(WAIT_FOR_DECK)
    assert deck, f"{url}: reveal.js or MathJax never became ready"
    assert deck["isReady"]
    shown = lay_out(slides_module.for_slides(notebook))
    assert deck["total"] == slide_count(shown), deck
    assert deck["horizontal"] == horizontal_count(shown), deck
    has_maths = any(
        "$" in c.source
        for c in notebook.cells
        if c.cell_type == "markdown" and slide_heights.slide_type(c) not in ("skip",)
    )
    if has_maths:
        assert deck["jax"] > 0 and deck["typeset"] >= deck["jax"], deck
    assert not deck["badMaths"], f"maths MathJax could not typeset: {deck['badMaths']}"
    assert not deck["rawMaths"], f"untypeset $$ left: {deck['rawMaths'][0][:200]}"
    assert deck["images"] == _shown_images(notebook) and not deck["brokenImages"], deck
    assert not browser.remote_requests(driver)
    assert not browser.console_errors(driver)
    if shots:
        reveal = "require('assets/reveal.js/dist/reveal.js')"
        for name, where, show in (
            ("first", {"h": 0, "v": 0}, None),
            ("maths", deck["mathsSlide"], ".MJXc-display, .MathJax_CHTML"),
            ("figure", deck["figureSlide"], ".jp-OutputArea-output img"),
        ):
            if where:
                # on the slide, with all its fragments shown
                driver.execute_script(
                    f"const r = {reveal}; r.slide(arguments[0], arguments[1]); while (r.nextFragment()) {{}}",
                    where["h"],
                    where["v"],
                )
                if show:  # a tall slide scrolls: bring the maths or the figure into view
                    driver.execute_script(
                        f"{reveal}.getCurrentSlide().querySelector(arguments[0])"
                        "?.scrollIntoView({block: 'center'})",
                        show,
                    )
                driver.execute_async_script("MathJax.Hub.Queue(arguments[arguments.length - 1])")
                time.sleep(0.3)  # one frame for the layout
                driver.save_screenshot(str(shots.parent / f"{shots.name}-{name}.png"))
        assert not browser.console_errors(driver)
    return deck


def keep_screenshots(folder) -> list:
    """Copy a test's screenshots to browser.SCREENSHOTS/slides/ (outside the course) for a person to look
    at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return [shutil.copy(shot, SCREENSHOTS / shot.name) for shot in sorted(folder.glob("*.png"))]


def horizontal_count(notebook) -> int:
    """Top-level slides: the first shown cell, then every later cell of type ``slide``."""
    types = [slide_heights.slide_type(c) for c in notebook.cells]
    first = next(i for i, kind in enumerate(types) if kind not in ("skip", "notes"))
    return 1 + types[first + 1 :].count("slide")


@contextlib.contextmanager
def local_server(folder):
    """A web server for ``folder`` on 127.0.0.1 (an ephemeral port), quiet."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def require_assets() -> None:
    """Chromium and the decks' JavaScript, as scripts/setup_system.sh installs them."""
    browser.require_browser()
    try:
        vendor_dir(ROOT)
    except CourseError as error:
        browser.unavailable(str(error).split(":")[0])


@pytest.fixture(scope="module")
def driver():
    with browser.chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def toy_decks(tmp_path_factory):
    """The lecture notebook as the course's only assignment, through `course slides` in smoke."""
    require_assets()

    def build(course: Path) -> None:
        make_toy_course(course)
        nbformat.write(lecture_notebook(), course / "solutions" / "toy" / "toy.ipynb")
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(course)
            patch.setenv(slides_module.VENDOR_ENV, str(ROOT / "build" / "vendor"))
            assert main(["slides", "--profile", "smoke", "--pdf"]) == 0

    return built_once(tmp_path_factory, "toy-decks", build)


@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_course_slides_writes_a_deck_a_handout_and_the_index(toy_decks):
    out = toy_decks / "build" / "slides"
    index = (out / "index.html").read_text()
    assert 'href="toy.slides.html"' in index and 'href="toy.pdf"' in index and "Toy assignment" in index
    assert (out / "assets" / "reveal.js" / "dist" / "reveal.js").is_file()
    pages = pdf_pages((out / "toy.pdf").read_bytes())
    assert pages >= 5  # a page per slide, more where a slide is taller than a page
    if shutil.which("pdfinfo"):  # poppler reads the same count
        info = subprocess.run(["pdfinfo", str(out / "toy.pdf")], capture_output=True, text=True).stdout
        assert int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1)) == pages
    if shutil.which("pdftotext"):  # every slide printed, the last (tallest once typeset) included
        text = subprocess.run(
            ["pdftotext", str(out / "toy.pdf"), "-"], capture_output=True, text=True
        ).stdout.lower()
        assert "the softmax" in text and "takeaway" in text and "∂" in text, text[
            :
            # headings print in capitals
            500
        ]


@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
@pytest.mark.parametrize("via", ["file", "http"])
def test_the_toy_deck_works_offline_in_chromium(toy_decks, driver, via, tmp_path):
    out = toy_decks / "build" / "slides"
    notebook = read_notebook(toy_decks / "build" / "executed" / "toy" / "toy.ipynb")
    with local_server(out) as server:
        url = (out / "toy.slides.html").as_uri() if via == "file" else f"{server}/toy.slides.html"
        deck = check_deck(driver, url, notebook, shots=tmp_path / f"toy-{via}" if via == "http" else None)
    if via == "http":
        assert len(keep_screenshots(tmp_path)) == 3
    # the tall takeaway continues on a sub-slide of its own (still two horizontal slides)
    assert deck["total"] >= 5 and deck["horizontal"] == 2 and deck["images"] == 1
    assert deck["jax"] == 4 + TALL_MATHS.count("$$") // 2
    assert (deck["mathsSlide"]["h"], deck["mathsSlide"]["v"]) == (0, 1)  # the softmax sub-slide


# Every slide of a deck, visited in order with Reveal.next() (all fragments shown), measured against
# reveal.js's slide box (960x700, scaled to the 1280x720 window) and the window itself; code, output
# or Markdown wider than its box by more than a character is clipped content too (JupyterLab's
# editor box is a few pixels narrower than its <pre> whatever the code: that is not clipping).
FITS = """
const done = arguments[arguments.length - 1];
(async () => {
  const reveal = require('assets/reveal.js/dist/reveal.js');
  reveal.configure({transition: 'none', backgroundTransition: 'none'});
  reveal.layout();
  const {width, height} = reveal.getConfig();
  const settle = () => new Promise(
    r => MathJax.Hub.Queue(() => requestAnimationFrame(() => requestAnimationFrame(r))));
  const overflowing = [], withNotes = [];
  let visited = 0, previous = null;
  reveal.slide(0, 0);
  for (let slide = reveal.getCurrentSlide(); slide !== previous; slide = reveal.getCurrentSlide()) {
    previous = slide;
    while (reveal.nextFragment()) {}
    await settle();
    visited += 1;
    const {h, v} = reveal.getIndices(slide);
    const box = slide.getBoundingClientRect();
    const clipped = Array.from(
        slide.querySelectorAll('pre, .jp-InputArea-editor, .jp-OutputArea-output, .jp-RenderedMarkdown'))
      .filter(e => !e.closest('aside.notes') && e.scrollWidth > e.clientWidth + 16).length;
    if (slide.scrollHeight > height + 1 || slide.scrollWidth > width + 1 || box.bottom > innerHeight + 1
        || box.right > innerWidth + 1 || box.top < -1 || clipped) {
      const heading = slide.querySelector('h1, h2, h3, p.course-continued');
      overflowing.push({slide: `${h}.${v}`, scrollHeight: slide.scrollHeight, scrollWidth: slide.scrollWidth,
                        bottom: Math.round(box.bottom), clipped,
                        heading: heading ? heading.textContent.trim().slice(0, 60) : ''});
    }
    if ((reveal.getSlideNotes(slide) || '').trim()) withNotes.push(`${h}.${v}`);
    reveal.next();
  }
  done({visited, total: reveal.getTotalSlides(), viewport: [innerWidth, innerHeight], slide: [width, height],
        overflowing, withNotes, notesPlugin: reveal.hasPlugin('notes')});
})();
"""


@contextlib.contextmanager
def lecture_viewport(driver):
    """The window a lecturer projects: 1280x720 CSS pixels (Chromium's own window stays as it was)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {**VIEWPORT, "deviceScaleFactor": 1, "mobile": False}
    )
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


@pytest.fixture(scope="session")
def lecture_decks(tmp_path_factory):
    """Every assignment's deck through `course slides` in smoke, in a scratch copy of the course.

    Executing all the notebooks in smoke takes about a minute on 2 cores. Executed copies that
    `course slides --profile smoke` left in the course's build/executed/ are reused where still
    fresh (``executed`` decides, as for the lecturer); nothing is written into the course itself.
    """
    require_assets()
    return built_once(tmp_path_factory, "lecture-decks", _build_lecture_decks)


def _build_lecture_decks(course: Path) -> None:
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / "solutions").mkdir()
    for assignment in ASSIGNMENTS:
        (course / "solutions" / assignment.id).symlink_to(assignment.source.parent)
        cached = ROOT / "build" / "executed" / assignment.id / assignment.source.name
        if cached.is_file():
            (course / "build" / "executed" / assignment.id).mkdir(parents=True)
            shutil.copy2(cached, course / "build" / "executed" / assignment.id / cached.name)
    log = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(slides_module.VENDOR_ENV, str(ROOT / "build" / "vendor"))
        assert slides(course, assignments(course), "smoke", course / "slides", out=log), log.getvalue()


@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_every_slide_of_every_lecture_deck_fits_the_screen(assignment, lecture_decks, driver, tmp_path):
    """Each deck executed in smoke: everything check_deck asks, then every slide within 1280x720 with
    nothing to scroll, the speaker notes there, and three screenshots kept for a person."""
    notebook = read_notebook(lecture_decks / "build" / "executed" / assignment.id / assignment.source.name)
    with lecture_viewport(driver), local_server(lecture_decks / "slides") as server:
        deck = check_deck(
            driver, f"{server}/{assignment.id}.slides.html", notebook, shots=tmp_path / assignment.id
        )
        fit = driver.execute_async_script(FITS)
        assert not browser.console_errors(driver) and not browser.remote_requests(driver)
    shots = keep_screenshots(tmp_path)
    assert deck["images"] >= 1 and deck["jax"] >= 1 and len(shots) == 3
    assert fit["viewport"] == [VIEWPORT["width"], VIEWPORT["height"]] and fit["slide"] == [960, 700], fit
    assert fit["visited"] == fit["total"] == deck["total"], fit
    assert not fit["overflowing"], f"{assignment.id}: slides overflow 1280x720: {fit['overflowing']}"
    # The speaker view: the notes plugin is loaded from the deck's own assets, and the slides that
    # carry a derivation (display maths with prose) have the prose as notes.
    assert fit["notesPlugin"]
    assert (lecture_decks / "slides" / "assets" / "reveal.js" / "plugin" / "notes" / "notes.js").is_file()
    derivations = [
        c
        for c in lay_out(slides_module.for_slides(notebook)).cells
        if slide_heights.slide_type(c) == "notes" and c.id.endswith("-notes")
    ]
    assert len(fit["withNotes"]) >= 1 and len(derivations) >= 1, fit["withNotes"]


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
@pytest.mark.parametrize("assignment", [pytest.param(a, id=a.id) for a in ASSIGNMENTS])
def test_every_lecture_typesets_and_lays_out_without_running(assignment, tmp_path_factory, driver):
    """Each source notebook as a deck without outputs: its maths, markup and slide structure."""
    require_assets()
    out = tmp_path_factory.mktemp("unexecuted")
    copy_assets(vendor_dir(ROOT), out)
    notebook = read_notebook(assignment.source)
    (out / "deck.slides.html").write_text(render(notebook, assignment.id), encoding="utf-8")
    check_deck(driver, (out / "deck.slides.html").as_uri(), notebook)

    # The print view, as `course slides --pdf` prints it: every formula has a size, every slide fits
    # its page(s), and the handout's text reaches the last slide.
    driver.get((out / "deck.slides.html").as_uri() + slides_module.PRINT_QUERY)
    layout = driver.execute_async_script(PRINT_LAYOUT)
    assert layout and layout["pages"] > 0, "the print layout never became ready"
    assert layout["zeroSizedMaths"] == [] and layout["overflowing"] == [], layout
    print_pdf(out / "deck.slides.html", out / "deck.pdf")
    text = " ".join(
        subprocess.run(["pdftotext", str(out / "deck.pdf"), "-"], capture_output=True, text=True, check=True)
        .stdout.lower()
        .split()
    )
    last_heading = [
        line
        for cell in notebook.cells
        if cell.cell_type == "markdown"
        for line in cell.source.splitlines()
        if line.startswith("## ")
    ][-1]
    assert all(word in text for word in re.findall(r"[a-z]{3,}", last_heading.lower())), (
        last_heading,
        text[-500:],
    )
