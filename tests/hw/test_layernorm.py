"""hw/layernorm.py: the LN unit against the reference machine (sim.arith.layernorm_fixed, every
word) and the spec's latency, on rows that reach the corners of the arithmetic: constant rows
(D = 0, r = 0), the largest variances, the longest row, every length and alignment, eps at both
ends, the bias wrapping, in place."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hw.layernorm import LayerNormUnit, leading_zero_pairs
from sim import arith, spec
from sim.asm import build
from sim.spec import Params

from .harness import check_idle_outputs, check_unit, expected, run_unit

SMALL = Params(SPAD_WORDS=2048)
"""A smaller scratchpad keeps the simulator quick; nothing here depends on its size."""
MASK = 0xFFFFFFFF


def _program(rows: list[list[int]], params: Params, *, seed: int = 0, eps: list[int] | None = None,
             in_place: str = "") -> tuple[list, list[int]]:
    """One LN per row, back to back: rows from word 0 (src at every alignment), each with its
    own random int32 bias row and result region after them (dst at every alignment); with
    ``in_place`` = "src" or "bias" the result overwrites that row."""
    rng = random.Random(seed)
    spad = [rng.randrange(1 << 32) for _ in range(params.SPAD_WORDS)]   # upper bits: noise
    prog, at = [], 0
    for k, row in enumerate(rows):
        n = len(row)
        src = at + rng.randrange(4)
        bias = src + n + rng.randrange(4)
        dst = bias + n + rng.randrange(4)
        at = dst + n
        assert at <= params.SPAD_WORDS, "the rows do not fit the test's scratchpad"
        for i, x in enumerate(row):
            spad[src + i] = (spad[src + i] & ~0xFF | (x & 0xFF)) & MASK     # the low byte is x
        dst = {"src": src, "bias": bias}.get(in_place, dst)
        e = eps[k] if eps else rng.choice((0, 1, rng.randrange(1 << 20), MASK))
        prog.append(build("LN", dst=dst, src=src, len=n, bias=bias, eps=e, params=params))
    return prog, spad


def _check(rows: list[list[int]], params: Params = SMALL, **kwargs) -> None:
    prog, spad = _program(rows, params, **kwargs)
    check_unit(lambda: LayerNormUnit(params), prog, spad, params=params)


def test_by_hand():
    """sim.arith's hand-worked rows (tests/sim/test_arith.py): [1, -1] -> +-65536 and
    [3, 0, 0, 0] -> 113512, -37837 x3, plus a bias of 0 and of 7."""
    p = SMALL
    spad = [0] * p.SPAD_WORDS
    spad[0:2] = [1, MASK]                # 1, -1
    spad[4:8] = [3, 0, 0, 0]
    spad[10:14] = [7, 7, 7, 7]
    prog = [build("LN", dst=100, src=0, len=2, bias=20, eps=0, params=p),
            build("LN", dst=110, src=4, len=4, bias=10, eps=0, params=p)]
    got, _, lat = run_unit(lambda: LayerNormUnit(p), prog, spad=spad, params=p)
    assert got[100:102].tolist() == [65536, (-65536) & MASK]
    assert got[110:114].tolist() == [113519] + [(-37830) & MASK] * 3
    assert lat == [1 * 2 + spec.LN_OVERHEAD, 1 * 2 + spec.LN_OVERHEAD] == [67, 67]


@pytest.mark.parametrize(("name", "row"), [
    ("length 1", [37]),
    ("length 1, -128", [-128]),
    ("constant: D = 0 with eps = 0", [5] * 7),
    ("constant -128, a 4k + 1 tail", [-128] * 9),
    ("127 against -128", [127, -128]),
    ("one outlier: |z| = sqrt(N - 1)", [127] + [-128] * 40),
    ("small variance", [0] * 30 + [1]),
    ("both extremes, alternating", [127, -128] * 16 + [127]),
])
def test_corner_rows(name, row):
    _check([row], eps=[0], seed=len(row))
    _check([row], eps=[MASK], seed=len(row) + 1)


def test_every_length_and_alignment():
    """Lengths 1..24 (every tail: 1..4 lanes in the last beat), random values, src, bias and dst
    at every alignment, eps drawn, back to back."""
    rng = random.Random(3)
    _check([[rng.randint(-128, 127) for _ in range(n)] for n in range(1, 25)], seed=3)


def test_in_place_over_the_row_and_over_the_bias():
    rng = random.Random(4)
    rows = [[rng.randint(-128, 127) for _ in range(n)] for n in (5, 12, 33)]
    _check(rows, seed=4, in_place="src")
    _check(rows, seed=5, in_place="bias")


def test_the_longest_row():
    """N = LN_MAX_LEN: the widest sums (S1 = -2^17 for a row of -128s, the end of its 18 bits;
    127 N = 130,048 for 127s), the largest |z| (sqrt(1023)) and the largest V, with eps = 0 and
    the largest eps."""
    p = Params(SPAD_WORDS=16384)
    rng = random.Random(6)
    n = spec.LN_MAX_LEN
    rows = [[127] + [-128] * (n - 1), [rng.choice((-128, 127)) for _ in range(n)], [-128] * n, [127] * n]
    _check(rows, params=p, seed=6, eps=[0, MASK, 1, 0])


def test_the_values_reach_every_stage():
    """The reference's intermediate values for the rows above span the ranges the unit's widths
    are cut to (so that a narrower register would show): k from 0 up, the shift 3..24."""
    shifts = set()
    for row in ([127, -128] * 512, [1, -1], [1] + [0] * 1023, [2] * 5 + [3]):
        for eps in (0, MASK):
            sol = arith.ln_solve(row, eps)
            shifts.add(sol.shift)
    assert min(shifts) <= 8 and max(shifts) >= 20


@pytest.mark.parametrize("lanes", [8, pytest.param(16, marks=pytest.mark.slow)])
def test_wider_lanes(lanes):
    p = Params(SPAD_WORDS=2048, LANES=lanes, T=4)
    rng = random.Random(lanes)
    lengths = (1, lanes - 1, lanes, lanes + 1, 3 * lanes + 5)
    rows = [[rng.randint(-128, 127) for _ in range(n)] for n in lengths]
    _check(rows, params=p, seed=lanes)


def test_idle_outputs_are_zero():
    prog, spad = _program([[3, 1, -4, 1, -5, 9], [2, 7]], SMALL, seed=9)
    check_idle_outputs(lambda: LayerNormUnit(SMALL), prog, spad=spad, params=SMALL, idle_cycles=90)


def test_latency_formula():
    p = SMALL
    prog, spad = _program([[1] * n for n in (1, 4, 5, 8, 9, 64)], p, seed=2)
    _, _, lat = expected(prog, spad, params=p)
    assert lat == [2 * -(-len_ // 4) + spec.LN_OVERHEAD for len_ in (1, 4, 5, 8, 9, 64)]
    assert lat[-1] == 97 <= 2 * 64 + 50          # the GPT's d_model: 97 cycles against 2N + 50 = 178


@pytest.mark.parametrize("value", [0, 1, 2, 3, 4, 5, 1 << 20, (1 << 42) - 1, 1 << 42, (1 << 44) - 1])
def test_leading_zero_pairs(value):
    """The count of leading zero pairs of a 44-bit value, against the formula of
    sim.arith.ln_solve: (44 - bits) // 2 (22 for 0)."""
    from amaranth.hdl import Module, Signal
    from amaranth.sim import Simulator

    m = Module()
    d = Signal(44)
    k = Signal(6)
    m.d.comb += k.eq(leading_zero_pairs(d))
    got = {}

    async def bench(ctx):
        ctx.set(d, value)
        got["k"] = ctx.get(k)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert got["k"] == (44 - value.bit_length()) // 2


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params=3"):
        LayerNormUnit(3)


def test_numpy_reference_matches_the_machine_semantics():
    prog, spad = _program([[9, -9, 0]], SMALL, seed=1, eps=[0])
    want, _, _ = expected(prog, spad, params=SMALL)
    ins = prog[0]
    y = arith.layernorm_fixed([9, -9, 0], 0)
    bias = [int(v) - (1 << 32) if v >> 31 else int(v) for v in spad[ins.bias:ins.bias + 3]]
    assert want[ins.dst:ins.dst + 3].tolist() == [(a + b) & MASK for a, b in zip(y, bias, strict=True)]
    assert np.array_equal(want[:ins.dst], np.array(spad[:ins.dst], dtype=np.uint32))
