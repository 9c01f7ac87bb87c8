"""hw/requant.py: the requantizer lanes against sim.arith.requant, and the RQ unit against the
reference machine (every length and alignment, in place, back to back, latencies from the spec)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.requant import Requantizer, RequantUnit
from sim import spec
from sim.arith import requant
from sim.asm import build
from sim.spec import Params

from .harness import check_unit, run_unit

LANES = spec.DEFAULT.LANES
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
M_MAX = (1 << 24) - 1


# --------------------------------------------------------------------------- the lanes alone


def _run_lanes(groups: list[tuple[list[int], int | list[int], int | list[int], int]]) -> list[list[int]]:
    """Feed one group (LANES values of a; m and s, one for every lane or a list of LANES, one per
    lane; relu) per cycle; return the outputs, each read Requantizer.LATENCY cycles after its
    inputs."""
    dut = Requantizer(LANES)
    latency = Requantizer.LATENCY
    out: list[list[int]] = []

    def per_lane(value: int | list[int]) -> list[int]:
        return value if isinstance(value, list) else [value] * LANES

    async def testbench(ctx):
        for cycle in range(len(groups) + latency):
            if cycle < len(groups):
                a, m, s, relu = groups[cycle]
                for lane, (ml, sl) in enumerate(zip(per_lane(m), per_lane(s), strict=True)):
                    ctx.set(dut.a[lane], a[lane])
                    ctx.set(dut.m[lane], ml)
                    ctx.set(dut.s[lane], sl)
                ctx.set(dut.relu, relu)
            if cycle >= latency:
                out.append([ctx.get(dut.y[lane]) for lane in range(LANES)])
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return out


def _check_lanes(cases: list[tuple[int, int, int, int]]) -> None:
    """cases: (a, m, s, relu); consecutive cases with the same factor share a cycle."""
    groups = []
    for (m, s, relu), same in itertools.groupby(cases, key=lambda c: c[1:]):
        values = [c[0] for c in same]
        for k in range(0, len(values), LANES):
            chunk = values[k:k + LANES]
            groups.append((chunk + [0] * (LANES - len(chunk)), m, s, relu))
    got = _run_lanes(groups)
    bad = []
    for (a, m, s, relu), y in zip(groups, got, strict=True):
        want = [requant(v, m, s, bool(relu)) for v in a]
        bad += [(v, m, s, relu, g, w) for v, g, w in zip(a, y, want, strict=True) if g != w]
    assert not bad, f"{len(bad)} mismatches (a, m, s, relu, RTL, reference), first: {bad[:5]}"


EDGE_A = [INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 0, 1, -1, 2, -2, 3, -3,
          127, -127, 128, -128, 255, -255, 1 << 16, -(1 << 16), 1 << 30, -(1 << 30)]
EDGE_M = [0, 1, 2, 3, 1 << 23, (1 << 23) + 1, M_MAX - 1, M_MAX]
EDGE_S = [1, 2, 3, 8, 16, 17, 23, 24, 30, 31, 32, 33, 40, 47, 48, 54, 55, 56, 57, 62, 63]


def test_lanes_on_edge_operands():
    """Every combination of extreme a (+-2**31 ends), m (0 .. 2**24-1) and s (1 .. 63), relu on and off."""
    cases = [(a, m, s, relu) for m in EDGE_M for s in EDGE_S for relu in (0, 1) for a in EDGE_A]
    _check_lanes(cases)


def test_lanes_on_exact_ties_of_both_signs():
    """p = a*m = (2y+1) * 2**(s-1) exactly: half way, rounded away from zero, for every s that
    can produce one, with y around 0 and around the saturation limits +-127."""
    cases = []
    for s in range(1, 64):
        for y in (0, 1, 2, 62, 125, 126, 127, 128, 200):
            for sign in (1, -1):
                odd = sign * (2 * y + 1)
                for m_shift in sorted({0, min(23, s - 1), max(0, s - 1 - 29)}):
                    a_shift = s - 1 - m_shift
                    if not 0 <= m_shift <= 23 or a_shift < 0:
                        continue
                    a = odd << a_shift
                    if INT32_MIN <= a <= INT32_MAX:
                        cases += [(a, 1 << m_shift, s, relu) for relu in (0, 1)]
                        # one unit either side of the tie (m = 1 only: otherwise a +-1 moves p by m)
                        if m_shift == 0:
                            cases += [(a + d, 1, s, 0) for d in (-1, 1) if INT32_MIN <= a + d <= INT32_MAX]
    assert len(cases) > 1000
    _check_lanes(sorted(cases, key=lambda c: c[1:]))


def test_lanes_near_every_rounding_and_saturation_boundary():
    """p within a few m of (y + 1/2) * 2**s for y across -130..130 (both saturation ends), all s."""
    rng = np.random.default_rng(11)
    cases = []
    for s in range(1, 64):
        for _ in range(12):
            m = int(rng.integers(1, M_MAX + 1))
            y = int(rng.integers(-130, 131))
            target = (2 * y + 1) << (s - 1)        # twice (y + 1/2), times 2**(s-1)
            base = target // m
            for a in (base - 1, base, base + 1):
                if INT32_MIN <= a <= INT32_MAX:
                    cases.append((a, m, s, int(rng.integers(2))))
    _check_lanes(sorted(cases, key=lambda c: c[1:]))


def test_lanes_on_every_shifted_value_near_saturation():
    """m = 1 and s = 1 or 2, so that the shifted product q runs through every value from below
    -512 to above 511 with and without the tie correction: each saturation test of stage 6
    (q against 255 and -255, the correction either way) meets all its cases."""
    cases = [(a, 1, s, relu) for s in (1, 2) for relu in (0, 1) for a in range(-1100, 1101)]
    _check_lanes(cases)


def test_lanes_on_random_operands():
    rng = np.random.default_rng(5)
    cases = []
    for _ in range(300):
        m, s, relu = int(rng.integers(0, M_MAX + 1)), int(rng.integers(1, 64)), int(rng.integers(2))
        for _ in range(LANES):
            bits = int(rng.integers(1, 33))
            a = int(rng.integers(-(1 << (bits - 1)), 1 << (bits - 1)))
            cases.append((a, m, s, relu))
    _check_lanes(cases)


def test_lanes_shift_zero_is_a_clamp():
    """s = 0 (a table entry's, GA2.md section 4): y = clamp(a * m), no rounding term; the
    saturation edges 127/128 and -127/-128 and the products near them."""
    cases = [(a, m, 0, relu) for m in (0, 1, 2, 3, 100, M_MAX) for relu in (0, 1)
             for a in (-300, -129, -128, -127, -64, -43, -42, -1, 0, 1, 42, 43, 63, 64, 127, 128, 255, 256,
                       INT32_MIN, INT32_MAX)]
    _check_lanes(cases)


def test_lanes_each_with_its_own_factor():
    """Per output channel: in one cycle every lane has another (m, s), s = 0 and 63 among them,
    and the results are each lane's own (a lane computing with a neighbour's shift or mask fails)."""
    rng = np.random.default_rng(7)
    groups = []
    for _ in range(400):
        a = [int(rng.integers(INT32_MIN, INT32_MAX + 1)) >> int(rng.integers(0, 31)) for _ in range(LANES)]
        s = [int(rng.choice([0, 1, 2, 63, int(rng.integers(0, 64))])) for _ in range(LANES)]
        m = [int(rng.choice([0, 1, M_MAX, int(rng.integers(0, M_MAX + 1))])) for _ in range(LANES)]
        groups.append((a, m, s, int(rng.integers(2))))
    # the same accumulators in every lane, shifts spread over the lanes: masks per lane
    for s0 in range(0, 64 - LANES + 1):
        t = min(23, max(0, s0 - 29))                       # p = a * 2**t = 1.5 * 2**s0, a within int32
        value = ((1 << s0) + (1 << max(s0 - 1, 0))) >> t
        if value > INT32_MAX:                              # s0 > 53: |p| < 2**55 rounds to 0 anyway
            continue
        groups.append(([value, -value] * (LANES // 2), [1 << t] * LANES, list(range(s0, s0 + LANES)), 0))
    got = _run_lanes(groups)
    bad = []
    for (a, m, s, relu), y in zip(groups, got, strict=True):
        want = [requant(v, ml, sl, bool(relu)) for v, ml, sl in zip(a, m, s, strict=True)]
        bad += [(a, m, s, relu, y, want)] if y != want else []
    assert not bad, f"{len(bad)} mismatching cycles (a, m, s, relu, RTL, reference), first: {bad[:3]}"


def test_lanes_rejects_bad_arguments():
    with pytest.raises(ValueError, match="lanes=0"):
        Requantizer(0)


# --------------------------------------------------------------------------- the RQ unit

SMALL = Params(SPAD_WORDS=1024)


def _accumulators(rng: np.random.Generator, n: int) -> np.ndarray:
    """int32 words of every magnitude (bit lengths 1..32, both signs)."""
    bits = rng.integers(1, 33, n)
    return np.array([int(rng.integers(-(1 << (b - 1)), 1 << (b - 1))) for b in bits], dtype=np.int64)


def _factor(rng: np.random.Generator) -> dict[str, int]:
    """A factor whose results spread over -127..127 for accumulators of a typical size."""
    m = int(rng.integers(1 << 23, 1 << 24))
    return {"m": m, "s": int(rng.integers(30, 50)), "relu": int(rng.integers(2))}


@pytest.mark.parametrize("src_align", range(LANES))
def test_unit_every_length_and_alignment(src_align: int):
    """len 1..20 at every destination alignment, from a source at src_align, each result to its own region."""
    params = Params(SPAD_WORDS=2048)
    rng = np.random.default_rng(src_align)
    src = 8 + src_align
    program, dst = [], 40
    for dst_align in range(LANES):
        for n in range(1, 21):
            dst = (dst + LANES - 1) // LANES * LANES + dst_align
            program.append(build("RQ", dst=dst, src=src, len=n, params=params, **_factor(rng)))
            dst += n + 1                           # an untouched word between regions
    assert dst <= params.SPAD_WORDS
    check_unit(lambda: RequantUnit(params), program, spad=_accumulators(rng, params.SPAD_WORDS),
               params=params)


def test_unit_in_place_and_chained_back_to_back():
    """dst == src at every alignment and several lengths, then instructions that read the words the
    previous one has just written (dispatched the cycle after its done)."""
    rng = np.random.default_rng(1)
    program = []
    for align in range(LANES):
        for n in (1, 3, 4, 5, 8, 9, 19, 40):
            start = 64 * align + 4 + align
            program.append(build("RQ", dst=start, src=start, len=n, params=SMALL, **_factor(rng)))
    chain = [(600, 701), (701, 802), (802, 603), (603, 603)]  # each reads the previous one's result
    for src, dst in chain:
        program.append(build("RQ", dst=dst, src=src, len=17, m=M_MAX, s=24, relu=0, params=SMALL))
    check_unit(lambda: RequantUnit(SMALL), program, spad=_accumulators(rng, SMALL.SPAD_WORDS), params=SMALL)


def test_unit_whole_scratchpad_and_last_word():
    p = Params(SPAD_WORDS=256)
    rng = np.random.default_rng(2)
    program = [build("RQ", dst=0, src=0, len=p.SPAD_WORDS, m=12345678, s=40, relu=0, params=p),
               build("RQ", dst=p.SPAD_WORDS - 1, src=p.SPAD_WORDS - 1, len=1, m=M_MAX, s=1, relu=1, params=p),
               build("RQ", dst=p.SPAD_WORDS - 6, src=0, len=5, m=1, s=63, relu=0, params=p)]
    check_unit(lambda: RequantUnit(p), program, spad=_accumulators(rng, p.SPAD_WORDS), params=p)


def test_unit_latency_formula():
    program = [build("RQ", dst=100, src=0, len=n, m=1, s=1, relu=0, params=SMALL)
               for n in (1, 4, 5, 8, 9, 33)]
    _, _, got = run_unit(lambda: RequantUnit(SMALL), program, params=SMALL)
    assert spec.RQ_OVERHEAD == spec.SPAD_READ_LATENCY + Requantizer.LATENCY == 10
    assert got == [-(-ins.len // LANES) + spec.RQ_OVERHEAD for ins in program]


def test_unit_rejects_bad_params():
    with pytest.raises(TypeError, match="params=4"):
        RequantUnit(4)


# --------------------------------------------------------------------------- per output channel (pc = 1)


def _table_words(rng: np.random.Generator, n: int) -> np.ndarray:
    """n table words (GA2.md section 2): mantissas across the range, shifts 0..63 (0 and the
    ends often), bits 31..30 random (the machine ignores them)."""
    m = rng.choice([0, 1, M_MAX, *rng.integers(1 << 23, 1 << 24, 5)], n)
    s = np.where(rng.random(n) < 0.2, rng.choice([0, 1, 63], n), rng.integers(28, 48, n))
    top = rng.integers(0, 4, n)
    return (m | s << 24 | top << 30).astype(np.int64)


def _pc_spad(rng: np.random.Generator, size: int, tables: list[tuple[int, int]]) -> np.ndarray:
    spad = _accumulators(rng, size)
    for tab, c in tables:
        spad[tab:tab + c] = _table_words(rng, c)
    return spad


@pytest.mark.parametrize("channels", [LANES, LANES + 1, 2 * LANES - 1, 2 * LANES, 3 * LANES + 1, 10, 63, 65])
def test_unit_per_channel_every_alignment(channels: int):
    """pc = 1: C from LANES (no lane past the table's end) to sizes that wrap inside a beat at
    every lane, lengths below, at and far above C, source, table and destination at every
    alignment; each result against the reference machine (tests/sim checks it against
    sim.arith.requant entry by entry)."""
    params = Params(SPAD_WORDS=2048)
    rng = np.random.default_rng(channels)
    tab = 1800 + channels % LANES
    program, dst = [], 300
    for k, n in enumerate((1, LANES, channels - 1, channels, channels + 1, 2 * channels + 3, 97)):
        src = 8 + k % LANES
        dst = (dst + LANES - 1) // LANES * LANES + (k + 1) % LANES
        program.append(build("RQ", dst=dst, src=src, len=n, m=0, s=0, relu=k % 2, pc=1, tab=tab + k % 2,
                             C=channels, params=params))
        dst += n + 1
    assert dst <= tab
    check_unit(lambda: RequantUnit(params), program, spad=_pc_spad(rng, params.SPAD_WORDS, [(tab, 80)]),
               params=params)


def test_unit_per_channel_in_place_and_between_per_tensor():
    """pc = 1 in place (dst == src), back to back with per-tensor RQs (the mode and the factor of
    each beat are the instruction's own), and one reading what the previous one wrote."""
    rng = np.random.default_rng(3)
    tab = 900
    program = []
    for k, (n, c) in enumerate(((13, 5), (40, 4), (9, 7), (64, 16), (3, 6))):
        start = 150 * k + k % LANES
        program.append(build("RQ", dst=start, src=start, len=n, m=0, s=0, relu=0, pc=1, tab=tab, C=c,
                             params=SMALL))
        program.append(build("RQ", dst=start + 70, src=start + 1, len=n, m=M_MAX, s=30, relu=1, params=SMALL))
    program.append(build("RQ", dst=800, src=220, len=17, m=0, s=0, relu=1, pc=1, tab=tab + 3, C=9,
                         params=SMALL))
    check_unit(lambda: RequantUnit(SMALL), program, spad=_pc_spad(rng, SMALL.SPAD_WORDS, [(tab, 20)]),
               params=SMALL)


def test_unit_per_channel_table_at_the_scratchpad_end():
    """The table ends on the last word (its beats read past the end wrap and are not used)."""
    p = Params(SPAD_WORDS=256)
    rng = np.random.default_rng(4)
    program = [build("RQ", dst=0, src=0, len=100, m=0, s=0, relu=0, pc=1, tab=p.SPAD_WORDS - 7, C=7,
                     params=p),
               build("RQ", dst=140, src=100, len=30, m=0, s=0, relu=1, pc=1, tab=p.SPAD_WORDS - 4, C=LANES,
                     params=p)]
    check_unit(lambda: RequantUnit(p), program, spad=_pc_spad(rng, p.SPAD_WORDS, [(p.SPAD_WORDS - 7, 7)]),
               params=p)


def test_unit_per_channel_latency_formula():
    program = [build("RQ", dst=100, src=0, len=n, m=0, s=0, relu=0, pc=1, tab=200, C=c, params=SMALL)
               for n, c in ((1, 4), (4, 4), (5, 5), (8, 7), (33, 9))]
    _, _, got = run_unit(lambda: RequantUnit(SMALL), program, params=SMALL)
    assert spec.RQ_PC_CYCLES == 2
    assert got == [-(-ins.len // LANES) + spec.RQ_OVERHEAD + 2 for ins in program]
