"""Requantizer parameters: a real factor as a 24-bit mantissa and a right shift.

Contract: :func:`requantizer` returns (m, s) with m / 2**s the factor to 24 significant bits
(``sim.arith.mantissa_shift``, GA2.md section 4) and s inside the legal range of the RQ
instruction's shift field, read from the ISA spec; a factor that needs a shift outside that
range is refused, since the machine would stop on it.

The factors (seed chapter 11), one function each:

* :func:`matmul_factor`: ``factor * scale_a * scale_b / scale_out`` (int32 accumulator to
  int8), computed exactly when its float product would leave the normal floats on the way;
* :func:`softmax_factor`: the unit's result is in units of 1/65536, so ``(1/65536) / scale_out``;
* :func:`rescale_factor`: an add operand whose scale differs from the sum's is rescaled,
  int8 to int8, by ``scale_operand / scale_sum``.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

from sim.arith import Q16_ONE, mantissa_shift
from sim.spec import BY_NAME, RQ_TENSOR_SHIFT_LO, Params

from .errors import CompileError

SM_OUTPUT_UNIT = 1 / Q16_ONE
"""The real value of one unit of the softmax unit's Q16 output."""


def product_underflows(factor: float, *scales: float) -> bool:
    """Whether ``factor * scales[0] * scales[1] * ...`` (the left-to-right float product the
    emitter forms) leaves the normal floats on the way, losing precision or becoming 0 or inf."""
    product = factor
    for scale in scales:
        product *= scale
        if not sys.float_info.min <= product <= sys.float_info.max:
            return True
    return False


def exact_factor(numerators: tuple[float, ...], denominator: float) -> float:
    """prod(numerators) / denominator, computed exactly and rounded once (inf if it overflows),
    for factors whose float product would underflow or overflow on the way."""
    value = Fraction(1)
    for number in numerators:
        value *= Fraction(number)
    value /= Fraction(denominator)
    try:
        return float(value)
    except OverflowError:
        return math.inf


def matmul_factor(factor: float, scale_a: float, scale_b: float, scale_out: float) -> float:
    """A matmul's requantizer factor ``factor * scale_a * scale_b / scale_out``, as the float
    product left to right; when that product would leave the normal floats on the way (tiny
    or huge scales), computed exactly instead, so that no bits are lost (inf if it overflows)."""
    value = factor * scale_a * scale_b / scale_out
    pieces = (factor, scale_a, scale_b)
    if product_underflows(*pieces) or product_underflows(value):
        value = exact_factor(pieces, scale_out)
    return value


def softmax_factor(scale_out: float) -> float:
    """The factor from the softmax unit's Q16 probabilities to int8 levels at ``scale_out``."""
    return SM_OUTPUT_UNIT / scale_out


def rescale_factor(scale_operand: float, scale_sum: float) -> float:
    """The factor that brings an add operand's int8 levels to the sum's scale."""
    return scale_operand / scale_sum


def shift_range(params: Params) -> tuple[int, int]:
    """The legal shifts (lowest, highest) of RQ per tensor (pc = 0), from the ISA spec: the field's
    range, from RQ_TENSOR_SHIFT_LO (s = 0 is for a per-channel RQ only)."""
    shift_field = next(f for f in BY_NAME["RQ"].fields if f.name == "s")
    lo, hi = shift_field.legal_range(params)
    return max(lo, RQ_TENSOR_SHIFT_LO), hi


def requantizer(factor: float, what: str, node: int, params: Params) -> tuple[int, int]:
    """The RQ parameters (m, s) for a real factor.

    Args:
        factor: the real multiplier, > 0.
        what: names the requantizer in messages (``matmul node 4``).
        node: the node it belongs to.
        params: the machine (for the shift range).

    Raises:
        CompileError: the factor is not positive and finite, or its shift falls outside
            the RQ field's legal range (the scales of the tensors involved are too far apart).
    """
    if factor == 0 or factor == math.inf:
        way = "underflows to 0" if factor == 0 else "overflows to infinity"
        raise CompileError(f"{what}: the requantizer factor {way}: the scales involved are too far apart",
                           "bring the scales closer together: rescale a weight or the constant factor, "
                           "or fix a range with ranges=", node)
    if not factor > 0:   # NaN or negative: a compiler bug, not the user's graph
        raise CompileError(f"{what}: the requantizer factor {factor!r} is not a positive finite number",
                           "check the calibration ranges of this node and its operands", node)
    m, s = mantissa_shift(factor)
    lo, hi = shift_range(params)
    if not lo <= s <= hi:
        raise CompileError(f"{what}: the requantizer factor {factor:.3g} needs a shift of {s}, outside "
                           f"the RQ instruction's {lo}..{hi}",
                           "bring the scales closer together: rescale a weight or the constant factor, "
                           "or fix a range with ranges=", node)
    return m, s
