"""``course slides``: decks that follow the notebooks' slide metadata, load nothing from the network,
and work in a real browser (headless Chromium, every host but 127.0.0.1 unreachable)."""
import contextlib
import fcntl
import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
import time
from html.parser import HTMLParser

import nbformat
import pytest

from course_lib.instructor import slides as slides_module
from course_lib.instructor.chromium import pdf_pages
from course_lib.instructor.cli import main
from course_lib.instructor.course import Assignment, CourseError, assignments
from course_lib.instructor.execute import Execution
from course_lib.instructor.notebooks import read_notebook
from course_lib.instructor.slides import (copy_assets, executed, print_pdf, render, slide_count, slides, vendor_dir,
                                          write_index)

from . import browser
from .conftest import ROOT, ASSIGNMENTS
from .toy_course import cell, make_toy_course, toy_notebook

SCREENSHOTS = ROOT / "build" / "slides" / "screenshots"
MATHS = r"$$\mathrm{softmax}(z)_i = \frac{e^{z_i}}{\sum_j e^{z_j}}$$"


# Display maths that is short as TeX source and tall once typeset: the last slide outgrows the print
# page that reveal.js measured before MathJax ran (Chromium then printed the whole deck blank).
TALL_MATHS = "\n\n".join(f"$$\\frac{{\\partial^2 y_{k}}}{{\\partial x_{k}^2}} = \\frac{{1}}{{1 + e^{{-x_{k}}}}}$$"
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
        imports, solution, test, results,
        cell("markdown", f"## Takeaway\n\nTwice $x$ is $2x$.\n\n{TALL_MATHS}", "takeaway", slide="subslide"),  # slide 4
    ]
    notebook.cells[5].metadata["tags"] = ["remove-input"]  # a slide shows only this cell's output
    return notebook


# ---------------------------------------------------------------- slide count, without a browser

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
        parser = _LeafSections()
        parser.feed(render(notebook, "count"))
        assert parser.leaves == expected and not parser.stack


def test_the_lecture_notebook_has_four_slides():
    assert slide_count(lecture_notebook()) == 4


# ---------------------------------------------------------------- rendering and the step, without a kernel

def test_a_deck_names_only_local_assets_and_drops_widgets_and_stderr():
    notebook = lecture_notebook()
    plot = notebook.cells[4]
    plot.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: noise\n"),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
            "text/plain": "train: 100%|##########| 5/5"}),
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

    from course_lib.instructor import execute as execute_module

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
    index = write_index(tmp_path, [("01_a", "One & only", 3), ("02_b", "Two", 5)]).read_text()
    assert index.index("01_a.slides.html") < index.index("02_b.slides.html")
    assert "One &amp; only" in index and "3 slides" in index and '<a href="02_b.pdf">' in index
    assert '<a href="01_a.pdf">' not in index and "http" not in index


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
    return sum(1 for cell in notebook.cells if slides_module.slide_type(cell) not in ("skip", "notes")
               for output in cell.get("outputs", [])
               if {"image/png", "image/jpeg"} & set(output.get("data", {})))


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
                           .filter(m => m.offsetWidth === 0).map(m => m.id).slice(0, 5),
      overflowing: pages.filter(p => {{
        const section = p.querySelector('section');
        return section && section.getBoundingClientRect().bottom - p.getBoundingClientRect().top > p.offsetHeight + 1;
      }}).map(p => pages.indexOf(p)),
    }});
  }});
}})();
"""


def check_deck(driver, url: str, notebook, shots: str | None = None) -> dict:
    """Open a deck and assert everything a lecturer relies on; screenshots to build/slides/screenshots/."""
    browser.requested_urls(driver), browser.console_errors(driver)  # forget the start-up page
    driver.get(url)
    driver.set_script_timeout(90)
    deck = driver.execute_async_script(WAIT_FOR_DECK)
    assert deck, f"{url}: reveal.js or MathJax never became ready"
    assert deck["isReady"]
    assert deck["total"] == slide_count(notebook), deck
    assert deck["horizontal"] == horizontal_count(notebook), deck
    has_maths = any("$" in c.source for c in notebook.cells if c.cell_type == "markdown"
                    and slides_module.slide_type(c) not in ("skip",))
    if has_maths:
        assert deck["jax"] > 0 and deck["typeset"] >= deck["jax"], deck
    assert not deck["badMaths"], f"maths MathJax could not typeset: {deck['badMaths']}"
    assert not deck["rawMaths"], f"untypeset $$ left: {deck['rawMaths'][0][:200]}"
    assert deck["images"] == _shown_images(notebook) and not deck["brokenImages"], deck
    assert not browser.remote_requests(driver)
    assert not browser.console_errors(driver)
    if shots:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        reveal = "require('assets/reveal.js/dist/reveal.js')"
        for name, where, show in (("first", {"h": 0, "v": 0}, None),
                                  ("maths", deck["mathsSlide"], ".MJXc-display, .MathJax_CHTML"),
                                  ("figure", deck["figureSlide"], ".jp-OutputArea-output img")):
            if where:
                # on the slide, with all its fragments shown
                driver.execute_script(f"const r = {reveal}; r.slide(arguments[0], arguments[1]); "
                                      "while (r.nextFragment()) {}", where["h"], where["v"])
                if show:  # a tall slide scrolls: bring the maths or the figure into view
                    driver.execute_script(f"{reveal}.getCurrentSlide().querySelector(arguments[0])"
                                          "?.scrollIntoView({block: 'center'})", show)
                driver.execute_async_script("MathJax.Hub.Queue(arguments[arguments.length - 1])")
                time.sleep(0.3)  # one frame for the layout
                driver.save_screenshot(str(SCREENSHOTS / f"{shots}-{name}.png"))
        assert not browser.console_errors(driver)
    return deck


def horizontal_count(notebook) -> int:
    """Top-level slides: the first shown cell, then every later cell of type ``slide``."""
    types = [slides_module.slide_type(c) for c in notebook.cells]
    first = next(i for i, kind in enumerate(types) if kind not in ("skip", "notes"))
    return 1 + types[first + 1:].count("slide")


@contextlib.contextmanager
def local_server(folder):
    """A web server for ``folder`` on 127.0.0.1 (an ephemeral port), quiet."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
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
    # Built once per test session: pytest-xdist workers share the folder above their own, and a
    # lock makes the second worker wait for the first one's decks instead of building its own.
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    course = shared / "toy-decks"
    with (shared / "toy-decks.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (course / "build" / "slides" / "index.html").is_file():
            shutil.rmtree(course, ignore_errors=True)
            course.mkdir()
            make_toy_course(course)
            nbformat.write(lecture_notebook(), course / "solutions" / "toy" / "toy.ipynb")
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(course)
                patch.setenv(slides_module.VENDOR_ENV, str(ROOT / "build" / "vendor"))
                assert main(["slides", "--profile", "smoke", "--pdf"]) == 0
    return course


@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_course_slides_writes_a_deck_a_handout_and_the_index(toy_decks):
    out = toy_decks / "build" / "slides"
    index = (out / "index.html").read_text()
    assert 'href="toy.slides.html"' in index and 'href="toy.pdf"' in index and "Toy assignment" in index
    assert (out / "assets" / "reveal.js" / "dist" / "reveal.js").is_file()
    pages = pdf_pages((out / "toy.pdf").read_bytes())
    assert pages >= 4  # a page per slide, more where a slide is taller than a page
    if shutil.which("pdfinfo"):  # poppler reads the same count
        info = subprocess.run(["pdfinfo", str(out / "toy.pdf")], capture_output=True, text=True).stdout
        assert int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1)) == pages
    if shutil.which("pdftotext"):  # every slide printed, the last (tallest once typeset) included
        text = subprocess.run(["pdftotext", str(out / "toy.pdf"), "-"], capture_output=True, text=True).stdout.lower()
        assert "the softmax" in text and "twice" in text and "∂" in text, text[:500]  # headings print in capitals


@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
@pytest.mark.parametrize("via", ["file", "http"])
def test_the_toy_deck_works_offline_in_chromium(toy_decks, driver, via):
    out = toy_decks / "build" / "slides"
    notebook = read_notebook(toy_decks / "build" / "executed" / "toy" / "toy.ipynb")
    with local_server(out) as server:
        url = (out / "toy.slides.html").as_uri() if via == "file" else f"{server}/toy.slides.html"
        deck = check_deck(driver, url, notebook, shots=f"toy-{via}" if via == "http" else None)
    assert deck["total"] == 4 and deck["horizontal"] == 2 and deck["images"] == 1
    assert deck["jax"] == 4 + TALL_MATHS.count("$$") // 2
    assert (deck["mathsSlide"]["h"], deck["mathsSlide"]["v"]) == (0, 1)  # the softmax sub-slide


@pytest.mark.notebook
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
@pytest.mark.skipif(not ASSIGNMENTS, reason="the course has no assignment yet")
def test_a_real_lecture_deck_in_the_smoke_profile(tmp_path_factory, driver):
    """The first assignment executed in smoke (in a scratch copy of the course), rendered, checked."""
    require_assets()
    assignment = ASSIGNMENTS[0]
    course = tmp_path_factory.mktemp("real")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / "solutions").mkdir()
    (course / "solutions" / assignment.id).symlink_to(assignment.source.parent)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(slides_module.VENDOR_ENV, str(ROOT / "build" / "vendor"))
        assert slides(course, assignments(course, [assignment.id]), "smoke", course / "slides")
    notebook = read_notebook(course / "build" / "executed" / assignment.id / assignment.source.name)
    with local_server(course / "slides") as server:
        deck = check_deck(driver, f"{server}/{assignment.id}.slides.html", notebook, shots=assignment.id)
    assert deck["images"] >= 1 and deck["jax"] >= 1


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
    text = " ".join(subprocess.run(["pdftotext", str(out / "deck.pdf"), "-"], capture_output=True, text=True,
                                   check=True).stdout.lower().split())
    last_heading = [line for cell in notebook.cells if cell.cell_type == "markdown"
                    for line in cell.source.splitlines() if line.startswith("## ")][-1]
    assert all(word in text for word in re.findall(r"[a-z]{3,}", last_heading.lower())), (last_heading, text[-500:])
