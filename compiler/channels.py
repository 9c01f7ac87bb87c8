"""Per-output-channel weight scales (issue 25; the TFLite int8 convention for convolution
weights): a convolution built with ``per_channel=True`` quantizes column j of its weight at its
own scale s_j = max |W[:, j]| / 127 (/ 7 for an int4 weight; a column of zeros takes the
tensor's scale), and its
requantizer takes a pair (m_j, s_j) per output channel from a table (RQ ``pc = 1``, GA2.md
sections 2 and 4). The weight node keeps the tensor's scale (max |W| / 127, the largest s_j)
for everything else that reports it. Per tensor stays the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX, round_half_away_array

from .int4 import INT4_MAX, is_int4

if TYPE_CHECKING:
    from .node import Node


def per_channel(node: Node) -> bool:
    """Whether a node requantizes per output channel (a convolution built so)."""
    return bool(getattr(node, "per_channel", False))


def _top(weight: Node) -> int:
    """The largest level of a weight's integers: 127, or 7 for an int4 weight (-7..7, seed
    chapter 13: :mod:`compiler.int4`)."""
    return INT4_MAX if is_int4(weight) else INT8_MAX


def channel_scales(weight: Node, scale: float) -> np.ndarray:
    """s_j of each column of a weight (float64, (cols,)): its largest |value| / 127 (/ 7 for an
    int4 weight), or ``scale`` (the tensor's) for a column of zeros."""
    largest = np.max(np.abs(weight.array), axis=0)
    return np.where(largest > 0, largest / _top(weight), scale)


def quantize_columns(weight: Node, scale: float) -> np.ndarray:
    """The weight's levels (int64), column j at s_j (:func:`channel_scales`), as
    :func:`sim.arith.quantize_array` quantizes (half away from zero, clamped to -127..127, or
    to -7..7 for an int4 weight)."""
    top = _top(weight)
    return round_half_away_array(np.clip(weight.array / channel_scales(weight, scale), -top, top))


def per_channel_weights(nodes: Sequence[Node]) -> set[int]:
    """The weights that per-channel nodes read as their second operand."""
    return {node.ins[1] for node in nodes if per_channel(node)}
