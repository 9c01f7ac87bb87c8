"""hw/mxu.py (and hw/systolic.py): MM tiles against the reference machine, latencies from the spec.

Every scratchpad word holds 32 random bits: MM must read only the low byte, as a signed int8.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.mxu import MatrixUnit
from hw.systolic import SystolicArray, accumulator_bits
from sim import spec
from sim.asm import Instruction, build
from sim.spec import DEFAULT, Params

from .harness import UnitBench, check_idle_outputs, check_unit, present, run_unit

P = Params(SPAD_WORDS=1024)
OPERANDS = 512
"""Operands live below this address, results above it (MM's dst may not overlap A or B)."""


def _random_words(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.int64)


def _with_low_bytes(rng: np.random.Generator, n: int, values) -> np.ndarray:
    """Words whose low byte is drawn from ``values`` and whose upper 24 bits are random."""
    return (_random_words(rng, n) & ~0xFF) | (rng.choice(values, n) & 0xFF)


class _Tiles:
    """Builds MMs with operands below OPERANDS and each result in its own region above it."""

    def __init__(self, params: Params = P):
        self.params = params
        self.dst = OPERANDS
        self.program: list[Instruction] = []

    def add(self, rng: np.random.Generator, *, M: int, N: int, K: int, tb: int,
            lda: int | None = None, ldb: int | None = None, ldc: int | None = None,
            dst_align: int | None = None) -> None:
        lanes = self.params.LANES
        if lda is None:   # random, as long as the operands fit below OPERANDS
            lda = int(rng.integers(0, min(2 * K + 3, (OPERANDS - K) // max(M - 1, 1) + 1)))
        if ldb is None:
            rows, row = (N, K) if tb else (K, N)
            ldb = int(rng.integers(0, min(2 * row + 3, (OPERANDS - row) // max(rows - 1, 1) + 1)))
        ldc = int(rng.integers(N, N + 5)) if ldc is None else ldc
        a_extent = (M - 1) * lda + K
        b_extent = (N - 1) * ldb + K if tb else (K - 1) * ldb + N
        A = int(rng.integers(0, OPERANDS - a_extent + 1))
        B = int(rng.integers(0, OPERANDS - b_extent + 1))
        align = int(rng.integers(lanes)) if dst_align is None else dst_align
        dst = (self.dst + lanes - 1) // lanes * lanes + align
        self.program.append(build("MM", dst=dst, A=A, B=B, M=M, K=K, N=N, tb=tb, lda=lda, ldb=ldb, ldc=ldc,
                                  params=self.params))
        self.dst = dst + (M - 1) * ldc + N + 1
        assert self.dst <= self.params.SPAD_WORDS, "too many tiles for the scratchpad"


@pytest.mark.parametrize("tb", [0, 1])
def test_every_shape(tb: int):
    """M and N from 1 to T, K = 1, a middle K and K_MAX (and K = 4c + r for every r), random
    strides (odd ones included), operand and result alignments, back to back."""
    params = Params(SPAD_WORDS=2048)
    rng = np.random.default_rng(tb)
    tiles = _Tiles(params)
    for M in range(1, params.T + 1):
        for N in range(1, params.T + 1):
            for K in (1, int(rng.integers(2, 16)),
                      params.K_MAX if (M + N) % 3 == 0 else int(rng.integers(16, 40))):
                tiles.add(rng, M=M, N=N, K=K, tb=tb)
    check_unit(lambda: MatrixUnit(params), tiles.program, spad=_random_words(rng, params.SPAD_WORDS),
               params=params)


@pytest.mark.parametrize("tb", [0, 1])
def test_extreme_operands_at_k_max(tb: int):
    """-128 and 127 everywhere: the largest sums (+-2**20 and -128*127*64) and their signs survive
    the accumulator (accumulator_bits) and the sign extension to 32 bits."""
    rng = np.random.default_rng(10 + tb)
    spad = np.zeros(P.SPAD_WORDS, dtype=np.int64)
    # [0, 64): -128, [64, 128): 127, [128, 256): a mix of both, upper bits random throughout
    spad[:64] = _with_low_bytes(rng, 64, [-128])
    spad[64:128] = _with_low_bytes(rng, 64, [127])
    spad[128:OPERANDS] = _with_low_bytes(rng, OPERANDS - 128, [-128, 127])
    k = P.K_MAX
    program = [
        # stride 0: every row (and every column of B) the same 64 operands
        build("MM", dst=600, A=0, B=0, M=4, K=k, N=4, tb=tb, lda=0, ldb=0, ldc=4, params=P),
        build("MM", dst=620, A=0, B=64, M=4, K=k, N=4, tb=tb, lda=0, ldb=0, ldc=5, params=P),
        build("MM", dst=640, A=64, B=64, M=4, K=k, N=4, tb=tb, lda=0, ldb=0, ldc=4, params=P),
        build("MM", dst=660, A=128, B=200, M=4, K=k, N=4, tb=tb, lda=1, ldb=1, ldc=4, params=P),
    ]
    got, _, _ = run_unit(lambda: MatrixUnit(P), program, spad=spad, params=P)
    assert accumulator_bits(P.K_MAX) == 22
    assert got[600] == 1 << 20 and got[620] == (-128 * 127 * 64) & 0xFFFFFFFF and got[640] == 127 * 127 * 64
    check_unit(lambda: MatrixUnit(P), program, spad=spad, params=P)


@pytest.mark.parametrize("tb", [0, 1])
def test_strides_that_overlap_and_alignments(tb: int):
    """lda = 0 and ldb = 0 (rows shared), ldc < N (output rows overlap: the later row wins) and
    ldc = 0, large odd strides; A, B and dst at every alignment mod 4."""
    rng = np.random.default_rng(20 + tb)
    tiles = _Tiles()
    shapes = [(4, 4, 9, 0, 0, 4), (4, 3, 5, 1, 1, 1), (3, 4, 7, 3, 5, 2), (4, 4, 6, 2, 2, 0),
              (2, 4, 13, 31, 29, 7), (4, 2, 3, 1, 63, 3), (1, 1, 64, 0, 0, 0)]
    for M, N, K, lda, ldb, ldc in shapes:
        tiles.add(rng, M=M, N=N, K=K, tb=tb, lda=lda, ldb=ldb, ldc=ldc)
    lanes = P.LANES
    for a_align in range(lanes):
        for b_align in range(lanes):
            tiles.add(rng, M=4, N=4, K=int(rng.integers(1, 12)), tb=tb, lda=11, ldb=7, ldc=5,
                      dst_align=(a_align + b_align) % lanes)
            last = tiles.program[-1]
            fields = dict(last.fields)
            fields["A"] = fields["A"] // lanes * lanes + a_align
            fields["B"] = fields["B"] // lanes * lanes + b_align
            tiles.program[-1] = build("MM", params=P, **fields)
    check_unit(lambda: MatrixUnit(P), tiles.program, spad=_random_words(rng, P.SPAD_WORDS), params=P)


def test_back_to_back_reading_the_previous_result():
    """Each MM reads (the low bytes of) the previous one's output, written up to the cycle before
    its dispatch; tb alternates."""
    rng = np.random.default_rng(30)
    program = [build("MM", dst=300, A=0, B=100, M=4, K=4, N=4, tb=0, lda=4, ldb=4, ldc=4, params=P)]
    dst = 300
    for step in range(8):
        tb = step % 2
        src, dst = dst, 300 + 40 * (step + 1)
        # A = the previous 4 x 4 result; B = the same result (as B, or as B^T)
        program.append(build("MM", dst=dst, A=src, B=src, M=4, K=4, N=4, tb=tb, lda=4, ldb=4, ldc=4,
                             params=P))
        program.append(build("MM", dst=dst + 20, A=src + 1, B=200 + step, M=3, K=3, N=2, tb=tb, lda=4, ldb=3,
                             ldc=2, params=P))
    spad = _with_low_bytes(rng, P.SPAD_WORDS, np.arange(-8, 8))
    check_unit(lambda: MatrixUnit(P), program, spad=spad, params=P)


def test_regions_at_the_end_of_the_scratchpad():
    """Operands and results that end at the last word: chunk reads run past the end (and wrap)
    in lanes that are not used."""
    p = Params(SPAD_WORDS=256)
    rng = np.random.default_rng(50)
    program = [
        build("MM", dst=0, A=256 - 3 * 9 - 7, B=100, M=4, K=7, N=3, tb=0, lda=9, ldb=5, ldc=3, params=p),
        build("MM", dst=150, A=20, B=256 - 3 * 10 - 6, M=3, K=6, N=4, tb=1, lda=7, ldb=10, ldc=6, params=p),
        build("MM", dst=256 - 2 * 6 - 4, A=20, B=100, M=3, K=6, N=4, tb=1, lda=7, ldb=10, ldc=6, params=p),
        build("MM", dst=50, A=255, B=254, M=1, K=1, N=2, tb=0, lda=0, ldb=0, ldc=0, params=p),
    ]
    check_unit(lambda: MatrixUnit(p), program, spad=_random_words(rng, p.SPAD_WORDS), params=p)


@pytest.mark.parametrize("t", [1, 2, 3])
def test_smaller_arrays(t: int):
    params = Params(T=t, SPAD_WORDS=1024)
    rng = np.random.default_rng(40 + t)
    tiles = _Tiles(params)
    for tb in (0, 1):
        for M in range(1, t + 1):
            for N in range(1, t + 1):
                tiles.add(rng, M=M, N=N, K=int(rng.integers(1, 20)), tb=tb)
    check_unit(lambda: MatrixUnit(params), tiles.program, spad=_random_words(rng, params.SPAD_WORDS),
               params=params)


def test_latency_formula():
    shapes = [(1, 1, 1), (4, 4, 1), (2, 3, 5), (4, 1, 64), (1, 4, 64), (3, 3, 8)]
    program = [build("MM", dst=500, A=0, B=100, M=M, K=K, N=N, tb=tb, lda=K, ldb=K if tb else N, ldc=N,
                     params=P)
               for tb in (0, 1) for M, N, K in shapes]
    _, _, got = run_unit(lambda: MatrixUnit(P), program, params=P)
    assert spec.MM_OVERHEAD == MatrixUnit.OVERHEAD == 5
    assert got == [ins.K + ins.M + ins.tb * (ins.N - 1) + spec.MM_OVERHEAD for ins in program]


def test_idle_outputs_are_zero():
    """The top ORs the units' requests: the unit drives 0 on every output whenever it is not
    executing an instruction, from the cycle after its ``done`` on. (While it executes, an
    address without its enable is don't-care.)"""
    program = [build("MM", dst=600, A=3, B=101, M=3, K=9, N=2, tb=tb, lda=10, ldb=9, ldc=3, params=P)
               for tb in (0, 1)]
    bench = UnitBench(MatrixUnit(P), P)
    unit = bench.unit
    seen = {"reads": 0, "writes": 0}

    async def testbench(ctx):
        def check_idle():
            outputs = [unit.rd0.en, unit.rd0.addr, unit.rd1.en, unit.rd1.addr, unit.wr.en, unit.wr.addr,
                       unit.wr.mask, unit.wr.data.as_value(), unit.done]
            assert [ctx.get(v) for v in outputs] == [0] * len(outputs)

        for _ in range(3):
            check_idle()
            await ctx.tick()
        for ins in program:
            present(ctx, unit, ins)
            ctx.set(unit.start, 1)
            for _ in range(spec.latency(ins.spec, ins.fields, P)):
                seen["reads"] += ctx.get(unit.rd0.en) + ctx.get(unit.rd1.en)
                seen["writes"] += ctx.get(unit.wr.en)
                await ctx.tick()
                ctx.set(unit.start, 0)
            for _ in range(6):   # idle after each instruction (fields still held)
                check_idle()
                await ctx.tick()

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    # tb = 0: 3 chunks x 3 rows of A + 9 rows of B; tb = 1: 3 x 3 of A + 3 x 2 of B^T; 3 row writes each
    assert seen == {"reads": 18 + 15, "writes": 6}


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params=4"):
        MatrixUnit(4)
    with pytest.raises(ValueError, match="k_max=0"):
        SystolicArray(4, 0, DEFAULT.LANES)


@pytest.mark.parametrize("tb", [0, 1])
def test_accumulate_every_shape(tb: int):
    """acc = 1 (dst += A @ B, int32 modulo 2^32) onto random 32-bit words: M, N from 1 to T, K = 1,
    a middle K and K_MAX, alternating with acc = 0 tiles, back to back; then a chain of four
    accumulations into the same tile, each reading what the one before it wrote (split K)."""
    params = Params(SPAD_WORDS=2048)
    rng = np.random.default_rng(40 + tb)
    tiles = _Tiles(params)
    for M in range(1, params.T + 1):
        for N in range(1, params.T + 1):
            for K in (1, int(rng.integers(2, 16)), params.K_MAX):
                tiles.add(rng, M=M, N=N, K=K, tb=tb)
                fields = dict(tiles.program[-1].fields)
                fields["acc"] = int((M + N + K) % 3 != 0)
                tiles.program[-1] = build("MM", params=params, **fields)
    first = dict(tiles.program[-1].fields)
    for k in range(4):
        tiles.program.append(build("MM", params=params, **(first | {"A": first["A"] + k, "acc": 1})))
    check_unit(lambda: MatrixUnit(params), tiles.program, spad=_random_words(rng, params.SPAD_WORDS),
               params=params)


def test_accumulate_rows_that_overlap_are_refused():
    """acc = 1 with M > 1 and ldc < N is BAD_FIELD (the rows' old values are read before the rows
    above them are written); M = 1 or ldc >= N is legal."""
    mm = dict(dst=600, A=0, B=100, M=2, K=3, N=4, tb=0, lda=3, ldb=4, ldc=3, acc=1)
    code, text = spec.check(spec.BY_NAME["MM"], mm, P)
    assert code is spec.ErrorCode.BAD_FIELD and "ldc=3" in text
    assert spec.check(spec.BY_NAME["MM"], mm | {"M": 1}, P)[0] is spec.ErrorCode.NONE
    assert spec.check(spec.BY_NAME["MM"], mm | {"ldc": 4}, P)[0] is spec.ErrorCode.NONE
    assert spec.check(spec.BY_NAME["MM"], mm | {"acc": 0}, P)[0] is spec.ErrorCode.NONE


# --------------------------------------------------------------------------- MMRQ (OVERLAP = 2)

CHAINED = Params(SPAD_WORDS=2048, OVERLAP=2)


def _entries(rng: np.random.Generator, n: int) -> np.ndarray:
    """Requantization table words (GA2.md section 2): shifts where the int8 results spread over
    -127..127 for the sums these tiles make, a few extreme (s = 0, s = 63), random bits 31..30."""
    m = rng.integers(1 << 23, 1 << 24, n)
    s = np.where(rng.random(n) < 0.1, rng.choice([0, 1, 63], n), rng.integers(24, 34, n))
    return (rng.integers(0, 4, n) << 30) | (s << 24) | m


def _chained_program(rng: np.random.Generator, params: Params,
                     count: int) -> tuple[list[Instruction], np.ndarray]:
    """MMRQs of every kind (tb, acc, pc, relu; M, N from 1 to T; K up to K_MAX) and MMs between
    them, back to back, each output in its own region above OPERANDS and its entries below."""
    spad = _random_words(rng, params.SPAD_WORDS)
    tab_base = OPERANDS - 64
    spad[tab_base:OPERANDS] = _entries(rng, 64)
    tiles = _Tiles(params)
    program = []
    for k in range(count):
        M, N, tb = int(rng.integers(1, params.T + 1)), int(rng.integers(1, params.T + 1)), k % 2
        K = int(rng.choice([1, int(rng.integers(2, 20)), params.K_MAX]))
        row = K if tb else N                         # B's stored rows: N of K, or K of N
        lda, ldb = int(rng.integers(K, K + 4)), int(rng.integers(row, row + 4))
        tiles.add(rng, M=M, N=N, K=K, tb=tb, lda=lda, ldb=ldb)
        mm = tiles.program[-1]
        if k % 5 == 4:        # an MM between the MMRQs: the unit switches back and forth
            program.append(mm)
            continue
        ldc = mm.ldc if M == 1 or mm.ldc >= N else N
        tab = tab_base + int(rng.integers(0, 64 - params.T))
        fields = {**mm.fields, "ldc": ldc, "acc": int(rng.integers(0, 2))}
        program.append(build("MMRQ", params=params, **fields, tab=tab, pc=int(rng.integers(0, 2)),
                             relu=int(rng.integers(0, 2))))
    # operands' low bytes and acc's old words small enough that most results fall inside -127..127
    spad[:tab_base] = _with_low_bytes(rng, tab_base, np.arange(-20, 21))
    spad[OPERANDS:] = rng.integers(-3000, 3001, params.SPAD_WORDS - OPERANDS) & 0xFFFFFFFF
    return program, spad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mmrq_against_the_reference(seed: int):
    """MMRQ (the requantizer chained on the unit's way out) leaves the scratchpad as the
    reference's MM + requant does, in exactly the spec's latency, mixed with MMs."""
    rng = np.random.default_rng(seed)
    program, spad = _chained_program(rng, CHAINED, 24)
    assert {ins.op for ins in program} == {"MM", "MMRQ"}
    check_unit(lambda: MatrixUnit(CHAINED), program, spad=spad, params=CHAINED)


def test_mmrq_by_hand():
    """One MMRQ worked by hand: A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]] (tb = 0), the bias 100
    in the output words (acc = 1): sums 100 + 19, 22, 43, 50 = 119, 122, 143, 150; per channel,
    column 0 with (m, s) = (2^23, 24) (x / 2: 59.5 -> 60, 71.5 -> 72) and column 1 with
    (3 * 2^22, 24) (x * 3/4: 91.5 -> 92, 112.5 -> 113)."""
    spad = np.zeros(CHAINED.SPAD_WORDS, dtype=np.int64)
    spad[0:4] = [1, 2, 3, 4]
    spad[8:12] = [5, 6, 7, 8]
    spad[16:18] = [(24 << 24) | (1 << 23), (24 << 24) | (3 << 22)]
    spad[32:36] = [100, 100, 100, 100]
    ins = build("MMRQ", params=CHAINED, dst=32, A=0, B=8, M=2, K=2, N=2, tb=0, lda=2, ldb=2, ldc=2,
                acc=1, tab=16, pc=1, relu=0)
    got, _ext, latency = run_unit(lambda: MatrixUnit(CHAINED), [ins], spad, None, CHAINED)
    assert [int(w) for w in got[32:36]] == [60, 92, 72, 113]
    assert latency == [2 + 2 + spec.MM_OVERHEAD + spec.MM_ACC_CYCLES + spec.CHAIN_CYCLES]


def test_mmrq_idle_outputs_are_zero():
    rng = np.random.default_rng(5)
    program, spad = _chained_program(rng, CHAINED, 6)
    check_idle_outputs(lambda: MatrixUnit(CHAINED), program, spad=spad, params=CHAINED)
