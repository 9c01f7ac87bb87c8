"""sim/machine.py: each instruction's effect, every error code, the counters, the guards."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import arith, spec
from sim.asm import Instruction, assemble, build, encode_program
from sim.bench import random_image, random_program
from sim.machine import Counters, Machine, MachineError, StepLimit, predict_counters
from sim.spec import DEFAULT, ErrorCode, Params

assemble = partial(assemble, params=DEFAULT)
build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

MASK = 0xFFFFFFFF


def word(v: int) -> int:
    """A signed value as the 32-bit word the machine stores."""
    return v & MASK


def words(values: list[int]) -> list[int]:
    return [word(v) for v in values]


def run(text: str, ext: list[int] | None = None, params: Params = DEFAULT, **kw):
    return Machine(params).run(assemble(text, params=params, strict=False), ext, **kw)


def fails(text: str | list, ext: list[int] | None = None, params: Params = DEFAULT) -> MachineError:
    program = assemble(text, params=params, strict=False) if isinstance(text, str) else text
    with pytest.raises(MachineError) as info:
        Machine(params).run(program, ext)
    return info.value


# --------------------------------------------------------------------------- LD, ST


def test_ld_and_st_move_words_unchanged():
    ext = [10, -3, 7, 2**31 - 1, -(2**31), 0xFFFFFFFF]
    r = run("LD dst=5 src=1 len=5\nST src=5 dst=100 len=5\nHALT", ext)
    moved = words([-3, 7, 2**31 - 1, -(2**31), -1])
    assert r.spad[5:10].tolist() == moved
    assert r.ext[100:105].tolist() == moved
    assert r.ext[:6].tolist() == words(ext)
    assert not r.spad[:5].any() and not r.spad[10:].any()      # nothing else written
    assert r.spad.dtype == np.uint32 and len(r.spad) == 4096 and len(r.ext) == 65536


# --------------------------------------------------------------------------- MM

# A (2 x 3) = [[1, 2, 3], [-4, 5, -6]], B (3 x 2) = [[7, -8], [9, 10], [-11, 12]]
# C = A @ B = [[1*7 + 2*9 + 3*-11, 1*-8 + 2*10 + 3*12], [-4*7 + 5*9 + -6*-11, -4*-8 + 5*10 + -6*12]]
#           = [[-8, 48], [83, 10]]
C_ROWS = [[-8, 48], [83, 10]]


def _mm_image(tb: int) -> list[int]:
    img = [99] * 40                                   # junk between the strided rows
    img[0:3] = [0x101, 2, 3]                          # A row 0 at 0 (lda = 5); 0x101 has low byte 1
    img[5:8] = [-4, 5, 0xABCDEFFA]                    # A row 1 at 5; low byte 0xFA is -6
    if tb == 0:                                       # B row t at 20 + 7t (ldb = 7)
        img[20:22], img[27:29], img[34:36] = [7, -8], [9, 10], [-11, 12]
    else:                                             # B^T row j at 20 + 4j (ldb = 4)
        img[20:23], img[24:27] = [7, 9, -11], [-8, 10, 12]
    return img


@pytest.mark.parametrize(("tb", "ldb"), [(0, 7), (1, 4)])
def test_mm_with_odd_strides(tb, ldb):
    r = run(f"LD dst=0 src=0 len=40\nMM dst=50 A=0 B=20 M=2 K=3 N=2 tb={tb} lda=5 ldb={ldb} ldc=3\nHALT",
            _mm_image(tb))
    assert r.spad[50:55].tolist() == words([-8, 48, 0, 83, 10])    # word 52 lies between the rows


@pytest.mark.parametrize(("ldc", "expected"), [
    (1, [-8, 83, 10]),      # row 1 starts on row 0's second word: the later row wins
    (0, [83, 10, 0]),       # both rows on the same words
])
def test_mm_rows_overlapping_through_ldc(ldc, expected):
    r = run(f"LD dst=0 src=0 len=40\nMM dst=50 A=0 B=20 M=2 K=3 N=2 tb=0 lda=5 ldb=7 ldc={ldc}\nHALT",
            _mm_image(0))
    assert r.spad[50:53].tolist() == words(expected)


@pytest.mark.parametrize("tb", [0, 1])
def test_mm_full_tile_against_loops(tb):
    rng = np.random.default_rng(3 + tb)
    M, K, N, lda, ldb, ldc = 4, 64, 3, 67, (65 if tb else 5), 9
    image = rng.integers(-(2**31), 2**31, 1024).tolist()    # full words: only the low bytes count
    A, B, dst = 0, 300, 700
    r = run(f"LD dst=0 src=0 len=1024\nMM dst={dst} A={A} B={B} M={M} K={K} N={N} tb={tb} "
            f"lda={lda} ldb={ldb} ldc={ldc}\nHALT", image)

    def s8(w: int) -> int:
        b = w & 0xFF
        return b - 256 if b >= 128 else b

    for i in range(M):
        for j in range(N):
            total = 0
            for t in range(K):
                b_addr = B + j * ldb + t if tb else B + t * ldb + j
                total += s8(image[A + i * lda + t]) * s8(image[b_addr])
            assert r.spad[dst + i * ldc + j] == word(total), (i, j)


# --------------------------------------------------------------------------- RQ, SM, VADD, AMAX, UNPACK


def test_rq_rounds_saturates_and_relu():
    # m = 2**23, s = 24: the factor 1/2, so 3 -> 1.5 -> 2, 5 -> 2.5 -> 3, 1 -> 0.5 -> 1, 300 -> 150 -> 127
    ext = [3, -3, 5, -5, 1, -1, 300, -300]
    r = run("LD dst=0 src=0 len=8\n"
            "RQ dst=10 src=0 len=8 m=8388608 s=24 relu=0\n"
            "RQ dst=20 src=0 len=8 m=8388608 s=24 relu=1\n"
            "RQ dst=0 src=0 len=8 m=8388608 s=24 relu=0\n"           # in place
            "HALT", ext)
    assert r.spad[10:18].tolist() == words([2, -2, 3, -3, 1, -1, 127, -127])
    assert r.spad[20:28].tolist() == words([2, 0, 3, 0, 1, 0, 127, 0])
    assert r.spad[0:8].tolist() == words([2, -2, 3, -3, 1, -1, 127, -127])


def test_rq_reads_signed_32_bit():
    # the factor 127/65536 (m = 16646144, s = 33): 1000 -> 1.94 -> 2; 2**31 - 1 saturates
    r = run("LD dst=0 src=0 len=4\nRQ dst=10 src=0 len=4 m=16646144 s=33 relu=0\nHALT",
            [1000, -1000, 2**31 - 1, 0x80000000])
    assert r.spad[10:14].tolist() == words([2, -2, 127, -127])


def test_rq_per_channel_by_hand():
    # rows = pixels, columns = channels: 3 pixels of C = 4 channels, the table (m_c, s_c):
    # c0 (2**23, 24) = 1/2, c1 (3, 1) = 3/2, c2 (1, 0) = 1 (s = 0: no shift, no rounding),
    # c3 (16646144, 33) = 127/65536; bits 31..30 of c1's word set (ignored)
    table = [8388608 | 24 << 24, 3 | 1 << 24 | 3 << 30, 1, 16646144 | 33 << 24]
    acc = [3, 3, 3, 1000,     -5, -5, -200, -1000,     300, 1, 127, 2**31 - 1]
    r = run("LD dst=0 src=0 len=12\nLD dst=20 src=12 len=4\n"
            "RQ dst=40 src=0 len=12 m=0 s=0 relu=0 pc=1 tab=20 C=4\n"
            "RQ dst=60 src=0 len=12 m=0 s=0 relu=1 pc=1 tab=20 C=4\n"
            "RQ dst=80 src=0 len=6 m=0 s=0 relu=0 pc=1 tab=21 C=4\n"    # a table starting at c1
            "RQ dst=0 src=0 len=12 m=0 s=0 relu=0 pc=1 tab=20 C=4\n"     # in place
            "HALT", [*acc, *table])
    # 3/2 = 1.5 -> 2; 3*3/2 = 4.5 -> 5; 3*1 = 3; 1000*127/65536 = 1.94 -> 2
    # -5/2 = -2.5 -> -3; -15/2 = -7.5 -> -8; -200 -> -127; -1.94 -> -2
    # 300/2 = 150 -> 127; 3/2 -> 2; 127; (2**31 - 1) * 127/65536 -> 127
    want = [2, 5, 3, 2, -3, -8, -127, -2, 127, 2, 127, 127]
    assert r.spad[40:52].tolist() == words(want)
    assert r.spad[60:72].tolist() == words([max(0, v) for v in want])
    assert r.spad[0:12].tolist() == words(want)
    # the table at 21: the words 21..24 (c1, c2, c3, and word 24 = 0: m = 0) over 3, 3, 3, 1000, -5, -5
    assert r.spad[80:86].tolist() == words([5, 3, 0, 0, -8, -5])


def test_vadd_max_by_hand():
    # max = 1: the larger operand (low bytes, signed): max(5, -3) = 5, max(-128, -128) = -128 (no
    # saturation), max(127, -128) = 127, max(-7, -2) = -2; with relu the negatives become 0
    ext = [5, 0x180, 127, 0xFFFFFFF9, -3, -128, -128, -2]
    r = run("LD dst=0 src=0 len=8\n"
            "VADD dst=20 src1=0 src2=4 len=4 max=1\n"
            "VADD dst=30 src1=0 src2=4 len=4 relu=1 max=1\n"
            "VADD dst=0 src1=0 src2=4 len=4 max=1\n"            # in place
            "HALT", ext)
    assert r.spad[20:24].tolist() == words([5, -128, 127, -2])
    assert r.spad[30:34].tolist() == words([5, 0, 127, 0])
    assert r.spad[0:4].tolist() == words([5, -128, 127, -2])
    assert r.counters.vpu == 3 * (1 + spec.VADD_OVERHEAD)


def test_rq_per_channel_latency():
    r = run("RQ dst=100 src=0 len=9 m=0 s=0 relu=0 pc=1 tab=50 C=4\nHALT", [])
    assert r.counters.vpu == math.ceil(9 / 4) + spec.RQ_OVERHEAD + spec.RQ_PC_CYCLES == 3 + 10 + 2


def test_sm_row():
    # Q4.4 [1.0, 0.0] (high bits of the words are ignored): e = [65536, 24109], z = 89645
    # p = [(65536*65536 + 44822) // 89645, (24109*65536 + 44822) // 89645] = [47911, 17625]
    # [127, -128] has the gap 255: LUT[255] = 0
    r = run("LD dst=0 src=0 len=4\nSM dst=10 src=0 len=2\nSM dst=20 src=2 len=2\nHALT",
            [0xABCD0010, 0x12345600, 127, 0x80])
    assert r.spad[10:12].tolist() == [47911, 17625]
    assert r.spad[20:22].tolist() == [65536, 0]


def test_sm_all_equal_and_single():
    r = run("LD dst=0 src=0 len=4\nSM dst=10 src=0 len=4\nSM dst=20 src=0 len=1\nHALT", [-7, -7, -7, -7])
    assert r.spad[10:14].tolist() == [16384] * 4
    assert r.spad[20] == 65536


def test_vadd_saturates_at_both_ends():
    a = [100, -100, 5, -128, 127, 0x1FF]      # 0x1FF has low byte 0xFF: -1
    b = [100, -100, -3, -1, -127, 2]
    r = run("LD dst=0 src=0 len=12\nVADD dst=20 src1=0 src2=6 len=6\nVADD dst=0 src1=0 src2=6 len=6\nHALT",
            a + b)
    expected = words([127, -127, 2, -127, 0, 1])
    assert r.spad[20:26].tolist() == expected
    assert r.spad[0:6].tolist() == expected                  # in place


@pytest.mark.parametrize(("row", "index"), [
    ([3, 7, -1, 7, 7], 1),            # the first of three maxima
    ([-5, -2, -2], 1),                # all negative (signed compare)
    ([4, 4, 4, 4], 0),
    ([0x107, 0x80, 0x7F], 2),         # low bytes 7, -128, 127
    ([0x180, 0], 1),                  # 0x80 is -128, below 0
    ([9], 0),
])
def test_amax_first_maximum(row, index):
    r = run(f"LD dst=0 src=0 len={len(row)}\nAMAX dst=100 src=0 len={len(row)}\nHALT", row)
    assert r.spad[100] == index


def test_unpack_negative_nibbles():
    # element 8i + j is bits 4j+3..4j of word i: 0x89ABCDEF gives F, E, D, C, B, A, 9, 8 as signed int4
    r = run("LD dst=0 src=0 len=2\nUNPACK dst=10 src=0 len=2\nHALT", [0x89ABCDEF, 0x76543210])
    assert r.spad[10:26].tolist() == words([-1, -2, -3, -4, -5, -6, -7, -8, 0, 1, 2, 3, 4, 5, 6, 7])


def test_ln_row_with_bias_and_in_place():
    # [3, 0, 0, 0] normalises to [113512, -37837, -37837, -37837] (sim.arith, worked there by
    # hand); the bias words are added modulo 2^32 (113512 + 2^31 - 113512 wraps to -2^31)
    bias = [2**31 - 113512, -37837, 10, 0]
    r = run("LD dst=0 src=0 len=8\n"
            "LN dst=20 src=0 len=4 bias=4 eps=0\n"
            "LN dst=0 src=0 len=4 bias=4 eps=0\n"              # in place over the row
            "HALT", [0x103, 0xFF00, 0, 0, *bias])
    assert r.spad[20:24].tolist() == words([-(2**31), -75674, -37827, -37837])
    assert r.spad[0:4].tolist() == r.spad[20:24].tolist()


def test_gather_reads_the_row_the_scratchpad_names():
    # a table of 3 rows of 5 words at external 100 (row r: 100 + 5r), and packed int8 rows of 5
    # values (2 words each) at 200; S[40] = 2 and S[41] = 1 name the rows
    ext = [0] * 256
    ext[100:115] = range(1000, 1015)
    ext[200:206] = [0x04030201, 0x05, 0xFCFDFEFF, 0x80, 0x7F7F7F7F, 0x7F]
    ext[0:2] = [2, 1]
    r = run("LD dst=40 src=0 len=2\n"
            "GATHER dst=50 src=100 idx=40 len=5 rows=3\n"
            "GATHER dst=60 src=200 idx=41 len=5 rows=3 fmt=1\n"
            "HALT", ext)
    assert r.spad[50:55].tolist() == [1010, 1011, 1012, 1013, 1014]
    assert r.spad[60:65].tolist() == words([-1, -2, -3, -4, -128])
    # the counters: GATHER_OVERHEAD + ceil(5/4) each
    gather = spec.GATHER_OVERHEAD + 2
    assert r.counters.dma == spec.LD_OVERHEAD + 1 + 2 * gather


@pytest.mark.parametrize("row", [3, 4, 0xFFFFFFFF, 0x80000000, 1 << 16])
def test_gather_out_of_its_table_stops_with_bad_index(row):
    """A row number not below rows (read unsigned: -1 is 2^32 - 1) stops the machine after the
    GATHER's latency, with the GATHER's pc; it writes nothing and what follows never runs."""
    e = fails("LD dst=40 src=0 len=1\nGATHER dst=50 src=100 idx=40 len=5 rows=3\n"
              "LD dst=0 src=0 len=1\nHALT", [row])
    assert (e.code, e.pc) == (ErrorCode.BAD_INDEX, 1)
    ld, gather = spec.LD_OVERHEAD + 1, spec.GATHER_OVERHEAD + 2
    assert e.result.counters == Counters(cycles=spec.FRONTEND_CYCLES + ld + gather + spec.STOP_CYCLES,
                                         dma=ld + gather)
    assert e.result.spad[40] == row and np.count_nonzero(e.result.spad) == (row != 0)
    assert f"row number S[40] = {row}" in e.detail and "rows=3" in e.detail


# --------------------------------------------------------------------------- counters


def test_counters_of_a_hand_computed_program():
    text = """
        LD   dst=0 src=0 len=60
        MM   dst=240 A=8 B=72 M=3 K=10 N=4 tb=0 lda=10 ldb=9 ldc=11
        RQ   dst=180 src=240 len=50 m=12345678 s=30 relu=1
        SM   dst=300 src=180 len=10
        VADD dst=400 src1=180 src2=190 len=7
        AMAX dst=410 src=180 len=9
        UNPACK dst=420 src=0 len=2
        MM   dst=500 A=0 B=100 M=2 K=5 N=3 tb=1 lda=5 ldb=5 ldc=3
        ST   src=240 dst=1000 len=5
        HALT
    """
    s = spec
    ld = math.ceil(60 / 4) + s.LD_OVERHEAD                 # 15 + 2
    mm1 = 10 + 3 + s.MM_OVERHEAD                          # tb = 0: K + M, + 5
    rq = math.ceil(50 / 4) + s.RQ_OVERHEAD                 # 13 + 10
    sm = 3 * math.ceil(10 / 4) + s.SM_OVERHEAD             # 9 + 15
    vadd = math.ceil(7 / 4) + s.VADD_OVERHEAD              # 2 + 5
    amax = math.ceil(9 / 4) + s.AMAX_OVERHEAD              # 3 + 6
    unpack = 2 * 2 + s.UNPACK_OVERHEAD                     # 4 + 4
    mm2 = 5 + 2 + (3 - 1) + s.MM_OVERHEAD                  # tb = 1: K + M + N - 1, + 5
    st_ = math.ceil(5 / 4) + s.ST_OVERHEAD                 # 2 + 4
    expected = Counters(
        cycles=s.FRONTEND_CYCLES + ld + mm1 + rq + sm + vadd + amax + unpack + mm2 + st_ + s.STOP_CYCLES,
        dma=ld + st_, mxu=mm1 + mm2, vpu=rq + vadd + amax + unpack, sfu=sm)
    # by hand: 8 + 17 + 18 + 23 + 24 + 7 + 9 + 8 + 14 + 6 + 1
    assert expected == Counters(cycles=135, dma=23, mxu=32, vpu=47, sfu=24)
    program = assemble(text)
    r = Machine(DEFAULT).run(program, list(range(100)))
    assert r.counters == expected
    assert r.steps == 10
    assert predict_counters(program, params=DEFAULT) == expected
    assert str(r.counters) == (f"cycles={expected.cycles} dma={expected.dma} mxu={expected.mxu} "
                               f"vpu={expected.vpu} sfu={expected.sfu}")


def test_halt_alone():
    r = run("HALT")
    assert r.counters == Counters(cycles=spec.FRONTEND_CYCLES + spec.STOP_CYCLES)
    assert r.steps == 1


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 120))
def test_predict_counters_equals_run(seed, n):
    program = random_program(n, seed=seed, params=DEFAULT)
    r = Machine(DEFAULT).run(program, random_image(seed=seed, params=DEFAULT))
    assert predict_counters(program, params=DEFAULT) == r.counters
    assert r.steps == len(program)        # n and HALT, and an AMAX before each GATHER but a first


def test_predict_counters_refuses_illegal_programs():
    with pytest.raises(ValueError, match=r"instruction 1 is illegal \(field out of its legal range\)"):
        predict_counters(assemble("LD dst=0 src=0 len=1\nSM dst=0 src=100 len=65\nHALT", strict=False),
                         params=DEFAULT)
    with pytest.raises(ValueError, match="no HALT"):
        predict_counters(assemble("LD dst=0 src=0 len=1"), params=DEFAULT)
    # what follows the first HALT never runs, so it does not count
    after = assemble("HALT\nSM dst=0 src=0 len=0", strict=False)
    assert predict_counters(after, params=DEFAULT) == Counters(cycles=spec.FRONTEND_CYCLES + spec.STOP_CYCLES)


# --------------------------------------------------------------------------- errors


def _counters_after_ld8() -> Counters:
    ld = math.ceil(8 / spec.DEFAULT.LANES) + spec.LD_OVERHEAD
    return Counters(cycles=spec.FRONTEND_CYCLES + ld + spec.STOP_CYCLES, dma=ld)


UNKNOWN = spec.UNKNOWN_OPCODES[-1]
"""An opcode no instruction has (the last free one, so a new instruction on a lower one leaves
these tests alone)."""


def test_bad_opcode_in_encoded_words():
    ld = build("LD", dst=0, src=0, len=8)
    program = [*ld.encode(), UNKNOWN, 0, 0, 0, *build("HALT").encode()]
    with pytest.raises(MachineError) as info:
        Machine(DEFAULT).run(program, list(range(1, 9)))
    e = info.value
    assert (e.code, e.pc) == (ErrorCode.BAD_OPCODE, 1)
    assert e.result.counters == _counters_after_ld8()
    assert e.result.spad[:8].tolist() == list(range(1, 9))       # the LD before it ran
    assert e.result.steps == 2
    assert str(e).startswith(f"error 1 (unknown opcode) at instruction 1: opcode {UNKNOWN}")


@pytest.mark.parametrize("first", [0, 0xFFFFFFF0, *spec.UNKNOWN_OPCODES[1:]])
def test_zeroed_or_unknown_first_word(first):
    with pytest.raises(MachineError) as info:
        Machine(DEFAULT).run([first, 0, 0, 0, *build("HALT").encode()])
    assert (info.value.code, info.value.pc) == (ErrorCode.BAD_OPCODE, 0)
    assert info.value.result.counters == Counters(cycles=spec.FRONTEND_CYCLES + spec.STOP_CYCLES)


@pytest.mark.parametrize(("bad", "code"), [
    ("MM dst=100 A=0 B=20 M=5 K=3 N=2 tb=0 lda=3 ldb=2 ldc=2", ErrorCode.BAD_FIELD),
    ("SM dst=100 src=0 len=65", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=1 s=0 relu=0", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=1 s=1 relu=0 tab=50", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=1 s=1 relu=0 C=4", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=1 s=0 relu=0 pc=1 tab=50 C=4", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=0 s=1 relu=0 pc=1 tab=50 C=4", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=0 s=0 relu=0 pc=1 tab=50 C=3", ErrorCode.BAD_FIELD),
    ("RQ dst=100 src=0 len=4 m=0 s=0 relu=0 pc=1 tab=4093 C=4", ErrorCode.SPAD_RANGE),
    ("RQ dst=100 src=0 len=4 m=0 s=0 relu=0 pc=1 tab=100 C=4", ErrorCode.OVERLAP),
    ("RQ dst=100 src=0 len=4 m=0 s=0 relu=0 pc=1 tab=103 C=4", ErrorCode.OVERLAP),
    ("VADD dst=100 src1=0 src2=10 len=0", ErrorCode.BAD_FIELD),
    ("LD dst=4090 src=0 len=10", ErrorCode.SPAD_RANGE),
    ("UNPACK dst=4090 src=0 len=1", ErrorCode.SPAD_RANGE),
    ("ST src=0 dst=65534 len=3", ErrorCode.EXT_RANGE),
    ("LD dst=0 src=65529 len=8", ErrorCode.EXT_RANGE),
    ("RQ dst=1 src=0 len=4 m=1 s=1 relu=0", ErrorCode.OVERLAP),
    ("SM dst=0 src=0 len=4", ErrorCode.OVERLAP),
    ("MM dst=2 A=0 B=20 M=2 K=3 N=2 tb=0 lda=3 ldb=2 ldc=2", ErrorCode.OVERLAP),
])
def test_each_error_code_with_pc_counters_and_memories(bad, code):
    ext = list(range(1, 9))
    e = fails(f"LD dst=0 src=0 len=8\n{bad}\nLD dst=200 src=0 len=8\nHALT", ext)
    assert (e.code, e.pc) == (code, 1)
    assert e.result.counters == _counters_after_ld8()
    # the LD before ran; the faulting instruction and everything after did not
    expected_spad = np.zeros(4096, dtype=np.uint32)
    expected_spad[:8] = ext
    assert np.array_equal(e.result.spad, expected_spad)
    expected_ext = np.zeros(65536, dtype=np.uint32)
    expected_ext[:8] = ext
    assert np.array_equal(e.result.ext, expected_ext)
    assert f"error {int(code)} ({spec.ERROR_TEXT[code]}) at instruction 1" in str(e)


def test_no_halt():
    e = fails("LD dst=0 src=0 len=8", list(range(8)))
    assert (e.code, e.pc) == (ErrorCode.NO_HALT, 1)
    assert e.result.counters == _counters_after_ld8()
    e = fails([])
    assert (e.code, e.pc) == (ErrorCode.NO_HALT, 0)
    assert e.result.counters == Counters(cycles=spec.FRONTEND_CYCLES + spec.STOP_CYCLES)


def test_what_follows_halt_never_runs():
    r = run("HALT\nLD dst=4095 src=0 len=10\nSM dst=0 src=0 len=0")
    assert r.steps == 1 and not r.spad.any()


def test_error_follows_the_params():
    e = fails("LD dst=1020 src=0 len=8\nHALT", params=Params(SPAD_WORDS=1024))
    assert (e.code, e.pc) == (ErrorCode.SPAD_RANGE, 0)


def test_a_failing_run_leaves_no_trace():
    ext = np.arange(16, dtype=np.int64)
    ext_before = ext.copy()
    machine = Machine(DEFAULT)
    good = assemble("LD dst=0 src=0 len=16\nST src=0 dst=100 len=16\nHALT")
    first = machine.run(good, ext)
    with pytest.raises(MachineError) as info:
        machine.run(assemble("LD dst=0 src=0 len=4\nST src=0 dst=20 len=4\n"
                             "RQ dst=1 src=0 len=4 m=1 s=1 relu=0\nHALT", strict=False), ext)
    assert np.array_equal(ext, ext_before)                          # the caller's image is untouched
    assert info.value.result.ext[20:24].tolist() == [0, 1, 2, 3]    # the ST before the fault ran
    again = machine.run(good, ext)                                  # the machine keeps no state
    assert np.array_equal(again.spad, first.spad) and np.array_equal(again.ext, first.ext)
    assert again.counters == first.counters


# --------------------------------------------------------------------------- programs as words, guards


def test_encoded_words_run_like_instructions():
    program = random_program(60, seed=11, params=DEFAULT)
    image = random_image(seed=11, params=DEFAULT)
    a = Machine(DEFAULT).run(program, image)
    b = Machine(DEFAULT).run(encode_program(program), image)
    c = Machine(DEFAULT).run(np.array(encode_program(program), dtype=np.uint32), image)
    for other in (b, c):
        assert np.array_equal(a.spad, other.spad) and np.array_equal(a.ext, other.ext)
        assert a.counters == other.counters


def test_max_steps():
    program = assemble("\n".join(["LD dst=0 src=0 len=4"] * 10 + ["HALT"]))
    with pytest.raises(StepLimit, match="max_steps=5"):
        Machine(DEFAULT).run(program, max_steps=5)
    with pytest.raises(StepLimit):
        Machine(DEFAULT).run(program, max_steps=10)                        # HALT is the 11th step
    assert Machine(DEFAULT).run(program, max_steps=11).steps == 11


def test_image_and_program_limits():
    m = Machine(DEFAULT)
    halt = [build("HALT")]
    with pytest.raises(ValueError, match="does not fit EXT_WORDS=65536"):
        m.run(halt, [0] * 65537)
    with pytest.raises(ValueError, match="one-dimensional"):
        m.run(halt, np.zeros((2, 2), dtype=int))
    with pytest.raises(ValueError, match=r"image\[1\] = 4294967296 does not fit 32 bits"):
        m.run(halt, [0, 1 << 32])
    with pytest.raises(ValueError, match="does not fit 32 bits"):
        m.run(halt, [-(1 << 31) - 1])
    with pytest.raises(ValueError, match=r"image\[0\] = 18446744073709551616"):
        m.run(halt, [1 << 64])
    r = m.run(halt, [0xFFFFFFFF, -(1 << 31)] + [0] * 65534)            # both ends of 32 bits, full size
    assert r.ext[:2].tolist() == [0xFFFFFFFF, 0x80000000]
    with pytest.raises(ValueError, match="does not fit IMEM_WORDS=4096"):
        m.run(halt * 4097)
    with pytest.raises(ValueError, match="multiple of 4 words, got 5"):
        m.run([15, 0, 0, 0, 0])


@pytest.mark.parametrize("image", [[1.7, 2.2], [1.0], [float("nan")], [float("inf")], [1j], ["3"]])
def test_non_integer_images_are_refused_not_truncated(image):
    with pytest.raises(TypeError, match="external-memory image must hold integers"):
        Machine(DEFAULT).run([build("HALT")], image)


@pytest.mark.parametrize("program, message", [
    (None, "program must be a list"),
    ("HALT", "program must be a list"),
    ([15.7, 0, 0, 0], "encoded program must hold integers"),
    ([15 + (1 << 32), 0, 0, 0], r"encoded program\[0\] = 4294967311 does not fit 32 bits"),
    ([build("HALT"), 15], "not a mix"),
    ({"HALT": 1}, "got a dict, which has no order of instructions"),
    ({15, 0}, "got a set, which has no order of instructions"),
    (frozenset(build("HALT").encode()), "got a frozenset, which has no order"),
])
def test_bad_programs_are_refused(program, message):
    with pytest.raises((TypeError, ValueError), match=message):
        Machine(DEFAULT).run(program)


def test_an_encoded_program_may_be_signed_or_unsigned_words():
    # -1 is the 32-bit pattern 0xFFFFFFFF: opcode 15 (HALT) in the low bits
    assert Machine(DEFAULT).run([-1, 0, 0, 0]).counters == Machine(DEFAULT).run([0xFFFFFFFF, 0, 0,
                                                                                 0]).counters
    halt = build("HALT").encode()
    assert Machine(DEFAULT).run(iter(halt)).steps == 1          # any iterable of words


def test_the_scratchpad_a_program_starts_from():
    """Reset does not clear the scratchpad (GA2.md section 2): a program reads what it is given.
    By hand: spad[10..12] = 100, -50, 3 and spad[4095] = -1; VADD doubles 10..12 into 20..22
    (200 saturates at 127, -100, 6); the rest of the given scratchpad is kept."""
    start = np.zeros(DEFAULT.SPAD_WORDS, np.int64)
    start[10:13] = [100, -50, 3]
    start[4095] = -1
    r = Machine(DEFAULT).run([build("VADD", dst=20, src1=10, src2=10, len=3), build("HALT")], spad=start)
    assert r.spad[20:23].tolist() == words([127, -100, 6])
    assert r.spad[10:13].tolist() == words([100, -50, 3]) and r.spad[4095] == MASK
    assert Machine(DEFAULT).run([build("HALT")], spad=[7, 8]).spad[:3].tolist() == [7, 8, 0]   # padded with 0
    assert not Machine(DEFAULT).run([build("HALT")]).spad.any()                                # default: zero
    with pytest.raises(ValueError, match="initial scratchpad of 4097 words does not fit SPAD_WORDS=4096"):
        Machine(DEFAULT).run([build("HALT")], spad=[0] * 4097)
    with pytest.raises(TypeError, match="initial scratchpad must hold integers"):
        Machine(DEFAULT).run([build("HALT")], spad=[0.5])


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match=r"expected sim\.spec\.Params"):
        Machine("x")
    with pytest.raises(TypeError, match="max_steps must be an int"):
        Machine(DEFAULT).run([build("HALT")], max_steps="5")
    with pytest.raises(TypeError, match=r"program\[1\] is int"):
        Machine(DEFAULT).run([build("HALT"), 15])


# --------------------------------------------------------------------------- against a plain interpreter


def _reference(program: list[Instruction], image: np.ndarray) -> tuple[list[int], list[int]]:
    """GA2.md section 3, one element at a time, with the scalar arithmetic."""
    S, E = [0] * 4096, [int(v) & MASK for v in image]

    def s8(w: int) -> int:
        return ((w & 0xFF) ^ 0x80) - 0x80

    def s32(w: int) -> int:
        return w - (1 << 32) if w & 0x80000000 else w

    for ins in program:
        f = ins.fields
        if ins.op == "HALT":
            break
        if ins.op == "LD":
            for i in range(f["len"]):
                S[f["dst"] + i] = (word(s8(E[f["src"] + i // 4] >> (8 * (i % 4)))) if f["fmt"]
                                   else E[f["src"] + i])
        elif ins.op == "ST":
            for i in range(f["len"]):
                E[f["dst"] + i] = S[f["src"] + i]
        elif ins.op in ("MM", "MMRQ"):
            out = {}
            for i in range(f["M"]):
                for j in range(f["N"]):
                    acc = 0
                    for t in range(f["K"]):
                        b = f["B"] + (j * f["ldb"] + t if f["tb"] else t * f["ldb"] + j)
                        acc += s8(S[f["A"] + i * f["lda"] + t]) * s8(S[b])
                    out[(i, j)] = acc + (s32(S[f["dst"] + i * f["ldc"] + j]) if f["acc"] else 0)
            if ins.op == "MMRQ":    # the int32 sum (mod 2^32), then the entry of column j (or tab's)
                entries = [S[f["tab"] + (j if f["pc"] else 0)] for j in range(f["N"])]
                out = {(i, j): arith.requant(s32(word(v)), entries[j] & 0xFFFFFF, (entries[j] >> 24) & 63,
                                             bool(f["relu"])) for (i, j), v in out.items()}
            for i in range(f["M"]):
                for j in range(f["N"]):
                    S[f["dst"] + i * f["ldc"] + j] = word(out[(i, j)])
        elif ins.op == "RQ":
            src = [s32(S[f["src"] + i]) for i in range(f["len"])]
            # per channel: m in bits 23..0 of the table word, s in bits 29..24 (GA2.md section 2)
            pairs = [(S[f["tab"] + i % f["C"]] & 0xFFFFFF, (S[f["tab"] + i % f["C"]] >> 24) & 63)
                     if f["pc"] else (f["m"], f["s"]) for i in range(f["len"])]
            for i, (a, (m, s)) in enumerate(zip(src, pairs, strict=True)):
                S[f["dst"] + i] = word(arith.requant(a, m, s, bool(f["relu"])))
        elif ins.op == "SM":
            p = arith.softmax_fixed([s8(S[f["src"] + i]) for i in range(f["len"])])
            for i, v in enumerate(p):
                S[f["dst"] + i] = v
        elif ins.op == "VADD":
            pairs = [(s8(S[f["src1"] + i]), s8(S[f["src2"] + i])) for i in range(f["len"])]
            sums = [max(x, y) if f["max"] else arith.clamp_int8(x + y) for x, y in pairs]
            sums = [max(0, v) if f["relu"] else v for v in sums]
            for i, v in enumerate(sums):
                S[f["dst"] + i] = word(v)
        elif ins.op == "AMAX":
            row = [s8(S[f["src"] + i]) for i in range(f["len"])]
            S[f["dst"]] = row.index(max(row))
        elif ins.op == "UNPACK":
            for i in range(f["len"]):
                for j in range(8):
                    nib = (S[f["src"] + i] >> (4 * j)) & 0xF
                    S[f["dst"] + 8 * i + j] = word(nib - 16 if nib >= 8 else nib)
        elif ins.op == "LUT":
            table = [S[f["table"] + e] for e in range(256)]
            xs = [s8(S[f["src"] + i]) for i in range(f["len"])]
            for i, x in enumerate(xs):
                S[f["dst"] + i] = word(s8(table[x + 128]))
        elif ins.op == "LN":
            y = arith.layernorm_fixed([s8(S[f["src"] + i]) for i in range(f["len"])], f["eps"])
            bias = [s32(S[f["bias"] + i]) for i in range(f["len"])]
            for i in range(f["len"]):
                S[f["dst"] + i] = word(y[i] + bias[i])
        elif ins.op == "GATHER":
            row = S[f["idx"]]
            assert row < f["rows"], "random_program writes a row number below rows"
            if f["fmt"]:
                base = f["src"] + row * -(-f["len"] // 4)
                for i in range(f["len"]):
                    S[f["dst"] + i] = word(s8(E[base + i // 4] >> (8 * (i % 4))))
            else:
                for i in range(f["len"]):
                    S[f["dst"] + i] = E[f["src"] + row * f["len"] + i]
        else:
            raise AssertionError(f"{ins.op}: GA2.md section 3 has it, this plain interpreter not yet")
    return S, E


@pytest.mark.parametrize("seed, params", [(1, DEFAULT), (2, DEFAULT), (3, DEFAULT),
                                          (4, Params(OVERLAP=2)), (5, Params(OVERLAP=2))])
def test_machine_matches_a_plain_interpreter(seed, params):
    """The random programs draw every instruction of the machine (MMRQ at OVERLAP = 2)."""
    program = random_program(150, seed=seed, params=params)
    image = random_image(seed=seed, params=params)
    r = Machine(params).run(program, image)
    S, E = _reference(program, image)
    assert r.spad.tolist() == S
    assert r.ext.tolist() == E


# --------------------------------------------------------------------------- MMRQ (OVERLAP = 2)


@pytest.mark.parametrize("overlap", [0, 1])
def test_mmrq_is_a_bad_opcode_where_it_is_not_built(overlap):
    """Opcode 11 stops a machine with OVERLAP = 0 or 1 as an unknown opcode does (BAD_OPCODE, its
    pc), from instructions and from encoded words alike; the LD before it ran."""
    params = Params(OVERLAP=overlap)
    program = assemble("LD dst=0 src=0 len=4\nMMRQ dst=40 A=0 B=8 M=1 K=2 N=1 tb=0 lda=2 ldb=1 ldc=1 "
                       "acc=0 tab=20 pc=0 relu=0\nHALT", params=params)
    for form in (program, encode_program(program)):
        e = fails(form, list(range(1, 5)), params=params)
        assert (e.code, e.pc) == (ErrorCode.BAD_OPCODE, 1)
        assert e.result.spad[:4].tolist() == [1, 2, 3, 4]
    assert "MMRQ" in e.detail and f"OVERLAP = {overlap}" in e.detail


def test_mmrq_by_hand_at_overlap_2():
    """A = [[1, 2]], B = [[3], [-4]] (tb = 0): 3 - 8 = -5, plus the bias -7 (acc = 1): -12;
    per tensor (m, s) = (2^23, 24): -12 / 2 = -6; with relu, 0."""
    params = Params(OVERLAP=2)
    ext = [1, 2, 3, word(-4), word(-7), (24 << 24) | (1 << 23)]
    for relu, want in ((0, -6), (1, 0)):
        r = run(f"LD dst=0 src=0 len=6\nMMRQ dst=4 A=0 B=2 M=1 K=2 N=1 tb=0 lda=2 ldb=1 ldc=1 acc=1 tab=5 "
                f"pc=0 relu={relu}\nHALT", ext, params=params)
        assert int(r.spad[4]) == word(want)
