"""add: a + b, elementwise, of two tensors of one shape; each operand is first rescaled to the
sum's scale when it has another (an RQ), then one saturating VADD (GA2.md section 3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import requant_array, sat_add_array

from ..errors import CompileError
from .semantics import level

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext
    from .shapes import Attrs, Shape


def add_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """Two operands of one shape: that shape."""
    na, nb = operands
    if na.shape != nb.shape:
        raise CompileError(f"add of {na.describe()} {na.shape} and {nb.describe()} {nb.shape}: "
                           "the shapes differ", "add tensors of the same shape")
    return na.shape, {}


def float_add(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The sum."""
    return operands[0] + operands[1]


def int_add(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The saturating sum of the operands, each first rescaled if the compiler gave it a pair
    (and its fused relu)."""
    rescaled = []
    for k, x in enumerate(operands):
        pair = context.program.requantizers.get((node.id, k))
        rescaled.append(x if pair is None else requant_array(x, *pair))
    return sat_add_array(*rescaled, node.id in context.program.relu_fused)


def real_add(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The sum of the dequantized operands at the result's scale, its fused relu applied."""
    want = level(real(node.ins[0]) + real(node.ins[1]), program.scales[node.id])
    return np.maximum(want, 0) if node.id in program.relu_fused else want
