"""compiler/requant.py: mantissa and shift, and the RQ shift range from the spec."""

import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.requant import requantizer, shift_range
from sim.spec import BY_NAME, DEFAULT, RQ_TENSOR_SHIFT_LO, ErrorCode, check


def test_pairs_by_hand():
    assert requantizer(127 / 65536, "softmax node 5", 5, params=DEFAULT) == (16646144,
                                                                             33)  # 127 * 2**17 / 2**33
    assert requantizer(0.75, "matmul node 4", 4, params=DEFAULT) == (12582912, 24)  # 0.75 * 2**24
    # 1 - 2**-26 needs m = 2**24 - 1/4, which rounds up to 2**24: one bit less of shift
    assert requantizer(1 - 2.0 ** -26, "matmul node 4", 4, params=DEFAULT) == (1 << 23, 23)


def test_shift_range_is_the_rq_field_range_per_tensor():
    """The field takes 0..63 (pc = 1 needs s = 0); per tensor the rule across fields starts at 1."""
    field = next(f for f in BY_NAME["RQ"].fields if f.name == "s")
    assert (field.lo, field.hi) == (0, 63)
    assert shift_range(DEFAULT) == (RQ_TENSOR_SHIFT_LO, field.hi) == (1, 63)
    base = {"dst": 0, "src": 0, "len": 1, "m": 1, "relu": 0, "pc": 0, "tab": 0, "C": 0}
    assert check(BY_NAME["RQ"], {**base, "s": RQ_TENSOR_SHIFT_LO - 1}, DEFAULT)[0] is ErrorCode.BAD_FIELD
    assert check(BY_NAME["RQ"], {**base, "s": RQ_TENSOR_SHIFT_LO}, DEFAULT)[0] is ErrorCode.NONE


@pytest.mark.parametrize("factor, shift", [(2.0 ** -45, 68), (2.0 ** 24, -1)])
def test_a_shift_outside_1_to_63_is_refused(factor, shift):
    with pytest.raises(CompileError) as info:
        requantizer(factor, "matmul node 7", 7, params=DEFAULT)
    assert f"shift of {shift}" in info.value.problem and "1..63" in info.value.problem
    assert "matmul node 7" in info.value.problem and info.value.node == 7 and info.value.fix


def test_the_extremes_of_the_legal_range():
    assert requantizer(2.0 ** -40, "x", 0, params=DEFAULT) == (1 << 23, 63)
    assert requantizer(2.0 ** 22, "x", 0, params=DEFAULT) == (1 << 23, 1)


@pytest.mark.parametrize("factor, words", [(0.0, "underflows to 0"), (float("inf"), "overflows to infinity")])
def test_a_factor_that_underflows_or_overflows_says_so(factor, words):
    with pytest.raises(CompileError) as info:
        requantizer(factor, "matmul node 4", 4, params=DEFAULT)
    assert info.value.problem == (f"matmul node 4: the requantizer factor {words}: the scales involved are "
                                  "too far apart")


def test_an_infinite_factor_is_reachable_from_a_graph():
    # x and w reach 1e154 and the product cancels to 0, so the output keeps the stand-in scale
    # 1/127 while scale_x * scale_w * 1e5 is about 8e310: the exact factor overflows
    g = Graph()
    x = g.input("x", (1, 2))
    g.output(g.matmul(x, g.weight("w", [[1e154], [-1e154]]), scale=1e5), "y")
    with pytest.raises(CompileError) as info:
        compile_graph(g, [{"x": [[1e154, 1e154]]}])
    assert info.value.problem == ("matmul node 2: the requantizer factor overflows to infinity: the scales "
                                  "involved are too far apart") and info.value.node == 2


def test_underflow_detection_and_the_exact_product():
    from compiler.requant import exact_factor, product_underflows
    assert not product_underflows(0.5, 0.02, 0.03)
    assert product_underflows(2.0**20, 2.0**500, 2.0**600)        # 2**1120 on the way: infinity
    assert product_underflows(2.0**-30, 2.0**-500, 2.0**-600)      # 2**-1130 on the way: 0
    assert product_underflows(2.0**-30, 2.0**-500, 2.0**-520)      # 2**-1050: subnormal, bits lost
    assert exact_factor((2.0**20, 2.0**500, 2.0**600), 2.0**1000) == 2.0**120
    assert exact_factor((2.0**-30, 2.0**-500, 2.0**-600), 2.0**-1000) == 2.0**-130
    assert exact_factor((1e300, 1e300), 1.0) == float("inf")
