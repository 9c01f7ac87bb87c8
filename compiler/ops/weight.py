"""weight: a constant matrix, stored as int8 (one a word) or as int4 (packed eight to a word in
external memory, expanded by UNPACK after the load; seed chapter 13)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX

from ..errors import CompileError, first_non_finite, float_array
from ..int4 import INT4_BITS, INT4_MAX, is_int4
from .shapes import check_shape

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape

VALID_WEIGHT_BITS = (INT4_BITS, 8)
"""int8 weights, one per word, or int4 weights packed eight to a word (GA2.md section 2)."""


def weight_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The shape of its values (a 2-D array-like of finite floats), bits 8 or 4.

    Without an ``array`` attribute (a graph parsed from text without its weight values) the
    shape is the declared one and the node has no values: the structural passes accept it,
    compilation does not.
    """
    name, bits = attrs["name"], attrs.get("bits", 8)
    whole = isinstance(bits, int | np.integer) and not isinstance(bits, bool | np.bool_)
    if not whole or bits not in VALID_WEIGHT_BITS:
        raise CompileError(f"weight '{name}': bits={bits!r} is not supported",
                           "use bits=8 (int8) or bits=4 (packed int4)")
    if "array" not in attrs:
        return check_shape(attrs.get("shape"), f"weight '{name}'"), {"name": name, "bits": int(bits)}
    converted, why = float_array(attrs["array"])
    if converted is None:
        raise CompileError(f"weight '{name}': the values are not a numeric 2-D array ({why})",
                           "pass a list of equal-length rows of numbers or a 2-D numpy array")
    values = np.array(converted, dtype=np.float64)   # a private copy
    if values.ndim != 2 or values.size == 0:
        raise CompileError(f"weight '{name}': expected a non-empty 2-D array, got shape {values.shape}",
                           "write a vector as a single row, [[...]]")
    if not np.isfinite(values).all():
        raise CompileError(f"weight '{name}': contains NaN or infinity ({first_non_finite(values)})",
                           "replace the non-finite values")
    values.setflags(write=False)
    shape = (int(values.shape[0]), int(values.shape[1]))
    return shape, {"name": name, "array": values, "bits": int(bits)}


def weight_levels(node: Node) -> int:
    """A weight uses -127..127, or -7..7 when stored as int4 (seed chapter 13)."""
    return INT4_MAX if is_int4(node) else INT8_MAX


def float_weight(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """Its values, the same for every sample."""
    return np.broadcast_to(node.array, (context.samples, *node.shape))


def int_weight(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """Its values quantized at its scale (int4 or int8 levels by its bits)."""
    return context.program.quantized_weight(node.id)
