"""compiler/layout.py: external memory in node order, outputs last; refusal when full."""

import numpy as np
import pytest

from compiler import CompileError, Graph
from compiler.layout import external_layout
from sim.spec import DEFAULT, Params


def test_inputs_and_weights_in_node_order_then_outputs():
    g = Graph()
    x = g.input("x", (2, 3))                              # 6 words
    w = g.weight("w", np.ones((3, 3)), bits=4)            # 9 int4 values: 2 words
    v = g.weight("v", np.ones((3, 2)))                    # 6 words
    m = g.matmul(g.matmul(x, w), v)
    g.output(m, "y")                                      # 4 words
    entries, words = external_layout(g, params=DEFAULT)
    assert [(e.name, e.addr, e.words, e.kind) for e in entries.values()] == [
        ("x", 0, 6, "input"), ("w", 6, 2, "weight"), ("v", 8, 6, "weight"), ("y", 14, 4, "output")]
    assert words == 18


def test_external_memory_full_names_the_node():
    g = Graph()
    g.input("a", (32, 32))
    g.input("b", (32, 32))
    with pytest.raises(CompileError) as info:
        external_layout(g, Params(EXT_WORDS=1024))
    assert info.value.problem.startswith("external memory is full: node 1 (input 'b') would end at word 2048")
    assert info.value.node == 1
