"""A node of Capra's graph IR: one operation on 2-D tensors (images stored rows = pixels,
columns = channels: docs/guide/conv.md), its operands and its attributes.

The graph that holds nodes is :class:`compiler.ir.Graph`; what each operation is (its
attributes, shape rule and meanings) is the table of :mod:`compiler.ops`. This module lies
below both: the operations' rules and meanings read nodes, and the graph builds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .ops.names import Op

Shape = tuple[int, int]
"""A tensor's (rows, cols)."""


@dataclass(eq=False)
class Node:
    """One operation of the graph.

    Attributes:
        id: position in ``Graph.nodes``.
        op: the operation, an :class:`~compiler.ops.Op` (a str enum: ``"matmul"``).
        ins: ids of the operands, in order.
        shape: (rows, cols) of the result.
        name: external name (input, weight, output), else "".
        array: the weight's float64 values, shape ``shape`` (weights only; None for a weight
            parsed from text without its values).
        bits: 8 or 4 (weights only).
        transpose_b: the matmul reads its second operand transposed.
        factor: the matmul's constant factor (the ``scale=`` argument of :meth:`Graph.matmul`).
        bias: the matmul's bias, float64 of shape (cols,), added to every row after the
            factor (None: no bias); a layernorm's, added after the gain.
        eps: a layernorm's epsilon (added to the variance). gain: a layernorm's one factor.
        causal: a softmax's row i takes only its first i + 1 + cols - rows values (a causal
            mask: query i of the last ``rows`` sees the keys up to its own position).
        fn: a table activation's function (``gelu``, ``leaky_relu:0.01``: compiler/tables.py).
        start, count: the rows a slice takes; count: the rows of a reshape.
        window: a convolution's or a pool's geometry over images stored HWC
            (``"8x8x4 k3x3 s1x1 p1x1"``: :mod:`compiler.ops.window`).
        per_channel: a convolution's weight scales and requantizer are per output channel
            (:mod:`compiler.channels`).
        tag: a user's name for the tensor, used by ``compile_graph(ranges=...)``.

    Two nodes are equal when every field is, a weight's values element by element.
    """

    id: int
    op: Op
    ins: tuple[int, ...]
    shape: Shape
    name: str = ""
    array: np.ndarray | None = None
    bits: int = 8
    transpose_b: bool = False
    factor: float = 1.0
    bias: np.ndarray | None = None
    fn: str = ""
    eps: float = 0.0
    gain: float = 1.0
    causal: bool = False
    start: int = 0
    count: int = 0
    window: str = ""
    per_channel: bool = False
    tag: str | None = None

    def describe(self) -> str:
        """``node 4 (matmul)`` or ``node 0 (input 'x')``, for messages."""
        named = f" '{self.name}'" if self.name else ""
        return f"node {self.id} ({self.op}{named})"

    @property
    def words(self) -> int:
        """Number of elements, i.e. of scratchpad words the tensor occupies as int8."""
        return self.shape[0] * self.shape[1]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        plain = ("id", "op", "ins", "shape", "name", "bits", "transpose_b", "factor", "fn", "eps", "gain",
                 "causal", "start", "count", "window", "per_channel", "tag")
        if any(getattr(self, f) != getattr(other, f) for f in plain):
            return False
        for a, b in ((self.array, other.array), (self.bias, other.bias)):
            if a is None or b is None:
                if a is not b:
                    return False
            elif not (a.shape == b.shape and bool(np.array_equal(a, b))):
                return False
        return True

    __hash__ = None  # mutable (a tag can be added), so not hashable
