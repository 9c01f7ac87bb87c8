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

from amaranth.hdl import Cat, Const, Mux, Signal, Value


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


def pairwise_above(values: Sequence[Value]) -> dict[tuple[int, int], Value]:
    """``{(i, j): values[i] > values[j]}`` for every pair j < i: the compares of
    :func:`first_maximum`, for a unit that registers them a cycle ahead."""
    return {(i, j): values[i] > values[j] for i in range(len(values)) for j in range(i)}


def first_maximum(values: Sequence[Value], valid: Value, first_lane: int = 0,
                  lane_bits: int | None = None, above: dict | None = None) -> tuple[Value, Value]:
    """(value, lane) of the first maximum of ``values`` (lanes first_lane, first_lane + 1, ...),
    the earlier lane winning a tie. ``valid`` is the lanes' mask, a prefix (lane i valid =>
    every earlier lane valid): an invalid lane never wins, and the result is lane first_lane's
    value when none is valid. The lane is a number of ``lane_bits`` bits (default: as many as
    the last lane needs). ``above``: the compares (:func:`pairwise_above` of the values),
    when the caller computed them earlier; else they are made here.

    One compare level, whatever the count: every pair of lanes is compared at once (n (n - 1) / 2
    comparators), lane i wins when it is above every earlier lane and not below any later
    valid one, and the winner's value and lane are picked by an AND-OR multiplexer. A tree of
    compares (log2 n levels, each a carry chain and a multiplexer) was the critical path of the
    T = 8 machine at 68 MHz (four lanes a half, docs/sweep.md)."""
    n = len(values)
    if lane_bits is None:
        lane_bits = max(1, (first_lane + n - 1).bit_length())
    lanes = [Const(first_lane + i, lane_bits) for i in range(n)]
    if n == 1:
        return values[0], lanes[0]
    if above is None:
        above = pairwise_above(values)
    if n == 2:    # the one pair: lane 1 wins when valid and above lane 0
        later = valid[1] & above[1, 0]
        return Mux(later, values[1], values[0]), Mux(later, lanes[1], lanes[0])
    wins = []
    for i in range(n):
        beats_earlier = [above[i, j] for j in range(i)]          # valid[i] => valid[j]: a prefix
        holds_later = [~valid[j] | ~above[j, i] for j in range(i + 1, n)]
        wins.append(Cat(valid[i] if i else Const(1, 1), *beats_earlier, *holds_later).all())
    value = select(wins, values)
    return (value.as_signed() if values[0].shape().signed else value), select(wins, lanes)


def delay(m, value: Value, cycles: int, name: str) -> Signal:
    """``value`` delayed by ``cycles`` registers (a tag travelling beside its beat's data)."""
    for k in range(cycles):
        reg = Signal.like(value, name=f"{name}_{k}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


def write_beats(m, unit, dst: Value, write: Value, mask: Value, last: Value, data: Sequence[Value]) -> None:
    """A unit's results onto its write port ``unit.wr``, one beat of LANES words in each cycle
    ``write`` is high, from the address ``dst`` (taken at the unit's ``start``) upwards; ``done``
    with the beat whose ``last`` is high; every output 0 in the other cycles (the top ORs them)."""
    lanes = len(data)
    addr = Signal(len(unit.wr.addr))
    with m.If(unit.start):
        m.d.sync += addr.eq(dst)
    with m.Elif(write):
        m.d.sync += addr.eq(addr + lanes)
    m.d.comb += [
        unit.wr.en.eq(write),
        unit.wr.addr.eq(Mux(write, addr, 0)),
        unit.wr.mask.eq(Mux(write, mask, 0)),
        unit.done.eq(write & last),
    ]
    m.d.comb += [unit.wr.data[k].eq(Mux(write, data[k], 0)) for k in range(lanes)]


def carry_save(a: Value, b: Value, c: Value) -> tuple[Value, Value]:
    """A 3:2 compressor: (sum, carry) with a + b + c == sum + carry, one LUT level per bit."""
    return a ^ b ^ c, ((a & b) | (a & c) | (b & c)) << 1


def carry_save_tree(operands: Sequence[Value]) -> tuple[Value, Value]:
    """Two values whose sum is the sum of the operands (at least two): 3:2 compressors in
    levels, three operands at a time (a Wallace tree), so that the depth grows with the log
    of the count: 3 levels for 5 operands, 6 for 17."""
    level = list(operands)
    while len(level) > 2:
        out = []
        for k in range(0, len(level) - 2, 3):
            out += carry_save(*level[k:k + 3])
        out += level[len(level) - len(level) % 3:] if len(level) % 3 else []
        level = out
    return level[0], level[1]


def any_of(values: Iterable[Value]) -> Value:
    """The OR of the values, bit by bit (a 1-bit 0 when there are none): how the core merges
    the requests of units of which at most one is active (an idle unit drives 0)."""
    values = list(values)
    return reduce(operator.or_, values) if values else Const(0, 1)
