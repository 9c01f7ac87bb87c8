"""slice: rows start .. start+count-1 of a, as a view into a's buffer (no instruction, no
copy; seed chapter 16)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError, plural, shown

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape


def slice_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """Rows start .. start+count-1 of a (r, c), inside it: (count, c)."""
    (na,) = operands
    start, count = attrs.get("start"), attrs.get("count")
    rows = na.shape[0]
    for name, value in (("start", start), ("count", count)):
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise CompileError(f"slice_rows of {na.describe()}: {name}={shown(value)} is not an integer",
                               f"give {name} as an int, e.g. slice_rows(a, 0, 1)")
    if count < 1 or start < 0 or start + count > rows:
        raise CompileError(f"slice_rows of {na.describe()}: rows {start}..{start + count - 1} (start="
                           f"{start!r}, count={count!r}) do not lie inside its {plural(rows, 'row')}",
                           f"take 0 <= start and start + count <= {rows}, with count >= 1")
    return (int(count), na.shape[1]), {"start": int(start), "count": int(count)}


def float_slice(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The rows taken."""
    return operands[0][..., node.start:node.start + node.count, :]


def int_slice(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The levels of the rows taken."""
    return operands[0][node.start:node.start + node.count]
