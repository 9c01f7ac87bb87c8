"""Every unit at other sizes than the default machine's: T and LANES from Params.

Each unit runs a random program of its instructions (``cosim.stress.Generator``: legal fields
drawn from the spec for that machine, odd strides, in place, K = 1 and K_MAX, SM rows of 1 and
SM_MAX_LEN) on a real scratchpad, and must leave every memory word as the reference machine
does and take exactly the spec's latency for every instruction; then a few hand-made cases
that only a wider machine has (a whole 16-lane beat, UNPACK of an odd number of words at
LANES = 16, M = N = T = 16). Memories are small to keep the simulator quick.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cosim.stress import Generator
from hw.mxu import MatrixUnit
from hw.top import unit_classes
from hw.vector import VectorUnit
from sim import spec
from sim.asm import build
from sim.machines import describe
from sim.spec import Params

from .harness import check_idle_outputs, check_unit

SMALL = {"SPAD_WORDS": 512, "EXT_WORDS": 512, "K_MAX": 40}
MACHINES = [
    Params(T=2, LANES=4, **SMALL),
    Params(T=3, LANES=8, **SMALL),
    Params(T=8, LANES=8, **SMALL),
    pytest.param(Params(T=16, LANES=16, **SMALL), marks=pytest.mark.slow),
]
UNITS = {cls: tuple(cls.OPCODES) for cls in dict.fromkeys(unit_classes().values())}
"""Each unit of the core and the instructions it executes (hw.top.unit_classes: their OPCODES)."""
INSTRUCTIONS = 8
"""Instructions in each random program (back to back)."""


def _random_spad(seed: int, params: Params) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 32, params.SPAD_WORDS, dtype=np.int64)


@pytest.mark.parametrize("params", MACHINES, ids=describe)
@pytest.mark.parametrize("unit", list(UNITS), ids=lambda cls: cls.__name__)
def test_random_program_at_size(unit, params):
    seed = params.T * 100 + params.LANES
    generator = Generator(seed, params)
    rng = random.Random(seed)
    kinds = [op for op in UNITS[unit] if spec.built(spec.BY_NAME[op], params)]   # MMRQ: OVERLAP = 2
    program = [generator.legal(rng.choice(kinds)) for _ in range(INSTRUCTIONS)]
    check_unit(lambda: unit(params), program, spad=_random_spad(seed, params),
               ext=generator.ext_image(), params=params)


WIDE = Params(T=16, LANES=16, **SMALL)


@pytest.mark.slow
def test_mxu_full_tiles_on_the_widest_array():
    """M = N = T = 16, K at a chunk's edges (15, 16, 17) and K_MAX, both layouts of B, rows of A
    and of B that overlap (strides below K) so that the tiles fit the small scratchpad."""
    program, dst = [], 256
    for K, tb, ldc in [(15, 0, 1), (16, 1, 2), (17, 0, 5), (40, 1, 3)]:
        program.append(build("MM", dst=dst, A=0, B=120, M=16, K=K, N=16, tb=tb, lda=5, ldb=3, ldc=ldc,
                             params=WIDE))
        dst += 15 * ldc + 16
    check_unit(lambda: MatrixUnit(WIDE), program, spad=_random_spad(3, WIDE), params=WIDE)


def test_unpack_at_sixteen_lanes():
    """Two packed words a beat: an odd count leaves half of the last beat unwritten."""
    program = [build("UNPACK", dst=200 + 40 * k, src=3 * k, len=n, params=WIDE)
               for k, n in enumerate((1, 2, 3, 4, 5))]
    check_unit(lambda: VectorUnit(WIDE), program, spad=_random_spad(4, WIDE), params=WIDE)


@pytest.mark.parametrize("lanes", [8, 16])
def test_amax_maximum_in_every_lane(lanes):
    """The single maximum of a row of two beats moved across every lane of both, at alternate
    alignments, back to back (one row each, apart)."""
    params = Params(T=2, LANES=lanes, SPAD_WORDS=2048, EXT_WORDS=512)
    rng = np.random.default_rng(5)
    words = params.SPAD_WORDS
    spad = (rng.integers(0, 1 << 24, words, dtype=np.int64) << 8) | rng.integers(0, 100, words)
    program = []
    for pos in range(2 * lanes):
        src = pos * (2 * lanes + 2) + pos % 2
        spad[src + pos] = (spad[src + pos] & ~0xFF) | 120
        program.append(build("AMAX", dst=1500 + pos, src=src, len=2 * lanes, params=params))
    check_unit(lambda: VectorUnit(params), program, spad=spad, params=params)


@pytest.mark.parametrize("unit", list(UNITS), ids=lambda cls: cls.__name__)
@pytest.mark.slow
def test_idle_outputs_are_zero_at_sixteen_lanes(unit):
    generator = Generator(7, WIDE)
    program = [generator.legal(kind) for kind in UNITS[unit]]
    check_idle_outputs(lambda: unit(WIDE), program, params=WIDE)
