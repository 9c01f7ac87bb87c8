"""Small combinational helpers shared by the units that stream LANES words per cycle, and the
OR that merges their requests.

A *beat* is one scratchpad access of LANES consecutive words; lane i is the word at addr + i.
A unit walking a row of ``len`` elements keeps ``left``, the elements not yet consumed counting
the current beat; the beat's valid lanes and whether it is the last follow from that count.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from functools import reduce

from amaranth.hdl import Cat, Const, Signal, Value


def lane_mask(left: Value, lanes: int) -> Value:
    """The valid lanes of a beat with ``left`` elements remaining: bit i = (left > i).

    Written on the bits (``left`` is at least ``lanes`` when any bit from log2(lanes) up is set)
    so that it is a few LUTs, not a carry chain per lane: it sits in the dispatch cycle's path.
    """
    bits = _lane_bits(lanes)
    many = left[bits:].any()
    return Cat(*(many | (left[:bits] > i) for i in range(lanes)))


def last_beat(left: Value, lanes: int) -> Value:
    """True on the last beat of a row: at most ``lanes`` elements remain (``left <= lanes``,
    written on the bits, as :func:`lane_mask`)."""
    bits = _lane_bits(lanes)
    return ~left[bits + 1:].any() & (~left[bits] | ~left[:bits].any())


def _lane_bits(lanes: int) -> int:
    if lanes < 1 or lanes & (lanes - 1):
        raise ValueError(f"lanes={lanes} must be a power of two")
    return (lanes - 1).bit_length()


def select(onehot: Sequence[Value], values: Sequence[Value]) -> Value:
    """OR of ``values[i]`` gated by the one-hot ``onehot[i]`` (an AND-OR multiplexer)."""
    out = None
    for sel, v in zip(onehot, values, strict=True):
        term = v.as_unsigned() & sel.replicate(len(v))
        out = term if out is None else out | term
    return out


def delay(m, value: Value, cycles: int, name: str) -> Signal:
    """``value`` delayed by ``cycles`` registers (a tag travelling beside its beat's data)."""
    for k in range(cycles):
        reg = Signal.like(value, name=f"{name}_{k}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


def carry_save(a: Value, b: Value, c: Value) -> tuple[Value, Value]:
    """A 3:2 compressor: (sum, carry) with a + b + c == sum + carry, one LUT level per bit."""
    return a ^ b ^ c, ((a & b) | (a & c) | (b & c)) << 1


def any_of(values: Iterable[Value]) -> Value:
    """The OR of the values, bit by bit (a 1-bit 0 when there are none): how the core merges
    the requests of units of which at most one is active (an idle unit drives 0)."""
    values = list(values)
    return reduce(operator.or_, values) if values else Const(0, 1)
