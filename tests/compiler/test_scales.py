"""compiler/scales.py: groups, pins, add operands, int4, ranges=, notes (hand-worked)."""

import numpy as np
import pytest

from compiler import CompileError, Graph
from compiler.scales import plan_scales


def test_concat_parts_and_result_share_the_largest_range():
    g = Graph()
    a, b = g.input("a", (1, 2)), g.input("b", (1, 2))
    c = g.concat_rows(a, b)
    plan = plan_scales(g, {a: 1.0, b: 2.54, c: 2.54})
    assert plan.scales == {a: 2.54 / 127, b: 2.54 / 127, c: 2.54 / 127}


def test_relu_output_and_slice_share_with_their_source():
    g = Graph()
    x = g.input("x", (2, 2))
    m = g.matmul(x, g.weight("w", np.eye(2)))
    r = g.relu(m)
    s = g.slice_rows(r, 0, 1)
    o = g.output(s, "o")
    plan = plan_scales(g, {x: 1.27, 1: 1.0, m: 12.7, r: 6.35, s: 1.27, o: 1.27})
    assert [plan.scales[n] for n in (m, r, s, o)] == [12.7 / 127] * 4
    assert plan.scales[x] == 1.27 / 127


def test_softmax_pins_input_to_q4_4_and_output_to_1_over_127():
    g = Graph()
    x = g.input("x", (1, 4))
    p = g.softmax(x)
    plan = plan_scales(g, {x: 3.0, p: 0.9})
    assert plan.scales == {x: 1 / 16, p: 1 / 127}
    assert "Q4.4" in plan.pins[x] and "probability" in plan.pins[p]
    assert plan.notes == []


def test_scores_beyond_q4_4_give_a_note():
    g = Graph()
    x = g.input("x", (1, 4))
    g.softmax(x)
    plan = plan_scales(g, {0: 10.0, 1: 1.0})
    assert len(plan.notes) == 1 and "10.00" in plan.notes[0] and "7.94" in plan.notes[0]


def test_a_member_of_a_pinned_group_that_saturates_gets_a_note():
    g = Graph()
    a, b = g.input("a", (1, 4)), g.input("b", (1, 4))
    c = g.concat_rows(a, b)
    g.softmax(c)
    plan = plan_scales(g, {a: 9.0, b: 1.0, c: 9.0, 3: 1.0})
    assert any("node 0 (input 'a') reaches 9.000" in n for n in plan.notes)


def test_an_add_scale_also_holds_both_operands():
    g = Graph()
    x, y = g.input("x", (1, 2)), g.input("y", (1, 2))
    s = g.add(x, y)
    plan = plan_scales(g, {x: 3.0, y: 2.0, s: 0.1})
    assert plan.scales[s] == 3.0 / 127


def test_int4_weight_uses_range_over_7_with_its_slices():
    g = Graph()
    w = g.weight("w", np.ones((3, 3)), bits=4)
    s = g.slice_rows(w, 1, 1)
    plan = plan_scales(g, {w: 1.4, s: 0.7})
    assert plan.scales == {w: 1.4 / 7, s: 1.4 / 7}


def test_int4_weight_under_a_pin_is_refused():
    g = Graph()
    w = g.weight("w", np.ones((2, 2)), bits=4)
    g.softmax(w)
    with pytest.raises(CompileError, match="int4 weight") as info:
        plan_scales(g, {0: 1.0, 1: 1.0})
    assert "bits=8" in info.value.fix


def test_fixed_ranges_replace_the_calibrated_range_of_tagged_tensors():
    g = Graph()
    a, b = g.input("a", (1, 2)), g.input("b", (1, 2))
    g.tag(a, "cache")
    c = g.concat_rows(a, b)
    plan = plan_scales(g, {a: 1.0, b: 1.0, c: 1.0}, {"cache": 12.7})
    assert plan.scales[b] == 12.7 / 127 and plan.ranges[a] == 12.7


@pytest.mark.parametrize("ranges, words", [
    ({"kv": 1.0}, "no tensor carries"),
    ({"cache": -1.0}, "ranges['cache'] = -1.0 is not positive"),
    ({"cache": 0}, "ranges['cache'] = 0 is not positive"),
    ({"cache": float("nan")}, "ranges['cache'] = nan is not finite"),
    ({"cache": "1"}, "ranges['cache'] = '1' (a str) is not a number"),
    ({"cache": True}, "ranges['cache'] = True (a bool) is not a number"),
])
def test_bad_fixed_ranges_are_refused(ranges, words):
    g = Graph()
    g.tag(g.input("a", (1, 2)), "cache")
    with pytest.raises(CompileError) as info:
        plan_scales(g, {0: 1.0}, ranges)
    assert words in info.value.problem


def test_a_zero_range_gets_scale_1_over_127():
    g = Graph()
    x = g.input("x", (1, 2))
    assert plan_scales(g, {x: 0.0}).scales[x] == 1 / 127


def test_argmax_has_no_scale_but_its_output_has_a_nominal_one():
    g = Graph()
    x = g.input("x", (1, 3))
    m = g.argmax(x)
    o = g.output(m, "tok")
    plan = plan_scales(g, {x: 1.0, m: 2.0, o: 2.0})
    assert m not in plan.scales and plan.scales[o] == 2.0 / 127


@pytest.mark.parametrize("value", [np.float32(1.5), np.float64(1.5), np.int64(3), 3])
def test_numpy_numbers_are_good_fixed_ranges(value):
    g = Graph()
    g.tag(g.input("a", (1, 2)), "cache")
    plan = plan_scales(g, {0: 1.0}, {"cache": value})
    assert plan.ranges[0] == float(value) and isinstance(plan.ranges[0], float)


def test_a_fixed_range_below_its_outputs_calibrated_range_keeps_the_seed_rule_and_says_so():
    g = Graph()
    x = g.input("x", (1, 2))
    m = g.matmul(x, g.weight("w", np.eye(2)))
    g.tag(m, "h")
    o = g.output(m, "y")
    plan = plan_scales(g, {x: 1.0, 1: 1.0, m: 4.0, o: 4.0}, {"h": 0.5})
    assert plan.ranges[m] == 0.5 and plan.scales[m] == plan.scales[o] == 4.0 / 127   # the seed's rule
    assert plan.notes == [
        "ranges['h'] = 0.5 does not set the scale of node 2 (matmul): it shares its scale with node 3 "
        "(output 'y'), whose calibrated range 4 is larger, and a shared scale holds its members' largest "
        "range; the scale is 0.0315 and holds 4 (an output keeps the calibrated range of the tensor it "
        "stores, so ranges= can widen this tensor's scale but not narrow it)"]


def test_a_fixed_range_that_widens_the_group_gives_no_note():
    g = Graph()
    x = g.input("x", (1, 2))
    g.tag(x, "h")
    o = g.output(x, "y")
    plan = plan_scales(g, {x: 1.0, o: 1.0}, {"h": 2.54})
    assert plan.scales[o] == 2.54 / 127 and plan.notes == []


def test_a_fixed_range_under_an_add_operand_names_the_operand():
    g = Graph()
    a, b = g.input("a", (1, 2)), g.input("b", (1, 2))
    s = g.add(a, b)
    g.tag(s, "sum")
    plan = plan_scales(g, {a: 3.0, b: 1.0, s: 2.0}, {"sum": 0.5})
    assert len(plan.notes) == 1
    words = "node 0 (input 'a'), as an operand of node 2 (add), whose calibrated range 3 is larger"
    assert words in plan.notes[0]


def test_a_fixed_range_in_a_pinned_group_says_the_pin_wins():
    g = Graph()
    x = g.input("x", (1, 4))
    g.tag(x, "scores")
    g.softmax(x)
    plan = plan_scales(g, {x: 1.0, 1: 1.0}, {"scores": 2.0})
    assert plan.scales[x] == 1 / 16
    assert plan.notes == ["ranges['scores'] = 2 does not set the scale of node 0 (input 'x'): the hardware "
                          "pins it (softmax input, Q4.4 (1/16)), so it holds 7.938"]


def test_a_group_that_calibration_saw_only_at_zero_gets_a_note():
    g = Graph()
    x = g.input("x", (1, 2))
    m = g.matmul(x, g.weight("w", np.eye(2)))
    g.output(m, "y")
    plan = plan_scales(g, {x: 0.0, 1: 1.0, m: 0.0, 3: 0.0})
    assert plan.scales[x] == plan.scales[m] == 1 / 127                  # the seed's stand-in
    assert len(plan.notes) == 2
    assert plan.notes[0].startswith("node 0 (input 'x'): every calibration value is 0, so the range is 0 "
                                    "and the scale 0.007874 is a stand-in (it holds 1)")
    assert plan.notes[1].startswith("node 2 (matmul), node 3 (output 'y'): every calibration value is 0")
    assert "ranges=" in plan.notes[1]


def test_a_calibration_of_zeros_warns_at_compile_time():
    """Issue 24, defect 5: the note alone went unseen; compile_graph also warns it."""
    from compiler import compile_graph
    from compiler.scales import ZeroRangeWarning

    g = Graph()
    g.output(g.matmul(g.input("x", (1, 2)), g.weight("w", np.eye(2))), "y")
    with pytest.warns(ZeroRangeWarning) as seen:
        program = compile_graph(g, [{"x": np.zeros((1, 2))}])
    assert [str(w.message) for w in seen] == program.notes[:2]
    assert str(seen[0].message).startswith("node 0 (input 'x'): every calibration value is 0")
    assert seen[0].filename == __file__                  # it points at the call of compile_graph


def test_a_zero_weight_and_what_only_weights_feed_get_no_note():
    g = Graph()
    w = g.weight("w", np.zeros((2, 2)))
    m = g.matmul(w, g.weight("v", np.eye(2)))
    plan = plan_scales(g, {w: 0.0, 1: 1.0, m: 0.0})
    assert plan.scales[m] == 1 / 127 and plan.notes == []


@pytest.mark.parametrize("ranges, where", [(None, "its values"), ({"w": 1e-306}, "ranges['w']")])
def test_a_scale_below_the_normal_floats_is_refused(ranges, where):
    g = Graph()
    w = g.weight("w", np.full((2, 2), 1e-320))
    g.tag(w, "w")
    with pytest.raises(CompileError) as info:
        plan_scales(g, {w: 1e-320}, ranges)
    assert info.value.problem.startswith("node 0 (weight 'w'): its range ")
    assert f"(from {where}) gives the scale" in info.value.problem
    assert "below the smallest normal float (2.23e-308)" in info.value.problem
    assert "power of two" in info.value.fix and info.value.node == w
