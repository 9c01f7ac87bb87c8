"""hw/overlap.py's OverlapExecute on its own, through its signature: what it refuses, and a stop
at the queue's head taken cycle by cycle as the module docstring works it out (settled two
cycles after the head arrives, every engine free; stop STOP_CYCLES = 1 later)."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from hw.overlap import OverlapExecute
from sim.spec import Params

OVERLAP = Params(OVERLAP=1)


def test_it_refuses_the_serial_machine_and_a_non_machine():
    with pytest.raises(ValueError, match=r"OverlapExecute: params\.OVERLAP = 0"):
        OverlapExecute(Params())
    with pytest.raises(TypeError, match="OverlapExecute: params=None"):
        OverlapExecute(None)


def test_a_stop_at_the_head_is_taken_when_settled_then_stops():
    ex = OverlapExecute(OVERLAP)
    assert [n for n in ex.signature.members if n.startswith("count_")] == [   # the machine's seven
        "count_cycles", "count_dma", "count_mxu", "count_vpu", "count_sfu", "count_hazard", "count_port"]
    trace = []

    async def bench(ctx):
        ctx.set(ex.start, 1)                      # cycle 0: start
        await ctx.tick()
        ctx.set(ex.start, 0)
        ctx.set(ex.busy, 1)
        ctx.set(ex.slots[0].stop, 1)              # cycle 1: a HALT (code 0) at pc 7 arrives
        ctx.set(ex.slots[0].pc, 7)
        ctx.set(ex.count, 1)
        for cycle in range(1, 7):
            consume, stop = ctx.get(ex.consume), ctx.get(ex.stop)
            trace.append((cycle, consume, ctx.get(ex.issue), stop))
            if stop:
                assert (ctx.get(ex.stop_code), ctx.get(ex.stop_pc)) == (0, 7)
                assert (ctx.get(ex.count_hazard), ctx.get(ex.count_port)) == (0, 0)
            await ctx.tick()                      # the queue and busy change at the clock edge
            if consume:
                ctx.set(ex.count, 0)
            if stop:
                ctx.set(ex.busy, 0)

    sim = Simulator(ex)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # consume in cycle 3 (settled1 at the end of 1, settled at the end of 2), stop in 4, no issue
    assert [(c, consume, stop) for c, consume, issue, stop in trace if consume or stop or issue] == [
        (3, 1, 0), (4, 0, 1)]
