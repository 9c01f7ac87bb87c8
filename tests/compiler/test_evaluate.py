"""compiler/evaluate.py: float meaning, in the seed's summation order."""

import math

import numpy as np

from compiler import Graph
from compiler.evaluate import evaluate, evaluate_batch, running_sum


def test_matmul_with_factor_and_transpose_by_hand():
    g = Graph()
    a = g.input("a", (1, 2))
    b = g.input("b", (3, 2))
    p = g.matmul(a, b, transpose_b=True, scale=0.5)
    v = evaluate(g, {"a": [[1.0, 2.0]], "b": [[1, 0], [0, 1], [1, 1]]})
    assert v[p].tolist() == [[0.5, 1.0, 1.5]]


def test_inner_sum_runs_left_to_right():
    # (((1e16 * 1) + 1) - 1e16) + 1 = 1 when summed in index order; a pairwise or blocked
    # sum of the same four products gives 0 or 2.
    g = Graph()
    a = g.input("a", (1, 4))
    p = g.matmul(a, g.weight("w", np.ones((4, 1))))
    v = evaluate(g, {"a": [[1e16, 1.0, -1e16, 1.0]]})
    assert v[p][0, 0] == 1.0
    assert running_sum(np.array([1e16, 1.0, -1e16, 1.0]), axis=0) == 1.0


def test_softmax_uses_math_exp_per_row():
    g = Graph()
    x = g.input("x", (2, 3))
    s = g.softmax(x)
    rows = [[0.0, math.log(2.0), -1.0], [3.0, 3.0, 3.0]]
    v = evaluate(g, {"x": rows})
    for got, row in zip(v[s], rows, strict=True):
        e = [math.exp(t - max(row)) for t in row]
        z = e[0] + e[1] + e[2]
        assert got.tolist() == [t / z for t in e]


def test_add_relu_concat_slice_argmax_output():
    g = Graph()
    x = g.input("x", (2, 2))
    y = g.input("y", (1, 2))
    r = g.relu(g.add(x, x))
    c = g.concat_rows(x, y)
    s = g.slice_rows(c, 1, 2)
    m = g.argmax(c)
    o = g.output(s, "o")
    v = evaluate(g, {"x": [[1.0, -2.0], [0.5, 0.5]], "y": [[-1.0, 4.0]]})
    assert v[r].tolist() == [[2.0, 0.0], [1.0, 1.0]]
    assert v[s].tolist() == [[0.5, 0.5], [-1.0, 4.0]]
    assert v[m].tolist() == [[0.0], [0.0], [1.0]]  # the first of equal maxima
    assert v[o].tolist() == v[s].tolist()


def test_batch_equals_one_sample_at_a_time():
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.input("x", (3, 4))
    h = g.matmul(x, g.weight("w", rng.normal(size=(4, 5))))
    g.output(g.softmax(g.concat_rows(h, h)), "p")
    samples = rng.normal(size=(6, 3, 4))
    batch = evaluate_batch(g, {"x": samples})
    for k in range(6):
        one = evaluate(g, {"x": samples[k]})
        for nid, value in one.items():
            assert np.array_equal(batch[nid][k], value)
