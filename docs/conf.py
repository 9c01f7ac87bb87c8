"""Sphinx configuration of the documentation site (``make docs``: build/docs/html/index.html).

The pages are Markdown read by MyST, the generated ones (isa.md, studies.md, sweep.md, the
excerpts of add-an-instruction.md) exactly as their generators write them. The API reference
comes from the docstrings (autodoc, napoleon for the Google style); the CLI reference from the
commands' own argparse parsers (``_ext/clihelp.py``), both at build time, so neither can drift.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

project = "GA-2 / Capra"
author = "the GA-2 / Capra project"
copyright = "the GA-2 / Capra project, Apache-2.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "clihelp",
    "apipages",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_ext"]

# a code block without a language is shown as written (a listing, a table, a shell session)
highlight_language = "none"

# MyST: the Markdown pages as GitHub shows them; headings get anchors for links like GA2.md#7-...
myst_heading_anchors = 3

# autodoc: every module's own members (not the names a package re-exports: they are documented
# where they are defined), in source order, with their signatures' type hints in the description
autodoc_default_options = {
    "members": True,
    "undoc-members": False,
    "show-inheritance": True,
    "ignore-module-all": True,
    "member-order": "bysource",
}
autodoc_typehints = "description"
# flows.soc (GA-2 in a LiteX SoC) imports LiteX, Migen and LiteX-Boards, which only `make soc-setup`
# installs: without them the site documents it against stand-ins
autodoc_mock_imports = [name for name in ("litex", "migen", "litex_boards")
                        if importlib.util.find_spec(name) is None]
autodoc_class_signature = "separated"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True          # "Attributes:" as fields: autodoc documents the attributes themselves
# the project's docstrings list a hardware component's ports under "Members:" (name, direction,
# width: description) and its parameters under "Parameters:", as Google-style arguments
napoleon_custom_sections = [("Members", "params_style")]
# several modules define a class of the same short name (compiler.emit.Emitter and the
# compiler.lowering protocol of it): an annotation naming it links to neither, which is no error
suppress_warnings = ["ref.python"]

html_theme = "furo"
html_title = "GA-2 / Capra"
html_static_path: list[str] = []
html_show_sourcelink = False
