"""The three meanings of an operation, and what they share: the contexts they read, the
summation order, the rounding of the real-number check.

Each operation's module in this package gives it three meanings, which its table entry
(:mod:`compiler.ops.table`) names:

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
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sim.arith import INT8_MAX, INT8_MIN, round_half_away_array

if TYPE_CHECKING:
    from ..node import Node

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


# --------------------------------------------------------------------------- integers


class Nodes(Protocol):
    """A graph, as a meaning reads it: its nodes."""

    nodes: Sequence[Node]


class Compiled(Protocol):
    """What the integer and real-number meanings read of a compiled program
    (:class:`compiler.Program` is one): the graph, the planned scales, the requantizer pairs
    (keyed by node id, or (add node id, operand index)), the fused relus and the weights'
    levels."""

    graph: Nodes
    scales: Mapping[int, float]
    requantizers: Mapping[Any, tuple[int, int]]
    relu_fused: set[int]
    machine: Any

    def quantized_weight(self, nid: int) -> np.ndarray: ...


@dataclass
class IntContext:
    """What an integer meaning may read besides its operands.

    Attributes:
        program: the compiled program (scales, requantizer pairs, fused relus, weights).
        inputs: input node id -> int8 levels (int64 arrays) of the run's inputs.
    """

    program: Compiled
    inputs: Mapping[int, np.ndarray]


IntMeaning = Callable[["Node", Sequence[np.ndarray], IntContext], np.ndarray]


# --------------------------------------------------------------------------- real-number check

RealMeaning = Callable[["Node", Callable[[int], np.ndarray], Compiled], "np.ndarray | None"]
"""(node, real value of a node id, program) -> the levels the real meaning gives, or None."""


def level(real: np.ndarray, scale: float) -> np.ndarray:
    """The int8 level nearest a real value at a scale (half away from zero, saturated)."""
    return np.clip(round_half_away_array(real / scale), INT8_MIN, INT8_MAX)


def no_arithmetic(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> None:
    """Nothing to check: the operation moves or names values without computing new ones."""
    return None
