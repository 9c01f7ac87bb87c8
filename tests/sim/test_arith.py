"""sim/arith.py on hand-worked values (GA2.md section 4), and scalar versus numpy forms."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import arith
from sim.arith import (
    EXP_LUT,
    layernorm_fixed,
    layernorm_fixed_array,
    ln_solve,
    mantissa_shift,
    pack_rq_pair,
    quantize,
    quantize_array,
    requant,
    requant_array,
    round_half_away,
    round_half_away_array,
    sat_add,
    sat_add_array,
    softmax_fixed,
    softmax_fixed_array,
    unpack_rq_pair,
    unpack_rq_pair_array,
    vmax,
    vmax_array,
)
from sim.spec import LN_MAX_LEN

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
MANTISSA = st.integers(0, (1 << 24) - 1)
SHIFT = st.integers(1, 63)
TABLE_SHIFT = st.integers(0, 63)   # a table entry's s: 0 too
STORED_INT8 = st.integers(-128, 127)  # a stored byte may be -128 although no operation produces it


# --------------------------------------------------------------------------- rounding and quantize


@pytest.mark.parametrize(("x", "expected"), [
    (0.5, 1), (-0.5, -1), (1.5, 2), (-1.5, -2), (2.5, 3), (-2.5, -3),  # ties go away from zero
    (0.49, 0), (-0.49, 0), (0.0, 0), (-0.0, 0), (2.4999, 2), (-2.5001, -3),
])
def test_round_half_away(x, expected):
    assert round_half_away(x) == expected
    assert round_half_away_array(np.array([x]))[0] == expected


@pytest.mark.parametrize(("v", "scale", "expected"), [
    (0.5, 1.0, 1), (-0.5, 1.0, -1),          # the 0.5 and -0.5 levels round away from zero
    (0.25, 0.5, 1), (-0.25, 0.5, -1),        # the same ties through a scale
    (1.5, 1.0, 2), (-1.5, 1.0, -2), (2.5, 1.0, 3), (-2.5, 1.0, -3),
    (0.75, 0.5, 2), (0.74, 0.5, 1),
    (126.5, 1.0, 127), (127.4, 1.0, 127),    # up to the top level
    (127.5, 1.0, 127), (1000.0, 1.0, 127),   # saturation at the top
    (-127.5, 1.0, -127), (-128.0, 1.0, -127), (-1000.0, 1.0, -127),  # and at the bottom: never -128
    (1e30, 1.0, 127), (-1e30, 1.0, -127),    # beyond int64
    (math.inf, 1.0, 127), (-math.inf, 1.0, -127),
    (1.0, 1e-310, 127),                      # the quotient overflows to inf
])
def test_quantize_hand_values(v, scale, expected):
    assert quantize(v, scale) == expected
    assert quantize_array(np.array([v]), scale).tolist() == [expected]


@pytest.mark.parametrize("scale", [0.0, -1.0, math.inf, math.nan])
def test_quantize_refuses_a_bad_scale(scale):
    with pytest.raises(ValueError, match="scale must be positive and finite"):
        quantize(1.0, scale)
    with pytest.raises(ValueError, match="scale must be positive and finite"):
        quantize_array([1.0], scale)


def test_quantize_refuses_nan():
    with pytest.raises(ValueError, match="quantize"):
        quantize(math.nan, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        quantize_array([0.0, math.nan], 1.0)


# --------------------------------------------------------------------------- mantissa_shift


def test_mantissa_shift_ga2_examples():
    # 127/65536 = 127 * 2**-16; 127 * 2**17 = 16646144 lies in [2**23, 2**24), so s = 16 + 17 = 33
    assert mantissa_shift(127 / 65536) == (16646144, 33)
    assert 127 * 2**17 == 16646144
    # GA2.md's second example: the factor 12345120 / 2**32, printed there rounded as 0.00287432
    assert mantissa_shift(12345120 / 2**32) == (12345120, 32)
    # the rounded decimal itself: 0.00287432 * 2**32 = 12345110.398..., so m = 12345110
    assert mantissa_shift(0.00287432) == (12345110, 32)


@pytest.mark.parametrize(("x", "expected"), [
    (1.0, (1 << 23, 23)),                       # 2**23 / 2**23
    (0.5, (1 << 23, 24)),
    (3.0, (3 << 22, 22)),                       # 12582912 / 2**22
    (1 - 2**-24, ((1 << 24) - 1, 24)),          # x * 2**24 = 2**24 - 1 exactly: no rounding
    (1 - 2**-25, (1 << 23, 23)),                # x * 2**24 = 2**24 - 0.5: the tie rounds up to 2**24
    (1 - 2**-26, (1 << 23, 23)),                # x * 2**24 = 2**24 - 0.25: rounds up to 2**24
])
def test_mantissa_shift_hand_values(x, expected):
    assert mantissa_shift(x) == expected


@pytest.mark.parametrize("x", [0.0, -1.0, math.inf, math.nan])
def test_mantissa_shift_refuses_non_positive(x):
    with pytest.raises(ValueError, match="positive and finite"):
        mantissa_shift(x)


@given(st.floats(min_value=1e-12, max_value=1e6))
def test_mantissa_shift_brackets_and_rounds(x):
    m, s = mantissa_shift(x)
    assert 1 << 23 <= m < 1 << 24
    # m / 2**s is x to within half a unit of the mantissa's last place (exact rational check)
    error = abs(Decimal(m) - Decimal(x) * (Decimal(2) ** s))
    assert error <= Decimal("0.5")


# --------------------------------------------------------------------------- requant


@pytest.mark.parametrize(("a", "m", "s", "relu", "expected"), [
    (1, 3, 1, False, 2), (-1, 3, 1, False, -2),      # 1.5 and -1.5: ties away from zero
    (1, 1, 1, False, 1), (-1, 1, 1, False, -1),      # 0.5 and -0.5
    (2, 1, 2, False, 1), (-2, 1, 2, False, -1),      # 0.5 and -0.5 again
    (1, 1, 2, False, 0), (-1, 1, 2, False, 0),       # 0.25 rounds to 0
    (3, 1, 2, False, 1), (-3, 1, 2, False, -1),      # 0.75 rounds to 1
    (5, 1, 1, False, 3), (-5, 1, 1, False, -3),      # 2.5
    (0, (1 << 24) - 1, 1, False, 0),
    (1000, 16646144, 33, False, 2),                  # 1000 * 127/65536 = 1.94
    (-1000, 16646144, 33, False, -2),
    (254, 1, 1, False, 127), (255, 1, 1, False, 127),      # 127 and 127.5 -> 128 -> saturates
    (-254, 1, 1, False, -127), (-255, 1, 1, False, -127),  # and at the bottom
    ((1 << 31) - 1, (1 << 24) - 1, 1, False, 127),          # the largest product, 55 bits
    (-(1 << 31), (1 << 24) - 1, 1, False, -127),
    ((1 << 31) - 1, (1 << 24) - 1, 63, False, 0),           # 2**55 / 2**63 rounds to 0
    (-10, 1, 1, True, 0), (10, 1, 1, True, 5),               # relu
    (-1, 1, 1, True, 0), (1, 1, 1, True, 1),                 # relu after rounding the tie
    (-(1 << 31), (1 << 24) - 1, 1, True, 0),
])
def test_requant_hand_values(a, m, s, relu, expected):
    assert requant(a, m, s, relu) == expected
    assert requant_array(np.array([a]), m, s, relu).tolist() == [expected]


@pytest.mark.parametrize(("a", "m", "s", "relu", "expected"), [
    (5, 3, 0, False, 15), (-5, 3, 0, False, -15),      # s = 0: y = p, no rounding term
    (42, 1, 0, False, 42), (0, (1 << 24) - 1, 0, False, 0),
    (127, 1, 0, False, 127), (128, 1, 0, False, 127),  # saturates at the top
    (-127, 1, 0, False, -127), (-128, 1, 0, False, -127), (-50, 3, 0, False, -127),
    (-5, 3, 0, True, 0), (5, 3, 0, True, 15),          # relu
    ((1 << 31) - 1, (1 << 24) - 1, 0, False, 127),
])
def test_requant_shift_zero(a, m, s, relu, expected):
    # GA2.md section 4: a table entry's s = 0 means shift 0 and rounding term 0, y = clamp(p)
    assert requant(a, m, s, relu) == expected
    assert requant_array(np.array([a]), m, s, relu).tolist() == [expected]


def test_requant_array_takes_a_pair_per_element():
    # per channel: element i with its own (m, s); worked by hand from the scalar cases above
    a = np.array([1, -1, 1000, 5, 254])
    m = np.array([3, 3, 16646144, 3, 1])
    s = np.array([1, 1, 33, 0, 1])
    assert requant_array(a, m, s).tolist() == [2, -2, 2, 15, 127]
    assert requant_array(a, m, s, relu=True).tolist() == [2, 0, 2, 15, 127]
    # a row of channels broadcast over pixels
    acc = np.array([[1, 2], [-1, -2]])
    assert requant_array(acc, np.array([1, 3]), np.array([1, 2])).tolist() == [[1, 2], [-1, -2]]


# --------------------------------------------------------------------------- the requantization table


@pytest.mark.parametrize(("m", "s", "word"), [
    (0, 0, 0),
    (16646144, 33, 0x21FE0000),          # 127/65536 (GA2.md section 4): 0xFE0000 | 33 << 24
    (12345120, 32, 0x20BC5F20),          # 12345120 = 0xBC5F20, 32 << 24 = 0x20000000
    ((1 << 24) - 1, 63, 0x3FFFFFFF),     # every bit the machine reads
    (1, 0, 1), (0, 1, 1 << 24),          # the lowest bit of each
])
def test_pack_rq_pair_by_hand(m, s, word):
    assert pack_rq_pair(m, s) == word
    assert unpack_rq_pair(word) == (m, s)
    # bits 31..30 are ignored, and a word may be given signed
    for top in (1, 2, 3):
        assert unpack_rq_pair(word | top << 30) == (m, s)
    assert unpack_rq_pair((word | 3 << 30) - (1 << 32)) == (m, s)


def test_rq_entry_layout_follows_the_rq_fields():
    from sim import spec
    widths = {f.name: f.width for f in spec.BY_NAME["RQ"].fields}
    assert (spec.RQ_ENTRY_M_BITS, spec.RQ_ENTRY_S_BITS) == (widths["m"], widths["s"]) == (24, 6)
    assert spec.RQ_ENTRY_S_LSB == 24 and spec.RQ_ENTRY_BITS == 30


@pytest.mark.parametrize(("m", "s", "name"), [
    (1 << 24, 0, "m"), (-1, 0, "m"), (0, 64, "s"), (0, -1, "s"), (1.0, 0, "m"), (0, True, "s"),
])
def test_pack_rq_pair_refuses(m, s, name):
    with pytest.raises(ValueError, match=rf"pack_rq_pair: {name}="):
        pack_rq_pair(m, s)


@pytest.mark.parametrize("word", [1 << 32, -(1 << 31) - 1, 1.5, None])
def test_unpack_rq_pair_refuses(word):
    with pytest.raises(ValueError, match="unpack_rq_pair: word="):
        unpack_rq_pair(word)


@given(st.lists(st.tuples(MANTISSA, st.integers(0, 63)), min_size=1, max_size=20), st.integers(0, 3))
def test_rq_pairs_round_trip(pairs, top):
    words = [pack_rq_pair(m, s) | top << 30 for m, s in pairs]
    assert [unpack_rq_pair(w) for w in words] == pairs
    m, s = unpack_rq_pair_array(np.array(words, dtype=np.uint32))
    assert list(zip(m.tolist(), s.tolist(), strict=True)) == pairs


# --------------------------------------------------------------------------- saturating add


@pytest.mark.parametrize(("a", "b", "expected"), [
    (5, -3, 2), (100, 27, 127), (100, 28, 127), (100, 100, 127), (127, 127, 127),
    (-100, -27, -127), (-100, -28, -127), (-100, -100, -127), (-128, 0, -127), (-128, -128, -127),
    (127, -127, 0),
])
def test_sat_add(a, b, expected):
    assert sat_add(a, b) == expected
    assert sat_add_array(np.array([a]), np.array([b])).tolist() == [expected]


@pytest.mark.parametrize(("a", "b", "relu", "expected"), [
    (5, -3, False, 5), (-3, 5, False, 5), (7, 7, False, 7), (127, -128, False, 127),
    (-128, -128, False, -128),                    # a stored -128 passes through: nothing saturates
    (-128, -127, False, -127), (126, 127, False, 127),
    (-5, -3, True, 0), (-128, -128, True, 0), (4, -9, True, 4),
])
def test_vmax(a, b, relu, expected):
    assert vmax(a, b, relu) == expected
    assert vmax_array(np.array([a]), np.array([b]), relu).tolist() == [expected]


# --------------------------------------------------------------------------- the exp table


def test_exp_table_endpoints():
    assert len(EXP_LUT) == 256
    assert EXP_LUT[0] == 65536                 # exp(0) = 1.0 in Q16
    assert EXP_LUT[1] == 61565                 # 65536 * exp(-1/16) = 61565.37
    assert EXP_LUT[16] == 24109                # 65536 / e = 24109.13
    assert EXP_LUT[188] == 1                   # 65536 * exp(-11.75) = 0.517
    assert EXP_LUT[189] == 0                   # 65536 * exp(-11.8125) = 0.485
    assert EXP_LUT[254] == 0                   # the largest gap of two int8 levels, 127 - (-127)
    assert EXP_LUT[255] == 0                   # only from a stored -128


def test_exp_table_against_decimal_exp():
    getcontext().prec = 40
    for d in range(256):
        exact = Decimal(65536) * (Decimal(-d) / 16).exp()
        assert EXP_LUT[d] == int((exact + Decimal("0.5")).to_integral_value(rounding="ROUND_FLOOR")), d
    assert all(a >= b for a, b in itertools.pairwise(EXP_LUT))
    assert arith.EXP_LUT_ARRAY.tolist() == list(EXP_LUT)


# --------------------------------------------------------------------------- softmax


@pytest.mark.parametrize(("n", "each"), [
    (1, 65536), (2, 32768), (3, 21845), (4, 16384), (64, 1024),  # 65536/3 = 21845.33
])
@pytest.mark.parametrize("value", [-128, -5, 0, 127])
def test_softmax_all_equal(n, each, value):
    assert softmax_fixed([value] * n) == [each] * n
    assert softmax_fixed_array(np.full((2, n), value)).tolist() == [[each] * n] * 2


@pytest.mark.parametrize("value", [-128, -127, 0, 1, 127])
def test_softmax_length_one(value):
    assert softmax_fixed([value]) == [65536]


def test_softmax_one_dominant():
    # the largest gap of two int8 levels: 127 - (-127) = 254, LUT[254] = 0
    assert softmax_fixed([127, -127]) == [65536, 0]
    assert softmax_fixed([-127, 127]) == [0, 65536]
    assert softmax_fixed([127] + [-127] * 63) == [65536] + [0] * 63
    # a stored -128 gives the gap 255
    assert softmax_fixed([127, -128]) == [65536, 0]
    assert softmax_fixed([-128, 127, -128]) == [0, 65536, 0]


def test_softmax_two_levels_by_hand():
    # Q4.4 row [1.0, 0.0]: e = [65536, 24109], z = 89645, z // 2 = 44822
    # p0 = (65536 * 65536 + 44822) // 89645 = 4295012118 // 89645 = 47911 (89645 * 47911 = 4294981595)
    # p1 = (24109 * 65536 + 44822) // 89645 = 1580052246 // 89645 = 17625 (89645 * 17625 = 1579993125)
    assert softmax_fixed([16, 0]) == [47911, 17625]
    assert softmax_fixed_array(np.array([16, 0])).tolist() == [47911, 17625]
    assert abs(47911 / 65536 - math.exp(1) / (1 + math.exp(1))) < 1e-4


def test_softmax_equal_maxima_share():
    # gap 16: e = [65536, 65536, 24109], z = 155181, z // 2 = 77590
    # p0 = p1 = 4295044886 // 155181 = 27677 (155181 * 27677 = 4294944537)
    # p2 = (24109 * 65536 + 77590) // 155181 = 1580085014 // 155181 = 10182 (155181 * 10182 = 1580052942)
    assert softmax_fixed([5, 5, -11]) == [27677, 27677, 10182]


def test_softmax_refuses_an_empty_row():
    with pytest.raises(ValueError, match="empty row"):
        softmax_fixed([])
    with pytest.raises(ValueError, match="empty row"):
        softmax_fixed_array(np.zeros((3, 0), dtype=np.int64))


def _softmax_brute(row: list[int]) -> list[int]:
    """GA2.md section 4 written out again, with the table from the exponential directly."""
    mx = max(row)
    e = [math.floor(65536 * math.exp(-(mx - x) / 16) + 0.5) for x in row]
    z = sum(e)
    return [(ei * 65536 + z // 2) // z for ei in e]


@given(st.lists(STORED_INT8, min_size=1, max_size=64))
def test_softmax_matches_the_definition(row):
    p = softmax_fixed(row)
    assert p == _softmax_brute(row)
    assert abs(sum(p) - 65536) <= len(row)        # each p_i is rounded to the nearest unit


# --------------------------------------------------------------------------- scalar versus numpy


@given(st.lists(st.floats(allow_nan=False, allow_infinity=True, width=64), min_size=1, max_size=30),
       st.floats(min_value=1e-6, max_value=1e6))
def test_quantize_forms_agree(values, scale):
    assert quantize_array(np.array(values), scale).tolist() == [quantize(v, scale) for v in values]


@given(st.lists(INT32, min_size=1, max_size=30), MANTISSA, TABLE_SHIFT, st.booleans())
def test_requant_forms_agree(values, m, s, relu):
    expected = [requant(a, m, s, relu) for a in values]
    assert requant_array(np.array(values, dtype=np.int64), m, s, relu).tolist() == expected
    # and the definition, with exact Python integers (s = 0: no rounding term)
    for a, y in zip(values, expected, strict=True):
        p = a * m
        r = (abs(p) + (2 ** (s - 1) if s else 0)) // 2**s * (1 if p >= 0 else -1)
        r = max(-127, min(127, r))
        assert y == (max(0, r) if relu else r)


@given(st.lists(st.tuples(INT32, MANTISSA, TABLE_SHIFT), min_size=1, max_size=30), st.booleans())
def test_requant_array_per_element_pairs_agree(triples, relu):
    a, m, s = (np.array(column, dtype=np.int64) for column in zip(*triples, strict=True))
    assert requant_array(a, m, s, relu).tolist() == [requant(*t, relu) for t in triples]


@given(st.lists(st.tuples(STORED_INT8, STORED_INT8), min_size=1, max_size=30))
def test_sat_add_forms_agree(pairs):
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    assert sat_add_array(a, b).tolist() == [sat_add(x, y) for x, y in pairs]


@settings(max_examples=50)
@given(st.integers(1, 5).flatmap(
    lambda rows: st.integers(1, 64).flatmap(
        lambda n: st.lists(st.lists(STORED_INT8, min_size=n, max_size=n), min_size=rows, max_size=rows))))
def test_softmax_forms_agree(rows):
    assert softmax_fixed_array(np.array(rows)).tolist() == [softmax_fixed(r) for r in rows]


@given(st.lists(st.floats(min_value=-1e12, max_value=1e12), min_size=1, max_size=30))
def test_round_forms_agree(values):
    assert round_half_away_array(np.array(values)).tolist() == [round_half_away(v) for v in values]


# --------------------------------------------------------------------------- LayerNorm (GA2.md section 4)


def test_layernorm_by_hand():
    # [1, -1]: S1 = 0, S2 = 2, V = 2*2 - 0 = 4, D = 256*4 = 1024 = 2^10; k = (44 - 11) // 2 = 16,
    # D * 4^16 = 2^42, r = 2^21, R = 2^44 / 2^21 = 2^23, shift 24 - 16 = 8; d = +-2:
    # y = +-2 * 2^23 / 2^8 = +-2^16 (z = +-1)
    assert ln_solve([1, -1], 0) == arith.LnSolve(n=2, s1=0, s2=2, d=1024, k=16, root=1 << 21,
                                                  recip=1 << 23, shift=8)
    assert layernorm_fixed([1, -1], 0) == [65536, -65536]
    # [3, 0, 0, 0]: S1 = 3, S2 = 9, V = 4*9 - 9 = 27, D = 6912 (13 bits): k = 15, r = isqrt(6912 * 2^30)
    # = 2724280, R = 2^44 // 2724280 = 6457554, shift 9; d = 4*3 - 3 = 9 and 4*0 - 3 = -3:
    # 9 * 6457554 / 512 = 113511.69 -> 113512 (sqrt(3) * 65536 = 113511.68),
    # -3 * 6457554 / 512 = -37837.23 -> -37837 (-65536 / sqrt(3) = -37837.23)
    sol = ln_solve([3, 0, 0, 0], 0)
    assert (sol.s1, sol.s2, sol.d, sol.k) == (3, 9, 6912, 15)
    assert (sol.root, sol.recip, sol.shift) == (2724280, 6457554, 9)
    assert layernorm_fixed([3, 0, 0, 0], 0) == [113512, -37837, -37837, -37837]
    # eps: D = 1024 + 3072 = 4096 = 4 * 1024, so the root doubles and y halves: z = 1/2
    assert layernorm_fixed([1, -1], 3072) == [32768, -32768]


@pytest.mark.parametrize("row", [[5] * 7, [-128], [127], [0] * 1024, [-128] * 1024])
@pytest.mark.parametrize("eps", [0, 1, (1 << 32) - 1])
def test_layernorm_of_a_constant_row_is_zero(row, eps):
    """Every d_i = N*x_i - S1 is 0, whatever the root and reciprocal (with eps = 0 D is 0, r = 0
    and R is set to 0)."""
    assert layernorm_fixed(row, eps) == [0] * len(row)
    if eps == 0:
        assert (ln_solve(row, eps).root, ln_solve(row, eps).recip) == (0, 0)


LN_ROW = st.integers(1, LN_MAX_LEN).flatmap(lambda n: st.one_of(
    st.lists(STORED_INT8, min_size=n, max_size=n),                     # spread over the whole range
    st.lists(st.integers(-1, 1), min_size=n, max_size=n),              # small variance
    st.lists(st.sampled_from([-128, 127]), min_size=n, max_size=n)))   # the largest variances
"""A row for LN: 1 to LN_MAX_LEN int8 values, spread, close together, or at the two extremes."""
EPS = st.one_of(st.just(0), st.integers(0, 1 << 12), st.integers(0, (1 << 32) - 1))


def _exact_z(row: list[int], eps: int) -> list[Decimal]:
    """z_i = (x_i - mean) / sqrt(var + eps / (256 N^2)) = 16 * d_i / sqrt(D), to 60 digits (decimal
    arithmetic is exact software arithmetic, the same on every CPU)."""
    getcontext().prec = 60
    n, s1 = len(row), sum(row)
    d = 256 * (n * sum(x * x for x in row) - s1 * s1) + eps
    if d == 0:
        return [Decimal(0)] * n
    root = Decimal(d).sqrt()
    return [16 * Decimal(n * x - s1) / root for x in row]


@settings(max_examples=60, deadline=None)
@given(LN_ROW, EPS)
def test_layernorm_error_bound(row, eps):
    """GA2.md section 4's bound: |y_i - 2^16 z_i| < 1/2 + |z_i| / 32 (2^-17 + |z_i| 2^-21 in z), and
    the ranges the hardware's widths rely on."""
    _check_bound(row, eps)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(LN_ROW, EPS)
def test_layernorm_error_bound_at_length(row, eps):
    """The same on 500 rows (make test-all; 2,000 passed too, in 4 minutes)."""
    _check_bound(row, eps)


def _check_bound(row: list[int], eps: int) -> None:
    y = layernorm_fixed(row, eps)
    for yi, zi in zip(y, _exact_z(row, eps), strict=True):
        assert abs(yi - 65536 * zi) < Decimal("0.5") + abs(zi) / 32, (yi, zi)
        assert abs(yi) < (1 << 21) + 2
    sol = ln_solve(row, eps)
    if sol.d:
        assert 1 << 42 <= sol.d << 2 * sol.k < 1 << 44
        assert 1 << 21 <= sol.root < 1 << 22 and 1 << 22 < sol.recip <= 1 << 23
        assert 3 <= sol.shift <= 24
    assert sol.d < 1 << 44


@settings(max_examples=40, deadline=None)
@given(LN_ROW, st.sampled_from([1e-7, 1e-5, 1e-3, 0.25, 3.0]))
def test_layernorm_against_float_layernorm(row, eps_real):
    """Against PyTorch's LayerNorm (float64) with epsilon eps_real in the int8 units (the compiler
    passes eps = round(256 N^2 eps_real / s^2) for an input scale s; here s = 1): within the bound
    plus the eps field's rounding, |z| * delta / (2 D), delta <= 1/2. (With eps_real = 0 a constant
    row is 0/0 in float; the machine gives 0.)"""
    torch = pytest.importorskip("torch")
    n = len(row)
    eps = min(round(256 * n * n * eps_real), (1 << 32) - 1)
    want = torch.nn.functional.layer_norm(torch.tensor([row], dtype=torch.float64), (n,), eps=eps_real)[0]
    d_machine = ln_solve(row, eps).d
    d_float = 256 * (n * sum(x * x for x in row) - sum(row) ** 2) + 256 * n * n * eps_real
    delta = abs(eps - 256 * n * n * eps_real)
    for yi, zi in zip(layernorm_fixed(row, eps), want.tolist(), strict=True):
        slack = abs(zi) * delta / (2 * min(d_machine, d_float)) if delta and zi else 0.0   # z = 0: D may be 0
        assert abs(yi / 65536 - zi) <= 2 ** -17 + abs(zi) * 2 ** -21 + slack + 1e-9, (yi, zi)


def test_layernorm_largest_z():
    """One value against 1023 of the other extreme: z = sqrt(1023) = 31.98, the largest |z| a row
    of LN_MAX_LEN has; y within 1.5 of 2^16 z."""
    row = [127] + [-128] * 1023
    y = layernorm_fixed(row, 0)
    assert abs(y[0] - 65536 * math.sqrt(1023)) < 1.5 and abs(y[1] + 65536 / math.sqrt(1023)) < 1
    assert y[0] == 2096128            # 65536 * 31.98437 = 2096127.75


@settings(max_examples=30, deadline=None)
@given(LN_ROW, EPS)
def test_layernorm_forms_agree(row, eps):
    assert layernorm_fixed_array(np.array(row), eps).tolist() == layernorm_fixed(row, eps)


def test_layernorm_refuses():
    with pytest.raises(ValueError, match="empty row"):
        ln_solve([], 0)
    with pytest.raises(ValueError, match="eps=4294967296"):
        ln_solve([1], 1 << 32)


def test_minus_128_is_not_a_causal_mask():
    """GA2.md section 4 (issue 26): a masked score written as -128 counts as exp = 0 only when the
    row's maximum is at least 61 (LUT[mx + 128] = 0 from a difference of 189 on), so the
    compiler masks by the row's length instead (SM over the valid prefix)."""
    assert EXP_LUT[188] == 1 and EXP_LUT[189] == 0          # 65536 exp(-188/16) = 0.52, (-189/16) 0.49
    row = [16, 0, -16]                                       # 1.0, 0.0, -1.0 in Q4.4: max 16 < 61
    masked = softmax_fixed([*row, -128])
    assert masked[-1] > 0 and masked[:3] != softmax_fixed(row)
    high = [64, 0, -16]                                      # max 64: 64 + 128 = 192 >= 189
    assert softmax_fixed([*high, -128]) == [*softmax_fixed(high), 0]
