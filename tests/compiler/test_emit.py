"""compiler/emit.py (with compiler/lowering.py): the instructions of each operation in whole
programs, their order, the instruction-memory limit."""

from fractions import Fraction

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from sim.arith import mantissa_shift
from sim.spec import Params

from .conftest import single_matmul


def fields(program, op):
    return [i.fields for i in program.code if i.op == op]


def test_a_5x12_by_12x10_product_is_six_mm_with_row_strides():
    program = compile_graph(single_matmul(5, 12, 10), [{"x": np.ones((5, 12))}])
    mms = fields(program, "MM")
    assert [(f["M"], f["N"]) for f in mms] == [(4, 4), (4, 4), (4, 2), (1, 4), (1, 4), (1, 2)]
    assert {(f["K"], f["lda"], f["ldb"], f["ldc"], f["tb"]) for f in mms} == {(12, 12, 10, 10, 0)}
    a0, b0, acc = mms[0]["A"], mms[0]["B"], mms[0]["dst"]
    assert [(f["A"] - a0, f["B"] - b0, f["dst"] - acc) for f in mms] == [
        (0, 0, 0), (0, 4, 4), (0, 8, 8), (48, 0, 40), (48, 4, 44), (48, 8, 48)]
    (rq,) = fields(program, "RQ")
    assert rq["src"] == acc and rq["len"] == 50 and rq["relu"] == 0
    assert [i.op for i in program.code] == ["LD", "LD"] + ["MM"] * 6 + ["RQ", "ST", "HALT"]


def test_the_tile_size_comes_from_the_parameters():
    program = compile_graph(single_matmul(5, 12, 10), [{"x": np.ones((5, 12))}], params=Params(T=8, LANES=8))
    assert [(f["M"], f["N"]) for f in fields(program, "MM")] == [(5, 8), (5, 2)]


def test_transposed_b_tiles_step_by_whole_rows():
    g = Graph()
    q, k = g.input("q", (1, 8)), g.input("k", (6, 8))
    g.output(g.matmul(q, k, transpose_b=True), "s")
    program = compile_graph(g, [{"q": np.ones((1, 8)), "k": np.ones((6, 8))}])
    first, second = fields(program, "MM")
    assert (first["tb"], first["ldb"], second["B"] - first["B"], second["N"]) == (1, 8, 32, 2)


def test_softmax_is_one_sm_per_row_then_one_rq_to_1_over_127():
    g = Graph()
    g.output(g.softmax(g.input("x", (3, 5))), "p")
    program = compile_graph(g, [{"x": np.ones((3, 5))}])
    sms = fields(program, "SM")
    assert [(f["src"] - sms[0]["src"], f["dst"] - sms[0]["dst"], f["len"]) for f in sms] == [
        (0, 0, 5), (5, 5, 5), (10, 10, 5)]
    (rq,) = fields(program, "RQ")
    assert (rq["src"], rq["len"], rq["m"], rq["s"]) == (sms[0]["dst"], 15, 16646144, 33)


def test_add_rescales_only_operands_whose_scale_differs():
    g = Graph()
    x, y = g.input("x", (1, 4)), g.input("y", (1, 4))
    g.output(g.add(g.add(x, y), x), "s")
    sample = {"x": [[1.27, 0, 0, 0]], "y": [[2.54, 0, 0, 0]]}
    program = compile_graph(g, [sample])
    # scales: x 0.01, y 0.02; first sum (range 3.81) 0.03; second sum (range 5.08) 0.04
    assert [k for k in program.requantizers] == [(2, 0), (2, 1), (3, 0), (3, 1)]
    assert [i.op for i in program.code if i.op in ("RQ", "VADD")] == ["RQ", "RQ", "VADD"] * 2
    g2 = Graph()
    a = g2.input("a", (1, 4))
    g2.output(g2.add(a, a), "s")
    program = compile_graph(g2, [{"a": [[1.0, 0, 0, 0]]}])
    assert list(program.requantizers) == [(1, 0), (1, 1)]
    assert program.scales[1] == 2 / 127


def test_argmax_is_one_amax_per_row_into_consecutive_words():
    g = Graph()
    g.output(g.argmax(g.input("x", (3, 4))), "tok")
    program = compile_graph(g, [{"x": np.ones((3, 4))}])
    amax = fields(program, "AMAX")
    assert [(f["dst"] - amax[0]["dst"], f["src"] - amax[0]["src"], f["len"]) for f in amax] == [
        (0, 0, 4), (1, 4, 4), (2, 8, 4)]


def test_int4_weight_is_loaded_packed_then_unpacked():
    g = Graph()
    w = g.weight("w", np.arange(9.0).reshape(3, 3) - 4, bits=4)
    g.output(g.matmul(g.input("x", (1, 3)), w), "y")
    program = compile_graph(g, [{"x": np.ones((1, 3))}])
    ld_x, ld_w, unpack = (i.fields for i in program.code[:3])
    # external memory: w first (node 0, 9 values in 2 packed words), then x at word 2
    assert (ld_x["src"], ld_x["len"], ld_w["src"], ld_w["len"]) == (2, 3, 0, 2)
    assert (unpack["src"], unpack["len"]) == (ld_w["dst"], 2)
    assert program.code[2].op == "UNPACK"


def test_a_program_longer_than_the_instruction_memory_is_refused():
    g = Graph()
    tip = g.input("x", (1, 4))
    w = g.weight("w", np.eye(4))
    for _ in range(2100):
        tip = g.matmul(tip, w)
    g.output(tip, "y")
    with pytest.raises(CompileError, match="4204 instructions, more than the 4096"):
        compile_graph(g, [{"x": np.ones((1, 4))}])


def test_a_matmul_factor_whose_float_product_would_overflow_is_computed_exactly():
    # x and w reach 1e154, so scale_x * scale_w * 1e5 passes 1.8e308 on the way, but the rows
    # nearly cancel: the product, and so the factor, are ordinary numbers.
    g = Graph()
    x = g.input("x", (1, 2))
    m = g.matmul(x, g.weight("w", [[1e154], [-1e154 * (1 - 1e-8)]]), scale=1e5)
    g.output(m, "y")
    program = compile_graph(g, [{"x": [[1e154, 1e154]]}])
    scales = [Fraction(program.scales[n]) for n in (x, 1, m)]
    exact = Fraction(1e5) * scales[0] * scales[1] / scales[2]
    assert program.requantizers[m] == mantissa_shift(float(exact))
