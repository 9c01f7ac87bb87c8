"""softmax: the softmax of each row. The softmax unit reads Q4.4 and writes Q16 probabilities,
which one RQ brings to int8 (GA2.md sections 3 and 4), so both scales are pinned; its rows
are at most SM_MAX_LEN long (GA2.md section 1).

A causal softmax (issue 26: attention's causal mask) takes only the first ``valid(i)`` =
i + 1 + cols - rows values of row i (query i of the last ``rows`` positions sees the keys up to
its own); the others are exactly 0. The SM of row i is given that length (GA2.md section 4: a
score written as -128 is not an exact mask), and the rest of the row is zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX, requant_array, softmax_fixed_array

from ..errors import CompileError, plural, shown
from .semantics import level, softmax_rows
from .spec import RESULT, Constant, Limit, Pin, ScaleRule

if TYPE_CHECKING:
    from sim.spec import Params

    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext
    from .shapes import Attrs, Shape

SOFTMAX_IN_SCALE = 1 / 16
"""The softmax unit reads Q4.4: an int8 level is 1/16 (GA2.md section 4)."""
PROBABILITY_SCALE = 1 / INT8_MAX
"""A softmax result is stored as int8 probability levels: 127 means 1.0."""
SOFTMAX_INPUT_PIN = Pin(0, SOFTMAX_IN_SCALE, f"softmax input, Q4.4 (1/{round(1 / SOFTMAX_IN_SCALE)})", "Q4.4")
SOFTMAX_OUTPUT_PIN = Pin(RESULT, PROBABILITY_SCALE, f"softmax output, a probability (1/{INT8_MAX})")
SOFTMAX_SCALES = ScaleRule(pins=(SOFTMAX_INPUT_PIN, SOFTMAX_OUTPUT_PIN))
"""Both ends pinned: Q4.4 in, probabilities out."""


def _row_length(node: Node, nodes: Sequence[Node]) -> int:
    return node.shape[1]


def _rows_too_long(node: Node, length: int, bound: int) -> str:
    return f"softmax node {node.id}: rows of {length} values exceed the softmax unit's limit of {bound}"


def _shorter_rows(bound: int) -> str:
    return f"use rows of at most {plural(bound, 'value')}"


def _sm_max_len(params: Params) -> int:
    return params.SM_MAX_LEN


SOFTMAX_ROW_LIMIT = Limit(_row_length, _sm_max_len, _rows_too_long, _shorter_rows)
"""The softmax unit takes rows of at most SM_MAX_LEN values (GA2.md section 1)."""


def softmax_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The operand's shape; ``causal`` True or False, and a causal softmax has at least as many
    columns as rows (every row keeps one value)."""
    (na,) = operands
    causal = attrs.get("causal", False)
    if not isinstance(causal, bool | np.bool_):
        raise CompileError(f"softmax of {na.describe()}: causal = {shown(causal)} is not True or False",
                           "pass causal=True for attention's causal mask, or leave it out")
    rows, cols = na.shape
    if causal and cols < rows:
        raise CompileError(f"causal softmax of {na.describe()} {na.shape}: fewer keys ({cols}) than queries "
                           f"({rows}), so its first rows would see no key",
                           "give the scores of the last rows queries against all keys: (queries, keys)")
    return na.shape, {"causal": bool(causal)}


def valid_lengths(node: Node) -> list[int]:
    """How many leading values of each row the softmax takes: all of them, or i + 1 + cols - rows
    for row i of a causal softmax."""
    rows, cols = node.shape
    return [r + 1 + cols - rows if node.causal else cols for r in range(rows)]


def _masked(rows: np.ndarray, lengths: list[int], each: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``each`` applied to the first lengths[i] values of row i (over the last two axes), 0 after."""
    out = np.zeros(rows.shape, dtype=np.result_type(rows, np.float64) if rows.dtype.kind == "f" else np.int64)
    for r, n in enumerate(lengths):
        out[..., r, :n] = each(rows[..., r, :n])
    return out


def float_softmax(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """exp(x - max) / sum of each row (of its valid values), in index order."""
    if not node.causal:
        return softmax_rows(operands[0])
    return _masked(np.asarray(operands[0], dtype=np.float64), valid_lengths(node), softmax_rows)


def int_softmax(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The softmax unit's Q16 probabilities (0 past a causal row's length), requantized to the
    output's scale."""
    m, s = context.program.requantizers[node.id]
    if not node.causal:
        return requant_array(softmax_fixed_array(operands[0]), m, s)
    q16 = _masked(np.asarray(operands[0], dtype=np.int64), valid_lengths(node), softmax_fixed_array)
    return requant_array(q16, m, s)


def real_softmax(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The softmax of the dequantized rows at the result's scale."""
    x = real(node.ins[0])
    p = _masked(x, valid_lengths(node), softmax_rows) if node.causal else softmax_rows(x)
    return level(p, program.scales[node.id])


ZEROS_PREFIX = "zeros of causal softmax node "


def zeros_region(node: Node) -> str:
    """The external region of zeros that clears a causal softmax's masked values."""
    return f"{ZEROS_PREFIX}{node.id}"


def _mask_words(node: Node) -> int:
    return max(node.shape[1] - n for n in valid_lengths(node))


def _zero_words(node: Node, nodes: Sequence[Node], scales: object) -> np.ndarray:
    return np.zeros(_mask_words(node), dtype=np.int64)


def _masks(node: Node) -> bool:
    return node.causal and _mask_words(node) > 0


ZEROS = Constant(needed=_masks, region=zeros_region,
                 words=_mask_words, values=_zero_words)
"""A causal softmax's zeros: as many words as its longest masked run, loaded over the masked
values of each row's Q16 probabilities before the RQ."""
