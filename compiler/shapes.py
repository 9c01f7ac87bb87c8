"""The shape rules of the table of operations: operand checks, attributes, result shape.

Contract: a rule takes the operand nodes (already checked to exist and to be readable by
:meth:`compiler.ir.Graph.add_node`) and the attributes the caller gave, and returns the
result's (rows, cols) and the attributes to store on the node (normalised: a float
factor, a bool transpose_b, a read-only float64 copy of a weight's values). It raises
:class:`CompileError` naming the operands and saying how to fix the call, so a bad graph
fails where it is written (seed chapter 11; int4 weights chapter 13, slices chapter 16).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import CompileError, first_non_finite, float_array, plural, shown
from .int4 import INT4_BITS

if TYPE_CHECKING:
    from .ir import Node

Shape = tuple[int, int]
Attrs = dict[str, Any]

VALID_WEIGHT_BITS = (INT4_BITS, 8)
"""int8 weights, one per word, or int4 weights packed eight to a word (GA2.md section 2)."""


def check_shape(shape: Any, kind: str) -> Shape:
    """``shape`` as (rows, cols) of positive ints, or a CompileError naming ``kind``."""
    ok = (isinstance(shape, tuple | list) and len(shape) == 2
          and all(isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_) and d >= 1
                  for d in shape))
    if not ok:
        raise CompileError(f"{kind}: shape {shape!r} is not (rows, cols) with both at least 1",
                           "tensors are 2-D; write a vector as (1, n)")
    return int(shape[0]), int(shape[1])


def input_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """input: the declared (rows, cols)."""
    name = attrs["name"]
    return check_shape(attrs.get("shape"), f"input '{name}'"), {"name": name}


def weight_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """weight: the shape of its values (a 2-D array-like of finite floats), bits 8 or 4.

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


def matmul_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """matmul: a (m, k) by b (k, n), or by b (n, k) read transposed: (m, n). The factor
    (``scale=`` of the builder) must be a positive finite number."""
    na, nb = operands
    transpose_b = attrs.get("transpose_b", False)
    (m, k) = na.shape
    (k2, n) = nb.shape[::-1] if transpose_b else nb.shape
    if k != k2:
        used = f"{nb.shape}^T" if transpose_b else f"{nb.shape}"
        raise CompileError(
            f"matmul of {na.describe()} {na.shape} by {nb.describe()} {used}: "
            f"inner dimensions {k} and {k2} differ",
            "make the columns of the first operand match the rows of the second, or pass "
            "transpose_b=True to use the second operand's transpose")
    if not isinstance(transpose_b, bool | np.bool_):
        raise CompileError(f"matmul of {na.describe()} by {nb.describe()}: transpose_b = "
                           f"{shown(transpose_b)} is not True or False",
                           "pass transpose_b=True to use the second operand's transpose, or leave it "
                           "out")
    scale = attrs.get("factor", 1.0)
    try:
        factor = float("nan") if isinstance(scale, str | bytes | bool | np.bool_) else float(scale)
    except (TypeError, ValueError):
        factor = float("nan")
    if not (np.isfinite(factor) and factor > 0):
        raise CompileError(f"matmul of {na.describe()} by {nb.describe()}: the constant factor "
                           f"{scale!r} must be a positive finite number (the requantizer multiplier "
                           "is unsigned)", "fold a sign into one of the operands")
    out = {"transpose_b": bool(transpose_b), "factor": factor}
    if attrs.get("bias") is not None:
        out["bias"] = _bias(attrs["bias"], n, f"matmul of {na.describe()} by {nb.describe()}")
    return (m, n), out


def _bias(value: Any, n: int, where: str) -> np.ndarray:
    """A matmul's bias as float64 (n,): n finite numbers (a (1, n) array is taken too)."""
    try:
        bias = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise CompileError(f"{where}: the bias {shown(value)} is not an array of numbers",
                           f"pass {n} numbers, one per column of the result") from None
    if bias.ndim == 2 and bias.shape[0] == 1:
        bias = bias[0]
    if bias.shape != (n,):
        raise CompileError(f"{where}: the bias has shape {bias.shape}, the result has {n} columns",
                           f"pass {n} numbers, one per column of the result")
    if not np.all(np.isfinite(bias)):
        raise CompileError(f"{where}: the bias holds a value that is not finite", "pass finite numbers")
    return bias.copy()


def same_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """softmax, relu, output: the operand's shape."""
    return operands[0].shape, {}


def table_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """table: the operand's shape; ``fn`` must name a function of compiler.tables."""
    from .tables import function

    fn = attrs.get("fn", "")
    try:
        function(fn if isinstance(fn, str) else "")
    except ValueError as e:
        raise CompileError(f"table of {operands[0].describe()}: {e}",
                           "name one of the functions compiler.tables lists") from None
    return operands[0].shape, {"fn": fn}


def add_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """add: two operands of one shape."""
    na, nb = operands
    if na.shape != nb.shape:
        raise CompileError(f"add of {na.describe()} {na.shape} and {nb.describe()} {nb.shape}: "
                           "the shapes differ", "add tensors of the same shape")
    return na.shape, {}


def concat_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """concat: a (r1, c) above b (r2, c): (r1 + r2, c)."""
    na, nb = operands
    if na.shape[1] != nb.shape[1]:
        raise CompileError(f"concat_rows of {na.describe()} {na.shape} and {nb.describe()} {nb.shape}: "
                           "the widths differ", "concatenate tensors with the same number of columns")
    return (na.shape[0] + nb.shape[0], na.shape[1]), {}


def slice_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """slice: rows start .. start+count-1 of a (r, c), inside it: (count, c)."""
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


def argmax_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """argmax: one index per row, (r, 1)."""
    return (operands[0].shape[0], 1), {}


def output_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """output: the stored tensor's shape, under its external name."""
    return operands[0].shape, {"name": attrs["name"]}
