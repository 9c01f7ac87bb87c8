"""compile_graph(fuse=False): each relu an identity RQ of its own, in place; the same integers
as the fused program, one instruction and its latency more per relu."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from sim import spec
from sim.spec import DEFAULT


def _layer() -> tuple[Graph, list[dict]]:
    rng = np.random.default_rng(3)
    g = Graph()
    x, w = g.input("x", (3, 4)), g.weight("w", rng.normal(size=(4, 4)))
    g.output(g.relu(g.matmul(x, w)), "y")
    return g, [{"x": rng.normal(size=(3, 4))} for _ in range(5)]


def test_an_unfused_relu_is_one_identity_rq_in_place_and_changes_no_integer():
    g, calibration = _layer()
    fused, unfused = compile_graph(g, calibration), compile_graph(g, calibration, fuse=False)
    assert fused.relu_fused == {2} and unfused.relu_fused == set()
    extra = [i for i in unfused.code if i not in fused.code]
    rq = [i for i in unfused.code if i.op == "RQ"]
    assert [i.op for i in extra] == ["RQ", "RQ"] and rq[0].fields["relu"] == 0
    identity = rq[1].fields
    assert identity["dst"] == identity["src"] == rq[0].fields["dst"] and identity["len"] == 12
    assert (identity["m"], identity["s"], identity["relu"]) == (2 ** 23, 23, 1)
    a, b = fused.run(calibration[0]), unfused.run(calibration[0])
    assert np.array_equal(a.outputs["y"].ints, b.outputs["y"].ints)
    assert (a.outputs["y"].ints == 0).any() and (a.outputs["y"].ints > 0).any()   # the relu bites
    rq_cycles = spec.latency(spec.BY_NAME["RQ"], identity, params=DEFAULT)
    assert b.counters.cycles - a.counters.cycles == rq_cycles
    assert b.counters.vpu - a.counters.vpu == rq_cycles


def test_the_identity_requantizer_passes_every_level_through():
    from sim.arith import requant_array
    levels = np.arange(-127, 128)
    assert np.array_equal(requant_array(levels, 2 ** 23, 23), levels)
    assert np.array_equal(requant_array(levels, 2 ** 23, 23, relu=True), np.maximum(levels, 0))


def test_the_operand_overwritten_by_its_relu_is_not_read_back():
    g, calibration = _layer()
    program = compile_graph(g, calibration, fuse=False, reuse=False)
    outcome = program.run(calibration[0])
    with pytest.raises(ValueError, match=r"node 2 \(matmul\) was overwritten in place by its relu, node 3"):
        program.read_tensor(outcome, 2)
    assert np.array_equal(program.read_tensor(outcome, 3), outcome.outputs["y"].ints)


def test_the_same_graphs_are_refused_and_the_flag_is_checked():
    g = Graph()
    g.output(g.relu(g.input("x", (2, 2))), "y")
    with pytest.raises(CompileError, match="relu node 1 reads node 0"):
        compile_graph(g, [{"x": np.eye(2)}], fuse=False)
    with pytest.raises(CompileError, match=r"compile_graph: fuse = 1 \(an int\) is not True or False"):
        compile_graph(_layer()[0], _layer()[1], fuse=1)
