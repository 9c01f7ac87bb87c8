"""compiler/calibrate.py: bad calibration data is refused, naming the input; ranges by hand."""

import warnings

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.calibrate import calibration_ranges


def two_inputs() -> Graph:
    g = Graph()
    x = g.input("x", (1, 2))
    y = g.input("y", (1, 2))
    g.output(g.add(x, y), "s")
    return g


GOOD = {"x": [[1.0, -3.0]], "y": [[0.5, 0.5]]}


def test_ranges_are_largest_absolute_values_over_all_samples():
    ranges = calibration_ranges(two_inputs(), [GOOD, {"x": [[2.0, 0.5]], "y": [[-4.0, 0.0]]}])
    # x: max(3, 2); y: max(0.5, 4); sum: max(|1.5|, |-2.5|, |-2|, |0.5|)
    assert ranges == {0: 3.0, 1: 4.0, 2: 2.5, 3: 2.5}


@pytest.mark.parametrize("calibration, words", [
    ([], "calibration set is empty"),
    (GOOD, "must be a list"),
    ([{"x": [[1.0, 2.0]]}], "calibration sample 0 has no value for input 'y' (node 1"),
    ([GOOD, {"x": [[1.0, 2.0, 3.0]], "y": [[0, 0]]}], "calibration sample 1: input 'x' has shape (1, 3)"),
    ([{"x": [[1.0, float("nan")]], "y": [[0, 0]]}], "input 'x' contains NaN or infinity"),
    ([{"x": [[1.0, 2.0]], "y": [[float("inf"), 0]]}], "input 'y' contains NaN or infinity"),
    ([{"x": [["a", "b"]], "y": [[0, 0]]}], "input 'x' is not a numeric array"),
    ([{"x": [[1.0, None]], "y": [[0, 0]]}], "not a numeric array (element [0, 1] is None, not a number)"),
    ([{"x": [[1.0, 1j]], "y": [[0, 0]]}], "input 'x' is not a numeric array (it holds complex numbers)"),
    ([{"x": [[1.0, 2.0]], "y": [[0.0, -float("inf")]]}], "contains NaN or infinity (element [0, 1] is -inf)"),
    ([{**GOOD, "z": [[1.0, 1.0]]}], "'z', which is not an input"),
    ([[1.0, 2.0]], "not a dict"),
])
def test_bad_calibration_data_is_refused(calibration, words):
    with pytest.raises(CompileError) as info:
        compile_graph(two_inputs(), calibration)
    assert words in info.value.problem
    assert info.value.fix


def test_the_refusal_carries_the_node_of_the_input():
    with pytest.raises(CompileError) as info:
        compile_graph(two_inputs(), [{"x": np.zeros((1, 2))}])
    assert info.value.node == 1


def test_an_overflow_in_calibration_names_the_node_the_sample_and_its_operands():
    g = Graph()
    x = g.input("x", (1, 2))
    g.output(g.matmul(x, g.weight("w", [[2.0], [2.0]])), "y")
    samples = [{"x": [[1.0, 1.0]]}, {"x": [[1e308, 1e308]]}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no numpy RuntimeWarning on the way
        with pytest.raises(CompileError) as info:
            compile_graph(g, samples)
    assert info.value.problem.startswith("calibration sample 1: node 2 (matmul) overflows")
    assert "node 0 (input 'x') reaches 1e+308, node 1 (weight 'w') reaches 2" in info.value.problem
    assert info.value.node == 2 and "scale" in info.value.fix
