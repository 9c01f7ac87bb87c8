"""hw/axi_write.py: an ST's beats at any alignment become AXI bursts that write exactly its words.

The bench plays the core (one DMA beat per cycle it is not stalled, as hw/axi_top.py registers
``stall_next``) and a slave that takes AW and W at random (a seeded pattern) and answers B; the
W beats, placed by their bursts' addresses and strobes in a byte model of the memory, must write
exactly the ST's words and nothing else, each burst within a 4 KiB page, WLAST on its last beat.
"""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.axi_write import AxiWriter
from sim.spec import DEFAULT, Params

BASE = 0x0001_2340


def run_st(params: Params, dst: int, length: int, seed: int) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Memory bytes written (address -> byte) and the AW bursts (address, beats)."""
    lanes = params.LANES
    dut = AxiWriter(params)
    rng = random.Random(seed)
    words = {dst + i: rng.getrandbits(32) for i in range(length)}
    memory: dict[int, int] = {}
    bursts: list[tuple[int, int]] = []

    async def core(ctx):
        ctx.set(dut.base, BASE)
        ctx.set(dut.dst, dst)
        ctx.set(dut.length, length)
        ctx.set(dut.start, 1)
        ctx.set(dut.en, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        beats = -(-length // lanes)
        stall = 0
        b = 0
        while b < beats:
            ctx.set(dut.en, 1 - stall)
            left = length - lanes * b
            ctx.set(dut.wr_en, 1)
            ctx.set(dut.wr_mask, (1 << min(left, lanes)) - 1)
            ctx.set(dut.wr_data, [words.get(dst + lanes * b + i, 0) for i in range(lanes)])
            stall_next = ctx.get(dut.stall_next)
            await ctx.tick()
            if not stall:
                b += 1
            stall = stall_next
        ctx.set(dut.wr_en, 0)
        ctx.set(dut.en, 1)
        for _ in range(2000):
            if ctx.get(dut.idle):
                return
            await ctx.tick()
        raise AssertionError("the writer never became idle")

    async def slave(ctx):
        pending: list[list[int]] = []       # [address, beats left]
        beat_in_burst = 0
        while True:
            ctx.set(dut.m_axi_awready, rng.random() < 0.6)
            ctx.set(dut.m_axi_wready, bool(pending) and rng.random() < 0.6)
            _, _, awv, awr, awaddr, awlen, wv, wr, wdata, wstrb, wlast = await ctx.tick().sample(
                dut.m_axi_awvalid, dut.m_axi_awready, dut.m_axi_awaddr, dut.m_axi_awlen, dut.m_axi_wvalid,
                dut.m_axi_wready, dut.m_axi_wdata, dut.m_axi_wstrb, dut.m_axi_wlast)
            ctx.set(dut.m_axi_bvalid, 0)
            if wv and wr:
                addr, left = pending[0]
                assert wlast == (left == 1), "WLAST must mark the burst's last beat"
                for byte in range(4 * lanes):
                    if wstrb >> byte & 1:
                        memory[addr + byte] = wdata >> (8 * byte) & 0xFF
                pending[0] = [addr + 4 * lanes, left - 1]
                beat_in_burst += 1
                if left == 1:
                    pending.pop(0)
                    ctx.set(dut.m_axi_bvalid, 1)
            if awv and awr:
                beats = awlen + 1
                assert awaddr % 4096 + 4 * lanes * beats <= 4096, "a burst crosses a 4 KiB boundary"
                bursts.append((awaddr, beats))
                pending.append([awaddr, beats])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(core)
    sim.add_process(slave)
    sim.run()
    want = {BASE + 4 * w + k: v >> (8 * k) & 0xFF for w, v in words.items() for k in range(4)}
    assert memory == want
    return memory, bursts


@pytest.mark.parametrize(("dst", "length"), [(0, 1), (0, 4), (1, 4), (3, 2), (2, 9), (1, 30), (5, 64)])
def test_st_at_every_alignment(dst, length):
    run_st(DEFAULT, dst, length, seed=dst * 100 + length)


def test_st_across_a_4k_boundary_splits_the_burst():
    # words 3,850..3,949 are bytes 0x12340 + 15,400 = 0x15F68 .. 0x160F7: they cross 0x16000
    _, bursts = run_st(DEFAULT, 3850, 100, seed=7)
    assert len(bursts) == 2 and bursts[0][0] + 16 * bursts[0][1] == 0x1_6000


def test_st_on_eight_lanes():
    run_st(Params(T=8, LANES=8), 3, 21, seed=3)
