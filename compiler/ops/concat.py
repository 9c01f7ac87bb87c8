"""concat: the rows of a, then the rows of b (a view: both parts are written in place, stacked
in the result's buffer, so it costs no instruction)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape


def concat_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """a (r1, c) above b (r2, c): (r1 + r2, c)."""
    na, nb = operands
    if na.shape[1] != nb.shape[1]:
        raise CompileError(f"concat_rows of {na.describe()} {na.shape} and {nb.describe()} {nb.shape}: "
                           "the widths differ", "concatenate tensors with the same number of columns")
    return (na.shape[0] + nb.shape[0], na.shape[1]), {}


def float_concat(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The parts stacked row after row."""
    return np.concatenate(operands, axis=-2)


def int_concat(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The parts' levels stacked row after row."""
    return np.concatenate(operands, axis=0)
