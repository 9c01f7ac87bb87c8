"""A convolution in bands kernel row by kernel row (issue 25, the ``taps`` mode:
compiler/convtaps.py): the ring's rows and slots by hand, each input row of a stride-1
convolution loaded once, the in-place rule, and compiled programs equal to the integer
interpreter (with and without a bias, two images, stride 1 and 2, K past K_MAX, the serial
machine and the one whose engines overlap) whose loads and MMs are counted by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compiler import compile_graph
from compiler.convtaps import Step, taps_allowed, taps_steps
from compiler.interpret import interpret
from compiler.ir import Graph
from compiler.ops.window import Window
from compiler.schedule import LOAD_PIECE
from sim.machines import PRESETS


def test_the_steps_of_a_band_by_hand():
    """8 x 8, kernel 3, stride 1, padding 1, 3 rows a band: row yp in slot yp mod 3; the top
    padding row is skipped; a row is loaded once and read by three kernel rows."""
    steps = list(taps_steps(Window(8, 8, 64, 3, 3, 1, 1, 1, 1), 3))
    assert steps[:4] == [
        Step(0, 3, 0, ((1, 1, 1, True), (2, 2, 2, True))),
        Step(0, 3, 1, ((0, 1, 1, False), (1, 2, 2, False), (2, 3, 0, True))),
        Step(0, 3, 2, ((0, 2, 2, False), (1, 3, 0, False), (2, 4, 1, True))),
        Step(3, 3, 0, ((0, 3, 0, False), (1, 4, 1, False), (2, 5, 2, True)))]
    assert steps[-1] == Step(6, 2, 2, ((0, 8, 2, False),))     # yp 9, the bottom padding, skipped
    assert len(steps) == 3 * 3


def replay(w: Window, rows: int, slots: int = 0) -> list[int]:
    """Follow a ring of slots by the steps' loads; check every read finds its row; the rows loaded."""
    held, loaded = {}, []
    for s in taps_steps(w, rows, slots):
        assert sorted(r for r, *_ in s.reads) == sorted({r for r, *_ in s.reads})
        assert len({slot for _, _, slot, _ in s.reads}) == len(s.reads)          # one row a slot
        for r, yp, slot, load in s.reads:
            assert yp == (s.o0 + r) * w.sh + s.ky and w.ph <= yp < w.ph + w.H
            if load:
                held[slot] = yp
                loaded.append(yp)
            assert held[slot] == yp
    return loaded


@pytest.mark.parametrize("h, rows, slots", [(8, 2, 0), (8, 3, 0), (8, 3, 4), (32, 3, 0), (16, 5, 6)])
def test_stride_one_loads_each_input_row_once(h, rows, slots):
    w = Window(h, h, 16, 3, 3, 1, 1, 1, 1)
    assert replay(w, rows, slots) == list(range(1, h + 1))   # padded rows 1..H, in order, once


def test_stride_two_reloads_what_its_ring_cannot_hold():
    """16 x 16, kernel 3, stride 2, padding 1, 3 rows a band: rows 0..16 of the padded image
    (0 the padding), slot (yp // 2) mod 3. Band 0 reads 2, 4 | 1, 3, 5 | 2, 4, 6 and loads them
    all (8); band 3 reads 6, 8, 10 | 7, 9, 11 | 8, 10, 12, 6 still held (8 loads); band 6 (2
    rows) 12, 14 | 13, 15 | 14, 16, 12 held (5)."""
    w = Window(16, 16, 32, 3, 3, 2, 2, 1, 1)
    loaded = replay(w, 3)
    assert loaded[:8] == [2, 4, 1, 3, 5, 2, 4, 6]
    assert set(loaded) == set(range(1, 17)) and len(loaded) == 8 + 8 + 5


def test_in_place_only_when_no_band_reloads_a_stored_row():
    w = Window(8, 8, 64, 3, 3, 1, 1, 1, 1)
    assert not taps_allowed(w, 1, True)        # band o0 reloads input row o0 - 1, stored over
    assert taps_allowed(w, 1, False) and taps_allowed(w, 2, True) and taps_allowed(w, 3, True)


def conv_net(h: int, c: int, cout: int, stride: int, bias: bool, batch: int, seed: int = 0) -> Graph:
    """x (4 channels) -> conv 3x3 to c + relu -> the convolution under test (3x3, c -> cout,
    ``stride``, padding 1, weight ``w``) + relu -> conv 1x1 to 4 -> y: the middle one reads
    and writes activations spilled to external memory."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.input("x", (batch * h * h, 4))
    a = g.relu(g.conv2d(x, g.weight("w1", rng.normal(size=(36, c)) / 6), (h, h), 3, 1, 1))
    w = g.weight("w", rng.normal(size=(9 * c, cout)) / np.sqrt(9 * c))
    y = g.relu(g.conv2d(a, w, (h, h), 3, stride, 1, bias=rng.normal(size=cout) * 0.1 if bias else None,
                        per_channel=True))
    ho = (h - 1) // stride + 1
    g.output(g.conv2d(y, g.weight("w3", rng.normal(size=(cout, 4)) / 8), (ho, ho), 1), "y")
    return g


def run(graph: Graph, params, rows: int):
    rng = np.random.default_rng(1)
    program = compile_graph(graph, [{"x": rng.normal(size=(rows, 4))} for _ in range(4)], params=params,
                            launches=True)
    test = {"x": rng.normal(size=(rows, 4))}
    assert (program.run(test, warn=False).outputs["y"].ints
            == interpret(program, test)[program.graph.outputs()[0].id]).all()
    return program


def owned(program, node_id: int) -> list:
    return [ins for ins, owner in zip(program.code, program.owners, strict=True) if owner == node_id]


@pytest.mark.parametrize("bias", [True, False])
def test_a_deep_layer_runs_kernel_row_by_kernel_row(bias):
    """ResNet-8's last 3x3 convolution (8 x 8 x 64 -> 64), two images, on the 8 x 8 machine:
    its weight (36,864 words) streams in chunks of 64 x 8 words, 3 output rows a band (ring 3
    x 640, accumulator 3 x 512); per image and band 3 kernel rows x 8 groups x 3 pieces of
    K_MAX = 72 chunks; each padded input row 1..8 loaded once; per output row 3 kernel rows x 8
    groups x 3 pieces MMs, less the kernel row on the padding (top and bottom rows); without a
    bias the first MM of each output row overwrites (acc = 0)."""
    program = run(conv_net(8, 64, 64, 1, bias, 2), PRESETS["t8"], 2 * 64)
    nodes = program.graph.nodes
    node = next(n for n in nodes if n.op == "conv2d" and nodes[n.ins[1]].name == "w")
    code = owned(program, node.id)
    producer = program.graph.nodes[node.ins[0]].ins[0]      # the first convolution, its relu fused
    x, wt = program.ext[f"activations of node {producer}"], program.ext["w"]
    chunks = [i for i in code if i.op == "LD" and wt.addr <= i.src < wt.end]
    assert len(chunks) == 2 * 3 * 72 and {i.len for i in chunks} == {64 * 8}
    rows = [i for i in code if i.op == "LD" and x.addr <= i.src < x.end]
    assert sorted(i.src for i in rows) == [x.addr + r * 8 * 64 for r in range(2 * 8)]
    mms = [i for i in code if i.op == "MM"]
    assert len(mms) == 2 * (8 * 3 - 2) * 8 * 3 and {(i.M, i.K, i.N) for i in mms} == {(8, 64, 8)}
    assert sum(i.acc == 0 for i in mms) == (0 if bias else 2 * 8 * 8)


@pytest.mark.parametrize("machine", ["default", "t8", "t8 overlap"])
def test_strided_layers_equal_the_interpreter(machine):
    """A stride-2 3x3 convolution 16 x 16 x 32 -> 64 (K = 96: two pieces of K_MAX), two images,
    on the scratchpad of 4,096 words, where it runs in bands; with OVERLAP = 1 the chunks
    alternate between two buffers."""
    params = PRESETS["t8"] if machine != "default" else PRESETS["t4"]
    params = dataclasses.replace(params, SPAD_WORDS=4096, OVERLAP=int("overlap" in machine))
    program = run(conv_net(16, 32, 64, 2, False, 2), params, 2 * 256)
    wt = program.ext["w"]
    chunks = [i for i in program.code if i.op == "LD" and wt.addr <= i.src < wt.end]
    if not params.OVERLAP:
        assert {i.len for i in chunks} == {64 * params.T, 32 * params.T}     # K = 96: pieces of 64 and 32
        assert len({i.dst for i in chunks}) == 1
    else:   # the scheduler cuts an LD into pieces of LOAD_PIECE = 256 words; the buffers of 512 words
        # take the pieces of 64 (two LDs) and of 32 taps (one) in turn
        first = min(i.dst for i in chunks)
        assert {i.len for i in chunks} == {LOAD_PIECE}
        assert {i.dst - first for i in chunks} == {0, LOAD_PIECE, 64 * params.T}
