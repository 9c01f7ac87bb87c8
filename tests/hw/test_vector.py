"""hw/vector.py: VADD, AMAX and UNPACK against the reference machine and the spec's latencies,
at every length up to a few beats and every alignment, in place, back to back. The words hold
random upper bits: the unit must read the low byte (or the nibbles) only."""

from __future__ import annotations

import random

import pytest

from hw.vector import VectorUnit
from sim import spec
from sim.asm import build
from sim.spec import DEFAULT, Params

from .harness import check_idle_outputs, check_unit, run_unit

P = Params(SPAD_WORDS=512)
"""A small scratchpad keeps the simulator quick; nothing here depends on its size."""
REGION = P.SPAD_WORDS // 4
"""Four regions: src1, src2, dst, and a spare, each REGION words."""


def _word(rng: random.Random, low_byte: int) -> int:
    """A 32-bit word whose low byte is low_byte (-128..127) and whose upper bits are random."""
    return (rng.getrandbits(24) << 8) | (low_byte & 0xFF)


def _check(program, spad) -> None:
    check_unit(lambda: VectorUnit(P), program, spad, params=P)


# --------------------------------------------------------------------------- VADD


def test_vadd_saturates_at_both_ends():
    pairs = [(127, 127), (-128, -128), (-127, -1), (100, 27), (100, 28), (-100, -28), (-100, -27),
             (-128, 127), (127, -128), (0, 0), (-128, 0), (64, 64), (-64, -64), (-1, 1)]
    rng = random.Random(1)
    spad = [0] * P.SPAD_WORDS
    for i, (x, y) in enumerate(pairs):
        spad[i] = _word(rng, x)
        spad[REGION + i] = _word(rng, y)
    _check([build("VADD", dst=2 * REGION, src1=0, src2=REGION, len=len(pairs), params=P)], spad)


def test_vadd_every_length_and_alignment():
    """len 1..20, each with src1, src2 and dst at a different alignment mod 4 (all 64 triples
    of alignments occur), back to back."""
    rng = random.Random(2)
    spad = [_word(rng, rng.randrange(-128, 128)) for _ in range(2 * REGION)] + [0] * (2 * REGION)
    program = []
    for n in range(1, 21):
        for k in range(3 if n <= 4 else 1):
            a1, a2, ad = (n + k) % 4, (n // 4 + k) % 4, (n * 3 + k) % 4
            program.append(build("VADD", dst=2 * REGION + 4 * n + ad, src1=4 * n + a1,
                                 src2=REGION + 4 * n + a2, len=n, params=P))
    _check(program, spad)


RELU_CASES = [  # (a, b, the saturated sum, with relu=1), worked by hand (GA2.md section 4)
    (-5, 2, -3, 0),          # a negative sum becomes 0
    (3, 4, 7, 7),            # a positive one is kept
    (100, 27, 127, 127),     # 127 exactly
    (100, 100, 127, 127),    # saturated at 127, kept
    (-100, -27, -127, 0),    # -127 exactly, then 0
    (-128, -128, -127, 0),   # saturated at -127, then 0
    (-128, 0, -127, 0),      # -128 is not a result: -127, then 0
    (64, -65, -1, 0),
    (-1, 1, 0, 0),
    (0, 0, 0, 0),
]


def test_vadd_relu_field_by_hand():
    """VADD relu=1, then the same operands with relu=0, then relu=1 again, back to back, over 10
    elements (three beats: the field is held for the later beats and not carried into the next
    VADD): the RTL writes the hand-worked sums, and matches the reference and the latencies."""
    rng = random.Random(5)
    spad = [0] * P.SPAD_WORDS
    for i, (a, b, _, _) in enumerate(RELU_CASES):
        spad[i], spad[REGION + i] = _word(rng, a), _word(rng, b)
    n = len(RELU_CASES)
    outs = (2 * REGION, 2 * REGION + 16, 2 * REGION + 32)
    program = [build("VADD", dst=dst, src1=0, src2=REGION, len=n, relu=relu, params=P)
               for dst, relu in zip(outs, (1, 0, 1), strict=True)]
    got, _, _ = run_unit(lambda: VectorUnit(P), program, spad, None, P)
    low_bytes = [[int(w) & 0xFF for w in got[dst:dst + n]] for dst in outs]
    with_relu = [c[3] & 0xFF for c in RELU_CASES]
    assert low_bytes == [with_relu, [c[2] & 0xFF for c in RELU_CASES], with_relu]
    _check(program, spad)


MAX_CASES = [  # (a, b, the larger, with relu=1), worked by hand (GA2.md section 4, vmax)
    (-5, 2, 2, 2),
    (3, 4, 4, 4),
    (100, 100, 100, 100),    # equal
    (127, -128, 127, 127),   # the two ends
    (-128, 127, 127, 127),
    (-128, -128, -128, 0),   # a stored -128 passes through (no saturation), relu makes it 0
    (-128, -127, -127, 0),
    (-1, -2, -1, 0),
    (0, -1, 0, 0),
    (126, 127, 127, 127),    # a sum would saturate here; the maximum does not
]


def test_vadd_max_by_hand():
    """VADD max=1, max=1 with relu, max=0 (add) and max=1 again back to back over 10 elements
    (three beats: the field is held for the later beats and not carried into the next VADD): the RTL
    writes the hand-worked maxima and sums, and matches the reference and the latencies."""
    rng = random.Random(6)
    spad = [0] * P.SPAD_WORDS
    for i, (a, b, _, _) in enumerate(MAX_CASES):
        spad[i], spad[REGION + i] = _word(rng, a), _word(rng, b)
    n = len(MAX_CASES)
    outs = (2 * REGION, 2 * REGION + 16, 2 * REGION + 32, 2 * REGION + 48)
    modes = ((1, 0), (1, 1), (0, 0), (1, 0))
    program = [build("VADD", dst=dst, src1=0, src2=REGION, len=n, relu=relu, max=larger, params=P)
               for dst, (larger, relu) in zip(outs, modes, strict=True)]
    got, _, _ = run_unit(lambda: VectorUnit(P), program, spad, None, P)
    low_bytes = [[int(w) & 0xFF for w in got[dst:dst + n]] for dst in outs]
    larger = [c[2] & 0xFF for c in MAX_CASES]
    sums = [max(-127, min(127, a + b)) & 0xFF for a, b, _, _ in MAX_CASES]
    assert low_bytes == [larger, [c[3] & 0xFF for c in MAX_CASES], sums, larger]
    _check(program, spad)


def test_vadd_max_every_length_alignment_and_in_place():
    rng = random.Random(12)
    spad = [_word(rng, rng.randrange(-128, 128)) for _ in range(2 * REGION)]
    program = []
    for n, start in ((1, 0), (4, 3), (5, 9), (13, 22), (20, 41), (9, 70)):
        src1, src2 = start, REGION + start + (n % 3)
        dst = (src1, src2, 2 * REGION + start)[n % 3]
        program.append(build("VADD", dst=dst, src1=src1, src2=src2, len=n, relu=n % 2, max=1, params=P))
    _check(program, spad)


@pytest.mark.parametrize("which", ["src1", "src2"])
def test_vadd_in_place(which):
    rng = random.Random(3)
    spad = [_word(rng, rng.randrange(-128, 128)) for _ in range(2 * REGION)]
    program = []
    for n, start in ((1, 0), (5, 7), (13, 21), (20, 41)):
        src1, src2 = start, REGION + start + 1
        dst = src1 if which == "src1" else src2
        program.append(build("VADD", dst=dst, src1=src1, src2=src2, len=n, params=P))
    # twice over the same words: the second reads what the first wrote
    program.append(program[-1])
    _check(program, spad)


# --------------------------------------------------------------------------- AMAX


@pytest.mark.parametrize(("name", "row"), [
    ("length 1", [5]),
    ("length 1, -128", [-128]),
    ("all equal", [7] * 9),
    ("all -128", [-128] * 6),
    ("ties: the first maximum", [1, 9, 3, 9, 9, 0, 9]),
    ("-128 present", [-128, -5, -128, -3, -128]),
    ("maximum last, in a tail lane", [0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ("maximum in lane 3", [-1, -1, -1, 4, 4, -1, -1]),
    ("127 and -128", [-128, 127, -128, 127]),
])
def test_amax_rows(name, row):
    rng = random.Random(len(row))
    for align in range(4):
        spad = [0] * P.SPAD_WORDS
        for i, v in enumerate(row):
            spad[align + i] = _word(rng, v)
        _check([build("AMAX", dst=REGION + align, src=align, len=len(row), params=P)], spad)


def test_amax_maximum_at_every_position():
    """A row of 11 with its single maximum (or two tied maxima) moved across every lane and
    beat, at every alignment, back to back."""
    rng = random.Random(4)
    spad = [_word(rng, rng.randrange(-128, 100)) for _ in range(REGION)] + [0] * (3 * REGION)
    program = []
    base = 0
    for pos in range(11):
        for align in range(4):
            src = base + align
            spad[src + pos] = _word(rng, 120)
            if pos < 10:
                spad[src + 10] = _word(rng, 120)  # a later tie must lose
            program.append(build("AMAX", dst=REGION + len(program), src=src, len=11, params=P))
            base += 12 + 4
            if base + 16 > REGION:
                base = 0
                _check(program, spad)
                program = []
                spad = [_word(rng, rng.randrange(-128, 100)) for _ in range(REGION)] + [0] * (3 * REGION)
    _check(program, spad)


def test_amax_every_length_and_alignment():
    rng = random.Random(5)
    spad = [_word(rng, rng.randrange(-128, 128)) for _ in range(REGION)] + [0] * (3 * REGION)
    program = [build("AMAX", dst=REGION + n, src=(7 * n) % 64 + n % 4, len=n, params=P)
               for n in range(1, 21)]
    _check(program, spad)


def test_amax_long_row():
    rng = random.Random(6)
    spad = [_word(rng, rng.randrange(-128, 127)) for _ in range(3 * REGION)] + [0] * REGION
    spad[301] = _word(rng, 127)
    spad[333] = _word(rng, 127)
    _check([build("AMAX", dst=3 * REGION, src=1, len=3 * REGION - 1, params=P)], spad)


# --------------------------------------------------------------------------- UNPACK


def test_unpack_negative_nibbles_and_alignments():
    rng = random.Random(7)
    words = [0x89ABCDEF, 0x01234567, 0xFFFFFFFF, 0x80000008, 0x7F7F7F7F, 0x00000000]
    words += [rng.getrandbits(32) for _ in range(20)]
    spad = words + [0] * (P.SPAD_WORDS - len(words))
    program = []
    dst = REGION
    for n in range(1, 7):
        src = (n * 5) % (len(words) - n)
        dst += n % 4 + 1
        program.append(build("UNPACK", dst=dst, src=src, len=n, params=P))
        dst += 8 * n
    _check(program, spad)


# --------------------------------------------------------------------------- together


def test_back_to_back_mixed():
    """The three operations in every order, each reading what the previous wrote."""
    rng = random.Random(8)
    spad = [rng.getrandbits(32) for _ in range(REGION)] + [0] * (3 * REGION)
    program = [
        build("UNPACK", dst=REGION, src=0, len=3, params=P),                        # 24 int4 values
        build("VADD", dst=REGION + 30, src1=REGION, src2=REGION + 5, len=17, params=P),
        build("AMAX", dst=REGION + 60, src=REGION + 30, len=17, params=P),
        build("VADD", dst=REGION + 30, src1=REGION + 30, src2=8, len=9, params=P),  # in place
        build("UNPACK", dst=REGION + 70, src=REGION + 60, len=1, params=P),
        build("AMAX", dst=REGION + 90, src=REGION + 70, len=8, params=P),
        build("AMAX", dst=REGION + 91, src=REGION + 30, len=2, params=P),
        build("VADD", dst=REGION + 100, src1=REGION + 90, src2=REGION + 91, len=1, params=P),
        build("VADD", dst=REGION + 110, src1=REGION + 30, src2=REGION + 70, len=8, max=1, params=P),
        build("AMAX", dst=REGION + 120, src=REGION + 110, len=8, params=P),
    ]
    _check(program, spad)


def test_latency_formulas():
    """The spec's closed forms, as the RTL realises them (check_unit measures each one)."""
    def lat(name: str, n: int) -> int:
        ins = spec.BY_NAME[name]
        return spec.latency(ins, {f: (n if f == "len" else 0) for f in ins.field_names}, params=DEFAULT)

    assert [lat("VADD", n) for n in (1, 4, 5, 8, 9)] == [6, 6, 7, 7, 8]
    assert [lat("AMAX", n) for n in (1, 4, 5)] == [7, 7, 8]
    assert [lat("UNPACK", n) for n in (1, 2, 3)] == [6, 8, 10]


def test_idle_outputs_are_zero():
    rng = random.Random(9)
    spad = [rng.getrandbits(32) for _ in range(REGION)]
    program = [build("VADD", dst=REGION, src1=0, src2=20, len=7, params=P),
               build("UNPACK", dst=REGION + 10, src=40, len=2, params=P),
               build("AMAX", dst=REGION + 30, src=50, len=6, params=P)]
    for k in range(len(program)):  # each one last: its own tail drains to zero
        check_idle_outputs(lambda: VectorUnit(P), program[k:] + program[:k], spad, params=P, idle_cycles=8)


def test_bad_params():
    with pytest.raises(TypeError, match=r"VectorUnit: params=4 must be a sim.spec.Params"):
        VectorUnit(4)
