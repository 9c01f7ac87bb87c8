"""hw/dma.py: LD and ST at every length and alignment, back to back, latencies from the spec;
GATHER (issue 26): every row length and alignment, both formats, rows out of the table."""

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
               build("ST", src=2, dst=30, len=9, params=SMALL),
               build("GATHER", dst=60, src=7, idx=200, len=6, rows=2, params=SMALL),    # out: S[200] >= 2
               build("GATHER", dst=60, src=7, idx=201, len=6, rows=2, params=SMALL)]    # in: S[201] = 1
    spad = _random_words(rng, 256)
    spad[200:202] = [2, 1]
    check_idle_outputs(lambda: DMA(SMALL), program, spad=spad, params=SMALL)


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


def _run_watching(program, spad, ext, params: Params, watch, hold: frozenset[int] = frozenset()):
    """Run instructions back to back on a DMA (its ``hold`` high in the cycles ``hold``, counted
    from each instruction's dispatch, on an OVERLAP = 1 one). Returns the scratchpad, for each
    instruction the cycles (from its dispatch) in which ``watch(unit)`` was high, and its latency
    (to done)."""
    from amaranth.sim import Simulator

    from .harness import UnitBench, _get_memory, _set_memory, present

    bench = UnitBench(DMA(params), params)
    unit = bench.unit
    result: dict = {}

    async def testbench(ctx):
        _set_memory(ctx, bench.spad, spad)
        _set_memory(ctx, bench.ext, ext)
        seen, latencies = [], []
        for ins in program:
            present(ctx, unit, ins)
            ctx.set(unit.start, 1)
            cycle, mine = 0, []
            while True:
                if params.OVERLAP:
                    ctx.set(unit.hold, int(cycle in hold))
                if ctx.get(watch(unit)):
                    mine.append(cycle)
                if ctx.get(unit.done):
                    break
                await ctx.tick()
                ctx.set(unit.start, 0)
                cycle += 1
                assert cycle < 500
            if params.OVERLAP:
                ctx.set(unit.hold, 0)
            await ctx.tick()
            ctx.set(unit.start, 0)
            seen.append(mine)
            latencies.append(cycle + 1)
        await ctx.tick()
        result["spad"] = _get_memory(ctx, bench.spad)
        result["seen"], result["latencies"] = seen, latencies

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return result["spad"], result["seen"], result["latencies"]


def _run_held(program, hold: set[int], spad, ext) -> tuple[np.ndarray, list[list[int]], list[int]]:
    """On an OVERLAP = 1 DMA: the scratchpad, each instruction's scratchpad write cycles and its
    latency, with ``hold`` high in the cycles ``hold``."""
    return _run_watching(program, spad, ext, HELD, lambda unit: unit.wr.en, frozenset(hold))


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


# --------------------------------------------------------------------------- GATHER (issue 26)

GATHER_P = Params(SPAD_WORDS=512, EXT_WORDS=1024)


def _gather_program(rng: np.random.Generator, params: Params,
                    rows_out: bool = False) -> tuple[list, np.ndarray]:
    """GATHERs of every row length 1..13 in both formats at every destination alignment, from
    tables of 1 to 9 rows (one ending on the last external word); row numbers 0, rows - 1 and
    between, each in its own scratchpad word (held in the scratchpad image); with rows_out,
    every third names a row at or past the end of its table (rows, rows + 1, 2^16 + r: its
    low 16 bits in range, -1, 2^31)."""
    spad = _random_words(rng, params.SPAD_WORDS)
    program, dst, slot = [], 0, params.SPAD_WORDS - 1
    for k, n in enumerate(range(1, 14)):
        for fmt in (0, 1):
            rows = int(rng.integers(1, 10))
            words = -(-n // 4) if fmt else n
            src = params.EXT_WORDS - rows * words if k == 12 else int(rng.integers(0, 600))
            row = int(rng.choice([0, rows - 1, int(rng.integers(0, rows))]))
            if rows_out and (k + fmt) % 3 == 0:
                row = int(rng.choice([rows, rows + 1, (1 << 16) + rows - 1, (1 << 32) - 1, 1 << 31]))
            spad[slot] = row
            dst = (dst + params.LANES - 1) // params.LANES * params.LANES + (n + fmt) % params.LANES
            program.append(build("GATHER", dst=dst, src=src, idx=slot, len=n, rows=rows, fmt=fmt,
                                 params=params))
            dst += n + 1
            slot -= 1
    return program, spad


@pytest.mark.parametrize("lanes", [4, 8])
def test_gather_every_length_alignment_and_format(lanes: int):
    params = Params(SPAD_WORDS=512, EXT_WORDS=1024, LANES=lanes)
    rng = np.random.default_rng(70 + lanes)
    program, spad = _gather_program(rng, params)
    # back to back with LD and ST (a GATHER's row number read on rd0 right after an ST's reads)
    program[3:3] = [build("ST", src=0, dst=900, len=9, params=params),
                    build("LD", dst=300, src=900, len=9, params=params)]
    check_unit(lambda: DMA(params), program, spad=spad, ext=_random_words(rng, params.EXT_WORDS),
               params=params)


def test_gather_out_of_its_table_faults_and_writes_nothing():
    """A row number not below rows (unsigned: -1 and 2^31 are out; so is 2^16 + r, whose low 16
    bits are in range) raises fault once, GATHER_INDEX_CYCLES - 1 cycles after the dispatch,
    and the GATHER writes nothing but still ends after its latency; the GATHERs in range around
    it are right (check_unit: every word and latency against the reference, which skips the
    faulting ones)."""
    rng = np.random.default_rng(5)
    program, spad = _gather_program(rng, GATHER_P, rows_out=True)
    # an LD and an ST right after each of the first GATHERs (a faulting one must not drop the
    # next LD's first beat, nor hold back an ST)
    for k in (6, 4, 2, 0):
        program[k + 1:k + 1] = [build("LD", dst=400 + k, src=800, len=9, params=GATHER_P),
                                build("ST", src=400 + k, dst=900 + 9 * k, len=9, params=GATHER_P)]
    ext = _random_words(rng, GATHER_P.EXT_WORDS)
    check_unit(lambda: DMA(GATHER_P), program, spad=spad, ext=ext, params=GATHER_P)
    _, faults, latencies = _run_watching(program, spad, ext, GATHER_P, lambda unit: unit.fault)
    assert latencies == [spec.latency(ins.spec, ins.fields, GATHER_P) for ins in program]
    out = [ins.op == "GATHER" and int(spad[ins.idx]) >= ins.rows for ins in program]
    assert sum(out) >= 8
    assert faults == [[spec.GATHER_INDEX_CYCLES - 1] if o else [] for o in out]


def test_gather_by_hand():
    """Rows of 3 words at external 10 (row r at 10 + 3r): S[0] = 2 reads words 16..18; the packed
    table at 40 (rows of 5 int8 values, 2 words each): S[1] = 1 reads words 42, 43."""
    p = SMALL
    ext = np.zeros(256, dtype=np.int64)
    ext[10:19] = range(100, 109)
    ext[40:46] = [0, 0, 0x80FF7F01, 0x00000005, 0, 0]
    program = [build("GATHER", dst=8, src=10, idx=0, len=3, rows=3, params=p),
               build("GATHER", dst=16, src=40, idx=1, len=5, rows=3, fmt=1, params=p)]
    got, _, lat = run_unit(lambda: DMA(p), program, spad=[2, 1], ext=ext, params=p)
    assert got[8:11].tolist() == [106, 107, 108]
    assert got[16:21].tolist() == [1, 127, 0xFFFFFFFF, 0xFFFFFF80, 5]
    assert lat == [1 + spec.GATHER_OVERHEAD, 2 + spec.GATHER_OVERHEAD] == [9, 10]
