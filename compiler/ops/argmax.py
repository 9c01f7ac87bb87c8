"""argmax: the index of the first maximum of each row, (rows, 1). Its result holds row indices,
not scaled int8 levels, so only an output may read it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape


def argmax_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """One index per row, (r, 1)."""
    return (operands[0].shape[0], 1), {}


def float_argmax(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The index of the first maximum of each row, as a float."""
    return np.argmax(operands[0], axis=-1)[..., None].astype(np.float64)


def int_argmax(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The index of the first maximum of each row of levels."""
    return np.argmax(operands[0], axis=1)[:, None].astype(np.int64)
