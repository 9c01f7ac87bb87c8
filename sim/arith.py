"""GA-2's exact integer arithmetic (GA2.md section 4), in scalar and numpy forms.

Formats:
    int8 values are symmetric, -127..127 (INT8_MIN..INT8_MAX); -128 never results from an
    operation here, though a stored -128 is read as such.
    Softmax inputs are int8 in Q4.4 (real value x / 16); outputs are unsigned Q16
    (65536 = 1.0).
    LayerNorm's results are int32 in units of 2^-16 (LN_FRAC_BITS): y = round(2^16 * z).
    Requantization multiplies an int32 by a 24-bit mantissa m and shifts right by s with
    rounding: the real factor is m / 2**s. A requantization table holds one pair (m, s) per
    output channel, one 32-bit word each (:func:`pack_rq_pair`, :func:`unpack_rq_pair`).

Rounding is half away from zero everywhere: round(x) = sign(x) * floor(|x| + 1/2).

Each scalar function has a vectorised twin (suffix ``_array``) that agrees with it
element for element; tests/sim/test_arith.py checks that on random data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .spec import (
    LN_EPS_FRAC,
    LN_RECIP_BITS,
    LN_SHIFT,
    RQ_ENTRY_M_BITS,
    RQ_ENTRY_S_BITS,
    RQ_ENTRY_S_LSB,
)

INT8_MIN = -127
INT8_MAX = 127
MANTISSA_BITS = 24
Q16_ONE = 1 << 16
"""A probability of 1.0 in the softmax unit's output format."""
EXP_LUT_SIZE = 256
"""Entries of the softmax exp table: every difference mx - x of two int8 values (0..255)."""


def clamp_int8(v: int) -> int:
    """Saturate an integer to -127..127."""
    return max(INT8_MIN, min(INT8_MAX, v))


def round_half_away(x: float) -> int:
    """round(x) = sign(x) * floor(|x| + 1/2) (GA2.md section 4)."""
    r = math.floor(abs(x) + 0.5)
    return int(r) if x >= 0 else -int(r)


def round_half_away_array(x: np.ndarray) -> np.ndarray:
    """Vectorised :func:`round_half_away`; returns int64."""
    x = np.asarray(x, dtype=np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def quantize(v: float, scale: float) -> int:
    """clamp(round(v / scale), -127, 127): the int8 level of the real value v.

    Raises:
        ValueError: scale is not a positive finite number.
    """
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"quantize: scale must be positive and finite, got {scale!r}")
    q = v / scale
    if math.isnan(q):
        raise ValueError(f"quantize: v must be a number, got {v!r}")
    # Clamping before rounding gives the same level (round is monotone and the bounds are
    # integers) and lets an infinite or huge quotient saturate instead of overflowing.
    return round_half_away(max(INT8_MIN, min(INT8_MAX, q)))


def quantize_array(v: np.ndarray | Sequence, scale: float) -> np.ndarray:
    """Vectorised :func:`quantize`; returns int64 in -127..127."""
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"quantize: scale must be positive and finite, got {scale!r}")
    with np.errstate(over="ignore"):  # a quotient that overflows to +-inf saturates below
        q = np.asarray(v, dtype=np.float64) / scale
    if np.isnan(q).any():
        raise ValueError("quantize: v contains NaN")
    # clamp first, as in quantize: a quotient beyond int64 would otherwise wrap in the cast
    return round_half_away_array(np.clip(q, INT8_MIN, INT8_MAX))


def mantissa_shift(x: float) -> tuple[int, int]:
    """Write the real factor x > 0 as m / 2**s with a 24-bit mantissa (GA2.md section 4).

    s is chosen so that 2**23 <= x * 2**s < 2**24 and m = round(x * 2**s); when that rounds
    up to 2**24, m = 2**23 and s is one less. Examples: 127/65536 -> (16646144, 33);
    12345120 / 2**32 -> (12345120, 32) (GA2.md prints this factor rounded, as 0.00287432;
    that rounded decimal itself gives (12345110, 32)).

    Returns:
        (m, s). s may fall outside the shifter's 1..63 for very large or very small x; the
        caller (the compiler) checks it.

    Raises:
        ValueError: x is not a positive finite number.
    """
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"mantissa_shift: the factor must be positive and finite, got {x!r}")
    _, e = math.frexp(x)  # x = f * 2**e with 0.5 <= f < 1
    s = MANTISSA_BITS - e
    m = math.floor(math.ldexp(x, s) + 0.5)
    if m == 1 << MANTISSA_BITS:
        m, s = 1 << (MANTISSA_BITS - 1), s - 1
    return m, s


def requant(a: int, m: int, s: int, relu: bool = False) -> int:
    """Requantize an int32 accumulator to int8 (GA2.md section 4).

    p = a * m (exact); y = sign(p) * ((|p| + r) >> s) with the rounding term r = 2**(s-1) for
    s >= 1, i.e. p / 2**s rounded half away from zero, and r = 0 for s = 0 (y = p: no shift,
    nothing to round); y is saturated to -127..127 and, with relu, clamped below at 0.

    Args:
        a: signed 32-bit value. m: 0 <= m < 2**24. s: 0 <= s <= 63 (RQ's field holds 1..63;
            s = 0 comes only from a requantization table entry, :func:`unpack_rq_pair`).
    """
    p = a * m
    y = (abs(p) + _rounding_term(s)) >> s
    y = clamp_int8(y if p >= 0 else -y)
    return max(0, y) if relu else y


def _rounding_term(s: int) -> int:
    """2**(s-1), half the unit of the shift; 0 for s = 0 (GA2.md section 4)."""
    return (1 << s) >> 1


def requant_array(a: np.ndarray, m: int | np.ndarray, s: int | np.ndarray,
                  relu: bool = False) -> np.ndarray:
    """Vectorised :func:`requant`; a is int32-valued, the result int64 in -127..127.

    m and s are ints (one pair for every element: RQ per tensor) or integer arrays that
    broadcast against a (a pair per element: RQ per channel, ``m[i], s[i]`` from the table).
    |a * m| < 2**55 and the rounding term is at most 2**62, so int64 holds every step.
    """
    p = np.asarray(a, dtype=np.int64) * np.asarray(m, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    half = np.where(s > 0, np.left_shift(np.int64(1), np.maximum(s - 1, 0)), 0)
    y = (np.abs(p) + half) >> s
    y = np.clip(np.where(p >= 0, y, -y), INT8_MIN, INT8_MAX)
    return np.maximum(y, 0) if relu else y


def pack_rq_pair(m: int, s: int) -> int:
    """The requantization table word of the pair (m, s) (GA2.md section 2): m in bits 23..0, s in
    bits 29..24 (the widths of RQ's fields, ``sim.spec.RQ_ENTRY_*``), bits 31..30 zero.

    Args:
        m: the multiplier, 0 <= m < 2**24. s: the shift, 0 <= s <= 63 (0: no shift, no rounding).

    Returns:
        The word, 0 <= word < 2**30.

    Raises:
        ValueError: m or s is not an int within its bits (the message names it and its value).
    """
    for name, value, bits in (("m", m, RQ_ENTRY_M_BITS), ("s", s, RQ_ENTRY_S_BITS)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < 1 << bits:
            raise ValueError(f"pack_rq_pair: {name}={value!r} must be an int in 0..{(1 << bits) - 1} "
                             f"({bits} bits)")
    return int(m) | int(s) << RQ_ENTRY_S_LSB


def unpack_rq_pair(word: int) -> tuple[int, int]:
    """The pair (m, s) a requantization table word holds (GA2.md section 2); the inverse of
    :func:`pack_rq_pair`. Bits 31..30 are ignored, as the machine ignores them.

    Args:
        word: a 32-bit word, signed (-2**31..2**31-1) or unsigned (0..2**32-1), as memories hold it.

    Raises:
        ValueError: word is not an int within 32 bits.
    """
    if isinstance(word, bool) or not isinstance(word, int | np.integer) or not -(1 << 31) <= word < 1 << 32:
        raise ValueError(f"unpack_rq_pair: word={word!r} must be a 32-bit int")
    m_s = unpack_rq_pair_array(np.array([int(word) & 0xFFFFFFFF], dtype=np.int64))
    return int(m_s[0][0]), int(m_s[1][0])


def unpack_rq_pair_array(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`unpack_rq_pair` over 32-bit words (any integer dtype, signed or
    unsigned values); returns (m, s) as int64 arrays of the words' shape."""
    w = np.asarray(words).astype(np.int64) & 0xFFFFFFFF
    m = w & ((1 << RQ_ENTRY_M_BITS) - 1)
    s = (w >> RQ_ENTRY_S_LSB) & ((1 << RQ_ENTRY_S_BITS) - 1)
    return m, s


def sat_add(a: int, b: int, relu: bool = False) -> int:
    """Saturating int8 add (GA2.md section 4): clamp(a + b, -127, 127); with relu, negative
    sums become 0 (VADD's relu field)."""
    total = clamp_int8(a + b)
    return max(0, total) if relu else total


def sat_add_array(a: np.ndarray, b: np.ndarray, relu: bool = False) -> np.ndarray:
    """Vectorised :func:`sat_add`."""
    total = np.clip(np.asarray(a, dtype=np.int64) + np.asarray(b, dtype=np.int64), INT8_MIN, INT8_MAX)
    return np.maximum(total, 0) if relu else total


def vmax(a: int, b: int, relu: bool = False) -> int:
    """The int8 maximum (GA2.md section 4, VADD op = 1): max(a, b), one of the operands (a stored
    -128 too: nothing to saturate); with relu, max(0, that).

    Args:
        a, b: int8 values, -128..127.
    """
    larger = max(a, b)
    return max(0, larger) if relu else larger


def vmax_array(a: np.ndarray, b: np.ndarray, relu: bool = False) -> np.ndarray:
    """Vectorised :func:`vmax`; int64."""
    larger = np.maximum(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    return np.maximum(larger, 0) if relu else larger


def _exp_entry(d: int) -> int:
    return math.floor(Q16_ONE * math.exp(-d / 16) + 0.5)


EXP_LUT: tuple[int, ...] = tuple(_exp_entry(d) for d in range(EXP_LUT_SIZE))
"""LUT[d] = floor(65536 * exp(-d/16) + 1/2), d = 0..255: exp of a Q4.4 difference, in Q16."""
EXP_LUT_ARRAY = np.array(EXP_LUT, dtype=np.int64)


def softmax_fixed(row: Sequence[int]) -> list[int]:
    """The softmax unit's exact result for one row (GA2.md section 4).

    Args:
        row: int8 values in Q4.4 (-128..127), at least one.

    Returns:
        Unsigned Q16 probabilities: with mx = max(row), e_i = LUT[mx - x_i], z = sum(e_i),
        p_i = floor((e_i * 65536 + floor(z / 2)) / z).

    Raises:
        ValueError: the row is empty.
    """
    if len(row) == 0:
        raise ValueError("softmax_fixed: empty row")
    mx = max(row)
    e = [EXP_LUT[mx - x] for x in row]
    z = sum(e)
    return [(ei * Q16_ONE + z // 2) // z for ei in e]


def softmax_fixed_array(rows: np.ndarray) -> np.ndarray:
    """Vectorised :func:`softmax_fixed` over the last axis (each row on its own); int64."""
    x = np.asarray(rows, dtype=np.int64)
    if x.shape[-1] == 0:
        raise ValueError("softmax_fixed: empty row")
    e = EXP_LUT_ARRAY[x.max(axis=-1, keepdims=True) - x]
    z = e.sum(axis=-1, keepdims=True)
    return (e * Q16_ONE + z // 2) // z


# --------------------------------------------------------------------------- LayerNorm (GA2.md section 4)


@dataclass(frozen=True)
class LnSolve:
    """What LN computes once per row (GA2.md section 4), every value an exact integer.

    Attributes:
        n: the row length N. s1: sum of x_i. s2: sum of x_i^2.
        d: D = 2^LN_EPS_FRAC * (N * s2 - s1^2) + eps (>= 0).
        k: the even shift's half: D * 4^k fills LN_RECIP_BITS bits (2^42 <= D * 4^k < 2^44 for
            D > 0; k = LN_ROOT_BITS for D = 0).
        root: r = isqrt(D * 4^k), 2^21 <= r < 2^22 (0 for D = 0).
        recip: R = floor(2^LN_RECIP_BITS / r), 2^22 < R <= 2^23; 0 for D = 0 (every d_i is 0
            then, so R is not seen: the hardware sets it 0, which keeps N * R below 2^34).
        shift: LN_SHIFT - k, the rounding shift of d_i * R.
    """

    n: int
    s1: int
    s2: int
    d: int
    k: int
    root: int
    recip: int
    shift: int


def ln_solve(row: Sequence[int], eps: int) -> LnSolve:
    """The per-row integers of LN (GA2.md section 4) for int8 values ``row`` and the field eps.

    Raises:
        ValueError: the row is empty, or eps is not within 0..2^32-1.
    """
    if len(row) == 0:
        raise ValueError("ln_solve: empty row")
    if not 0 <= eps < 1 << 32:
        raise ValueError(f"ln_solve: eps={eps} must be within 0..2^32-1 (the field is 32 bits)")
    n = len(row)
    s1 = sum(int(x) for x in row)
    s2 = sum(int(x) * int(x) for x in row)
    d = ((n * s2 - s1 * s1) << LN_EPS_FRAC) + eps
    k = (LN_RECIP_BITS - d.bit_length()) // 2
    root = math.isqrt(d << 2 * k)
    recip = (1 << LN_RECIP_BITS) // root if root else 0
    return LnSolve(n, s1, s2, d, k, root, recip, LN_SHIFT - k)


def layernorm_fixed(row: Sequence[int], eps: int) -> list[int]:
    """LN's exact result for one row, without the bias (GA2.md section 4).

    With N = len(row), d_i = N * x_i - S1 and the integers of :func:`ln_solve`:
    y_i = round(d_i * R / 2^shift), rounded half away from zero. y_i / 2^16 is the LayerNorm
    z_i = (x_i - mean) / sqrt(var + eps / (256 * N^2)) within 2^-17 + |z_i| * 2^-21.

    Args:
        row: int8 values (-128..127), 1 to LN_MAX_LEN of them.
        eps: the field eps (0..2^32-1).

    Returns:
        The int32 values y_i (|y_i| < 2^21 + 2).
    """
    sol = ln_solve(row, eps)
    out = []
    for x in row:
        v = (sol.n * int(x) - sol.s1) * sol.recip
        y = (abs(v) + (1 << (sol.shift - 1))) >> sol.shift
        out.append(y if v >= 0 else -y)
    return out


def layernorm_fixed_array(row: np.ndarray, eps: int) -> np.ndarray:
    """Vectorised :func:`layernorm_fixed` over one row (int64 values): |d_i * R| < 2^42."""
    x = np.asarray(row, dtype=np.int64)
    sol = ln_solve([int(v) for v in x], eps)
    v = (sol.n * x - sol.s1) * sol.recip
    y = (np.abs(v) + (1 << (sol.shift - 1))) >> sol.shift
    return np.where(v >= 0, y, -y)
