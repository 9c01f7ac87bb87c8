"""compiler/limits.py: K and softmax row limits, read from the machine parameters."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.interpret import interpret
from compiler.limits import check_limits
from sim.spec import DEFAULT, Params

from .conftest import single_matmul


@pytest.mark.parametrize(("k", "params", "pieces"), [
    (64, Params(), [64]), (65, Params(), [64, 1]), (200, Params(), [64, 64, 64, 8]),
    (33, Params(K_MAX=32), [32, 1])])
def test_an_inner_dimension_beyond_k_max_is_cut_into_pieces_that_add_up(k, params, pieces):
    """K > K_MAX (issue 14): each tile's MMs take at most K_MAX, the first overwrites the
    accumulator and the rest add into it (acc = 1); the outputs are the integer interpreter's,
    word for word (the unsplit product, requantized once)."""
    rng = np.random.default_rng(k)
    graph = single_matmul(2, k, 3)
    check_limits(graph, params)
    program = compile_graph(graph, [{"x": rng.normal(size=(2, k))} for _ in range(5)], params=params)
    mms = [ins.fields for ins in program.code if ins.op == "MM"]
    assert [(f["K"], f["acc"]) for f in mms] == [(p, int(i > 0)) for i, p in enumerate(pieces)]
    assert [f["A"] - mms[0]["A"] for f in mms] == [sum(pieces[:i]) for i in range(len(pieces))]
    test = {"x": rng.normal(size=(2, k))}
    out = program.run(test, warn=False).outputs["y"].ints
    assert np.array_equal(out, interpret(program, test)[program.ext["y"].node])


def test_softmax_rows_longer_than_sm_max_len_are_refused():
    g = Graph()
    g.softmax(g.input("x", (1, 65)))
    with pytest.raises(CompileError, match="rows of 65 values exceed the softmax unit's limit of 64"):
        check_limits(g, params=DEFAULT)
    check_limits(g, Params(SM_MAX_LEN=128))
