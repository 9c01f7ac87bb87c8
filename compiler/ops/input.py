"""input: a tensor the host supplies at run time, (rows, cols) float values, under its name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .shapes import check_shape

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape


def input_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The declared (rows, cols)."""
    name = attrs["name"]
    return check_shape(attrs.get("shape"), f"input '{name}'"), {"name": name}


def float_input(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The run's values of the input, (S, rows, cols)."""
    return np.asarray(context.inputs[node.name], dtype=np.float64)


def int_input(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The input's values quantized at its scale."""
    return context.inputs[node.id]
