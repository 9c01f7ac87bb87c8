"""matmul: factor * (a @ b), or factor * (a @ b^T) with ``transpose_b``, plus a bias on every
row when it has one (seed chapter 11; the bias in the int32 accumulator, issue 14,
:mod:`compiler.bias`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.arith import pack_rq_pair, requant_array
from sim.spec import BY_NAME, Params, built

from ..bias import bias_levels, has_bias, region_name
from ..errors import CompileError, shown
from ..requant import matmul_factor, requantizer
from .semantics import level, matmul_in_order
from .spec import Constant

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext
    from .shapes import Attrs, Shape


def matmul_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """a (m, k) by b (k, n), or by b (n, k) read transposed: (m, n). The factor (``scale=`` of
    the builder) must be a positive finite number; a bias is n finite numbers."""
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
    factor = matmul_factor_attr(attrs.get("factor", 1.0), f"matmul of {na.describe()} by {nb.describe()}")
    out = {"transpose_b": bool(transpose_b), "factor": factor}
    if attrs.get("bias") is not None:
        out["bias"] = _bias(attrs["bias"], n, f"matmul of {na.describe()} by {nb.describe()}")
    return (m, n), out


def matmul_factor_attr(scale: Any, where: str) -> float:
    """A product's constant factor (``scale=`` of the builder) as a float.

    Raises:
        CompileError: not a positive finite number (the requantizer multiplier is unsigned).
    """
    try:
        factor = float("nan") if isinstance(scale, str | bytes | bool | np.bool_) else float(scale)
    except (TypeError, ValueError):
        factor = float("nan")
    if not (np.isfinite(factor) and factor > 0):
        raise CompileError(f"{where}: the constant factor {scale!r} must be a positive finite number (the "
                           "requantizer multiplier is unsigned)", "fold a sign into one of the operands")
    return factor


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


def _bias_words(node: Node) -> int:
    return node.shape[1]


BIAS = Constant(needed=has_bias, region=region_name, words=_bias_words, values=bias_levels)
"""A biased matmul's bias, one int32 word per column in units of its accumulator
(:func:`compiler.bias.bias_levels`), loaded into every row of the accumulator."""


def chains(node: Node, params: Params) -> bool:
    """Whether the machine has the chained MMRQ (OVERLAP = 2), whose requantizer reads its (m, s)
    from the scratchpad (GA2.md section 3): a matmul then has an entry to load."""
    return built(BY_NAME["MMRQ"], params)


def entry_region(node: Node) -> str:
    """The external region of a matmul's requantizer entry (MMRQ's table of one word)."""
    return f"requantizer entry of node {node.id}"


def _entry(node: Node, nodes: Sequence[Node], scales, params: Params) -> np.ndarray:
    a_id, b_id = node.ins
    factor = matmul_factor(node.factor, scales[a_id], scales[b_id], scales[node.id])
    m, s = requantizer(factor, f"matmul node {node.id}", node.id, params)
    return np.array([pack_rq_pair(m, s)], dtype=np.int64)


REQUANT_ENTRY = Constant(needed=chains, region=entry_region, words=lambda node: 1, values=_entry,
                         machine=True, machine_needed=True)
"""On a machine with MMRQ (OVERLAP = 2): a matmul's requantizer (m, s) as one table word (GA2.md
section 2), which its MMRQs read per tensor (pc = 0): :mod:`compiler.lowering.matmul`."""


def float_matmul(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """factor times the product summed in index order, plus the bias."""
    a, b = operands
    if node.transpose_b:
        b = np.swapaxes(b, -1, -2)
    product = node.factor * matmul_in_order(a, b)
    return product if node.bias is None else product + node.bias


def int_matmul(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The int32 accumulator, requantized with the node's pair (and its fused relu)."""
    a, b = operands
    accumulator = a @ (b.T if node.transpose_b else b)
    if node.bias is not None:   # compiler/bias.py: the bias in units of the accumulator
        accumulator = accumulator + bias_levels(node, context.program.graph.nodes, context.program.scales)
    m, s = context.program.requantizers[node.id]
    return requant_array(accumulator, m, s, node.id in context.program.relu_fused)


def real_matmul(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The product of the dequantized operands (plus the bias) at the result's scale, its
    fused relu applied."""
    a, b = real(node.ins[0]), real(node.ins[1])
    product = node.factor * (a @ (b.T if node.transpose_b else b))
    if node.bias is not None:
        product = product + node.bias
    want = level(product, program.scales[node.id])
    if node.id in program.relu_fused:
        want = np.maximum(want, 0)
    return want
