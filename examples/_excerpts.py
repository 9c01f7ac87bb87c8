"""Excerpts of the project's source for a guide, found by symbol, never by line number.

An :class:`Excerpt` names a file, a symbol in it (``sat_add``, ``VectorUnit._vadd``,
``INSTRUCTIONS``) and optionally

* ``item``: the element of a tuple, list or call inside that symbol whose text holds this
  string (``'"VADD"'`` picks VADD's ``InstrSpec(...)`` out of ``INSTRUCTIONS``);
* ``lines``: a regular expression: only the lines that match are kept (with the first line,
  the ``def`` or the assignment), runs of left-out lines shown as ``...``.

A Markdown or text file has no symbols: give ``symbol=None`` and ``lines``. The guide holds
the text between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``; :func:`replace_blocks`
rewrites those bodies and :func:`stale_blocks` names the ones that differ, so that a test fails
when the source moved on and the guide did not (the way ``sim/isadoc.py`` checks docs/isa.md).
An excerpt that cannot be found raises :class:`ExcerptError` naming the file and the symbol.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)


class ExcerptError(LookupError):
    """The file, the symbol, the item or the lines of an excerpt are not in the source."""


@dataclass(frozen=True)
class Excerpt:
    """A piece of one file (see the module docstring); ``path`` from the repository's root."""

    path: str
    symbol: str | None
    item: str | None = None
    lines: str | None = None

    def title(self) -> str:
        what = self.symbol or "lines"
        if self.item:
            what += f", the entry with {self.item}"
        if self.lines:
            what += f" (lines matching `{self.lines}`)"
        return f"{self.path}: {what}"

    def text(self, root: Path = ROOT) -> str:
        """The excerpt's source text, dedented."""
        file = root / self.path
        if not file.is_file():
            raise ExcerptError(f"{self.path}: no such file")
        source = file.read_text()
        if self.symbol is None:
            chosen = source.splitlines()
            first = None
        else:
            node = _find(ast.parse(source), self.symbol, self.path)
            if self.item is not None:
                node = _item(node, source, self.item, self)
            all_lines = source.splitlines()
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            chosen = all_lines[start - 1:node.end_lineno]
            first = 0
        if self.lines is not None:
            chosen = _matching(chosen, re.compile(self.lines), first, self)
        return textwrap.dedent("\n".join(chosen)).strip("\n")


def _find(tree: ast.Module, symbol: str, path: str) -> ast.AST:
    """The def, class or assignment ``symbol`` (dotted through classes) in ``tree``."""
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in symbol.split("."):
        node = next((s for s in body if part in _names(s)), None)
        if node is None:
            where = f" (looking for {part!r})" if "." in symbol else ""
            raise ExcerptError(f"{path}: no symbol {symbol!r}{where}")
        body = getattr(node, "body", [])
    assert node is not None
    return node


def _names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    return set()


def _item(node: ast.AST, source: str, text: str, excerpt: Excerpt) -> ast.AST:
    """The smallest element of a tuple, list or call's arguments under ``node`` that is itself a
    call or a container and whose source holds ``text``."""
    found = []
    for sub in ast.walk(node):
        elements = (sub.elts if isinstance(sub, (ast.Tuple, ast.List))
                    else [*sub.args, *(k.value for k in sub.keywords)] if isinstance(sub, ast.Call) else [])
        found += [e for e in elements if isinstance(e, (ast.Call, ast.Tuple, ast.List, ast.Dict))
                  and text in (ast.get_source_segment(source, e) or "")]
    if not found:
        raise ExcerptError(f"{excerpt.path}: nothing in {excerpt.symbol!r} holds {text!r}")
    return min(found, key=lambda e: len(ast.get_source_segment(source, e) or ""))


def _matching(chosen: list[str], pattern: re.Pattern, keep: int | None, excerpt: Excerpt) -> list[str]:
    """The lines that match (and line ``keep``), each run of left-out lines as one ``...``."""
    wanted = [k for k, line in enumerate(chosen) if k == keep or pattern.search(line)]
    if not any(pattern.search(chosen[k]) for k in wanted):
        raise ExcerptError(f"{excerpt.title()}: no line matches")
    out: list[str] = []
    for previous, k in zip([None, *wanted], wanted, strict=False):
        if previous is not None and k > previous + 1:
            line = chosen[k]
            out.append(line[:len(line) - len(line.lstrip())] + "...")
        out.append(chosen[k])
    return out


def code_block(excerpts: tuple[Excerpt, ...], root: Path = ROOT) -> str:
    """The excerpts as one fenced block, each under a comment naming where it comes from."""
    language = "python" if all(e.path.endswith(".py") for e in excerpts) else ""
    parts = [f"# {e.title()}\n{e.text(root)}" for e in excerpts]
    return f"```{language}\n" + "\n\n".join(parts) + "\n```\n"


def replace_blocks(guide: str, bodies: Mapping[str, str]) -> str:
    """``guide`` with the body of each named block replaced (the others kept as they are)."""
    def one(m: re.Match) -> str:
        name = m["name"]
        return m.group(1) + bodies[name] + m.group(4) if name in bodies else m.group(0)
    return BLOCK.sub(one, guide)


def blocks_in(guide: str) -> dict[str, str]:
    """The blocks of ``guide``: name -> body."""
    return {m["name"]: m["body"] for m in BLOCK.finditer(guide)}


def stale_blocks(guide: str, makers: Mapping[str, Callable[[], str]]) -> list[str]:
    """The names of the blocks whose body differs from what their maker writes, or that the
    guide lacks."""
    present = blocks_in(guide)
    return [name for name, make in makers.items() if present.get(name) != make()]
