"""What each operation means: in floating point, in integers, and as a real-number check.

The table of operations (:mod:`compiler.ops`) gives every operation three meanings from here:

* float (``evaluate`` in the table): the reference the int8 program is judged against and
  calibration measures, on S stacked samples, arrays (S, rows, cols) of float64;
* integer (``interpret``): what the compiled program computes, from the planned scales and
  requantizer pairs and the arithmetic of :mod:`sim.arith` (GA2.md section 4), on
  int64 (rows, cols) arrays; the reference machine must give exactly these integers;
* real-number check (``real``): the levels the operation's real meaning gives on the
  dequantized operands, rounded to the result's scale, or None for an operation with no
  arithmetic of its own (seed chapter 11, check (d)).

Summation order is part of the float contract. Calibration ranges become scales, and scales
become the 24-bit requantizer mantissas the seed prints, so the sums are formed exactly as
the seed's reference does (seed chapter 11, ``evaluate``): a matmul entry is the running sum
``((a0*b0 + a1*b1) + a2*b2) + ...`` in index order, multiplied by the factor afterwards; a
softmax row uses ``math.exp`` (numpy's exp differs from it in the last bit for a few
percent of arguments) and a running sum in index order. The loops run over the inner index
only, so every step is still one numpy operation over all samples, rows and columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import (
    INT8_MAX,
    INT8_MIN,
    requant_array,
    round_half_away_array,
    sat_add_array,
    softmax_fixed_array,
)

from .bias import bias_levels
from .tables import function, table_levels

if TYPE_CHECKING:
    from .ir import Node
    from .program import Program

_math_exp = np.frompyfunc(math.exp, 1, 1)


# --------------------------------------------------------------------------- helpers


def running_sum(terms: np.ndarray, axis: int) -> np.ndarray:
    """Sum along ``axis`` strictly left to right (not numpy's pairwise order)."""
    terms = np.moveaxis(terms, axis, 0)
    total = terms[0].copy()
    for term in terms[1:]:
        total += term
    return total


def matmul_in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b over the last two axes, each entry summed in index order.

    Args:
        a: (..., m, k) float64. b: (..., k, n) float64.

    Returns:
        (..., m, n) float64.
    """
    k = a.shape[-1]
    total = a[..., :, 0:1] * b[..., 0:1, :]
    for t in range(1, k):
        total = total + a[..., :, t:t + 1] * b[..., t:t + 1, :]
    return total


def softmax_rows(x: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum, per row (last axis), with math.exp and an in-order sum."""
    shifted = x - x.max(axis=-1, keepdims=True)
    e = _math_exp(shifted).astype(np.float64)
    return e / running_sum(e, axis=-1)[..., None]


def same_as_operand(node: Node, operands: Sequence[np.ndarray], context: object) -> np.ndarray:
    """The operand itself: an output; a relu in integers (its matmul's requantizer applied it)."""
    return operands[0]


# --------------------------------------------------------------------------- floating point


@dataclass
class FloatContext:
    """What a float meaning may read besides its operands.

    Attributes:
        inputs: input name -> float64 (S, rows, cols).
        samples: S.
    """

    inputs: Mapping[str, np.ndarray]
    samples: int


FloatMeaning = Callable[["Node", Sequence[np.ndarray], FloatContext], np.ndarray]


def float_input(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return np.asarray(context.inputs[node.name], dtype=np.float64)


def float_weight(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return np.broadcast_to(node.array, (context.samples, *node.shape))


def float_matmul(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    a, b = operands
    if node.transpose_b:
        b = np.swapaxes(b, -1, -2)
    product = node.factor * matmul_in_order(a, b)
    return product if node.bias is None else product + node.bias


def float_softmax(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return softmax_rows(operands[0])


def float_add(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return operands[0] + operands[1]


def int_relu(node: Node, operands: Sequence[np.ndarray], context: object) -> np.ndarray:
    """A relu in integers: max(0, level). When it is fused, its operand's requantizer or VADD
    applied it already and this is the operand itself; unfused (``compile_graph(fuse=False)``),
    the identity RQ with relu = 1 applies it (GA2.md section 4)."""
    return np.maximum(operands[0], 0)


def float_relu(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return np.maximum(operands[0], 0.0)


def float_concat(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return np.concatenate(operands, axis=-2)


def float_slice(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    return operands[0][..., node.start:node.start + node.count, :]


def float_table(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(function(node.fn)(np.asarray(operands[0], dtype=np.float64)), dtype=np.float64)


def float_argmax(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The index of the first maximum of each row, as a float."""
    return np.argmax(operands[0], axis=-1)[..., None].astype(np.float64)


# --------------------------------------------------------------------------- integers


@dataclass
class IntContext:
    """What an integer meaning may read besides its operands.

    Attributes:
        program: the compiled program (scales, requantizer pairs, fused relus, weights).
        inputs: input node id -> int8 levels (int64 arrays) of the run's inputs.
    """

    program: Program
    inputs: Mapping[int, np.ndarray]


IntMeaning = Callable[["Node", Sequence[np.ndarray], IntContext], np.ndarray]


def int_input(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    return context.inputs[node.id]


def int_weight(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    return context.program.quantized_weight(node.id)


def int_matmul(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The int32 accumulator, requantized with the node's pair (and its fused relu)."""
    a, b = operands
    accumulator = a @ (b.T if node.transpose_b else b)
    if node.bias is not None:   # compiler/bias.py: the bias in units of the accumulator
        accumulator = accumulator + bias_levels(node, context.program.graph.nodes, context.program.scales)
    m, s = context.program.requantizers[node.id]
    return requant_array(accumulator, m, s, node.id in context.program.relu_fused)


def int_softmax(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The softmax unit's Q16 probabilities, requantized to the output's scale."""
    m, s = context.program.requantizers[node.id]
    return requant_array(softmax_fixed_array(operands[0]), m, s)


def int_add(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The saturating sum of the operands, each first rescaled if the compiler gave it a pair
    (and its fused relu)."""
    rescaled = []
    for k, x in enumerate(operands):
        pair = context.program.requantizers.get((node.id, k))
        rescaled.append(x if pair is None else requant_array(x, *pair))
    return sat_add_array(*rescaled, node.id in context.program.relu_fused)


def int_concat(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    return np.concatenate(operands, axis=0)


def int_slice(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    return operands[0][node.start:node.start + node.count]


def int_table(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The LUT: entry x + 128 of the node's table (compiler/tables.py)."""
    table = table_levels(node, context.program.scales)
    return table[np.asarray(operands[0], dtype=np.int64) + 128]


def int_argmax(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    return np.argmax(operands[0], axis=1)[:, None].astype(np.int64)


# --------------------------------------------------------------------------- real-number check

RealMeaning = Callable[["Node", Callable[[int], np.ndarray], "Program"], "np.ndarray | None"]
"""(node, real value of a node id, program) -> the levels the real meaning gives, or None."""


def level(real: np.ndarray, scale: float) -> np.ndarray:
    """The int8 level nearest a real value at a scale (half away from zero, saturated)."""
    return np.clip(round_half_away_array(real / scale), INT8_MIN, INT8_MAX)


def no_arithmetic(node: Node, real: Callable[[int], np.ndarray], program: Program) -> None:
    """Nothing to check: the operation moves or names values without computing new ones."""
    return None


def real_matmul(node: Node, real: Callable[[int], np.ndarray], program: Program) -> np.ndarray:
    a, b = real(node.ins[0]), real(node.ins[1])
    product = node.factor * (a @ (b.T if node.transpose_b else b))
    if node.bias is not None:
        product = product + node.bias
    want = level(product, program.scales[node.id])
    if node.id in program.relu_fused:
        want = np.maximum(want, 0)
    return want


def real_softmax(node: Node, real: Callable[[int], np.ndarray], program: Program) -> np.ndarray:
    return level(softmax_rows(real(node.ins[0])), program.scales[node.id])


def real_table(node: Node, real: Callable[[int], np.ndarray], program: Program) -> np.ndarray:
    with np.errstate(all="ignore"):
        return level(function(node.fn)(real(node.ins[0])), program.scales[node.id])


def real_add(node: Node, real: Callable[[int], np.ndarray], program: Program) -> np.ndarray:
    want = level(real(node.ins[0]) + real(node.ins[1]), program.scales[node.id])
    return np.maximum(want, 0) if node.id in program.relu_fused else want
