"""compiler/cse.py: a repeated pure subgraph is computed once; what may not be merged is not;
the merged program computes what the unmerged one does."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.interpret import interpret


def _two_branches(tag_second: str | None = None) -> Graph:
    """x @ w, relu, written twice and added (the same tensor twice)."""
    rng = np.random.default_rng(5)
    g = Graph()
    x, w = g.input("x", (4, 6)), g.weight("w", rng.normal(size=(6, 5)))
    first = g.relu(g.matmul(x, w))
    second = g.relu(g.matmul(x, w))
    if tag_second:
        g.tag(second, tag_second)
    g.output(g.add(first, second), "y")
    return g


def _samples(shape=(4, 6), count=6):
    rng = np.random.default_rng(9)
    return [{"x": rng.normal(size=shape)} for _ in range(count)]


def test_a_repeated_matmul_and_relu_is_computed_once_and_gives_the_same_integers():
    g, calibration = _two_branches(), _samples()
    merged, plain = compile_graph(g, calibration), compile_graph(g, calibration, cse=False)
    ops = [n.op for n in merged.graph.nodes]
    assert ops == ["input", "weight", "matmul", "relu", "add", "output"]
    assert merged.node_of == {0: 0, 1: 1, 2: 2, 3: 3, 4: 2, 5: 3, 6: 4, 7: 5}
    assert plain.node_of == {i: i for i in range(8)} and len(plain.graph.nodes) == 8
    # the second product's two MMs (a 4 x 4 and a 4 x 1 output tile at T = 4) and its RQ are gone
    ops, plain_ops = [i.op for i in merged.code], [i.op for i in plain.code]
    assert (ops.count("MM"), ops.count("RQ")) == (2, 3)
    assert (plain_ops.count("MM"), plain_ops.count("RQ")) == (4, 4)
    assert len(merged.code) == len(plain.code) - 3
    for sample in calibration[:3]:
        a, b = merged.run(sample), plain.run(sample)
        assert np.array_equal(a.outputs["y"].ints, b.outputs["y"].ints)
        assert np.array_equal(a.outputs["y"].ints, interpret(merged, sample)[merged.graph.names["y"]])
        assert a.counters.cycles < b.counters.cycles and a.counters.mxu * 2 == b.counters.mxu


def test_a_merge_that_would_unfuse_a_relu_is_not_made():
    # the first product is read by a relu (fused into its RQ), the second by an add: one tensor
    # cannot be both, so both products stay
    rng = np.random.default_rng(1)
    g = Graph()
    x, w = g.input("x", (2, 3)), g.weight("w", rng.normal(size=(3, 3)))
    g.output(g.add(g.relu(g.matmul(x, w)), g.matmul(x, w)), "y")
    program = compile_graph(g, _samples((2, 3)))
    assert [n.op for n in program.graph.nodes].count("matmul") == 2
    assert program.node_of == {i: i for i in range(len(g.nodes))}


def test_two_equal_concatenations_become_one_which_the_placement_alone_refuses():
    g = Graph()
    x, y = g.input("x", (1, 3)), g.input("y", (1, 3))
    g.output(g.add(g.concat_rows(x, y), g.concat_rows(x, y)), "o")
    calibration = [{"x": np.full((1, 3), 0.5), "y": np.full((1, 3), -0.25)}]
    program = compile_graph(g, calibration)
    assert [n.op for n in program.graph.nodes].count("concat") == 1
    assert program.run(calibration[0]).outputs["o"].floats == pytest.approx(
        np.array([[1.0] * 3, [-0.5] * 3]), abs=0.02)
    with pytest.raises(CompileError, match="feeds concatenation node 2 and concatenation node 3"):
        compile_graph(g, calibration, cse=False)


def test_sources_outputs_and_differently_tagged_nodes_are_kept_apart():
    g = Graph()
    x = g.input("x", (2, 2))
    a, b = g.weight("a", np.eye(2)), g.weight("b", np.eye(2))     # equal values, two names
    g.output(g.add(g.matmul(x, a), g.matmul(x, b)), "o1")
    g.output(g.add(g.matmul(x, a), g.matmul(x, b)), "o2")          # the same sum: merged
    program = compile_graph(g, [{"x": np.eye(2)}])
    assert [n.op for n in program.graph.nodes] == ["input", "weight", "weight", "matmul", "matmul", "add",
                                                   "output", "output"]
    assert set(program.ext) == {"x", "a", "b", "o1", "o2"}
    tagged = compile_graph(_two_branches(tag_second="kv"), _samples())
    assert [n.op for n in tagged.graph.nodes].count("matmul") == 2


def test_a_graph_without_repeats_compiles_to_the_same_program_either_way():
    import random

    from compiler.workloads.random_graph import random_graph, sample_inputs
    for seed in range(12):
        graph, names = random_graph(seed, 8)
        calibration = [sample_inputs(names, random.Random(seed)) for _ in range(3)]
        on, off = compile_graph(graph, calibration), compile_graph(graph, calibration, cse=False)
        if len(on.graph.nodes) == len(graph.nodes):
            assert on.code == off.code and on.graph.text() == graph.text()


def test_a_refusal_names_the_users_node_ids():
    g = Graph()
    x = g.input("x", (2, 2))
    g.output(g.add(g.softmax(x), g.softmax(x)), "y")         # mergeable, but not the cause
    g.output(g.relu(x), "z")                                 # a relu of an input: node 5 (node 4 once merged)
    with pytest.raises(CompileError, match="relu node 5 reads node 0"):
        compile_graph(g, [{"x": np.eye(2)}])


def test_cse_must_be_true_or_false():
    with pytest.raises(CompileError, match=r"compile_graph: cse = 'yes' \(a str\) is not True or False"):
        compile_graph(_two_branches(), _samples(), cse="yes")


def test_explain_says_the_graph_was_merged():
    text = compile_graph(_two_branches(), _samples()).explain()
    assert "6 nodes (the graph given had 8: common-subexpression elimination" in text
    assert "the graph given had" not in compile_graph(_two_branches(), _samples(), cse=False).explain()
