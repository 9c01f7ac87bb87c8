"""compiler/interpret.py: the integer meaning, against hand-worked numbers and the machine."""

import numpy as np

from compiler import Graph, compile_graph
from compiler.interpret import interpret

from .conftest import single_matmul


def test_hand_worked_product():
    g = single_matmul(1, 2, 1, weight=np.array([[1.0], [0.5]]))
    program = compile_graph(g, [{"x": [[1.0, -1.0]]}])
    ints = interpret(program, {"x": [[1.0, -1.0]]})
    assert ints[0].tolist() == [[127, -127]] and ints[1].tolist() == [[127], [64]]
    assert ints[2].tolist() == [[126]] and ints[3].tolist() == [[126]]


def test_every_operation_matches_the_machine():
    rng = np.random.default_rng(4)
    g = Graph()
    x, y = g.input("x", (3, 5)), g.input("y", (2, 5))
    cat = g.concat_rows(x, y)
    h = g.relu(g.matmul(cat, g.weight("w", rng.normal(size=(5, 6)), bits=4)))
    scores = g.matmul(h, h, transpose_b=True, scale=0.3)
    p = g.softmax(scores)
    mixed = g.add(g.matmul(p, g.slice_rows(cat, 0, 5)), cat)
    g.output(mixed, "mixed")
    g.output(g.argmax(mixed), "tok")
    calibration = [{"x": rng.normal(size=(3, 5)), "y": rng.normal(size=(2, 5))} for _ in range(8)]
    program = compile_graph(g, calibration, reuse=False)
    test = {"x": rng.normal(size=(3, 5)), "y": rng.normal(size=(2, 5))}
    ints = interpret(program, test)
    outcome = program.run(test)
    for node in g.nodes:
        if node.op != "output":
            assert np.array_equal(program.read_tensor(outcome, node.id), ints[node.id]), node.describe()
    for name, value in outcome.outputs.items():
        assert np.array_equal(value.ints, ints[program.ext[name].node])
