"""compiler/ops/layernorm.py and its lowering (issue 26): LayerNorm of each row through LN and
one RQ, against hand-worked numbers, the integer interpreter and the reference machine."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.interpret import interpret
from compiler.ops.layernorm import bias_row, eps_field
from sim.spec import LN_MAX_LEN


def norm_graph(rows: int, cols: int, **attrs) -> Graph:
    g = Graph()
    g.output(g.layernorm(g.input("x", (rows, cols)), **attrs), "y")
    return g


def test_a_row_of_plus_and_minus_a_normalises_to_plus_and_minus_one():
    """(a, -a, a, -a) has mean 0 and variance a^2: z = +-1/sqrt(1 + eps/a^2), 127 levels at the
    output scale 1/127 that calibration on the same row gives (z = 0.99999...)."""
    g = norm_graph(1, 4, eps=1e-6)
    row = [[0.5, -0.5, 0.5, -0.5]]
    program = compile_graph(g, [{"x": row}])
    assert [i.op for i in program.code] == ["LD", "LD", "LN", "RQ", "ST", "HALT"]
    ints = interpret(program, {"x": row})
    assert ints[1].tolist() == [[127, -127, 127, -127]]
    assert program.run({"x": row}).outputs["y"].ints.tolist() == [[127, -127, 127, -127]]


def test_the_eps_field_and_the_bias_row_are_the_formulas():
    """eps field = round(256 N^2 eps / s_in^2); bias row = round(2^16 bias / gain)."""
    g = Graph()
    x = g.input("x", (2, 4))
    node = g.nodes[g.layernorm(x, eps=1e-5, gain=2.0, bias=[1.0, -0.5, 0.0, 3e-5])]
    assert eps_field(node, 0.01) == 410                    # 256 * 16 * 1e-5 / 1e-4 = 409.6
    assert eps_field(node, 1e-9) == 2**32 - 1              # saturated
    assert bias_row(node).tolist() == [32768, -16384, 0, 1]  # 65536 * 3e-5 / 2 = 0.98


def test_every_tensor_of_a_normed_block_equals_the_machines():
    rng = np.random.default_rng(7)
    g = Graph()
    x = g.input("x", (5, 24))
    h = g.layernorm(x, eps=1e-5, gain=1.5, bias=rng.normal(0, 0.3, 24))
    g.output(g.matmul(h, g.weight("w", rng.normal(0, 0.2, (24, 8))), bias=rng.normal(0, 0.1, 8)), "y")
    program = compile_graph(g, [{"x": rng.normal(1.0, 2.0, (5, 24))} for _ in range(6)], reuse=False)
    test = {"x": rng.normal(1.0, 2.0, (5, 24))}
    ints = interpret(program, test)
    outcome = program.run(test)
    for node in g.nodes:
        if node.op != "output":
            assert np.array_equal(program.read_tensor(outcome, node.id), ints[node.id]), node.describe()
    assert sum(i.op == "LN" for i in program.code) == 5


def test_the_result_is_the_layernorm_within_a_level():
    """Against nn.LayerNorm's formula on the dequantized input: the integer result is the
    nearest level or the next (LN's own error is below 1.5 units of 2^-16; the RQ rounds once)."""
    rng = np.random.default_rng(8)
    g = norm_graph(6, 32, eps=1e-5)
    program = compile_graph(g, [{"x": rng.normal(0, 3.0, (6, 32))} for _ in range(6)])
    test = {"x": rng.normal(0, 3.0, (6, 32))}
    ints = interpret(program, test)
    x = ints[0] * program.scales[0]
    centred = x - x.mean(axis=1, keepdims=True)
    z = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5)
    assert np.abs(ints[1] - np.clip(np.round(z / program.scales[1]), -127, 127)).max() <= 1


def test_refusals_name_the_node():
    g = Graph()
    x = g.input("x", (1, 4))
    with pytest.raises(CompileError, match=r"gain = -1.0 \(a float\) is not a positive"):
        g.layernorm(x, gain=-1.0)
    with pytest.raises(CompileError, match="the bias must be 4 finite numbers"):
        g.layernorm(x, bias=[1.0, 2.0])
    long = norm_graph(1, LN_MAX_LEN + 1)
    with pytest.raises(CompileError, match=f"layernorm node 1: rows of {LN_MAX_LEN + 1} values exceed LN"):
        compile_graph(long, [{"x": np.ones((1, LN_MAX_LEN + 1))}])
