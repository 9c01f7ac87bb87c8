"""GA-2's exact integer arithmetic (GA2.md section 4), in scalar and numpy forms.

Formats:
    int8 values are symmetric, -127..127 (INT8_MIN..INT8_MAX); -128 never results from an
    operation here, though a stored -128 is read as such.
    Softmax inputs are int8 in Q4.4 (real value x / 16); outputs are unsigned Q16
    (65536 = 1.0).
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

import numpy as np

from .spec import RQ_ENTRY_M_BITS, RQ_ENTRY_S_BITS, RQ_ENTRY_S_LSB

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
