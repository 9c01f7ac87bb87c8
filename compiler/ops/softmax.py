"""softmax: the softmax of each row. The softmax unit reads Q4.4 and writes Q16 probabilities,
which one RQ brings to int8 (GA2.md sections 3 and 4), so both scales are pinned; its rows
are at most SM_MAX_LEN long (GA2.md section 1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX, requant_array, softmax_fixed_array

from ..errors import plural
from .semantics import level, softmax_rows
from .spec import RESULT, Limit, Pin, ScaleRule

if TYPE_CHECKING:
    from sim.spec import Params

    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext

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


def float_softmax(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """exp(x - max) / sum of each row, in index order."""
    return softmax_rows(operands[0])


def int_softmax(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The softmax unit's Q16 probabilities, requantized to the output's scale."""
    m, s = context.program.requantizers[node.id]
    return requant_array(softmax_fixed_array(operands[0]), m, s)


def real_softmax(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The softmax of the dequantized rows at the result's scale."""
    return level(softmax_rows(real(node.ins[0])), program.scales[node.id])
