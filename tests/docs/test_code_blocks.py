"""The Python code blocks of the README and of the guide run as they are printed.

Every fenced block marked ``python`` in README.md and docs/guide/*.md runs in a namespace of its
own; the blocks that put a program on the RTL (they import ``cosim``) build a simulator, so they
run only with the slow tests (``make test-all``). The example pages of their own
(add-an-instruction.md, change-the-machine.md) pull their code from the source instead, and
their tests check it.
"""

from __future__ import annotations

import re

import pytest

from .quoted import ROOT

_PYTHON = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def blocks() -> list[tuple[str, str]]:
    """``(page:line, code)`` of every ``python`` block of the pages."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in _PYTHON.finditer(text):
            line = text.count("\n", 0, block.start()) + 2
            found.append((f"{page.relative_to(ROOT)}:{line}", block.group(1)))
    return found


BLOCKS = blocks()


def _run(where: str, code: str) -> None:
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize(("where", "code"), [b for b in BLOCKS if "cosim" not in b[1]], ids=[
    b[0] for b in BLOCKS if "cosim" not in b[1]])
def test_a_code_block_runs(where, code, capsys):
    _run(where, code)


@pytest.mark.slow
@pytest.mark.parametrize(("where", "code"), [b for b in BLOCKS if "cosim" in b[1]], ids=[
    b[0] for b in BLOCKS if "cosim" in b[1]])
def test_a_code_block_on_the_rtl_runs(where, code, capsys):
    _run(where, code)


def test_the_guide_has_code_blocks():
    """The compile page's two (a graph, a PyTorch module) and the RTL page's one."""
    pages = [where.split(":")[0] for where, _ in BLOCKS]
    assert pages.count("docs/guide/compile.md") == 2 and pages.count("docs/guide/cosim.md") == 1
