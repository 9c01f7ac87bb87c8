"""hw/divider.py: the pipelined divider against Python's // on random and extreme operands,
floor and rounded, at every radix it offers, a new (dividend, divisor) pair every cycle."""

from __future__ import annotations

import itertools
import random

import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from hw.divider import Divider, _naf
from sim import arith


def _run(div: Divider, pairs: list[tuple[int, int]]) -> list[int]:
    """Present one pair per cycle; read each quotient div.latency cycles later."""
    out: list[int] = []

    async def testbench(ctx):
        for cycle in range(len(pairs) + div.latency):
            if cycle < len(pairs):
                ctx.set(div.dividend, pairs[cycle][0])
                ctx.set(div.divisor, pairs[cycle][1])
            await ctx.tick()
            if cycle >= div.latency - 1 and len(out) < len(pairs):
                out.append(ctx.get(div.quotient))

    sim = Simulator(div)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return out


def _want(n: int, d: int, rounded: bool) -> int:
    return (2 * n + d) // (2 * d) if rounded else n // d


def _pairs(divisor_bits: int, max_quotient: int, seed: int, n_random: int = 40) -> list[tuple[int, int]]:
    """Extremes (smallest and largest divisor, quotient 0 and max_quotient, the largest legal
    dividend, exact multiples and their neighbours) and random pairs within the bound."""
    rng = random.Random(seed)
    d_max = (1 << divisor_bits) - 1
    divisors = [1, 2, 3, d_max, d_max - 1, 1 << (divisor_bits - 1), rng.randrange(1, d_max + 1)]
    pairs = []
    for d in sorted({d for d in divisors if 1 <= d <= d_max}):
        top = (max_quotient + 1) * d - 1  # the largest dividend with floor(N / D) <= max_quotient
        pairs += [(0, d), (d - 1, d), (d, d), (top, d), (max_quotient * d, d), (top // 2, d)]
        # half-way points: the rounding boundary (q + 1/2) * d and its neighbours
        q = rng.randrange(max_quotient + 1)
        half = q * d + d // 2
        pairs += [(v, d) for v in (half - 1, half, half + 1) if 0 <= v <= top]
    for _ in range(n_random):
        d = rng.randrange(1, d_max + 1)
        pairs.append((rng.randrange((max_quotient + 1) * d), d))
    return pairs


@pytest.mark.parametrize("digit_bits", [1, 2, 3])
@pytest.mark.parametrize("rounded", [False, True])
def test_softmax_sizes(digit_bits, rounded):
    """The softmax unit's shape: a 23-bit sum, quotients up to 65536."""
    div = Divider(divisor_bits=23, max_quotient=arith.Q16_ONE, digit_bits=digit_bits, rounded=rounded)
    pairs = _pairs(23, arith.Q16_ONE, seed=digit_bits)
    assert _run(div, pairs) == [_want(n, d, rounded) for n, d in pairs]


@pytest.mark.parametrize(("divisor_bits", "max_quotient", "digit_bits", "rounded"), [
    (1, 1, 1, False),     # the smallest divider
    (4, 7, 2, True),      # the top stage's digit reaches 3: an extra stage forms 3D
    (8, 255, 3, False),   # radix 8 with a full-width top stage: the extra stage again
    (12, 100, 3, True),
    (5, 2, 2, False),     # fewer quotient bits than one stage holds
])
def test_other_shapes(divisor_bits, max_quotient, digit_bits, rounded):
    div = Divider(divisor_bits=divisor_bits, max_quotient=max_quotient, digit_bits=digit_bits,
                  rounded=rounded)
    pairs = _pairs(divisor_bits, max_quotient, seed=divisor_bits, n_random=25)
    assert _run(div, pairs) == [_want(n, d, rounded) for n, d in pairs]


def test_softmax_rounding_identity():
    """floor((e * 65536 + floor(z / 2)) / z) == floor(e * 65536 / z + 1/2), what the softmax
    unit asks the rounded divider for, on random and edge (e, z)."""
    rng = random.Random(5)
    cases = [(65536, 65536), (1, 65537), (65535, 131071), (0, 99), (32768, 65537)]
    cases += [(rng.randrange(65537), rng.randrange(65536, 64 * 65536 + 1)) for _ in range(20000)]
    for e, z in cases:
        n = e * arith.Q16_ONE
        assert (n + z // 2) // z == _want(n, z, rounded=True), (e, z)


def _layout_only(**kwargs) -> Divider:
    div = Divider(**kwargs)
    Fragment.get(div, None)   # elaborated, not simulated: the test reads its layout
    return div


def test_latency_and_layout():
    div = _layout_only(divisor_bits=23, max_quotient=65536, digit_bits=2, rounded=True)
    assert div.stage_bits == [2] * 9          # 18 raw quotient bits
    assert div.stage_digits[0] == 2           # floor(2N / D) <= 131073: the top digit is 0..2
    assert not div.prestage and div.latency == 9
    assert div.quotient_bits == 17 and div.dividend_bits == 40
    assert _layout_only(divisor_bits=23, max_quotient=65536, digit_bits=1, rounded=True).latency == 18
    assert _layout_only(divisor_bits=23, max_quotient=65536, digit_bits=3, rounded=True).latency == 7


def test_naf():
    for j in range(1, 64):
        terms = _naf(j)
        assert sum(sign << shift for sign, shift in terms) == j
        shifts = [shift for _, shift in terms]
        assert all(b - a >= 2 for a, b in itertools.pairwise(shifts)), j


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"divisor_bits": 0, "max_quotient": 1}, r"divisor_bits=0 must be a positive int"),
    ({"divisor_bits": 4, "max_quotient": 0}, r"max_quotient=0 must be a positive int"),
    ({"divisor_bits": 4, "max_quotient": 3, "digit_bits": 4}, r"digit_bits=4 must be an int from 1 to 3"),
    ({"divisor_bits": 4, "max_quotient": 3, "rounded": 1}, r"rounded=1 must be a bool"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Divider(**kwargs)
