"""compiler/accuracy.py: relative error of the outputs against floating point."""

import math

import numpy as np

from compiler import Graph, compile_graph
from compiler.accuracy import relative_error

from .conftest import single_matmul


def test_relative_error_by_hand():
    g = single_matmul(1, 2, 1, weight=np.array([[1.0], [0.5]]))
    program = compile_graph(g, [{"x": [[1.0, -1.0]]}])
    outcome = program.run({"x": [[1.0, -1.0]]})
    # float 0.5; compiled 126 levels of 0.5/127
    expected = abs(126 * 0.5 / 127 - 0.5) / 0.5
    assert math.isclose(relative_error(program, outcome, {"x": [[1.0, -1.0]]}), expected)


def test_argmax_outputs_are_not_judged():
    g = Graph()
    g.output(g.argmax(g.input("x", (1, 3))), "tok")
    program = compile_graph(g, [{"x": [[0.0, 1.0, 0.5]]}])
    outcome = program.run({"x": [[3.0, 1.0, 0.5]]}, warn=False)   # 3.0 clips: the argmax still holds
    assert relative_error(program, outcome, {"x": [[3.0, 1.0, 0.5]]}) == 0.0
