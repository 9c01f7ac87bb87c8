"""compiler/tables.py and the TABLE operation: entries by hand, the LUT on the machine against
the interpreter, refusals by name."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.interpret import interpret
from compiler.ir import Node
from compiler.ops import Op
from compiler.tables import function, table_levels


def _node(fn: str) -> Node:
    return Node(1, Op.TABLE, (0,), (1, 4), fn=fn)


def test_entries_are_the_quantized_function_of_the_dequantized_input():
    """Entry e = quantize(f((e - 128) * s_in), s_out), hand-worked for tanh at s_in = 1/32,
    s_out = 1/127: entry 128 (x = 0) is 0, entry 160 (x = 1.0) is round(127 tanh 1) = 97, entry
    0 (x = -4) is round(-127 tanh 4) = -127, entry 255 (x = 127/32) is 127."""
    table = table_levels(_node("tanh"), {0: 1 / 32, 1: 1 / 127})
    assert len(table) == 256
    assert (table[128], table[160], table[0], table[255]) == (0, 97, -127, 127)
    assert table[96] == -97                                # x = -1.0: tanh is odd
    relu = table_levels(_node("relu"), {0: 0.5, 1: 0.25})  # entry e: clamp(2 * max(e - 128, 0))
    assert list(relu[:129]) == [0] * 129 and relu[130] == 4 and relu[255] == 127


def test_pytorch_definitions():
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    assert np.allclose(function("gelu")(x), 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x])))
    assert np.allclose(function("hardswish")(x), [-2 / 6, -0.5 * 2.5 / 6, 0, 0.5 * 3.5 / 6, 3])
    assert np.allclose(function("leaky_relu:0.1")(x), [-0.2, -0.05, 0, 0.5, 3])
    assert np.allclose(function("elu:2.0")(x), [2 * math.expm1(-2), 2 * math.expm1(-0.5), 0, 0.5, 3])
    with pytest.raises(ValueError, match="unknown table function 'softplus'"):
        function("softplus")
    with pytest.raises(ValueError, match="alpha of elu is inf"):
        function("elu:inf")


def test_a_function_that_is_not_finite_on_an_int8_input_is_refused_by_name():
    with pytest.raises(CompileError, match=r"node 1 \(table\): gelu\(-inf\) is nan for the int8 input -128"):
        table_levels(_node("gelu"), {0: 1e307, 1: 1.0})


def test_an_unknown_function_is_refused_when_the_graph_is_built():
    g = Graph()
    with pytest.raises(CompileError, match="unknown table function 'swish'"):
        g.table(g.input("x", (1, 4)), "swish")


@pytest.mark.parametrize("fn", ["gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "hardswish", "relu",
                                "leaky_relu:0.05", "elu:1.0"])
def test_a_table_between_two_biased_matmuls_runs_exactly(fn):
    """LD of the table into a temporary, one LUT; the machine equals the interpreter and the
    int8 result is within two levels of the real meaning (realcheck's tolerance)."""
    rng = np.random.default_rng(len(fn))
    g = Graph()
    h = g.table(g.matmul(g.input("x", (3, 70)), g.weight("w", rng.normal(0, 0.15, (70, 9))),
                         bias=rng.normal(0, 0.5, 9)), fn)
    g.output(g.matmul(h, g.weight("w2", rng.normal(0, 0.3, (9, 5)))), "y")
    program = compile_graph(g, [{"x": rng.normal(size=(3, 70))} for _ in range(12)])
    assert [ins.op for ins in program.code].count("LUT") == 1
    lut = next(ins for ins in program.code if ins.op == "LUT")
    assert lut.len == 27
    test = {"x": rng.normal(size=(3, 70))}
    got = program.run(test, warn=False).outputs["y"].ints
    assert np.array_equal(got, interpret(program, test)[program.ext["y"].node])


def test_a_table_whose_input_is_clipped_in_calibration_is_noted_by_name():
    """h feeds a softmax, which pins its scale to Q4.4 (1/16, at most 127/16 = 7.94), and a
    gelu table: the values of h beyond 7.94 (|h| * 16 >= 127.5, counted here in numpy) are
    clipped before gelu sees them, and the compiler says so, with the share."""
    import warnings

    from compiler import Graph, compile_graph
    from compiler.tables import TableSaturationWarning

    rng = np.random.default_rng(0)
    w = rng.normal(0, 1, (8, 4))
    g = Graph()
    x = g.input("x", (4, 8))
    h = g.matmul(x, g.weight("w", w))
    g.output(g.softmax(h), "p")
    g.output(g.table(h, "gelu"), "y")
    samples = [{"x": rng.normal(0, 2, (4, 8))} for _ in range(3)]
    values = np.stack([s["x"] @ w for s in samples])
    share = np.count_nonzero(np.abs(values) * 16 >= 127.5) / values.size
    assert 0 < share < 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = compile_graph(g, samples)
    table = next(n for n in g.nodes if n.op == "table")
    noted = [n for n in program.notes if n.startswith(table.describe())]
    expected = (f"{table.describe()}: its input, {g.nodes[h].describe()}, reaches {np.abs(values).max():.4g} "
                f"on the calibration samples, beyond the 7.938 its scale holds: {100 * share:.1f}% of the "
                "values gelu saw in calibration are clipped to +-7.938 first")
    assert len(noted) == 1 and noted[0].startswith(expected), noted
    assert [str(w.message) for w in caught if w.category is TableSaturationWarning] == noted


def test_a_table_whose_input_fits_its_scale_is_not_noted():
    from compiler import Graph, compile_graph

    g = Graph()
    x = g.input("x", (2, 3))
    g.output(g.table(x, "tanh"), "y")
    program = compile_graph(g, [{"x": np.array([[-5.0, 0.5, 9.0], [1.0, 2.0, 3.0]])}])
    assert program.notes == []
