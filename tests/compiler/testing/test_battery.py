"""compiler/testing/battery.py: the seed's battery passes on our compiler, with the seed's worst error."""

from compiler.testing.battery import (
    BOUND,
    check_cancellation,
    check_errors,
    check_graph,
    check_int4,
    check_many,
    check_slice_errors,
    check_slices,
)


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
    problems, worst = check_graph(3, bound=1e-6)
    assert worst > 0 and problems == [f"seed 3: (e) relative error {worst:.3f} exceeds 1e-06"]
