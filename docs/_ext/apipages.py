"""The API reference: every module of a package, found at build time, each a section of autodoc.

``api-modules PACKAGE`` (with ``:exclude: a.b, a.c``: leave those subpackages to a page of their
own) walks the package's modules with :mod:`pkgutil` and writes, for each, a section headed by
its name holding ``automodule`` with its members. A module added to the project appears on the
next build without an edit here; a docstring that is not valid reStructuredText (after
napoleon's Google-style reading) is a warning, and ``make docs`` builds with warnings as errors.
The ``__main__`` modules (command lines: the CLI reference documents them) are left out.

The project's docstrings are plain text in the Google style; two habits of that plain text are
not reStructuredText, and :func:`plain_text_blocks` reads them as the text means before napoleon
sees the docstring: a header of its own ending in a colon with an indented block under it
(``Members (host side, host_members):``, ``Schedule, with d the dispatch cycle ...:``), whose
entries hang their continuation lines, becomes a literal block, shown as written; and
``|x|`` (an absolute value) is not a substitution.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import ClassVar

_HEADER = re.compile(r"^(\s*)(?!:|\.\. |[-*] )(.*[^\s:\\]):\s*$")
"""A line that ends in one colon (not ``::``) and starts neither a field (``:param x:``), a
directive (``..``) nor a bullet."""
_LITERAL = re.compile(r"(``.*?``)")
_BARS = re.compile(r"(?<![\\|\w])\|(?=[^\s|])([^|\n]*?[^\s|\\])\|(?![|\w])")
"""``|x|``: a bar, text without a space at either end, a bar (a substitution to docutils)."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def plain_text_blocks(lines: list[str], sections: set[str]) -> None:
    """Rewrite a docstring's ``lines`` in place (see the module's docstring): a header line with
    a more indented line right under it, outside the napoleon ``sections`` (lower-case names)
    and their blocks, ends in ``::``, with a blank line before and after that block; ``|x|``
    outside inline literals becomes ``\\|x\\|``."""
    out: list[str] = []
    inside = None                      # the indentation of the napoleon section we are in
    literal = None                     # the indentation of the header of the literal block we are in
    for i, line in enumerate(lines):
        if line.strip() and inside is not None and _indent(line) <= inside:
            inside = None
        if line.strip() and literal is not None and _indent(line) <= literal:
            literal = None
            out.append("")
        line = "".join(part if part.startswith("``") else _BARS.sub(r"\\|\1\\|", part)
                       for part in _LITERAL.split(line))
        out.append(line)
        following = lines[i + 1] if i + 1 < len(lines) else ""
        header = _HEADER.match(line)
        if inside is not None or not header:
            continue
        if header.group(2).strip().lower() in sections:
            inside = _indent(line)
        elif following.strip() and _indent(following) > _indent(line):
            out[-1:] = [line.rstrip() + ":", ""]
            literal = _indent(line)
    lines[:] = out


def modules_of(package: str, exclude: tuple[str, ...] = ()) -> list[str]:
    """The package and every module under it, sorted, without ``__main__`` modules and without
    the subpackages in ``exclude`` (and what is under them)."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        names.append(info.name)
    return sorted(name for name in names
                  if name.rsplit(".", 1)[-1] != "__main__"
                  and not any(name == x or name.startswith(f"{x}.") for x in exclude))


def setup(app):  # Sphinx's entry point
    from docutils import nodes
    from docutils.parsers.rst import directives
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    class ApiModules(SphinxDirective):
        """``api-modules PACKAGE``: a section of autodoc per module of PACKAGE."""

        required_arguments = 1
        option_spec: ClassVar[dict] = {"exclude": directives.unchanged}

        def run(self) -> list[nodes.Node]:
            exclude = tuple(x.strip() for x in self.options.get("exclude", "").split(",") if x.strip())
            lines = StringList()
            source = f"<api-modules {self.arguments[0]}>"
            for name in modules_of(self.arguments[0], exclude):
                for line in (f"``{name}``", "~" * (len(name) + 4), "", f".. automodule:: {name}", ""):
                    lines.append(line, source)
            holder = nodes.section()
            holder.document = self.state.document
            nested_parse_with_titles(self.state, lines, holder)
            return holder.children

    app.add_directive("api-modules", ApiModules)

    def on_docstring(app, what, name, obj, options, lines: list[str]) -> None:
        from sphinx.ext.napoleon.docstring import GoogleDocstring

        sections = set(GoogleDocstring([""], app.config)._sections)
        plain_text_blocks(lines, sections)

    app.setup_extension("sphinx.ext.napoleon")
    app.connect("autodoc-process-docstring", on_docstring, priority=400)   # before napoleon (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
