"""compiler/text.py: the text form of a graph, its parser, and the round trip."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.pipeline import check_structure
from compiler.testing.battery import BATTERY_SEEDS
from compiler.testing.random_graphs import random_slice_graph
from compiler.workloads.random_graph import random_graph
from compiler.workloads.seedtable import attention_step_graph
from sim.spec import DEFAULT

ATTENTION_STEP = """\
%0 = input "q" -> (1, 12)
%1 = input "kc" -> (6, 12)
%2 = input "kn" -> (1, 12)
%3 = concat %1, %2 -> (7, 12)
%4 = matmul %0, %3 transpose_b=True factor=0.2886751345948129 -> (1, 7)
%5 = softmax %4 -> (1, 7)
%6 = input "vc" -> (6, 12)
%7 = input "vn" -> (1, 12)
%8 = concat %6, %7 -> (7, 12)
%9 = matmul %5, %8 -> (1, 12)
%10 = output %9 "out" -> (1, 12)"""


def weights_of(graph: Graph) -> dict[str, np.ndarray]:
    return {node.name: node.array for node in graph.nodes if node.op == "weight"}


def test_an_attention_step_as_text_by_hand():
    # running example A's graph at dim 12 and a cache of 6 rows; the factor is 1/sqrt(12)
    g = attention_step_graph(dim=12, cache=6)
    assert g.text() == str(g) == ATTENTION_STEP
    assert Graph.parse(ATTENTION_STEP) == g


def test_every_attribute_is_written_and_read_back():
    g = Graph()
    x = g.input("x", (4, 3))
    w = g.weight("w.T", [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], bits=4)
    g.tag(x, "cache")
    top = g.slice_rows(g.relu(g.matmul(x, w, scale=0.1)), 1, 2)
    g.output(g.argmax(top), "tok #1")
    text = g.text()
    assert text.splitlines()[1:3] == ['%1 = weight "w.T" bits=4 -> (3, 2)',
                                      "%2 = matmul %0, %1 factor=0.1 -> (4, 2)"]
    assert text.splitlines()[0] == '%0 = input "x" tag="cache" -> (4, 3)'
    assert text.splitlines()[4] == "%4 = slice %3 start=1 count=2 -> (2, 2)"
    assert text.splitlines()[-1] == '%6 = output %5 "tok #1" -> (2, 1)'
    assert Graph.parse(text, weights_of(g)) == g


@pytest.mark.parametrize("build", [random_graph, random_slice_graph])
@pytest.mark.parametrize("wbits", [8, 4])
def test_the_battery_graphs_round_trip(build, wbits):
    for seed in BATTERY_SEEDS:
        g, _ = build(seed, wbits)
        text = g.text()
        assert Graph.parse(text, weights_of(g)) == g, seed
        valueless = Graph.parse(text)
        assert valueless.text() == text, seed
        assert all(n.array is None for n in valueless.nodes if n.op == "weight")


def test_a_graph_without_weight_values_passes_the_structural_passes_but_does_not_compile():
    g = Graph.parse('%0 = input "x" -> (2, 3)\n%1 = weight "w" -> (3, 2)\n'
                    "%2 = matmul %0, %1 -> (2, 2)\n%3 = output %2 \"y\" -> (2, 2)")
    check_structure(g, params=DEFAULT)
    with pytest.raises(CompileError, match=r"node 1 \(weight 'w'\) has no values") as info:
        compile_graph(g, [{"x": np.ones((2, 3))}])
    assert "weights=" in info.value.fix


def test_comments_and_blank_lines_are_skipped():
    assert Graph.parse("# a comment\n\n" + ATTENTION_STEP + "\n") == attention_step_graph(dim=12, cache=6)


@pytest.mark.parametrize("text, words", [
    ("%0 = input x -> (1, 2)", "line 1: cannot read 'x'"),
    ('%1 = input "x" -> (1, 2)', "line 1: the node is numbered %1, but it is node 0"),
    ('%0 = conv "x" -> (1, 2)', "line 1: unknown operation 'conv'"),
    ('%0 = input "x" -> (1, 2)\n%1 = relu %0 start=2 -> (1, 2)', "line 2: relu has no attribute 'start'"),
    ('%0 = input "x" -> (1, 2)\n%1 = softmax %0 -> (2, 2)', "line 2: node 1 (softmax) has the shape (1, 2), "
     "not (2, 2)"),
    ('%0 = input "x" -> (1, 2)\n%1 = matmul %0, %0 -> (1, 2)', "line 2: matmul of node 0 (input 'x') (1, 2) "
     "by node 0 (input 'x') (1, 2): inner dimensions 2 and 1 differ"),
    ('%0 = input "x" -> (1, 2)\n%1 = add %0 -> (1, 2)', "line 2: add takes 2 operands, not 1"),
    ('%0 = input "x" -> (1, 2)\n%1 = relu %3 -> (1, 2)', "line 2: relu: operand 3 is not a node"),
    ('%0 = input "x" -> 1, 2', "line 1: '%0 = input \"x\" -> 1, 2' is not a node"),
    ('%0 = weight "w" -> (1, 2)', "line 1: weights= has no values for 'w'"),
    ('%0 = input "x" flag=yes -> (1, 2)', "line 1: the value 'yes' is not a string"),
    ('%0 = input "x" -> (1, 2)\n%1 = relu %0 "r" -> (1, 2)',
     'line 2: relu has no name, but the line gives "r"'),
])
def test_a_bad_line_is_refused_naming_it(text, words):
    weights = {} if "weight" in text else None
    with pytest.raises(CompileError) as info:
        Graph.parse(text, weights)
    assert info.value.problem.startswith(words), info.value.problem
    assert info.value.fix
