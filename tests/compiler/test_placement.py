"""compiler/placement.py: buffers, views, offsets and the placement refusals."""

import numpy as np
import pytest

from compiler import CompileError, Graph
from compiler.placement import buffer_words, place


def placed(g: Graph):
    return place(g, g.consumers())


def test_concat_parts_are_views_at_row_offsets_even_when_nested():
    g = Graph()
    a, b, c = g.input("a", (2, 3)), g.input("b", (1, 3)), g.input("c", (4, 3))
    inner = g.concat_rows(a, b)
    outer = g.concat_rows(inner, c)
    g.output(outer, "o")
    p = placed(g)
    buf = p.loc[outer][0]
    assert {n: p.loc[n] for n in (a, b, c, inner, outer)} == {
        a: (buf, 0), b: (buf, 2), c: (buf, 3), inner: (buf, 0), outer: (buf, 0)}
    assert p.buffers[buf].words == 7 * 3 and p.buffers[buf].owner == outer


def test_fused_relu_shares_its_matmul_buffer_and_a_slice_is_a_view():
    g = Graph()
    x = g.input("x", (5, 2))
    m = g.matmul(x, g.weight("w", np.eye(2)))
    r = g.relu(m)
    s = g.slice_rows(r, 3, 2)
    g.output(s, "o")
    p = placed(g)
    assert p.loc[m] == p.loc[r] == (p.loc[s][0], 0) and p.loc[s][1] == 3
    assert p.loc[x][0] != p.loc[m][0]


def test_argmax_gets_one_word_per_row_and_outputs_no_place():
    g = Graph()
    x = g.input("x", (3, 5))
    m = g.argmax(x)
    o = g.output(m, "tok")
    p = placed(g)
    assert p.buffer_of(m).words == 3 and o not in p.loc


def test_int4_weight_buffer_is_rounded_up_to_whole_unpack_groups():
    g = Graph()
    w = g.weight("w", np.ones((3, 3)), bits=4)
    assert buffer_words(g.nodes[w]) == 16
    assert buffer_words(g.nodes[g.weight("v", np.ones((3, 3)))]) == 9


def test_a_tensor_in_two_concatenations_is_refused():
    g = Graph()
    x, y = g.input("x", (1, 3)), g.input("y", (1, 3))
    g.add(g.concat_rows(x, y), g.concat_rows(x, y))
    with pytest.raises(CompileError) as info:
        placed(g)
    assert "node 0 (input 'x') feeds concatenation node 2 and concatenation node 3" in info.value.problem
    assert "one concatenation" in info.value.fix


def test_a_tensor_twice_in_one_concatenation_is_refused():
    g = Graph()
    x = g.input("x", (1, 3))
    g.concat_rows(x, x)
    with pytest.raises(CompileError, match="feeds concatenation node 1 twice"):
        placed(g)


@pytest.mark.parametrize("op, reader", [("concat", 3), ("relu", 2)])
def test_a_slice_may_not_feed_a_concatenation_or_a_relu(op, reader):
    g = Graph()
    s = g.slice_rows(g.input("x", (3, 4)), 0, 2)
    if op == "concat":
        g.concat_rows(s, g.input("y", (1, 4)))
    else:
        g.relu(s)
    with pytest.raises(CompileError, match=f"slice node 1 is read by node {reader} \\({op}"):
        placed(g)


def test_an_int4_weight_may_not_be_part_of_a_concatenation():
    g = Graph()
    g.concat_rows(g.weight("w", np.ones((3, 3)), bits=4), g.input("x", (1, 3)))
    with pytest.raises(CompileError, match="int4 weight") as info:
        placed(g)
    assert info.value.fix == "store this weight with bits=8"
