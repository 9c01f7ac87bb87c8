"""hw/axi_fifo.py: pushes of one or two entries a cycle and a pop, in order, against a list."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.axi_fifo import PairFifo


def test_order_and_levels_against_a_list():
    dut = PairFifo(16, 4)
    rng = random.Random(4)
    model: list[int] = []

    async def bench(ctx):
        value = 1
        for _ in range(400):
            room = 4 - len(model)
            pushes = rng.choice([n for n in (0, 1, 2) if n <= room])
            ctx.set(dut.push0, pushes >= 1)
            ctx.set(dut.data0, value)
            ctx.set(dut.push1, pushes == 2)
            ctx.set(dut.data1, value + 1)
            pop = rng.random() < 0.5
            ctx.set(dut.ready, pop)
            assert ctx.get(dut.level) == len(model)
            assert ctx.get(dut.valid) == bool(model)
            if model:
                assert ctx.get(dut.data) == model[0]
            popped = pop and bool(model)
            assert ctx.get(dut.level_next) == len(model) + pushes - popped
            await ctx.tick()
            if popped:
                model.pop(0)
            model.extend(range(value, value + pushes))
            value += pushes

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_refuses_a_depth_not_a_power_of_two():
    with pytest.raises(ValueError, match="PairFifo: depth=3 must be a power of two, at least 2"):
        PairFifo(8, 3)
