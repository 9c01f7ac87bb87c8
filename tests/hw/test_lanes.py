"""hw/lanes.py: the beat helpers written on the bits, against their arithmetic meaning."""

from __future__ import annotations

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.lanes import lane_mask, last_beat


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
