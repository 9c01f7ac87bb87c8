"""hw/exp_lut.py: the table equals sim.arith.EXP_LUT at every one of its 256 indices."""

from __future__ import annotations

from amaranth.sim import Simulator

from hw.exp_lut import INDEX_BITS, VALUE_BITS, ExpLUT
from sim import arith


def test_every_entry():
    lut = ExpLUT()
    got = []

    async def testbench(ctx):
        for d in range(arith.EXP_LUT_SIZE):
            ctx.set(lut.index, d)
            got.append(ctx.get(lut.value))

    sim = Simulator(lut)
    sim.add_testbench(testbench)
    sim.run()
    assert got == list(arith.EXP_LUT)


def test_widths():
    assert (INDEX_BITS, VALUE_BITS) == (8, 17)
    assert 1 << INDEX_BITS == arith.EXP_LUT_SIZE and max(arith.EXP_LUT) == 1 << 16
