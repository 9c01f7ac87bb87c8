"""Residual adds finished in a convolution's bands (compiler/residual.py): which adds qualify,
what the bands write (counted by hand on the residual network of test_spill.py), the fallback
when the row buffer does not fit, and every program equal to the integer interpreter."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import compiler.residual as residual
from compiler import compile_graph
from compiler.interpret import interpret
from compiler.ir import Graph
from compiler.ops.conv2d import window_of
from sim.spec import DEFAULT

from .test_spill import C, F, H, W, compiled, residual_net


def _spilled(program) -> set[int]:
    """The nodes whose activations live in external memory."""
    return {int(name.rsplit(" ", 1)[1]) for name in program.ext if name.startswith("activations of node ")}


def _owned(program, nid):
    return [ins for ins, owner in zip(program.code, program.owners, strict=True) if owner == nid]


def _region(program, nid):
    """The external region a node lives in (a relu fused into its producer shares the producer's)."""
    node = program.graph.nodes[nid]
    return program.ext[f"activations of node {node.ins[0] if node.op == 'relu' else nid}"]


def _adds(program):
    return [n for n in program.graph.nodes if n.op == "add"]


def test_both_adds_of_the_network_qualify_when_everything_spills():
    """At 1,024 words every tensor of images is spilled; each add's later operand is a
    convolution read by the add alone and emitted just before it (the weight between them emits
    nothing at its own step)."""
    program, _ = compiled(1024)
    graph = program.graph
    found = residual.residual_adds(graph, {n.id for n in graph.nodes})
    assert found == {max(add.ins): add.id for add in _adds(program)}
    assert all(graph.nodes[conv].op == "conv2d" for conv in found)


def test_an_add_does_not_qualify_when_its_sum_or_convolution_stays_in_the_scratchpad_or_is_read_twice():
    g = Graph()
    x = g.input("x", (H * W, C))
    w = g.weight("w", np.ones((9 * C, C)))
    a = g.conv2d(x, w, (H, W), 3, 1, 1)
    b = g.conv2d(a, g.weight("w2", np.ones((9 * C, C))), (H, W), 3, 1, 1)
    s = g.add(a, b)
    every = {n.id for n in g.nodes}
    assert residual.residual_adds(g, every) == {b: s}
    assert residual.residual_adds(g, every - {s}) == {}           # the sum in the scratchpad
    assert residual.residual_adds(g, every - {b}) == {}           # the convolution's result too
    g.output(b, "b")                                              # b read by the output as well
    assert residual.residual_adds(g, every) == {}


def test_an_add_of_a_tensor_to_itself_or_after_another_step_does_not_qualify():
    g = Graph()
    x = g.input("x", (H * W, C))
    a = g.conv2d(x, g.weight("w", np.ones((9 * C, C))), (H, W), 3, 1, 1)
    twice = g.add(a, a)
    assert residual.residual_adds(g, {n.id for n in g.nodes}) == {}
    g2 = Graph()
    x = g2.input("x", (H * W, C))
    a = g2.conv2d(x, g2.weight("w", np.ones((9 * C, C))), (H, W), 3, 1, 1)
    r = g2.relu(x)                                                 # a step between the conv and the add
    g2.add(r, a)
    assert residual.residual_adds(g2, {n.id for n in g2.nodes}) == {}
    assert twice is not None


def test_the_bands_write_each_row_of_the_sum_once_and_never_store_the_convolution():
    """At 1,024 words both adds are finished by their convolutions' bands. The first, h +
    conv(y): per output row of the convolution (2 images x 12 rows) one
    LD of the row of h, its rescale to the sum's scale (and the convolution's row's, when its
    scale is not the sum's either), one VADD of W x F words and one ST of the sum to the add's region, all
    owned by the add, the first of them after the convolution's first instruction and the last
    after its last; the convolution stores nothing of its own."""
    program, _ = compiled(1024)
    add = _adds(program)[0]
    conv = max(add.ins)
    mine = _owned(program, add.id)
    row = W * F
    h_pair, conv_pair = (program.requantizers.get((add.id, k)) for k in (0, 1))
    assert h_pair is not None      # h's scale is not the sum's: its row is rescaled after its LD
    per_row = ["RQ"] * (conv_pair is not None) + ["LD", "RQ", "VADD", "ST"]
    assert [ins.op for ins in mine] == per_row * (2 * H)
    assert {ins.len for ins in mine} == {row}
    assert {(ins.m, ins.s) for ins in mine if ins.op == "RQ"} == {p for p in (h_pair, conv_pair) if p}
    region = _region(program, add.id)
    assert sorted(ins.dst for ins in mine if ins.op == "ST") == [region.addr + r * row for r in range(2 * H)]
    h = _region(program, add.ins[0])
    assert sorted(ins.src for ins in mine if ins.op == "LD") == [h.addr + r * row for r in range(2 * H)]
    assert not any(ins.op == "ST" for ins in _owned(program, conv))
    positions = [k for k, owner in enumerate(program.owners) if owner in (add.id, conv)]
    assert program.owners[positions[-1]] == add.id and program.owners[positions[0]] == conv


def test_the_strided_shortcut_finishes_the_second_add_with_its_rescales():
    """The second add, d + conv1x1/2(h): the 1 x 1 convolution comes last, so its bands finish it;
    the rows of the sum are W/2 x F words, 2 x 6 of them."""
    program, _ = compiled(1024)
    add = _adds(program)[1]
    conv = program.graph.nodes[max(add.ins)]
    assert window_of(conv).sh == 2
    mine = _owned(program, add.id)
    assert sum(ins.op == "VADD" for ins in mine) == 2 * (H // 2)
    assert {ins.len for ins in mine if ins.op == "VADD"} == {(W // 2) * F}


def test_when_the_row_buffer_does_not_fit_the_add_runs_as_its_own_step(monkeypatch):
    """With room asked for more row buffers than the scratchpad holds, no convolution finishes
    an add: each add's instructions come after its convolution's, and the outputs still equal
    the interpreter's."""
    monkeypatch.setattr(residual, "ROW_BUFFERS", 1000)
    program, test = compiled(512)
    for add in _adds(program):
        conv = max(add.ins)
        first_add = program.owners.index(add.id)
        assert conv not in program.owners[first_add:]
    outcome = program.run(test, warn=False)
    assert (outcome.outputs["y"].ints == interpret(program, test)[program.graph.outputs()[0].id]).all()


def test_fewer_cycles_and_the_same_outputs_on_every_machine():
    """Against the same network with the finishing switched off (the adds as their own steps):
    the outputs are the interpreter's either way, and the bands that finish the adds take fewer
    cycles, on the serial machine (the convolution's rows are neither stored nor loaded back)
    and with the engines overlapping."""
    rng = np.random.default_rng(1)
    rows = 2 * H * W
    calibration = [{"x": rng.normal(size=(rows, C))} for _ in range(4)]
    test = {"x": rng.normal(size=(rows, C))}
    for overlap in (0, 1, 2):
        params = dataclasses.replace(DEFAULT, SPAD_WORDS=512, OVERLAP=overlap)
        cycles = []
        for finish in (True, False):
            with pytest.MonkeyPatch.context() as mp:
                if not finish:
                    mp.setattr(residual, "ROW_BUFFERS", 1000)
                program = compile_graph(residual_net(2), calibration, params=params)
            outcome = program.run(test, warn=False)
            want = interpret(program, test)[program.graph.outputs()[0].id]
            assert (outcome.outputs["y"].ints == want).all()
            assert _spilled(program) >= {a.id for a in _adds(program)}
            cycles.append(outcome.counters.cycles)
        assert cycles[0] < cycles[1], (overlap, cycles)


def _self_residual(batch: int = 2) -> Graph:
    """h + conv(h): the sum may take h's region, which the convolution reads as its input."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.input("x", (batch * H * W, C))
    h = g.relu(g.conv2d(x, g.weight("w0", rng.normal(size=(9 * C, F)) / 5), (H, W), 3, 1, 1))
    y = g.conv2d(h, g.weight("w1", rng.normal(size=(9 * F, F)) / 8), (H, W), 3, 1, 1)
    s = g.relu(g.add(h, y))
    pool = g.conv2d(s, g.weight("ones", np.ones((H * W, 1))), (H, W), (H, W), shared=True, scale=1 / (H * W))
    g.output(g.reshape(pool, batch), "out")
    return g


@pytest.mark.parametrize("overlap", (1, 2))
def test_a_sum_written_over_the_convolutions_own_input_equals_the_interpreter(overlap):
    """When the sum takes the region of the convolution's own input (h + conv(h), h read last by
    the add), the bands must not load an input row the sum has written over: the convolution
    plans its bands as one that writes its input's region in place (convstep.in_place). At 512
    words its bands would otherwise reload such a row, and the outputs would differ."""
    rng = np.random.default_rng(4)
    params = dataclasses.replace(DEFAULT, SPAD_WORDS=512, OVERLAP=overlap)
    rows = 2 * H * W
    program = compile_graph(_self_residual(), [{"x": rng.normal(size=(rows, C))} for _ in range(4)],
                            params=params)
    add = _adds(program)[0]
    h, conv = add.ins
    assert _region(program, add.id).addr == _region(program, h).addr        # in place of h
    assert program.owners.index(add.id) < len(program.owners) - 1 - program.owners[::-1].index(conv)
    test = {"x": rng.normal(size=(rows, C))}
    outcome = program.run(test, warn=False)
    assert (outcome.outputs["out"].ints == interpret(program, test)[program.graph.outputs()[0].id]).all()


@pytest.mark.parametrize("spad", (512, 1024))
def test_the_sum_takes_an_operands_region(spad):
    """What makes writing the sum at the convolution's step safe (compiler/residual.py): its
    region is one of its operands' (the convolution's own or the other's), never a region the
    lifetimes freed for the add's own step."""
    program, _ = compiled(spad)
    for add in _adds(program):
        assert _region(program, add.id).addr in {_region(program, operand).addr for operand in add.ins}


def test_a_sum_over_the_input_of_a_convolution_that_may_not_write_over_it_is_its_own_step():
    """h + conv5x5(h) with two rows of padding: a convolution of that shape is never let write
    over its input (compiler/spill.py writes_over_input), so at 1,024 words, where its bands
    could take the row buffer, the sum (whose region is h's) is still left to the add's own step;
    the outputs equal the interpreter's."""
    rng = np.random.default_rng(1)
    g = Graph()
    x = g.input("x", (H * W, C))
    h = g.relu(g.conv2d(x, g.weight("w0", rng.normal(size=(9 * C, F)) / 5), (H, W), 3, 1, 1))
    y = g.conv2d(h, g.weight("w1", rng.normal(size=(25 * F, F)) / 8), (H, W), 5, 1, 2)
    s = g.relu(g.add(h, y))
    pool = g.conv2d(s, g.weight("ones", np.ones((H * W, 1))), (H, W), (H, W), shared=True, scale=1 / (H * W))
    g.output(g.reshape(pool, 1), "out")
    params = dataclasses.replace(DEFAULT, SPAD_WORDS=1024, OVERLAP=2)
    program = compile_graph(g, [{"x": rng.normal(size=(H * W, C))} for _ in range(3)], params=params)
    add = _adds(program)[0]
    assert _region(program, add.id).addr == _region(program, h).addr       # the sum takes h's region
    assert any(ins.op == "ST" for ins in _owned(program, y))                # y is stored: not finished
    test = {"x": rng.normal(size=(H * W, C))}
    outcome = program.run(test, warn=False)
    assert (outcome.outputs["out"].ints == interpret(program, test)[program.graph.outputs()[0].id]).all()
