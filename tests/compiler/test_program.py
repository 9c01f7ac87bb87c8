"""compiler/program.py: external image (int4 weights packed), running, reading tensors back."""

import warnings

import numpy as np
import pytest

from compiler import Graph, SaturationWarning, compile_graph
from sim.asm import listing
from sim.machine import s8

from .conftest import single_matmul


def test_ext_image_holds_quantized_inputs_and_weights_at_their_addresses():
    g = single_matmul(1, 2, 1, weight=np.array([[1.0], [0.5]]))
    program = compile_graph(g, [{"x": [[1.27, -0.5]]}])   # x: scale 0.01; w: scale 1/127
    image = program.ext_image({"x": [[1.27, -0.5]]})
    x, w = program.ext["x"], program.ext["w"]
    assert image.dtype == np.uint32 and len(image) == 65536
    assert s8(image[x.addr:x.addr + 2]).tolist() == [127, -50]
    assert s8(image[w.addr:w.addr + 2]).tolist() == [127, 64]   # 63.5 rounds away from zero


def test_run_reads_outputs_as_ints_and_floats():
    g = single_matmul(1, 2, 1, weight=np.array([[1.0], [0.5]]))
    program = compile_graph(g, [{"x": [[1.0, -1.0]]}])
    # x levels (127, -127) at 1/127; w levels (127, 64) at 1/127; the product 0.5 has scale
    # 0.5/127; accumulator 127*127 - 127*64 = 8001; factor 2/127 gives 126.
    out = program.run({"x": [[1.0, -1.0]]}).outputs["y"]
    assert out.ints.tolist() == [[126]]
    assert out.floats.tolist() == [[126 * program.scales[program.ext["y"].node]]]


def test_a_graph_changed_after_compiling_does_not_change_its_program():
    """Program.graph is a snapshot: an input, a node and an output added to the graph later, or
    a node's factor changed, leave the program as it was (it ran into a raw KeyError: 7 when
    the new input was given). The numbers are test_run_reads_outputs_as_ints_and_floats'."""
    g = single_matmul(1, 2, 1, weight=np.array([[1.0], [0.5]]))
    program = compile_graph(g, [{"x": [[1.0, -1.0]]}])
    before = program.graph.text()
    q = g.input("q", (1, 1))
    g.output(g.add(q, q), "later")
    next(n for n in g.nodes if n.op == "matmul").factor = 3.0
    assert program.graph.text() == before and len(program.graph.nodes) == 4 and "q" not in program.graph.names
    assert program.run({"x": [[1.0, -1.0]]}).outputs["y"].ints.tolist() == [[126]]
    with pytest.raises(ValueError, match="gives a value for 'q', which is not an input of the graph"):
        program.run({"x": [[1.0, -1.0]], "q": [[0.0]]})


def test_argmax_outputs_are_indices_unscaled():
    g = Graph()
    g.output(g.argmax(g.input("x", (2, 3))), "tok")
    program = compile_graph(g, [{"x": [[0, 1, 0], [2, 0, 2]]}])
    out = program.run({"x": [[0, 1, 0], [2, 0, 2]]}).outputs["tok"]
    assert out.ints.tolist() == [[1], [0]] and out.floats.tolist() == [[1.0], [0.0]]


def test_read_tensor_needs_an_unreleased_buffer():
    g = single_matmul(2, 3, 2)
    sample = {"x": np.ones((2, 3))}
    reused = compile_graph(g, [sample])
    with pytest.raises(ValueError, match="released"):
        reused.read_tensor(reused.run(sample), 2)
    kept = compile_graph(g, [sample], reuse=False)
    outcome = kept.run(sample)
    assert kept.read_tensor(outcome, 2).tolist() == outcome.outputs["y"].ints.tolist()
    with pytest.raises(ValueError, match="no scratchpad place"):
        kept.read_tensor(outcome, 3)


def test_run_refuses_bad_inputs_with_value_error():
    program = compile_graph(single_matmul(1, 2, 1), [{"x": [[1.0, 1.0]]}])
    with pytest.raises(ValueError, match="has no value for input 'x'"):
        program.run({})
    with pytest.raises(ValueError, match="NaN"):
        program.run({"x": [[1.0, float("nan")]]})


def test_listing_is_the_numbered_disassembly():
    program = compile_graph(single_matmul(1, 2, 1), [{"x": [[1.0, 1.0]]}])
    assert program.listing() == listing(program.code)
    assert program.listing().splitlines()[-1].split() == [str(len(program.code) - 1), "HALT"]


@pytest.mark.parametrize("nid, words", [
    (99, "node id 99 (an int) is not a node of this graph (it has 4 nodes, ids 0..3)"),
    (-1, "node id -1 (an int) is not a node"),
    ("2", "node id '2' (a str) is not a node"),
    (True, "node id True (a bool) is not a node"),
    (3, "node 3 (output 'y') is an output and has no scratchpad place. Fix: read outcome.outputs['y']"),
])
def test_read_tensor_names_a_bad_node_id(nid, words):
    sample = {"x": np.ones((2, 3))}
    program = compile_graph(single_matmul(2, 3, 2), [sample], reuse=False)
    outcome = program.run(sample)
    with pytest.raises(ValueError) as info:
        program.read_tensor(outcome, nid)
    assert str(info.value).startswith(words)
    with pytest.raises(ValueError):
        program.tensor_address(nid)


def test_read_tensor_takes_numpy_ids_and_refuses_a_bad_outcome():
    sample = {"x": np.ones((2, 3))}
    program = compile_graph(single_matmul(2, 3, 2), [sample], reuse=False)
    outcome = program.run(sample)
    assert program.read_tensor(outcome, np.int64(2)).tolist() == outcome.outputs["y"].ints.tolist()
    with pytest.raises(ValueError, match="outcome = None"):
        program.read_tensor(None, 2)


def test_run_counts_clipped_inputs_and_warns():
    program = compile_graph(single_matmul(1, 3, 1), [{"x": [[1.0, -1.0, 0.5]]}])   # x holds 1.0
    quiet = program.run({"x": [[1.0, -1.0, 1.003]]})       # 127.4 levels rounds to 127: not clipped
    assert quiet.clipped == {"x": 0}
    with pytest.warns(SaturationWarning) as caught:
        loud = program.run({"x": [[2.0, -1.0, -1.004]]})   # 254 and -127.5 levels are clipped
    assert loud.clipped == {"x": 2}
    assert str(caught[0].message).startswith("Program.run clipped input values to the int8 levels -127..127: "
                                             "input 'x': 2 of 3 values lie beyond the range 1 that its scale "
                                             "holds (largest |value| 2)")
    clipped_by_hand = program.run({"x": [[1.0, -1.0, -1.0]]})
    assert loud.outputs["y"].ints.tolist() == clipped_by_hand.outputs["y"].ints.tolist()   # values unchanged


def test_run_without_warning_still_counts():
    program = compile_graph(single_matmul(1, 2, 1), [{"x": [[1.0, 1.0]]}])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert program.run({"x": [[5.0, 1.0]]}, warn=False).clipped == {"x": 1}
    assert program.clipped_inputs({"x": [[5.0, -5.0]]}) == {"x": 2}
