"""What the shape rules of the table of operations share: the shape of a tensor, the form of a
rule, and the checks and rules more than one operation uses.

Contract of a rule (each operation's module has its own): it takes the operand nodes (already
checked to exist and to be readable by :meth:`compiler.ir.Graph.add_node`) and the attributes
the caller gave, and returns the result's (rows, cols) and the attributes to store on the node
(normalised: a float factor, a bool transpose_b, a read-only float64 copy of a weight's
values). It raises :class:`CompileError` naming the operands and saying how to fix the call,
so a bad graph fails where it is written (seed chapter 11; int4 weights chapter 13, slices
chapter 16).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CompileError

if TYPE_CHECKING:
    from ..node import Node

Shape = tuple[int, int]
Attrs = dict[str, Any]
ShapeRule = Callable[[Sequence["Node"], Attrs], tuple[Shape, Attrs]]
"""(operand nodes, attributes given) -> (the result's shape, the attributes to store)."""


def check_shape(shape: Any, kind: str) -> Shape:
    """``shape`` as (rows, cols) of positive ints, or a CompileError naming ``kind``."""
    ok = (isinstance(shape, tuple | list) and len(shape) == 2
          and all(isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_) and d >= 1
                  for d in shape))
    if not ok:
        raise CompileError(f"{kind}: shape {shape!r} is not (rows, cols) with both at least 1",
                           "tensors are 2-D; write a vector as (1, n)")
    return int(shape[0]), int(shape[1])


def same_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The operand's shape, no attributes (softmax, relu)."""
    return operands[0].shape, {}
