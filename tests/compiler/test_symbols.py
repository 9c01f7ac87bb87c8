"""compiler/symbols.py and Program.whose: the tensor element or temporary behind a memory word,
checked against the layout's own order (panel_major), the placement's addresses and words
read off a listing by hand."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import Graph, compile_graph
from compiler.layout import ExtEntry, panel_major
from compiler.ops import Op
from compiler.symbols import live_at, panel_element
from compiler.workloads.seedtable import compile_seed
from sim.spec import DEFAULT
from tests.compiler.test_streaming import mlp, samples


@pytest.mark.parametrize(("shape", "panel"), [((5, 7), 3), ((4, 6), 6), ((3, 9), 4), ((1, 5), 2)])
def test_panel_element_undoes_panel_major(shape, panel):
    values = np.arange(shape[0] * shape[1]).reshape(shape)
    stored = panel_major(values, panel)
    entry = ExtEntry("w", 0, values.size, shape, 1, Op.WEIGHT, panel)
    for offset, value in enumerate(stored):
        assert values[panel_element(entry, offset)] == value
    with pytest.raises(ValueError, match="past the"):
        panel_element(entry, values.size)


def test_external_words_name_their_region_and_element():
    """Seed 100's layout (read off Program.ext): in0 (2 x 16) at 0, in3 (3 x 3) at 96, the
    output 'out' (6 x 7, the concat node 12) at 147, 'mid' (the concat node 2) at 189."""
    program = compile_seed(100, params=DEFAULT).program
    assert program.whose("ext", 0) == "input 'in0' row 0 col 0 (node 0)"
    assert program.whose("ext", 20) == "input 'in0' row 1 col 4 (node 0)"
    assert program.whose("ext", 100) == "input 'in3' row 1 col 1 (node 6)"
    assert program.whose("ext", 147 + 7 + 6) == "output 'out' row 1 col 6, from node 12 (concat)"
    assert program.whose("ext", 189 + 16 + 15) == "output 'mid' row 1 col 15, from node 2 (concat)"
    assert program.whose("ext", 189 + 48) is None
    with pytest.raises(ValueError, match="expected 'ext' or 'spad'"):
        program.whose("imem", 0)


def test_a_weight_stored_in_panels_names_its_row_and_column():
    graph = mlp((64, 48, 64, 10), 16)
    program = compile_graph(graph, samples(graph))
    entry = program.ext["w0"]
    assert entry.panel == 24 and entry.shape == (64, 48)
    assert program.whose("ext", entry.addr + 25) == "weight 'w0' row 1 col 1 (node 1)"
    assert program.whose("ext", entry.addr + 64 * 24 + 24 + 3) == "weight 'w0' row 1 col 27 (node 1)"


def test_an_int4_weight_names_its_packed_word():
    g = Graph()
    x = g.input("x", (2, 16))
    w = g.weight("w", np.linspace(-1, 1, 16 * 4).reshape(16, 4), bits=4)
    g.output(g.matmul(x, w), "y")
    rng = np.random.default_rng(0)
    program = compile_graph(g, [{"x": rng.normal(size=(2, 16))} for _ in range(4)])
    entry = program.ext["w"]
    assert entry.words == 8
    assert program.whose("ext", entry.addr + 2) == ("weight 'w' packed word 2 (elements 16..23 row by row) "
                                                    "(node 1)")


def test_every_tensor_element_of_a_program_without_reuse_is_named_at_the_end():
    """Without reuse no buffer is freed: at the HALT every placed tensor is where
    Program.tensor_address says, and each of its words names it with its row and column."""
    run = compile_seed(103, params=DEFAULT)
    program = run.program_no_reuse
    checked = 0
    for node in program.graph.nodes:
        if node.id not in program.placement.loc or (address := program.tensor_address(node.id)) is None:
            continue
        for k in range(node.words):
            row, col = divmod(k, node.shape[1])
            assert f"{node.describe()} row {row} col {col}" in program.whose("spad", address + k)
            checked += 1
    assert checked > 100


def test_scratchpad_words_over_time():
    """Seed 100's listing: pc 6 is MM into the accumulator of node 5 at 57..65, pc 7 RQ from it
    into node 5's tensor at 48..56; at pc 8 the input in3 is loaded to 57. Nothing is placed
    at 300 at pc 5."""
    program = compile_seed(100, params=DEFAULT).program
    assert program.whose("spad", 57, 6) == "accumulator of node 5 (matmul), word 0 of 9"
    assert program.whose("spad", 65, 7) == "accumulator of node 5 (matmul), word 8 of 9"
    assert program.whose("spad", 52, 7) == "node 5 (matmul) row 1 col 1"
    assert program.whose("spad", 58, 8) == "node 6 (input 'in3') row 0 col 1"
    assert program.whose("spad", 100, 5) == "operand 0 of node 4 (add), rescaled, word 4 of 48"
    assert program.whose("spad", 300, 5) == "free scratchpad"
    # a fused relu shares its matmul's buffer, itself part of a concatenation's
    assert program.whose("spad", 94, 17) == ("node 9 (matmul) row 0 col 1, also node 10 (relu) row 0 col 1, "
                                             "also node 12 (concat) row 0 col 1")


def test_live_allocations_follow_the_events():
    program = compile_seed(100, params=DEFAULT).program
    assert {(e.addr, e.words) for e in live_at(program.events, 0)} == {(0, 48)}
    at6 = {(e.addr, e.words) for e in live_at(program.events, 6)}
    assert at6 == {(0, 48), (192, 48), (48, 9), (57, 9)}    # the rescaled operands were freed before pc 6
