"""Plain-text helpers of the reports and of ``--help``: counted nouns, docstrings without markup."""

from __future__ import annotations

import re


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``counted(1, "program")`` -> ``1 program``; ``counted(2_000, "program")`` -> ``2,000 programs``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def verb(n: int, singular: str, plural: str) -> str:
    """The verb agreeing with n: ``verb(1, "differs", "differ")`` -> ``differs``."""
    return singular if n == 1 else plural


_ROLE = re.compile(r":(?:func|mod|class|meth|data|attr|exc|obj):`~?([^`]+)`")


def plain(doc: str) -> str:
    """A docstring as plain text for ``--help``: ``` ``x`` ``` -> x, ``:func:`a.b` `` -> a.b,
    ``:class:`~a.B` `` -> a.B, ``**x**`` -> x."""
    text = _ROLE.sub(lambda m: m[1], doc)
    text = text.replace("``", "")
    return re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
