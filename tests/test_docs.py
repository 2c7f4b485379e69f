"""The guides cannot drift from the course (docs/, built by `make docs`).

- The site builds with Sphinx's warnings as errors, and every link between its pages, to an anchor
  or to a file of the site, resolves (no network: external links are not followed).
- README.md stays short and without measurements, and its "who are you" links open pages of the site.
- Every `course` step and option a page names exists (`course STEP --help`, in-process), and every
  `make` target.
- The instructors' guide's term runs from the guide's own code blocks, in order, on a scratch course
  (tests/toy_course.py) whose one tiny assignment stands in for 01_rnn_baselines. Blocks marked
  ``:class: term-hub`` need root, real accounts and a browser: tests/test_hub.py runs those steps,
  and here they are only checked to be steps that test runs.
"""
from __future__ import annotations

import contextlib
import csv
import io
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from course_tools.cli import main

from .conftest import ROOT
from .system import needs_bwrap
from .toy_course import make_toy_course

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README = ROOT / "README.md"
COURSE = str(Path(sys.executable).parent / "course")


# ---------------------------------------------------------------- the site ----

@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `make docs` builds it, warnings as errors."""
    out = tmp_path_factory.mktemp("docs")
    built = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                            str(DOCS), str(out)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-5000:]
    return out


class _Links(HTMLParser):
    """Every href and src of a page, and every id it defines."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
            elif name == "id" and value:
                self.ids.add(value)


def _parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def test_the_site_builds_with_search_and_every_guide(site):
    for page in ("index", "students", "instructors", "lecturers", "grading-and-security", "ARCHITECTURE",
                 "CONVENTIONS", "search"):
        assert (site / f"{page}.html").is_file(), page
    assert (site / "searchindex.js").is_file()
    assert {p.stem for p in PAGES} <= {p.stem for p in site.glob("*.html")}


def test_every_internal_link_of_the_site_resolves(site):
    parsed = {page: _parsed(page) for page in site.rglob("*.html")}
    broken = []
    for page, links in parsed.items():
        for link in links.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue  # external: not followed (offline)
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.name}: {link}")
            elif parts.fragment and target.suffix == ".html":
                ids = (parsed.get(target) or _parsed(target)).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.name}: {link} (no such anchor)")
    assert not broken, broken


def test_the_screenshots_the_guides_show_are_in_the_site(site):
    for shot in ("validate", "feedback", "formgrader", "slide"):
        assert (site / "_images" / f"{shot}.png").is_file() or (site / "_static" / "screenshots" /
                                                                 f"{shot}.png").is_file(), shot


# ---------------------------------------------------------------- the README ----

def test_the_readme_is_short_without_measurements_and_leads_to_every_guide(site):
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "make build" in text and "make test" in text
    prose = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.S)
    timings = re.findall(r"\b\d+(?:\.\d+)?\s?(?:s|ms|min|minutes?|seconds?|hours?)\b", prose)
    assert not timings, f"measurements belong in benchmarks/README.md: {timings}"
    assert "before th" not in prose.lower()  # no history ("before those changes")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    guides = [link for link in links if link.startswith("docs/") and link.endswith(".md")]
    for guide in ("students", "instructors", "lecturers", "grading-and-security", "ARCHITECTURE"):
        assert f"docs/{guide}.md" in guides, guide
    for link in guides:  # each a page of the built site
        assert (site / Path(link).relative_to("docs").with_suffix(".html")).is_file(), link
    for link in links:
        if not urlsplit(link).scheme:
            assert (ROOT / link).exists(), link


# ---------------------------------------------------------------- commands named ----

def _code(text: str) -> list[str]:
    """Every line of a page's shell code: fenced blocks (not Python ones) and inline code spans, each
    without its comment."""
    lines = []
    for language, body in re.findall(r"```(\{code-block\} *\w+|\w*)\n(.*?)```", text, flags=re.S):
        if "python" not in language:
            lines += [line for line in body.splitlines() if not line.startswith(":")]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    lines += re.findall(r"`([^`\n]+)`", prose)
    return [line.split(" # ")[0].split("  #")[0] for line in lines]


def _help(arguments: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*arguments, "--help"])
    return out.getvalue()


def test_every_course_step_and_option_a_page_names_exists():
    steps = set(re.findall(r"^ {4}([a-z]+)(?: |$)", _help([]), flags=re.M))
    assert {"release", "autograde", "explain", "hub"} <= steps
    options = {}
    named = []
    for page in [README, *PAGES]:
        for line in _code(page.read_text(encoding="utf-8")):
            for step, rest in re.findall(r"(?:^|[\s/])course ([a-z][a-z-]*)([^|;&]*)", line):
                named.append(step)
                assert step in steps, f"{page.name}: `course {step}` is not a step: {line}"
                if step == "bench":
                    continue  # its options are the benchmark runner's
                if step not in options:
                    options[step] = set(re.findall(r"--[a-z][a-z-]*", _help([step])))
                for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest):
                    assert option in options[step], f"{page.name}: `course {step} {option}`: no such option"
    assert {"hub", "collect", "autograde", "feedback", "explain", "due", "extend", "grades"} <= set(named)


def test_every_make_target_a_page_names_exists():
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    for page in [README, *PAGES]:
        for line in _code(page.read_text(encoding="utf-8")):
            for target in re.findall(r"(?:^|\s)make ([a-z][a-z-]*)", line):
                assert target in targets, f"{page.name}: `make {target}` is not a target of the Makefile"


# ---------------------------------------------------------------- the executed term ----

def _blocks(page: Path) -> list[tuple[str, str]]:
    """(class, body) of every ``{code-block}`` with a ``:class:`` option, in the page's order."""
    found = []
    for options, body in re.findall(r"```\{code-block\} *\w+\n((?::\w+:[^\n]*\n)*)(.*?)```",
                                    page.read_text(encoding="utf-8"), flags=re.S):
        kind = re.search(r"^:class: *([\w-]+)", options, flags=re.M)
        if kind:
            found.append((kind.group(1), body.strip()))
    return found


def _steps(body: str) -> set[str]:
    return set(re.findall(r"course ([a-z]+)", body))


def test_the_terms_hub_blocks_are_steps_the_hub_test_runs():
    """The blocks left out of the executed term run in tests/test_hub.py."""
    hub_test = (ROOT / "tests" / "test_hub.py").read_text()
    run_there = set(re.findall(r'course_command\(course, "([a-z]+)"', hub_test))
    run_there |= set(re.findall(r'COURSE \+ \["([a-z]+)"', hub_test))
    hub_blocks = [body for kind, body in _blocks(DOCS / "instructors.md") if kind == "term-hub"]
    assert hub_blocks
    for body in hub_blocks:
        assert _steps(body) <= run_there, f"not run by tests/test_hub.py: {body}"


def _students_work(root: Path) -> None:
    """What the class hands in through Canvas before the collect step: the roster's first student the
    solution, the second the untouched release (Canvas's `lastfirst_<canvas id>_<n>_<file>` names)."""
    with zipfile.ZipFile(root / "submissions.zip", "w") as archive:
        archive.write(root / "solutions" / "toy" / "toy.ipynb", "martinalice_1001_700001_toy.ipynb")
        archive.write(root / "notebooks" / "toy" / "toy.ipynb", "dupontbob_1002_700002_toy.ipynb")


@pytest.mark.notebook  # the autograder executes the toy notebook
@needs_bwrap
def test_the_instructors_term_runs_as_written():
    blocks = [body for kind, body in _blocks(DOCS / "instructors.md") if kind == "term"]
    ran = set().union(*map(_steps, blocks))
    assert {"release", "due", "collect", "autograde", "grades", "feedback", "extend", "explain"} <= ran
    root = Path(tempfile.mkdtemp(prefix="course-docs-term-"))  # readable by the grader's accounts
    try:
        make_toy_course(root)
        (root / "deploy").mkdir()
        shutil.copy(ROOT / "deploy" / "students.example.csv", root / "deploy")
        for body in blocks:
            if "submissions.zip" in body:
                _students_work(root)
            script = body.replace(".venv/bin/course", COURSE).replace("01_rnn_baselines", "toy")
            done = subprocess.run(["bash", "-e", "-c", script], cwd=root, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{body}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        sheet = list(csv.DictReader((root / "build" / "grades" / "canvas.csv").open(encoding="utf-8")))
        scores = {row["SIS Login ID"]: row["toy"] for row in sheet if row["SIS Login ID"]}
        assert scores == {"amartin": "1", "bdupont": "0"}, sheet  # the solution, the untouched release
        assert (root / "feedback" / "amartin" / "toy" / "toy.html").is_file()
        assert (root / "build" / "explain" / "toy" / "amartin.html").is_file()
    finally:
        shutil.rmtree(root, ignore_errors=True)
