"""hw/lanes.py: the beat helpers written on the bits, against their arithmetic meaning."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.lanes import first_maximum, lane_mask, last_beat


@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
def test_lane_mask_and_last_beat(lanes: int):
    m = Module()
    left, mask, last = Signal(16), Signal(lanes), Signal()
    m.d.comb += [mask.eq(lane_mask(left, lanes)), last.eq(last_beat(left, lanes))]
    values = [*range(300), 1 << 15, (1 << 16) - 1, (1 << 16) - lanes, 4096 + lanes]

    async def bench(ctx):
        for v in values:
            ctx.set(left, v)
            assert ctx.get(mask) == sum(1 << i for i in range(lanes) if v > i), v
            assert ctx.get(last) == (v <= lanes), v

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_lanes_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="lanes=3 must be a power of two"):
        lane_mask(Signal(8), 3)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_first_maximum_is_the_earliest_largest_valid_lane(n: int):
    """Against max() over the valid prefix (the earliest index of the largest value; lane 0's
    value when no lane is valid), on runs with many ties (values from a small range) and on
    the extremes, int8 signed."""
    m = Module()
    values = [Signal(signed(8), name=f"v{i}") for i in range(n)]
    valid = Signal(n)
    value, lane = first_maximum(values, valid, first_lane=4, lane_bits=4)
    out_value, out_lane = Signal(signed(8)), Signal(4)
    m.d.comb += [out_value.eq(value), out_lane.eq(lane)]
    rng = random.Random(n)
    cases = [([rng.choice([-128, -1, 0, 1, 127]) for _ in range(n)], rng.randint(0, n)) for _ in range(200)]
    cases += [([rng.randint(-128, 127) for _ in range(n)], rng.randint(0, n)) for _ in range(200)]

    async def bench(ctx):
        for row, count in cases:
            for signal, v in zip(values, row, strict=True):
                ctx.set(signal, v)
            ctx.set(valid, (1 << count) - 1)
            best = max(range(count), key=lambda i: (row[i], -i)) if count else 0
            assert (ctx.get(out_value), ctx.get(out_lane)) == (row[best], 4 + best), (row, count)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
