"""hw/dma.py: LD and ST at every length and alignment, back to back, latencies from the spec."""

from __future__ import annotations

import numpy as np
import pytest

from hw.dma import DMA
from sim import spec
from sim.asm import build
from sim.spec import Params

from .harness import check_idle_outputs, check_unit, run_unit

LENGTHS = range(1, 41)
SMALL = Params(SPAD_WORDS=256, EXT_WORDS=256)


def _random_words(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.int64)


def _disjoint_program(op: str, src_align: int, params: Params) -> list:
    """Every length at every destination alignment, each to its own destination region,
    all read from one source region starting at ``src_align``."""
    program = []
    dst = 0
    for dst_align in range(params.LANES):
        for n in LENGTHS:
            dst = (dst + params.LANES - 1) // params.LANES * params.LANES + dst_align
            if op == "LD":
                program.append(build("LD", dst=dst, src=src_align, len=n, params=params))
            else:
                program.append(build("ST", src=src_align, dst=dst, len=n, params=params))
            dst += n + 1   # leave a word untouched between regions
    return program


@pytest.mark.parametrize("src_align", range(4))
@pytest.mark.parametrize("op", ["LD", "ST"])
def test_every_length_and_alignment(op: str, src_align: int):
    # the destination memory holds 4 x (1 + ... + 40) words plus gaps; the source is small
    big, small = 4096, 64
    params = (Params(SPAD_WORDS=big, EXT_WORDS=small) if op == "LD"
              else Params(SPAD_WORDS=small, EXT_WORDS=big))
    rng = np.random.default_rng(src_align)
    check_unit(lambda: DMA(params), _disjoint_program(op, src_align, params),
               spad=_random_words(rng, params.SPAD_WORDS), ext=_random_words(rng, params.EXT_WORDS),
               params=params)


def test_back_to_back_mixed():
    """LD and ST interleaved, each reading what the previous one wrote where they chain."""
    rng = np.random.default_rng(7)
    program = []
    for _ in range(60):
        n = int(rng.integers(1, 41))
        a = int(rng.integers(0, SMALL.SPAD_WORDS - n + 1))
        b = int(rng.integers(0, SMALL.EXT_WORDS - n + 1))
        if rng.integers(2):
            program.append(build("LD", dst=a, src=b, len=n, params=SMALL))
        else:
            program.append(build("ST", src=a, dst=b, len=n, params=SMALL))
    # a chain: LD then ST of the same words, then LD of the stored copy
    program += [build("LD", dst=10, src=200, len=13, params=SMALL),
                build("ST", src=10, dst=3, len=13, params=SMALL),
                build("LD", dst=101, src=3, len=13, params=SMALL)]
    check_unit(lambda: DMA(SMALL), program, spad=_random_words(rng, 256), ext=_random_words(rng, 256),
               params=SMALL)


def test_whole_memory_edges():
    """Transfers that end exactly at the last word of either memory."""
    p = SMALL
    program = [build("LD", dst=p.SPAD_WORDS - 7, src=p.EXT_WORDS - 7, len=7, params=p),
               build("ST", src=0, dst=p.EXT_WORDS - 5, len=5, params=p),
               build("LD", dst=0, src=0, len=p.SPAD_WORDS, params=p)]
    rng = np.random.default_rng(3)
    check_unit(lambda: DMA(p), program, spad=_random_words(rng, 256), ext=_random_words(rng, 256), params=p)


def test_latency_formula():
    p = SMALL
    program = [build(op, **{k: 0 for k in ("dst", "src")}, len=n, params=p)
               for op in ("LD", "ST") for n in (1, 4, 5, 8, 9)]
    _, _, got = run_unit(lambda: DMA(p), program, params=p)
    want = [-(-ins.len // p.LANES) + (spec.LD_OVERHEAD if ins.op == "LD" else spec.ST_OVERHEAD)
            for ins in program]
    assert got == want
    assert (spec.LD_OVERHEAD, spec.ST_OVERHEAD) == (2, 4)   # ext read 1 / scratchpad read 3, data register


def test_idle_outputs_are_zero():
    rng = np.random.default_rng(9)
    program = [build("LD", dst=5, src=7, len=13, params=SMALL),
               build("ST", src=2, dst=30, len=9, params=SMALL)]
    check_idle_outputs(lambda: DMA(SMALL), program, spad=_random_words(rng, 256), params=SMALL)


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params=4"):
        DMA(4)


@pytest.mark.parametrize("lanes", [4, 8])
def test_ld_packed_int8_every_length_and_alignment(lanes: int):
    """LD fmt = 1 (four int8 per external word, sign-extended): lengths 1..19 (every remainder
    mod 4 and mod LANES) at every source and destination alignment, back to back with fmt = 0."""
    params = Params(SPAD_WORDS=2048, EXT_WORDS=256, LANES=lanes)
    rng = np.random.default_rng(50 + lanes)
    program, dst = [], 0
    for n in range(1, 20):
        for align in range(2):
            dst = (dst + lanes - 1) // lanes * lanes + (n + align) % lanes
            src = int(rng.integers(0, 200))
            program.append(build("LD", dst=dst, src=src, len=n, fmt=1 - (n % 5 == 0) * align, params=params))
            dst += n + 1
    check_unit(lambda: DMA(params), program, spad=_random_words(rng, params.SPAD_WORDS),
               ext=_random_words(rng, params.EXT_WORDS), params=params)
    one = build("LD", dst=0, src=0, len=4, fmt=1, params=params)
    got, _, _ = run_unit(lambda: DMA(params), [one], ext=[0x80FF7F01], params=params)
    assert [int(w) for w in got[:4]] == [1, 127, 0xFFFFFFFF, 0xFFFFFF80]   # 1, 127, -1, -128


HELD = Params(SPAD_WORDS=256, EXT_WORDS=256, OVERLAP=1)


def _run_held(program, hold: set[int], spad, ext) -> tuple[np.ndarray, list[list[int]], list[int]]:
    """Run instructions back to back on an OVERLAP = 1 DMA whose ``hold`` is high in the cycles
    ``hold`` (counted from each instruction's dispatch). Returns the scratchpad, each
    instruction's scratchpad write cycles (from its dispatch) and its latency (to done)."""
    from amaranth.sim import Simulator

    from .harness import UnitBench, _get_memory, _set_memory, present

    bench = UnitBench(DMA(HELD), HELD)
    unit = bench.unit
    result: dict = {}

    async def testbench(ctx):
        _set_memory(ctx, bench.spad, spad)
        _set_memory(ctx, bench.ext, ext)
        writes, latencies = [], []
        for ins in program:
            present(ctx, unit, ins)
            ctx.set(unit.start, 1)
            cycle, mine = 0, []
            while True:
                ctx.set(unit.hold, int(cycle in hold))
                if ctx.get(unit.wr.en):
                    mine.append(cycle)
                if ctx.get(unit.done):
                    break
                await ctx.tick()
                ctx.set(unit.start, 0)
                cycle += 1
                assert cycle < 500
            ctx.set(unit.hold, 0)
            await ctx.tick()
            ctx.set(unit.start, 0)
            writes.append(mine)
            latencies.append(cycle + 1)
        await ctx.tick()
        result["spad"] = _get_memory(ctx, bench.spad)
        result["writes"], result["latencies"] = writes, latencies

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return result["spad"], result["writes"], result["latencies"]


def test_a_held_ld_beat_waits_and_the_rest_follow():
    """OVERLAP = 1: hold in cycle c keeps the LD from reading the beat it would write in
    c + LD_OVERHEAD; that beat and the later ones wait one cycle per cycle held (worked by
    hand: 5 beats, hold in cycles 0, 2, 3 and 9 after the dispatch: reads in 1, 4, 5, 6, 7,
    writes 2 later: 3, 6, 7, 8, 9; 10 cycles instead of 7). An ST ignores hold; so does an LD
    once its beats are all read (cycle 9)."""
    rng = np.random.default_rng(11)
    spad, ext = _random_words(rng, 256), _random_words(rng, 256)
    program = [build("LD", dst=3, src=40, len=19, params=HELD),      # 5 beats
               build("ST", src=100, dst=7, len=9, params=HELD),      # 3 beats
               build("LD", dst=120, src=7, len=9, params=HELD)]      # reads what the ST wrote
    got, writes, latencies = _run_held(program, {0, 2, 3, 9}, spad, ext)
    assert writes[0] == [3, 6, 7, 8, 9] and latencies[0] == 10
    assert latencies[1] == 3 + spec.ST_OVERHEAD and writes[1] == []
    assert writes[2] == [3, 6, 7] and latencies[2] == 8
    want = spad.astype(np.uint32).copy()
    ext2 = ext.astype(np.uint32).copy()
    want[3:22] = ext2[40:59]
    ext2[7:16] = want[100:109]
    want[120:129] = ext2[7:16]
    assert np.array_equal(got, want)
