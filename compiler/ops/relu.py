"""relu: max(0, a). It is the relu flag of the instruction that writes its operand (a matmul's
RQ, an add's VADD: :mod:`compiler.fusion`), so it lives in its operand's buffer and shares its
scale; unfused (``compile_graph(disable={"fusion"})``) an identity RQ with relu = 1 applies it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext


def float_relu(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """max(0, x)."""
    return np.maximum(operands[0], 0.0)


def int_relu(node: Node, operands: Sequence[np.ndarray], context: object) -> np.ndarray:
    """A relu in integers: max(0, level). When it is fused, its operand's requantizer or VADD
    applied it already and this is the operand itself; unfused (``compile_graph(disable={"fusion"})``),
    the identity RQ with relu = 1 applies it (GA2.md section 4)."""
    return np.maximum(operands[0], 0)
