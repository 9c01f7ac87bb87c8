"""Checking what a caller hands over as 32-bit words: memory images and encoded programs.

A word may be given signed (-2**31 .. 2**31-1) or unsigned (0 .. 2**32-1); both mean the
same 32-bit pattern. Anything else (floats, even integral ones, strings, values that do not
fit 32 bits, nested lists) is refused with a message naming the argument and the first bad
index, rather than truncated or masked into a different value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WORD_MIN = -(1 << 31)
WORD_MAX = (1 << 32) - 1
WORD_MASK = 0xFFFFFFFF


def as_words(values: Any, what: str, max_len: int | None = None) -> np.ndarray:
    """Validate a one-dimensional sequence of 32-bit words.

    Args:
        values: a list, tuple or 1-D numpy array of integers (Python ints, numpy integers).
        what: how to name the argument in messages (e.g. "external-memory image").
        max_len: the most words allowed.

    Returns:
        The words as uint32 (two's complement for negative values).

    Raises:
        TypeError: not a sequence, or an element is not an integer.
        ValueError: not one-dimensional, too long, or a value outside -2**31 .. 2**32-1.
    """
    if isinstance(values, (str, bytes, dict, set)) or not hasattr(values, "__len__"):
        raise TypeError(f"{what} must be a list or 1-D array of 32-bit integers, got {type(values).__name__}")
    try:
        array = np.asarray(values)
    except ValueError:
        raise ValueError(f"{what} must be a flat list of 32-bit integers (it is ragged)") from None
    if array.size == 0 and array.ndim == 1:
        return np.zeros(0, dtype=np.uint32)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional (a list of words), got shape {array.shape}")
    if max_len is not None and len(array) > max_len:
        raise ValueError(f"{what} has {len(array)} words, more than the {max_len} that fit")
    if array.dtype.kind == "O":  # Python ints beyond int64, or mixed objects
        for index, value in enumerate(array):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{what}[{index}] = {value!r} is not an integer")
        big = [int(v) for v in array]
        _check_range(big, what)
        return np.array([v & WORD_MASK for v in big], dtype=np.uint32)
    if array.dtype.kind not in "iu":
        example = array[0].item()
        raise TypeError(f"{what} must hold integers, got {array.dtype} values (e.g. {example!r} at index 0)")
    too_big = array > WORD_MAX
    too_small = array < WORD_MIN if array.dtype.kind == "i" else np.zeros(len(array), dtype=bool)
    bad = np.flatnonzero(too_big | too_small)
    if len(bad):
        _out_of_range(what, int(bad[0]), int(array[bad[0]]))
    return (array.astype(np.int64) & WORD_MASK).astype(np.uint32)


def _check_range(values: list[int], what: str) -> None:
    for index, value in enumerate(values):
        if not WORD_MIN <= value <= WORD_MAX:
            _out_of_range(what, index, value)


def _out_of_range(what: str, index: int, value: int) -> None:
    raise ValueError(f"{what}[{index}] = {value} does not fit 32 bits "
                     f"({WORD_MIN}..{WORD_MAX}, signed or unsigned)")
