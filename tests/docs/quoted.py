"""What the README and the documentation site quote: the pages, their code, the commands in it.

A page's *code* is what a reader would type or run: the lines of its fenced and indented code
blocks and its inline code spans (a span may wrap over a line break). In that code a *make
command* is ``make`` followed by targets and ``NAME=value`` assignments, and a *python command*
is ``python -m MODULE ...`` or ``python SCRIPT.py ...`` (``.venv/bin/python`` and ``python3``
alike), up to the end of the line, a ``#`` comment, ``;``, ``&&`` or ``|``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pages() -> list[Path]:
    """The README, every Markdown page of the site (docs/, its generated pages included) and
    hw/README.md, which the site includes."""
    return [ROOT / "README.md", ROOT / "hw" / "README.md",
            *sorted((ROOT / "docs").rglob("*.md"))]


_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
_STARTS = ("make ", "python", ".venv/bin/python")


def code_of(text: str) -> list[str]:
    """The code of a Markdown page: each line of its code blocks, each inline span (its line
    breaks made spaces)."""
    code = [line for block in _FENCE.finditer(text) for line in block.group(2).splitlines()]
    prose = _FENCE.sub("", text)
    code += [line.strip() for line in prose.splitlines()
             if line.startswith("    ") and line.strip().startswith(_STARTS)]
    code += [" ".join(span.split()) for span in _SPAN.findall(prose)]
    return code


@dataclass(frozen=True)
class Command:
    """A command quoted on a page: where, and its words after ``make`` or ``python``."""

    page: str
    text: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}: `{self.text}`"


_SEGMENT_ENDS = re.compile(r"\s#|;|&&|\|\|?|\$\(|`")
_MAKE = re.compile(r"(?:^|(?<=[\s(]))make(?=\s)")
_PYTHON = re.compile(r"(?:^|(?<=[\s(]))(?:\.venv/bin/)?python3?(?=\s+(?:-m\s|\S+\.py\b))")


def _words(text: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text))
    except ValueError:                    # an unbalanced quote in a quoted fragment
        return tuple(text.split())


def commands(kind: str) -> list[Command]:
    """Every ``make`` (kind "make") or ``python`` (kind "python") command on the pages."""
    start = _MAKE if kind == "make" else _PYTHON
    found: dict[tuple[str, str], Command] = {}
    for page in pages():
        name = str(page.relative_to(ROOT))
        for line in code_of(page.read_text()):
            for match in start.finditer(line):
                rest = line[match.end():]
                cut = _SEGMENT_ENDS.search(rest)
                text = line[match.start():match.end() + (cut.start() if cut else len(rest))].strip()
                found.setdefault((name, text), Command(name, text, _words(text)[1:]))
    return list(found.values())


def make_parts(command: Command) -> tuple[list[str], dict[str, str]]:
    """The targets and the variable assignments of a make command, up to its first word that is
    neither (``...``, a placeholder, prose)."""
    targets: list[str] = []
    variables: dict[str, str] = {}
    for quoted in command.words:
        word = quoted.rstrip(",.:;)")             # prose around it: `make verilog, make synth)`
        assignment = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", word)
        if assignment:
            variables[assignment.group(1)] = assignment.group(2)
        elif re.fullmatch(r"[a-z][a-z0-9-]*", word):
            targets.append(word)
        if word != quoted or not (assignment or (targets and targets[-1] is word)):
            break
    return targets, variables


def is_placeholder(word: str) -> bool:
    """A word that stands for something to fill in: ``...``, ``<dump>``, ``NAME``,
    ``NAME=VALUE``, ``k``."""
    return ("..." in word or ("<" in word and ">" in word) or word == "k"
            or re.fullmatch(r"[A-Z][A-Z_]*(=[A-Z][A-Z_]*)?\W*", word) is not None)
