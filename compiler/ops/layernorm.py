"""layernorm: the LayerNorm of each row, ``gain * (x - mean) / sqrt(var + eps) + bias`` (issue
26). One LN per row computes the normalised row exactly in integers, as int32 in units of 2^-16
plus a bias row (GA2.md section 4); one RQ brings the rows to the result's int8 scale.

The affine part: ``gain`` is one positive number for the whole tensor (it becomes the RQ's
factor), ``bias`` one number per column, added inside LN as ``round(2^16 bias / gain)`` (the
bias row, an int32 word per column). A per-column gain has no place on this machine's
requantizer (one pair per tensor): the PyTorch front end folds an ``nn.LayerNorm``'s weight and
bias into the Linear layers that read it, and builds this operation with gain 1 and no bias.

The epsilon: LN's field eps counts 1/256 of N^2 var in the input's levels, so a float epsilon
``eps`` (in the input's real units squared) is the field ``round(256 N^2 eps / s_in^2)``
(:func:`eps_field`), saturated at 2^32 - 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.arith import layernorm_fixed_array, requant_array, round_half_away
from sim.spec import LN_EPS_FRAC, LN_FRAC_BITS, LN_MAX_LEN

from ..errors import CompileError, plural, shown
from .semantics import level
from .spec import Constant, Limit

if TYPE_CHECKING:
    from sim.spec import Params

    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext
    from .shapes import Attrs, Shape

PREFIX = "layernorm bias of node "
"""External regions of LN bias rows are named ``layernorm bias of node <id>``."""
EPS_FIELD_MAX = (1 << 32) - 1
INT32_MAX = (1 << 31) - 1


def _number(value: Any, what: str, fix: str, positive: bool) -> float:
    try:
        number = float("nan") if isinstance(value, str | bytes | bool | np.bool_) else float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise CompileError(f"{what} = {shown(value)} is not a {'positive' if positive else 'non-negative'} "
                           "finite number", fix)
    return number


def layernorm_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The operand's shape; ``eps`` a non-negative number, ``gain`` a positive one, ``bias``
    None or one finite number per column."""
    (na,) = operands
    where = f"layernorm of {na.describe()}"
    eps = _number(attrs.get("eps", 1e-5), f"{where}: eps", "give eps >= 0, as nn.LayerNorm's", False)
    gain = _number(attrs.get("gain", 1.0), f"{where}: gain",
                   "fold a per-column or negative gain into the layer that reads the result", True)
    out: dict[str, Any] = {"eps": eps, "gain": gain, "bias": None}
    if attrs.get("bias") is not None:
        bias = np.array(attrs["bias"], dtype=np.float64).ravel()
        if bias.shape != (na.shape[1],) or not np.isfinite(bias).all():
            raise CompileError(f"{where}: the bias must be {na.shape[1]} finite numbers, got "
                               f"{shown(attrs['bias'])}", "give one number per column")
        bias.setflags(write=False)
        out["bias"] = bias
    return na.shape, out


def region_name(node: Node) -> str:
    """The external region of a layernorm's bias row."""
    return f"{PREFIX}{node.id}"


def eps_field(node: Node, in_scale: float) -> int:
    """LN's field eps for the node's epsilon and its input's scale: round(256 N^2 eps / s^2),
    at most 2^32 - 1 (GA2.md section 4: D = 256 (N S2 - S1^2) + eps)."""
    n = node.shape[1]
    value = round_half_away((1 << LN_EPS_FRAC) * n * n * node.eps / (in_scale * in_scale))
    return min(value, EPS_FIELD_MAX)


def bias_row(node: Node) -> np.ndarray:
    """The LN bias row (int64, (cols,)): round(2^16 bias / gain), 0 without a bias.

    Raises:
        CompileError: a word beyond int32, naming the node.
    """
    cols = node.shape[1]
    if node.bias is None:
        return np.zeros(cols, dtype=np.int64)
    unit = 1 << LN_FRAC_BITS
    words = np.array([round_half_away(unit * b / node.gain) for b in node.bias], dtype=np.int64)
    if np.abs(words).max() > INT32_MAX:
        reach = np.abs(node.bias).max() / node.gain
        raise CompileError(f"layernorm node {node.id}: bias / gain reaches {reach:g}, beyond the int32 "
                           "bias row (2^15)", "scale the bias down or the gain up")
    return words


def _always(node: Node) -> bool:
    return True


def _row_words(node: Node) -> int:
    return node.shape[1]


def _bias_values(node: Node, nodes: Sequence[Node], scales: Mapping[int, float]) -> np.ndarray:
    return bias_row(node)


BIAS_ROW = Constant(needed=_always, region=region_name, words=_row_words, values=_bias_values)
"""The node's LN bias row (:func:`bias_row`), loaded once and used by every row's LN."""


def _row_length(node: Node, nodes: Sequence[Node]) -> int:
    return node.shape[1]


def _rows_too_long(node: Node, length: int, bound: int) -> str:
    return f"layernorm node {node.id}: rows of {length} values exceed LN's limit of {bound}"


def _shorter_rows(bound: int) -> str:
    return f"use rows of at most {plural(bound, 'value')}"


def _ln_max_len(params: Params) -> int:
    return LN_MAX_LEN


LN_ROW_LIMIT = Limit(_row_length, _ln_max_len, _rows_too_long, _shorter_rows)
"""LN takes rows of at most LN_MAX_LEN values (GA2.md section 1)."""


def layernorm_rows(x: np.ndarray, eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) per row (last axis), the biased variance, in float64."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    return centred / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)


def float_layernorm(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """gain times the normalised rows, plus the bias."""
    out = node.gain * layernorm_rows(operands[0], node.eps)
    return out if node.bias is None else out + node.bias


def int_layernorm(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """Each row's LN (sim.arith.layernorm_fixed_array) plus the bias row, requantized with the
    node's pair."""
    eps = eps_field(node, context.program.scales[node.ins[0]])
    bias = bias_row(node)
    y = np.stack([layernorm_fixed_array(row, eps) + bias for row in operands[0]])
    m, s = context.program.requantizers[node.id]
    return requant_array(y, m, s)


def real_layernorm(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The LayerNorm of the dequantized rows at the result's scale."""
    return level(float_layernorm(node, [real(node.ins[0])], None), program.scales[node.id])
