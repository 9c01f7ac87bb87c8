"""A causal softmax (issue 26: attention's mask): row i of the last ``rows`` positions takes its
first i + 1 + cols - rows values, the rest exactly 0; against hand-worked numbers, the
interpreter and the reference machine."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.interpret import interpret


def attention(queries: int, keys: int, d: int = 8) -> Graph:
    g = Graph()
    q, k, v = g.input("q", (queries, d)), g.input("k", (keys, d)), g.input("v", (keys, d))
    p = g.softmax(g.matmul(q, k, transpose_b=True, scale=d ** -0.5), causal=True)
    g.output(p, "p")
    g.output(g.matmul(p, v), "y")
    return g


def sample(rng, queries: int, keys: int, d: int = 8) -> dict:
    return {"q": rng.normal(size=(queries, d)), "k": rng.normal(size=(keys, d)),
            "v": rng.normal(size=(keys, d))}


def test_the_first_row_sees_only_itself_and_every_row_sums_to_one():
    rng = np.random.default_rng(1)
    program = compile_graph(attention(4, 4), [sample(rng, 4, 4) for _ in range(6)])
    p = program.run(sample(rng, 4, 4), warn=False).outputs["p"].ints
    assert p[0].tolist() == [127, 0, 0, 0]                  # one key: probability 1.0
    assert (np.triu(p, 1) == 0).all()                      # nothing above the diagonal
    assert (np.abs(p.sum(axis=1) - 127) <= 3).all()        # each row's levels add up to about 1.0
    codes = [i for i in program.code if i.op in ("SM", "LD")]
    sms = [i.len for i in program.code if i.op == "SM"]
    assert sms == [1, 2, 3, 4] and len(codes) > 4


@pytest.mark.parametrize("queries, keys", [(4, 4), (1, 6), (3, 7)])
def test_every_tensor_equals_the_machines(queries, keys):
    """Prefill (4 x 4), a decode step (the last query against 6 keys: nothing masked) and 3
    queries after 4 cached keys."""
    rng = np.random.default_rng(queries * 10 + keys)
    g = attention(queries, keys)
    program = compile_graph(g, [sample(rng, queries, keys) for _ in range(6)], reuse=False)
    test = sample(rng, queries, keys)
    ints = interpret(program, test)
    outcome = program.run(test, warn=False)
    for node in g.nodes:
        if node.op != "output":
            assert np.array_equal(program.read_tensor(outcome, node.id), ints[node.id]), node.describe()
    p = ints[g.nodes[-2].ins[0]]
    masked = np.arange(keys)[None, :] > np.arange(queries)[:, None] + keys - queries
    assert (p[masked] == 0).all() and (p[~masked] >= 0).all()


def test_a_causal_softmax_needs_a_key_for_every_query():
    g = Graph()
    with pytest.raises(CompileError, match=r"fewer keys \(2\) than queries \(3\)"):
        g.softmax(g.input("s", (3, 2)), causal=True)
