"""A matmul's bias in the int32 accumulator (issue 14; GA2.md section 3, MM acc = 1).

``y = factor * (a @ b) + bias`` is computed as ``requant(A @ B + beta)``: the accumulator
counts units of ``factor * s_a * s_b`` (the scales of the operands), so the bias enters it as
``beta = round(bias / (factor * s_a * s_b))`` (half away from zero, GA2.md section 4), an int32
per column. The compiler stores beta in external memory (one region per biased matmul, after
the inputs and weights), loads it into every row of the accumulator (one LD per row) and runs
the product's MMs with acc = 1 onto it; the requantizer (and a fused relu) follow as without a
bias. The only rounding is beta's own, half a unit of the accumulator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX, round_half_away_array

from .channels import channel_scales, per_channel
from .errors import CompileError

if TYPE_CHECKING:
    from .node import Node

INT32_MAX = (1 << 31) - 1
PREFIX = "bias of node "
"""External regions of biases are named ``bias of node <id>`` (no input, weight or output
name can be mistaken for one: the graph's own names are checked as they are given)."""


def region_name(node: Node) -> str:
    """The external region of a matmul's bias."""
    return f"{PREFIX}{node.id}"


def has_bias(node: Node) -> bool:
    """Whether a node is a matmul with a bias."""
    return getattr(node, "bias", None) is not None


def accumulator_unit(node: Node, scales: Mapping[int, float], nodes: Sequence[Node] | None = None):
    """The real value of one unit of a product's int32 accumulator: factor * s_a * s_b; per
    output channel (float64 (cols,), ``nodes`` given) for a node with per-channel weight scales
    (:mod:`compiler.channels`)."""
    a_id, b_id = node.ins
    if nodes is not None and per_channel(node):
        return node.factor * scales[a_id] * channel_scales(nodes[b_id], scales[b_id])
    return node.factor * scales[a_id] * scales[b_id]


def bias_levels(node: Node, nodes: Sequence[Node], scales: Mapping[int, float]) -> np.ndarray:
    """beta, int64 of shape (cols,): the bias in units of the accumulator.

    Raises:
        CompileError: beta plus the largest product (K * 127 * 127) would not fit an int32
            (a bias far larger than the product: the operands' scales are too fine for it).
    """
    unit = accumulator_unit(node, scales, nodes)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        beta = np.asarray(node.bias, dtype=np.float64) / unit
    b = nodes[node.ins[1]]
    k = b.shape[1] if getattr(node, "transpose_b", False) else b.shape[0]   # the product's inner size
    room = INT32_MAX - k * INT8_MAX * INT8_MAX
    if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > room:
        worst = float(np.max(np.abs(node.bias)))
        raise CompileError(f"{node.describe()}: its bias (up to {worst:.4g}) is more than {room:,} "
                           f"units of the accumulator ({np.min(unit):.3g} each): it does not fit the int32 "
                           "accumulator beside the product",
                           "scale the bias down, or calibrate with inputs that reach larger values", node.id)
    return round_half_away_array(beta)
