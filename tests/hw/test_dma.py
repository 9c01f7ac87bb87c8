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
