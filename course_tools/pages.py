"""Every HTML page of the tooling is rendered here, from a Jinja2 template, escaped by default.

A package keeps its pages' templates in a ``templates/`` folder beside its modules (package data in
pyproject.toml, so that an installed copy has them too). Whatever a template prints is first made
safe text (:func:`course_tools.untrusted.safe_text`: no lone surrogates, no control characters) and
then escaped for HTML by autoescape, so that no page has to remember to escape what a student
wrote; an undefined name is an error rather than an empty string.

    page = render(__file__, "feedback.html.j2", record=record, ...)
"""
from __future__ import annotations

import functools
from pathlib import Path

import jinja2

from course_tools.untrusted import safe_text


def _printable(value: object) -> object:
    """What ``{{ value }}`` prints, before autoescape: a string as safe text; markup a template made
    itself (a macro's output: it has ``__html__``, the protocol autoescape follows) as it is."""
    return safe_text(value) if isinstance(value, str) and not hasattr(value, "__html__") else value


@functools.cache
def environment(folder: Path) -> jinja2.Environment:
    """The environment of the templates in ``folder``: autoescape, strict about undefined names."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder), autoescape=True, undefined=jinja2.StrictUndefined,
        finalize=_printable, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)


def render(module_file: str, template: str, **values: object) -> str:
    """``template`` of the ``templates/`` folder beside ``module_file`` (the calling module's
    ``__file__``), rendered with ``values``."""
    templates = environment(Path(module_file).resolve().parent / "templates")
    return templates.get_template(template).render(**values)
