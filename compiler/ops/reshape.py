"""reshape: the same words as (count, words / count), a view of its operand's buffer (no
instruction, no copy). With the HWC layout (docs/guide/conv.md), flattening B images of
H x W x C is reshape to B rows: row b holds the image's H*W*C values in the order (y, x, c)
(PyTorch's ``flatten`` orders them (c, y, x): the front end permutes the next linear layer's
weights to match)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError, shown

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape


def reshape_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """a (r, c) as (count, r*c / count)."""
    (na,) = operands
    count = attrs.get("count")
    if isinstance(count, bool | np.bool_) or not isinstance(count, int | np.integer) or count < 1 \
            or na.words % count:
        what = f"count={count!r}" if isinstance(count, int | np.integer) else f"count={shown(count)}"
        raise CompileError(f"reshape of {na.describe()} {na.shape}: {what} rows do not divide its {na.words} "
                           "values", "give a count of rows that divides rows x cols")
    return (int(count), na.words // int(count)), {"count": int(count)}


def float_reshape(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The values, row by row, in the new shape."""
    x = operands[0]
    return x.reshape(*x.shape[:-2], *node.shape)


def int_reshape(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The levels, row by row, in the new shape."""
    return operands[0].reshape(node.shape)
