"""compiler/testing/battery.py: the seed's battery passes on our compiler, with the seed's worst error."""

import random

from compiler import compile_graph
from compiler.testing.battery import (
    ADD_RELU_SEEDS,
    BOUND,
    STREAM_SEEDS,
    check_add_relu,
    check_cancellation,
    check_chained,
    check_errors,
    check_graph,
    check_int4,
    check_many,
    check_slice_errors,
    check_slices,
    check_streamed,
)
from compiler.testing.random_graphs import random_add_relu_graph
from compiler.workloads.random_graph import sample_inputs
from sim.spec import DEFAULT


def test_sixty_random_graphs_pass_checks_a_to_e():
    problems, worst = check_many(range(60), BOUND)
    assert problems == []
    assert round(worst, 3) == 0.079          # the seed prints 0.079 for this battery


def test_the_five_refusals_and_the_cancellation_case():
    assert check_errors() == []
    assert check_cancellation() == []


def test_slice_graphs_and_their_refusals():
    assert check_slices(range(60)) == []
    assert check_slice_errors() == []


def test_int4_graphs():
    problems, worst = check_int4(range(60))
    assert problems == [] and worst > 0.079  # int4 weights cost accuracy


def test_a_tight_bound_is_reported_as_check_e():
    problems, worst = check_graph(3, bound=1e-6, params=DEFAULT)
    assert worst > 0 and problems == [f"seed 3: (e) relative error {worst:.3f} exceeds 1e-06"]


def test_streamed_graphs_pass_checks_a_to_e_and_cover_every_way_of_streaming():
    programs = []
    problems, worst = check_streamed(programs=programs)
    assert problems == [] and 0.05 < worst < 0.33
    blocked = [b for p in programs for b in p.blockings.values() if not b.whole]
    assert len({id(p) for p in programs}) == 2 * len(STREAM_SEEDS)
    assert sum(any(not b.whole for b in p.blockings.values()) for p in programs) >= len(STREAM_SEEDS)
    assert any(b.stream_a for b in blocked)                                   # an input in row blocks
    assert any(b.b_how == "in panels" for b in blocked)
    assert any(b.b_how == "gathered row by row" for b in blocked)
    assert any(b.stream_b and not b.b_how and b.col_blocks > 1 for b in blocked)   # a transposed B
    assert any(b.stream_b and b.row_blocks > 1 and b.col_blocks > 1 for b in blocked)  # B loaded again


def test_add_relu_graphs_pass_checks_a_to_e_and_the_relu_is_on_the_vadd():
    problems, worst = check_add_relu()
    assert problems == [] and round(worst, 3) == 0.064
    graph, names = random_add_relu_graph(ADD_RELU_SEEDS[0])
    program = compile_graph(graph, [sample_inputs(names, random.Random(k)) for k in range(4)])
    adds = {n.id for n in graph.nodes if n.op == "add"}
    assert adds <= program.relu_fused
    assert [ins.relu for ins in program.code if ins.op == "VADD"] == [1] * len(adds)


def test_chained_graphs_pass_checks_a_to_e_on_the_decoupled_machine():
    """OVERLAP = 2: the random graphs equal the integer interpreter whether their matmuls chain
    (MMRQ) or not, and some do (battery.check_chained)."""
    assert check_chained() == []
