"""hw/softmax.py: the SM unit against the reference machine (sim.arith.softmax_fixed) and the
spec's latency, on rows that reach every exp-table entry and every corner of the arithmetic."""

from __future__ import annotations

import random

import pytest

from hw.softmax import SoftmaxUnit
from sim import arith, spec
from sim.asm import build
from sim.spec import DEFAULT, Params

from .harness import check_idle_outputs, check_unit, expected

SMALL = Params(SPAD_WORDS=2048)
"""A smaller scratchpad keeps the simulator quick; nothing here depends on its size."""


def _program(rows: list[list[int]], params: Params, *, out_base: int, seed: int = 0,
             aligned: bool = False) -> tuple[list, list[int]]:
    """Rows placed one after another from word 0 (src at every alignment), results from
    out_base on (dst at every alignment): one SM per row, back to back."""
    rng = random.Random(seed)
    spad = [0] * params.SPAD_WORDS
    prog = []
    src = dst = 0
    for row in rows:
        src += 0 if aligned else rng.randrange(4)
        dst += 0 if aligned else rng.randrange(4)
        spad[src:src + len(row)] = row
        prog.append(build("SM", dst=out_base + dst, src=src, len=len(row), params=params))
        src += len(row)
        dst += len(row)
    assert src <= out_base and out_base + dst <= params.SPAD_WORDS
    return prog, spad


def _check(rows: list[list[int]], params: Params = SMALL, **kwargs) -> None:
    prog, spad = _program(rows, params, out_base=params.SPAD_WORDS // 2, **kwargs)
    check_unit(lambda: SoftmaxUnit(params), prog, spad, params=params)
    # the reference machine's numpy form agrees with the plain definition, row by row
    want, _, _ = expected(prog, spad, params=params)
    for ins, row in zip(prog, rows, strict=True):
        assert list(want[ins.dst:ins.dst + ins.len]) == arith.softmax_fixed(row)


def test_every_difference():
    """Rows (m, x) with m - x = d for d = 0..255, each with a different maximum where the range
    allows: every exp-table entry is looked up and decides a quotient (p_1 ~ e/(1 + e))."""
    rng = random.Random(1)
    rows = []
    for d in range(arith.EXP_LUT_SIZE):
        x = rng.randrange(-128, 128 - d)
        rows.append([x + d, x] if d % 2 else [x, x + d])
    _check(rows, seed=1)


@pytest.mark.parametrize(("name", "row"), [
    ("length 1", [37]),
    ("length 1, -128", [-128]),
    ("all equal", [5] * 7),
    ("all -128, SM_MAX_LEN: the largest sum", [-128] * 64),
    ("one dominant: p = 65536 and zeros", [127] + [-128] * 9),
    ("gap 254", [127, -127]),
    ("gap 254 reversed", [-127, 127]),
    ("-128 beside the maximum", [127, -128, 0, -128]),
    ("ties for the maximum", [3, 9, 9, -4, 9]),
    ("a 4-aligned tail of one", [1, 2, 3, 4, 5]),
])
def test_corner_rows(name, row):
    _check([row], seed=len(row))
    _check([row], aligned=True)


def test_random_rows_every_length_and_alignment():
    """Lengths 1..20 twice (every tail: 1..4 lanes in the last beat), random values, src and
    dst at every alignment, back to back."""
    rng = random.Random(7)
    rows = [[rng.randrange(-128, 128) for _ in range(n)] for n in list(range(1, 21)) * 2]
    _check(rows, seed=7)


def test_max_length_rows():
    rng = random.Random(3)
    rows = [[rng.randrange(-128, 128) for _ in range(64)],
            [rng.randrange(100, 128) for _ in range(64)],   # close values: a large sum
            [rng.randrange(-30, 30) for _ in range(63)]]
    _check(rows, seed=3)


def test_longer_rows_with_a_larger_sm_max_len():
    """SM_MAX_LEN = 200: the sum needs 24 bits, the divider's depth stays the same."""
    params = Params(SPAD_WORDS=1024, SM_MAX_LEN=200)
    rng = random.Random(4)
    rows = [[-128] * 200, [rng.randrange(-128, 128) for _ in range(150)]]
    _check(rows, params=params, seed=4)


def test_latency_formula():
    """The spec's closed form, as the RTL realises it (check_unit measures every instruction)."""
    fields = {"dst": 0, "src": 0}
    for n, want in ((1, 18), (4, 18), (5, 21), (12, 24), (64, 63)):
        assert spec.latency(spec.BY_NAME["SM"], {**fields, "len": n}, params=DEFAULT) == want
    assert spec.SM_OVERHEAD == spec.SPAD_READ_LATENCY + 2 + spec.SM_PASS_OVERHEAD + spec.SM_DIV_LATENCY


def test_idle_outputs_are_zero():
    """Before and after its instructions every output is 0 (the top ORs the units), while the
    dividers' pipeline drains too."""
    prog, spad = _program([[1, 2, 3, 4, 5, 6], [7]], SMALL, out_base=SMALL.SPAD_WORDS // 2, seed=2)
    check_idle_outputs(lambda: SoftmaxUnit(SMALL), prog, spad, params=SMALL)


def test_bad_params():
    with pytest.raises(TypeError, match=r"SoftmaxUnit: params='big' must be a sim.spec.Params"):
        SoftmaxUnit("big")
