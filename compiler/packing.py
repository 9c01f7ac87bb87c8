"""Packed int8 weights in external memory, loaded by ``LD fmt=1`` (issue 14).

The storage format is the machine's (GA2.md section 2, LD in ``sim/spec.py``): four signed
bytes to a 32-bit external word, element 4i+j in bits 8j+7..8j of word i; ``LD dst src len
fmt=1`` writes ``len`` sign-extended words to the scratchpad from ceil(len/4) external words
starting at ``src``. The words it writes are those an unpacked LD of the same elements writes,
and its latency is the same (the scratchpad's LANES write ports bound both), so packing costs
no cycle: it buys external memory (a quarter of the words) and external bandwidth.

Which weights are packed (:func:`packed_nodes`): every int8 weight (an int4 weight has its own
packing, :mod:`compiler.int4`; inputs, biases and tables stay one value a word), when asked
(``compile_graph(..., pack=True)``), or, by default (``pack=None``), only when the layout
one value a word does not fit EXT_WORDS: a graph that fits as it always has compiles to the
same program, so every seed listing is unchanged. ``pack=False`` never packs.

The one rule packing adds (:func:`aligned`): a packed LD starts at byte 0 of an external word,
so a load of part of a packed weight must start at an element offset that is a multiple of
four. A whole load always does; :mod:`compiler.blocking` keeps only the blockings whose every
block starts so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.spec import INT8_PER_WORD

PACK_CHOICES = (None, True, False)
"""``compile_graph``'s ``pack``: None packs only when needed (the default), True always, False never."""
BYTE_BITS = 8


def int8_words(elements: int) -> int:
    """External words that hold ``elements`` packed int8 values (the last one padded)."""
    return -(-elements // INT8_PER_WORD)


def aligned(offset: int) -> bool:
    """Whether a packed load may start ``offset`` elements into a packed region."""
    return offset % INT8_PER_WORD == 0


def pack_int8(levels: Any) -> np.ndarray:
    """Pack int8 levels (-128..127) four to a word: element 4i+j in bits 8j+7..8j of word i
    (GA2.md section 2). Returns int64 words (0..2^32-1), the last one padded with zeros."""
    flat = np.asarray(levels, dtype=np.int64).ravel()
    flat = np.concatenate([flat, np.zeros(-len(flat) % INT8_PER_WORD, dtype=np.int64)])
    octets = (flat & ((1 << BYTE_BITS) - 1)).reshape(-1, INT8_PER_WORD)
    return (octets << (BYTE_BITS * np.arange(INT8_PER_WORD))).sum(axis=1)
