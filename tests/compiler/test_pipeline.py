"""compiler/pipeline.py: the order of the passes and what compile_graph passes through."""

import numpy as np
import pytest

from compiler import CompileError, Graph, Program, compile_graph
from compiler.allocator import AllocEvent
from sim.spec import Params

from .conftest import single_matmul


def test_a_bad_graph_is_refused_before_its_calibration_data_is_looked_at():
    g = Graph()
    g.output(g.relu(g.input("x", (2, 2))), "y")
    with pytest.raises(CompileError, match="relu node 1"):
        compile_graph(g, [])


def test_compiling_twice_gives_the_same_program():
    g = single_matmul(3, 5, 6)
    calibration = [{"x": np.arange(15.0).reshape(3, 5)}]
    first, second = compile_graph(g, calibration), compile_graph(g, calibration)
    assert isinstance(first, Program) and first.code == second.code and first.scales == second.scales


def test_events_params_and_ranges_pass_through():
    g = single_matmul(2, 3, 2)
    g.tag(0, "x")
    events: list[AllocEvent] = []
    machine = Params(T=2)
    program = compile_graph(g, [{"x": np.ones((2, 3))}], ranges={"x": 12.7}, params=machine, events=events)
    assert program.machine is machine and program.scales[0] == 12.7 / 127
    assert sum(e.kind == "alloc" for e in events) == 4          # x, w, y, accumulator
    assert sum(i.op == "MM" for i in program.code) == 1          # one 2 x 2 tile
