"""compiler/ir.py: graph building, shape checks, refusals naming the node and the fix."""

import numpy as np
import pytest

from compiler import CompileError, Graph


def test_shapes_of_each_operation():
    g = Graph()
    a = g.input("a", (2, 3))
    w = g.weight("w", np.ones((3, 5)))
    assert g.nodes[g.matmul(a, w)].shape == (2, 5)
    b = g.input("b", (4, 3))
    assert g.nodes[g.matmul(a, b, transpose_b=True)].shape == (2, 4)
    assert g.nodes[g.concat_rows(a, b)].shape == (6, 3)
    assert g.nodes[g.slice_rows(b, 1, 2)].shape == (2, 3)
    assert g.nodes[g.argmax(b)].shape == (4, 1)
    assert g.nodes[g.softmax(b)].shape == (4, 3)
    assert [n.id for n in g.nodes] == list(range(len(g.nodes)))


def test_matmul_keeps_factor_and_transpose():
    g = Graph()
    a, b = g.input("a", (1, 4)), g.input("b", (3, 4))
    node = g.nodes[g.matmul(a, b, transpose_b=True, scale=0.25)]
    assert (node.ins, node.transpose_b, node.factor) == ((0, 1), True, 0.25)


def test_consumers_lists_every_read():
    g = Graph()
    x = g.input("x", (2, 2))
    s = g.add(x, x)
    g.output(s, "y")
    assert g.consumers() == {0: [1, 1], 1: [2], 2: []}


def test_errors_name_the_nodes_and_give_a_fix():
    g = Graph()
    a = g.input("a", (2, 3))
    w = g.weight("w", np.ones((4, 4)))
    with pytest.raises(CompileError) as info:
        g.matmul(a, w)
    e = info.value
    assert "node 0 (input 'a')" in e.problem and "node 1 (weight 'w')" in e.problem
    assert "3 and 4" in e.problem and "transpose_b" in e.fix
    assert str(e) == f"{e.problem}. Fix: {e.fix}"


@pytest.mark.parametrize("build, words", [
    (lambda g: g.add(g.input("a", (2, 3)), g.input("b", (3, 2))), "shapes differ"),
    (lambda g: g.concat_rows(g.input("a", (2, 3)), g.input("b", (2, 4))), "widths differ"),
    (lambda g: g.slice_rows(g.input("a", (3, 4)), 2, 2), "rows 2..3"),
    (lambda g: g.slice_rows(g.input("a", (3, 4)), 1, 0), "3 rows"),
    (lambda g: g.slice_rows(g.input("a", (3, 4)), -1, 1), "3 rows"),
    (lambda g: g.slice_rows(g.input("a", (3, 4)), "0", 1), "start='0' (a str) is not an integer"),
    (lambda g: g.slice_rows(g.input("a", (3, 4)), True, 1), "start=True (a bool) is not an integer"),
    (lambda g: g.slice_rows(g.input("a", (3, 4)), 0, 2.0), "count=2.0 (a float) is not an integer"),
    (lambda g: g.weight("w", np.ones((2, 2)), bits=5), "bits=5"),
    (lambda g: g.weight("w", [[1.0, float("nan")]]), "NaN or infinity (element [0, 1] is nan)"),
    (lambda g: g.weight("w", np.array([[1, None]], dtype=object)), "element [0, 1] is None, not a number"),
    (lambda g: g.weight("w", [[1.0, None]]), "element [0, 1] is None, not a number"),
    (lambda g: g.weight("w", [["1", "2"]]), "holds text"),
    (lambda g: g.weight("w", [[1 + 1j, 2]]), "complex"),
    (lambda g: g.weight("w", [[1.0, 2.0], [3.0]]), "rows have different lengths"),
    (lambda g: g.weight("w", [1.0, 2.0]), "2-D"),
    (lambda g: g.input("a", (0, 3)), "at least 1"),
    (lambda g: g.input("a", (2, 3, 4)), "(rows, cols)"),
    (lambda g: g.matmul(g.input("a", (1, 2)), g.input("b", (2, 2)), scale=-1.0), "positive"),
    (lambda g: g.matmul(g.input("a", (1, 2)), g.input("b", (2, 2)), scale=0.0), "positive"),
    (lambda g: g.relu(7), "not a node"),
    (lambda g: g.relu(g.input("a", (1, 2)) > -1), "operand True is not a node"),
    (lambda g: g.input("a", (True, 2)), "shape (True, 2)"),
    (lambda g: g.weight("w", [[1.0]], bits=8.0), "bits=8.0"),
    (lambda g: g.weight("w", [[1.0]], bits="8"), "bits='8'"),
    (lambda g: g.matmul(g.input("a", (1, 2)), g.input("b", (2, 2)), scale="2"), "factor '2'"),
    (lambda g: g.matmul(g.input("a", (1, 2)), g.input("b", (2, 2)), transpose_b="no"),
     "transpose_b = 'no' (a str) is not True or False"),
    (lambda g: g.tag(g.input("a", (1, 2)), ""), "got '' (a str)"),
])
def test_bad_calls_are_refused(build, words):
    with pytest.raises(CompileError) as info:
        build(Graph())
    assert words in info.value.problem
    assert info.value.fix


def test_names_must_be_unique_across_inputs_weights_and_outputs():
    g = Graph()
    x = g.input("x", (1, 2))
    with pytest.raises(CompileError, match="already used by node 0"):
        g.weight("x", np.ones((2, 2)))
    with pytest.raises(CompileError, match="already used by node 0"):
        g.output(x, "x")


def test_an_output_is_not_an_operand_and_an_argmax_feeds_only_outputs():
    g = Graph()
    x = g.input("x", (2, 2))
    y = g.output(x, "y")
    with pytest.raises(CompileError, match="is an output") as info:
        g.relu(y)
    assert "node 0" in info.value.fix
    index = g.argmax(x)
    with pytest.raises(CompileError, match="row indices"):
        g.add(index, index)
    g.output(index, "tok")


def test_tag_names_a_tensor():
    g = Graph()
    x = g.input("x", (1, 2))
    assert g.tag(x, "cache") == x
    assert g.nodes[x].tag == "cache"


def test_weights_are_copied_and_read_only():
    values = np.ones((2, 2))
    g = Graph()
    w = g.weight("w", values)
    values[0, 0] = 5
    assert g.nodes[w].array[0, 0] == 1
    assert not g.nodes[w].array.flags.writeable


def test_counts_in_messages_agree_with_their_nouns():
    from compiler.ir import plural
    assert [plural(n, "piece") for n in (0, 1, 2)] == ["0 pieces", "1 piece", "2 pieces"]
    g = Graph()
    x = g.input("x", (1, 3))
    with pytest.raises(CompileError, match=r"inside its 1 row\."):
        g.slice_rows(x, 0, 2)
    with pytest.raises(CompileError, match=r"it has 1 node\)"):
        g.relu(5)


# ---------------------------------------------------------------- issue 24, defect 4


def test_a_node_of_another_graph_is_refused_naming_both_graphs():
    first, second = Graph(), Graph()
    x1 = first.input("x", (2, 4))
    second.input("y", (2, 4))
    w = second.weight("w", np.ones((4, 4)))
    # before: id 0 of the first graph picked the second graph's own node 0 and compiled
    message = (rf"matmul: operand 0 is a node of another graph \(graph #{first.number}\), "
               rf"not of this one \(graph #{second.number}\)")
    with pytest.raises(CompileError, match=message):
        second.matmul(x1, w)
    assert len(second.nodes) == 2                     # nothing was added


def test_ids_stay_plain_ints_to_the_user():
    g = Graph()
    x = g.input("x", (2, 4))
    assert x == 0 and repr(x) == "0" and isinstance(x, int) and g.relu(g.add(x, x)) == 2
    import pickle
    assert type(pickle.loads(pickle.dumps(x))) is int
    assert g.tag(x, "in").graph == g.number and g.add(0, 0) == 3  # a plain int is still taken


def test_a_graph_without_an_output_is_refused():
    from compiler import compile_graph

    g = Graph()
    g.relu(g.matmul(g.input("x", (2, 4)), g.weight("w", np.ones((4, 4)))))
    with pytest.raises(CompileError, match=r"has no output, so its program would store nothing"):
        compile_graph(g, [{"x": np.ones((2, 4))}])
