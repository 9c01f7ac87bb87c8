"""Table activations (issue 14; GA2.md section 3, LUT): an int8 -> int8 map through 256 entries.

A TABLE node applies a float function elementwise. On GA-2 it is one LUT instruction: the
compiler builds the node's table from the function and the scales of its input (s_in) and
output (s_out), entry e = quantize(f((e - 128) * s_in), s_out) for e = 0..255 (GA2.md section 4's
quantize: round half away from zero, clamp to -127..127), the technique of TFLite's int8
kernels for tanh and logistic. The table is stored in external memory (``table of node <id>``,
256 words after the biases), loaded into a temporary before the LUT and released after it.

The functions are PyTorch's definitions (torch.nn.functional), in float64.

A table sees its input as int8 levels: a value beyond 127 times the input's scale is clipped
there before the function is applied. Calibration sets that scale from the values it sees, so
this happens only when the input shares a scale the hardware pins (a tensor that a softmax
reads too holds Q4.4, at most 7.94): :func:`saturation_notes` then names the table, its input
and the share of the calibration values that were clipped (a ``Program.notes`` line and a
:class:`TableSaturationWarning`), never silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX, quantize_array
from sim.spec import LUT_TABLE_WORDS

from .errors import CompileError

if TYPE_CHECKING:
    from .node import Node

PREFIX = "table of node "
"""External regions of tables are named ``table of node <id>``."""

_erf = np.frompyfunc(math.erf, 1, 1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _silu(x: np.ndarray) -> np.ndarray:
    return x * _sigmoid(x)


def _hardswish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _relu6(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.0, 6.0)


FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "gelu": _gelu, "gelu_tanh": _gelu_tanh, "silu": _silu, "sigmoid": _sigmoid, "tanh": np.tanh,
    "hardswish": _hardswish, "relu": _relu, "relu6": _relu6,
}
"""The functions without a parameter, by name."""
PARAMETRIC = {"leaky_relu": "negative slope", "elu": "alpha"}
"""The functions with one parameter, written ``name:value`` (``leaky_relu:0.01``, ``elu:1.0``)."""


def function(fn: str) -> Callable[[np.ndarray], np.ndarray]:
    """The float function a TABLE node's ``fn`` names.

    Raises:
        ValueError: an unknown name or a parameter that is not a finite number.
    """
    name, _, value = fn.partition(":")
    if name in FUNCTIONS and not value:
        return FUNCTIONS[name]
    if name in PARAMETRIC and value:
        p = float(value)
        if not math.isfinite(p):
            raise ValueError(f"the {PARAMETRIC[name]} of {name} is {value}")
        if name == "leaky_relu":
            return lambda x: np.where(x >= 0, x, p * x)
        return lambda x: np.where(x > 0, x, p * np.expm1(np.minimum(x, 0.0)))
    known = ", ".join([*FUNCTIONS, *(f"{n}:<{what}>" for n, what in PARAMETRIC.items())])
    raise ValueError(f"unknown table function {fn!r} (known: {known})")


def region_name(node: Node) -> str:
    """The external region of a TABLE node's table."""
    return f"{PREFIX}{node.id}"


def table_levels(node: Node, scales: Mapping[int, float], nodes: Sequence[Node] | None = None) -> np.ndarray:
    """The node's 256 entries (int64, -127..127): entry e = quantize(f((e - 128) * s_in), s_out).

    Raises:
        CompileError: the function is not finite on some int8 input (naming the node, the function
            and the input), so no table can stand for it.
    """
    x = (np.arange(LUT_TABLE_WORDS) - 128) * scales[node.ins[0]]
    with np.errstate(all="ignore"):
        y = np.asarray(function(node.fn)(x), dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(y))
    if len(bad):
        e = int(bad[0])
        raise CompileError(f"{node.describe()}: {node.fn}({x[e]:.6g}) is {y[e]} for the int8 input {e - 128} "
                           f"(scale {scales[node.ins[0]]:.6g}): a table of finite int8 entries cannot "
                           "stand for it", "use a function that is finite on the input's range", node.id)
    return quantize_array(y, scales[node.id])


class TableSaturationWarning(UserWarning):
    """A table activation's input was clipped to its int8 range on calibration samples:
    the function sees 127 times the input's scale where the float model saw more
    (:func:`saturation_notes`; the same sentence is in ``Program.notes``)."""


def clipped_share(values: np.ndarray, scale: float) -> float:
    """The share of ``values`` that quantize beyond -127..127 at ``scale`` (GA2.md section 4:
    round half away from zero, then clamp), 0 to 1."""
    with np.errstate(over="ignore"):
        levels = np.floor(np.abs(values) / scale + 0.5)
    return float(np.count_nonzero(levels > INT8_MAX)) / max(1, values.size)


def saturation_notes(nodes: Sequence[Node], scales: Mapping[int, float],
                     inputs: Mapping[int, np.ndarray]) -> list[str]:
    """A sentence per table whose input was clipped on the calibration samples: the table,
    its function, its input, how far the input reached, what its scale holds, the clipped share.

    Args:
        nodes: the graph's nodes.
        inputs: table node id -> its input's calibration values (any shape).
    """
    notes = []
    for nid, values in inputs.items():
        node = nodes[nid]
        source = nodes[node.ins[0]]
        share = clipped_share(values, scales[source.id])
        if share > 0:
            holds = scales[source.id] * INT8_MAX
            notes.append(f"{node.describe()}: its input, {source.describe()}, reaches "
                         f"{float(np.max(np.abs(values))):.4g} on the calibration samples, beyond the "
                         f"{holds:.4g} its scale holds: {100 * share:.1f}% of the values {node.fn} saw in "
                         f"calibration are clipped to +-{holds:.4g} first (a scale the hardware pins, a "
                         "softmax's Q4.4, is shared: give the table an input of its own)")
    return notes
