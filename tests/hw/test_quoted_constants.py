"""Constants quoted in prose stay true: wherever hw/README.md or a docstring or comment of sim/,
hw/ or flows/ writes a pipeline constant with its value (``SPAD_READ_LATENCY = 3``,
``CHECK_STAGES (5)``, ``RQ_OVERHEAD = R + 7 = 10``), the value is the one the spec (or, for the
hardware's own depths, hw/) has now. A change to a pipeline depth then fails here until the text
follows it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hw import checker, queue, top
from sim import spec

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "hw" / "README.md",
           *sorted(p for folder in ("sim", "hw", "flows") for p in (ROOT / folder).rglob("*.py"))]

VALUES = {**spec.TIMING_CONSTANTS, "CHECK_STAGES": checker.CHECK_STAGES, "END_STAGES": checker.END_STAGES,
          "QUEUE_SLOTS": queue.QUEUE_SLOTS, "TIMING_CHECK_DELAY": top.TIMING_CHECK_DELAY}
"""Every constant whose quoted value is checked: the spec's timing constants and the front
end's depths."""

_NAME = re.compile(r"`?\b(" + "|".join(sorted(VALUES, key=len, reverse=True)) + r")\b`?")
_LAST_VALUE = re.compile(r".*= ?(\d+)\b.*")             # NAME = expression = N
_ONLY_VALUE = re.compile(r"(\d+)\)?(?: [a-z][^-+*/=]*)?")  # NAME = N, maybe words after it


def _value(after: str) -> int | None:
    """The value quoted by the text after a name: `` (N)``, or ``= N`` / ``= expression = N``
    up to the end of the clause (``, ; . `` or the line's end)."""
    paren = re.match(r" \((\d+)\)", after)
    if paren:
        return int(paren.group(1))
    equals = re.match(r" ?= ?([^;,\n]*)", after)
    if not equals or equals.group(1).startswith("="):      # none, or a comparison (==)
        return None
    clause = equals.group(1).split(". ")[0].rstrip(".")
    value = _LAST_VALUE.fullmatch(clause) or _ONLY_VALUE.fullmatch(clause)
    return int(value.group(1)) if value else None


def quoted(text: str) -> list[tuple[int, str, int]]:
    """(line, name, value) for each constant quoted with a value in ``text``: ``NAME (N)``;
    ``NAME = N`` (the number alone, or words after it); ``NAME = expression = N`` (the value
    after the last ``=``). A name inside an expression (after ``+ - * /`` or a lone ``=``, as in
    ``A = B + 1``) and a comparison (``==``) are not quotes; ``R = NAME = N`` is."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in _NAME.finditer(line):
            before = line[:m.start()].rstrip(" `")
            inside = before.endswith(("+", "-", "*", "/")) or (before.endswith("=")
                                                                 and not re.search(r"(^|\s)[RE] =$", before))
            value = None if inside else _value(line[m.end():])
            if value is not None:
                out.append((lineno, m.group(1), value))
    return out


def test_the_reader_finds_every_form():
    text = ("R = `SPAD_READ_LATENCY` = 3, E = `EXT_READ_LATENCY` = 1.\n"
            "LD_OVERHEAD = E + 1 = 2. SM_OVERHEAD = R + 2 + SM_DIV_LATENCY = 15.\n"
            "CHECK_STAGES (4) cycles; QUEUE_SLOTS = 2 slots; assert spec.STOP_CYCLES == 1\n"
            "CHECK_STAGES = 1 + END_STAGES + 1; the gap (SM_PASS_OVERHEAD = 1) makes pass 1 meet mx\n")
    assert quoted(text) == [(1, "SPAD_READ_LATENCY", 3), (1, "EXT_READ_LATENCY", 1), (2, "LD_OVERHEAD", 2),
                            (2, "SM_OVERHEAD", 15), (3, "CHECK_STAGES", 4), (3, "QUEUE_SLOTS", 2),
                            (4, "SM_PASS_OVERHEAD", 1)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_quoted_constants_match_their_values(path):
    stale = [f"{path.relative_to(ROOT)}:{line}: {name} is quoted as {value}, it is {VALUES[name]}"
             for line, name, value in quoted(path.read_text()) if value != VALUES[name]]
    assert not stale, "\n".join(stale)


def test_the_readme_quotes_each_overhead():
    """hw/README.md's unit schedules give every unit's overhead with its value."""
    names = {name for _line, name, _value in quoted((ROOT / "hw" / "README.md").read_text())}
    assert {n for n in spec.TIMING_CONSTANTS if n.endswith("_OVERHEAD")} <= names
