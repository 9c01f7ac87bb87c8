"""hw/axi_read.py: an LD's words, requested in bursts, reach the DMA's beats at any alignment.

The bench plays the core (one read a cycle while not stalled, the data taken in its next cycle,
as the DMA does under hw/axi_top.py's clock enable) and a slave that takes AR and returns R beats
at random (a seeded pattern) from a memory model. Every beat must carry the LD's words in its
first lanes (LANES of them, or LANES / 4 packed words with fmt = 1), no late data
(``late``), no burst across a 4 KiB page, no more bursts outstanding than BURSTS_OUT.
"""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.axi_read import BURSTS_OUT, AxiReader
from sim.spec import DEFAULT, Params

BASE = 0x0001_2340


def run_ld(params: Params, src: int, length: int, fmt: int, seed: int, pause: float = 0.4) -> list[tuple]:
    lanes = params.LANES
    dut = AxiReader(params)
    rng = random.Random(seed)
    n_words = -(-length // 4) if fmt else length
    step = lanes // 4 if fmt else lanes
    memory = {BASE + 4 * w: rng.getrandbits(32) for w in range(src - lanes, src + n_words + 2 * lanes)}
    bursts: list[tuple[int, int]] = []
    got: list[list[int]] = []

    async def core(ctx):
        ctx.set(dut.base, BASE)
        ctx.set(dut.src, src)
        ctx.set(dut.length, length)
        ctx.set(dut.fmt, fmt)
        ctx.set(dut.start, 1)
        ctx.set(dut.en, 1)
        ctx.set(dut.rd_en, 1)               # the first read is in the dispatch cycle
        beats = -(-length // lanes)
        issued, due, stall = 0, False, 0
        first = True
        while issued < beats or due:
            ctx.set(dut.en, 1 - stall)
            ctx.set(dut.rd_en, issued < beats)
            if first:
                ctx.set(dut.start, 1)
            if not stall and due:
                got.append([ctx.get(dut.rd_data[i]) for i in range(lanes)])
            assert not ctx.get(dut.late)
            stall_next = ctx.get(dut.stall_next)
            await ctx.tick()
            ctx.set(dut.start, 0)
            first = False
            if not stall:
                due = issued < beats
                issued += issued < beats
            stall = stall_next

    async def slave(ctx):
        queue: list[list[int]] = []
        outstanding = 0
        while True:
            ctx.set(dut.m_axi_arready, rng.random() > pause)
            show = bool(queue) and rng.random() > pause
            if show:
                addr, left = queue[0]
                ctx.set(dut.m_axi_rdata, sum(memory.get(addr + 4 * i, 0) << (32 * i) for i in range(lanes)))
                ctx.set(dut.m_axi_rlast, left == 1)
            ctx.set(dut.m_axi_rvalid, show)
            _, _, arv, arr, araddr, arlen, rr = await ctx.tick().sample(
                dut.m_axi_arvalid, dut.m_axi_arready, dut.m_axi_araddr, dut.m_axi_arlen, dut.m_axi_rready)
            if show and rr:
                queue[0] = [queue[0][0] + 4 * lanes, queue[0][1] - 1]
                if queue[0][1] == 0:
                    queue.pop(0)
                    outstanding -= 1
            if arv and arr:
                assert araddr % 4096 + 4 * lanes * (arlen + 1) <= 4096
                outstanding += 1
                assert outstanding <= BURSTS_OUT
                bursts.append((araddr, arlen + 1))
                queue.append([araddr, arlen + 1])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(core)
    sim.add_process(slave)
    sim.run()
    assert len(got) == -(-length // lanes)
    for b, beat in enumerate(got):
        first = src + step * b
        take = min(step, src + n_words - first)
        assert beat[:take] == [memory[BASE + 4 * (first + i)] for i in range(take)], f"beat {b}"
    return bursts


@pytest.mark.parametrize(("src", "length", "fmt"), [(0, 1, 0), (0, 8, 0), (1, 4, 0), (3, 13, 0), (6, 40, 0),
                                                     (0, 5, 1), (2, 13, 1), (3, 64, 1)])
def test_ld_at_every_alignment(src, length, fmt):
    run_ld(DEFAULT, src, length, fmt, seed=src * 1000 + length + fmt)


def test_ld_without_pauses_and_long():
    bursts = run_ld(DEFAULT, 3850, 600, 0, seed=5, pause=0.0)
    assert sum(beats for _, beats in bursts) == (3850 + 600 - 1) // 4 - 3850 // 4 + 1


def test_ld_on_sixteen_lanes_packed():
    run_ld(Params(T=16, LANES=16), 5, 70, 1, seed=9)
