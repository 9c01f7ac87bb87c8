"""The scratchpad port windows of sim/spec.py (``reads``, ``writes``; GA2.md section 7) against
the units: run one instruction at a time on the core and record, cycle by cycle, the requests
that reach the scratchpad's ports. Every read request must lie in the first ``reads`` cycles
from the dispatch, every write request in the last ``writes`` cycles of the latency: the issue
rule of OVERLAP = 1 lets another engine use a port outside those windows.
"""

from __future__ import annotations

import random
from dataclasses import replace
from functools import partial

import pytest
from amaranth.sim import Simulator

from hw.simtop import SimTop
from sim import spec
from sim.asm import build
from sim.bench import random_instruction
from sim.spec import DEFAULT, Params

from .corebench import load_imem

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

SMALL = Params(SPAD_WORDS=1024, EXT_WORDS=1024)
KINDS = [s.name for s in spec.INSTRUCTIONS if s.counter is not None]


def windows_seen(params: Params, program: list) -> list[tuple[int, set[int], set[int]]]:
    """For each instruction (alone, then HALT): (its dispatch cycle, the cycles with a read
    request, the cycles with a write request), cycles counted from the start."""
    dut = SimTop(params)
    core = dut.core
    seen = []

    async def testbench(ctx):
        for ins in program:
            words = ins.encode() + build("HALT").encode()
            load_imem(ctx, core.control.imem, words)
            ctx.set(dut.prog_len, 2)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            dispatch, rd, wr = None, set(), set()
            for cycle in range(1, 2000):
                if any(ctx.get(u.start) for u in core.units.values()):
                    dispatch = cycle
                if ctx.get(core.spad.rd[0].en) or ctx.get(core.spad.rd[1].en):
                    rd.add(cycle)
                if ctx.get(core.spad.wr.en):
                    wr.add(cycle)
                if ctx.get(dut.done):
                    break
                await ctx.tick()
            seen.append((dispatch, rd, wr))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return seen


WIDE = Params(T=8, LANES=8, SPAD_WORDS=1024, EXT_WORDS=1024)


@pytest.mark.parametrize("params", [SMALL, pytest.param(WIDE, marks=pytest.mark.slow)], ids=["t4", "t8"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_units_use_the_ports_inside_their_windows(kind, params):
    if not spec.built(spec.BY_NAME[kind], params):      # MMRQ: the machine with it (OVERLAP = 2)
        params = replace(params, OVERLAP=2)
    rng = random.Random(kind)
    program = [random_instruction(kind, rng, params) for _ in range(6)]
    if kind == "MM":   # both tb and acc, small and large K
        program += [random_instruction(kind, rng, params) for _ in range(10)]
    for ins, (d, rd, wr) in zip(program, windows_seen(params, program), strict=True):
        length = spec.latency(ins.spec, ins.fields, params)
        n_reads = spec.reads(ins.spec, ins.fields, params)
        n_writes = spec.writes(ins.spec, ins.fields, params)
        assert d is not None, ins
        assert all(d <= c < d + n_reads for c in rd), (str(ins), d, sorted(rd), n_reads)
        assert all(d + length - n_writes <= c < d + length for c in wr), (
            str(ins), d, sorted(wr), length, n_writes)
        # and the windows are not much wider than needed (a wider one only costs cycles): MM's
        # read window is a bound on its A, B and acc reads, at most LANES cycles long
        if n_reads:
            assert max(rd) >= d + n_reads - 1 - params.LANES, (str(ins), d, sorted(rd))
        if n_writes:
            assert min(wr) == d + length - n_writes, (str(ins), d, sorted(wr), length, n_writes)
