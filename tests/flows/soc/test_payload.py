"""flows/soc/payload.py: a compiled classifier as the firmware's data, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import Graph, compile_graph
from flows.soc.payload import PayloadError, c_header, make


def classifier():
    """x (2 x 3) @ W (3 x 2) then argmax per row: W picks column 0 for x0 > x1 + x2, else 1."""
    g = Graph()
    x = g.input("x", (2, 3))
    w = g.weight("w", np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]))
    g.output(g.argmax(g.matmul(x, w)), "cls")
    calibration = [{"x": np.array([[1.0, 0.2, 0.1], [0.1, 0.6, 0.3]])}]
    return compile_graph(g, calibration)


def test_classes_and_images_by_hand():
    program = classifier()
    feeds = [{"x": np.array([[0.9, 0.1, 0.1], [0.1, 0.5, 0.4]])},      # classes 0, 1
             {"x": np.array([[0.2, 0.3, 0.3], [0.8, 0.0, 0.1]])}]      # classes 1, 0
    payload = make(program, feeds, "cls", [0, 1, 1, 1], images=3)
    assert payload.expected == [0, 1, 1]                 # the third image of the second run, not the padding
    assert payload.labels == [0, 1, 1]
    assert payload.batch == 2 and len(payload.inputs) == 2
    (addr, words), = payload.input_regions
    assert words == 6 and len(payload.inputs[0]) == 6
    assert not payload.image[addr:addr + words].any()      # inputs are the firmware's to copy
    assert payload.reference_cycles == program.run(feeds[0], warn=False).counters.cycles
    header = c_header(payload)
    assert "#define DIGITS_IMAGES 3" in header and "#define DIGITS_RUNS 2" in header
    assert f"#define DIGITS_CLASS_ADDR {program.ext['cls'].addr}u" in header
    assert "static const uint8_t digits_expected[3] = {\n    0, 1, 1,\n};" in header


def test_an_output_that_is_not_a_class_per_row_is_refused():
    g = Graph()
    x = g.input("x", (2, 3))
    g.output(g.matmul(x, g.weight("w", np.eye(3))), "y")
    program = compile_graph(g, [{"x": np.ones((2, 3))}])
    with pytest.raises(PayloadError, match=r"output 'y' of shape \(2, 3\) is not one class per row"):
        make(program, [{"x": np.ones((2, 3))}], "y", [0, 0], 2)
