"""int4 weights: how Capra quantizes them and how GA-2 stores them (seed chapter 13).

The storage format is the machine's (GA2.md section 2, the UNPACK instruction of
``sim/spec.py``): eight signed 4-bit values to a 32-bit word, element 8i+j in bits
4j+3..4j of word i. This module is the compiler's one home for it: the external layout
(packed words), the placement (a buffer rounded up to whole groups of eight, since UNPACK
writes eight values per packed word), the external image (:func:`pack_int4`) and the
scale (levels -7..7) all read it from here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.spec import INT4_PER_WORD

INT4_BITS = 4
"""Bits of one packed value."""
INT4_MAX = 7
"""An int4 weight uses the levels -7..7, the symmetric range of 4 signed bits (seed chapter 13)."""


def is_int4(node: Any) -> bool:
    """True for a node stored as packed int4 values (a weight built with ``bits=4``)."""
    return node.bits == INT4_BITS


def packed_words(values: int) -> int:
    """32-bit words that hold ``values`` packed int4 values (the last one padded)."""
    return -(-values // INT4_PER_WORD)


def pack_int4(levels: Any) -> np.ndarray:
    """Pack int4 levels (-8..7) eight to a word: element 8i+j in bits 4j+3..4j of word i
    (GA2.md section 2). Returns int64 words, the last one padded with zeros."""
    flat = np.asarray(levels, dtype=np.int64).ravel()
    flat = np.concatenate([flat, np.zeros(-len(flat) % INT4_PER_WORD, dtype=np.int64)])
    nibbles = (flat & ((1 << INT4_BITS) - 1)).reshape(-1, INT4_PER_WORD)
    return (nibbles << (INT4_BITS * np.arange(INT4_PER_WORD))).sum(axis=1)
