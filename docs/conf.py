"""Sphinx configuration of the course's guides: `make docs` builds them into build/docs/.

Markdown throughout (MyST). Everything the pages show is in this folder, so the site builds from a
fresh clone, offline, without running the course or its browser tests; tests/test_docs.py builds it
with warnings as errors.
"""
project = "Attention & Transformers, built from scratch"
author = "the course's authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# Headings up to ### get anchors, so a page can link to a section of another: [text](page.md#anchor).
myst_heading_anchors = 3
# {code-block} directives with options (:class: term) mark the instructor's term for tests/test_docs.py.
myst_enable_extensions = ["colon_fence"]
html_theme = "alabaster"
html_static_path = ["_static"]
html_theme_options = {"description": "Jupyter notebooks, autograded, offline", "page_width": "1100px"}
html_show_sourcelink = False
# No request leaves the machine: no intersphinx, no remote images, MathJax unused by the guides.
