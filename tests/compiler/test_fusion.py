"""compiler/fusion.py: a relu becomes the relu flag of its matmul's RQ or its add's VADD, or is refused."""

import numpy as np
import pytest

from compiler import CompileError, Graph
from compiler.fusion import fuse_relus


def test_relu_after_a_single_reader_matmul_is_fused():
    g = Graph()
    m = g.matmul(g.input("x", (1, 2)), g.weight("w", np.eye(2)))
    g.output(g.relu(m), "y")
    assert fuse_relus(g, g.consumers()) == {m}


def test_relu_after_a_single_reader_add_is_fused():
    g = Graph()
    x = g.input("x", (1, 2))
    a = g.add(x, x)
    g.output(g.relu(a), "y")
    assert fuse_relus(g, g.consumers()) == {a}


def test_relu_of_an_input_is_refused_naming_both_nodes():
    g = Graph()
    x = g.input("x", (1, 2))
    g.relu(x)
    with pytest.raises(CompileError) as info:
        fuse_relus(g, g.consumers())
    assert "relu node 1 reads node 0 (input" in info.value.problem
    assert "which is not a matmul, add or conv2d" in info.value.problem
    assert "directly after a matmul, add or conv2d" in info.value.fix and info.value.node == 1


def test_relu_on_a_matmul_with_another_reader_is_refused():
    g = Graph()
    m = g.matmul(g.input("x", (1, 2)), g.weight("w", np.eye(2)))
    g.add(g.relu(m), m)
    with pytest.raises(CompileError, match="node 4 also reads"):
        fuse_relus(g, g.consumers())


def test_relu_on_an_add_with_another_reader_is_refused():
    """The stored sum would be after the ReLU, which the other reader must not see."""
    g = Graph()
    x = g.input("x", (1, 2))
    a = g.add(x, x)                       # node 1
    r = g.relu(a)                         # node 2
    g.output(g.add(r, a), "y")            # node 3 reads the sum too
    with pytest.raises(CompileError) as info:
        fuse_relus(g, g.consumers())
    assert info.value.problem == (f"relu node {r} reads node {a} (add), which node 3 also reads, "
                                  "so it cannot be fused into the add")
    assert info.value.node == r
