"""How Capra refuses: :class:`CompileError`, and the helpers its messages and value checks share.

Every module of the compiler raises :class:`CompileError` naming the node, input or
argument at fault and a fix (ARCHITECTURE.md, convention 5). The helpers here turn counts
and bad values into message text (:func:`plural`, :func:`shown`) and check user-supplied
arrays without letting numpy quietly convert text, complex numbers or None
(:func:`float_array`, :func:`first_non_finite`).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


class CompileError(Exception):
    """Capra refuses a graph, its calibration data or its inputs.

    Attributes:
        problem: what is wrong, naming the node (``node 4 (matmul)``) or the input.
        fix: what the user can change so that the graph compiles.
        node: the id of the node at fault, when there is one.

    ``str(error)`` is the problem followed by the fix.
    """

    def __init__(self, problem: str, fix: str = "", node: int | None = None):
        self.problem = problem
        self.fix = fix
        self.node = node
        super().__init__(f"{problem}. Fix: {fix}" if fix else problem)


def plural(count: int, noun: str) -> str:
    """``1 piece``, ``2 pieces``, ``0 pieces``: a count with its noun, for messages."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def shown(value: object) -> str:
    """A bad argument for a message: its repr, cut short, and its type (``'x' (a str)``)."""
    text = repr(value)
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{text if len(text) <= 60 else text[:57] + '...'} ({article} {kind})"


def float_array(raw: Any) -> tuple[np.ndarray | None, str]:
    """``raw`` (an array-like of real numbers) as a float64 array, or None and why not.

    Refused, where ``np.asarray(raw, dtype=float)`` would quietly turn them into numbers or
    NaN: text (``"1"``), complex numbers (the imaginary part would be dropped), and elements
    that are not numbers (None, objects). The reason is a phrase such as ``it holds text``
    or ``element [0, 1] is None, not a number``; non-finite values are left to the caller.
    """
    try:
        plain = np.asarray(raw)
    except (TypeError, ValueError, RuntimeError) as e:   # ragged rows; a tensor that needs grad
        if "inhomogeneous" in str(e):
            return None, "its rows have different lengths"
        return None, first_line(e)
    kind = plain.dtype.kind
    if kind in "USa":
        return None, "it holds text, not numbers"
    if kind == "c":
        return None, "it holds complex numbers"
    if kind == "O":
        for index, item in np.ndenumerate(plain):
            if not isinstance(item, numbers.Real):
                return None, f"element {list(index)} is {item!r}, not a number"
    elif kind not in "biuf":
        return None, f"it holds {plain.dtype} values, not numbers"
    try:
        return plain.astype(np.float64), ""
    except (TypeError, ValueError, OverflowError) as e:
        return None, first_line(e)


def first_line(error: BaseException) -> str:
    """The first line of an exception's message without its final period (its type if empty)."""
    text = str(error).strip()
    return text.splitlines()[0].rstrip(".") if text else type(error).__name__


def first_non_finite(values: np.ndarray) -> str:
    """``element [0, 1] is nan``: where the first NaN or infinity of ``values`` is ('' if none)."""
    bad = np.argwhere(~np.isfinite(values))
    if len(bad) == 0:
        return ""
    index = tuple(int(i) for i in bad[0])
    return f"element {list(index)} is {float(values[index])}"
