"""Activations in external memory and programs in launches (issue 25; compiler/spill.py,
compiler/convstep.py, compiler/addstep.py, Program.launches): a small residual CNN with a
depthwise layer, a strided shortcut and a global average pool, compiled for scratchpads of
4,096, 1,024 and 512 words, equals the integer interpreter value for value each time; the
spilled regions, their reuse in place, the bands, and the launches checked by hand."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from compiler import CompileError, compile_graph
from compiler.interpret import interpret
from compiler.ir import Graph
from compiler.ops.conv2d import window_of
from compiler.timeline import serial_timeline
from sim.machines import PRESETS
from sim.spec import DEFAULT

H, W, C, F = 12, 10, 3, 8


def residual_net(batch: int = 2, seed: int = 0) -> Graph:
    """conv 3x3 + relu; conv, relu, conv (per channel) + residual add + relu; a depthwise 3x3 /2
    + relu beside a 1x1 /2 shortcut, added + relu; a global average pool; a linear layer."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.input("x", (batch * H * W, C))

    def conv(a, cin, cout, k=3, s=1, p=1, **kw):
        w = g.weight(f"w{len(g.nodes)}", rng.normal(size=(k * k * cin, cout)) / np.sqrt(k * k * cin))
        return g.conv2d(a, w, (H, W), k, s, p, **kw)

    h = g.relu(conv(x, C, F, bias=rng.normal(size=F) * 0.1))
    y = g.relu(conv(h, F, F, bias=rng.normal(size=F) * 0.1, per_channel=True))
    h = g.relu(g.add(h, conv(y, F, F)))
    d = g.relu(g.conv2d(h, g.weight("dw", rng.normal(size=(9, F))), (H, W), 3, 2, 1, depthwise=True,
                        bias=rng.normal(size=F) * 0.1, per_channel=True))
    z = g.relu(g.add(d, conv(h, F, F, k=1, s=2, p=0)))
    ho, wo = H // 2, W // 2
    pool = g.conv2d(z, g.weight("ones", np.ones((ho * wo, 1))), (ho, wo), (ho, wo), shared=True,
                    scale=1 / (ho * wo))
    g.output(g.matmul(g.reshape(pool, batch), g.weight("fc", rng.normal(size=(F, 5)))), "y")
    return g


def compiled(spad: int, base=DEFAULT, batch: int = 2, **options):
    rng = np.random.default_rng(1)
    params = dataclasses.replace(base, SPAD_WORDS=spad)
    rows = batch * H * W
    program = compile_graph(residual_net(batch), [{"x": rng.normal(size=(rows, C))} for _ in range(4)],
                            params=params, **options)
    return program, {"x": rng.normal(size=(rows, C))}


@pytest.mark.parametrize("spad, machine", [(4096, "default"), (1024, "default"), (512, "default"),
                                           (4096, "t8"), (1024, "t8")])
def test_the_machine_equals_the_interpreter_whatever_the_scratchpad(spad, machine):
    program, test = compiled(spad, DEFAULT if machine == "default" else PRESETS["t8"])
    outcome = program.run(test, warn=False)
    want = interpret(program, test)[program.graph.outputs()[0].id]
    assert (outcome.outputs["y"].ints == want).all()
    assert program.spad_high <= spad
    spilled = [name for name in program.ext if name.startswith("activations of node ")]
    assert bool(spilled) == (spad < 8192)     # 4,096 words do not hold it whole either


def test_a_layer_that_does_not_fit_even_a_row_at_a_time_is_refused_by_name():
    with pytest.raises(CompileError, match=r"node \d+ \(conv2d\) does not fit the scratchpad even one "
                                           "output row"):
        compiled(256, PRESETS["t8"])


def test_a_graph_that_fits_is_compiled_as_before():
    """With room for everything, nothing spills and no convolution runs in bands."""
    program, _ = compiled(16384)
    assert not [name for name in program.ext if name.startswith("activations")]
    assert program.spad_high > 4096


def test_spilled_regions_by_hand():
    """At 512 words every tensor of images lives in external memory, one word per value, named
    by the node that writes it (a relu fused into it shares it); the residual add writes in
    place into the region of its first operand h (whose last reader it is), and the stride-1
    convolution of equal shape into its input's region; the first convolution's output y is
    read later by the add, so y's convolution gets a region of its own."""
    program, _ = compiled(512)
    nodes = program.graph.nodes
    regions = {int(name.rsplit(" ", 1)[1]): e for name, e in program.ext.items()
               if name.startswith("activations")}
    assert all(e.words == nodes[n].shape[0] * nodes[n].shape[1] for n, e in regions.items())

    def region(nid):
        return regions[nid if nodes[nid].op != "relu" else nodes[nid].ins[0]]

    add = next(n for n in nodes if n.op == "add")
    h, conv_y = add.ins
    assert region(add.id).addr == region(h).addr              # in place of h, read last by the add
    assert region(conv_y).addr == region(nodes[conv_y].ins[0]).addr   # in place of its input
    assert region(nodes[conv_y].ins[0]).addr != region(h).addr    # h is read later: not reused


def test_a_band_reads_each_input_row_once():
    """The first 3x3 convolution (input x read from its own region, 12 x 10 x 3, padding 1): per
    image 12 LDs of 30 words (one per image row) and 2 LDs of a zero row (the padding rows),
    whatever the bands; its output stored by STs of whole bands."""
    program, _ = compiled(512)
    first = next(n for n in program.graph.nodes if n.op == "conv2d")
    mine = [ins for ins, owner in zip(program.code, program.owners, strict=True) if owner == first.id]
    x = program.ext["x"]
    rows = [ins for ins in mine if ins.op == "LD" and x.addr <= ins.src < x.end]
    assert len(rows) == 2 * H and {ins.len for ins in rows} == {W * C}
    assert sorted(ins.src for ins in rows) == [x.addr + r * W * C for r in range(2 * H)]
    zeros = program.ext[f"zeros of node {first.id}"]
    assert sum(ins.op == "LD" and ins.src == zeros.addr and ins.len == (W + 2) * C for ins in mine) == 2 * 2
    out = program.ext[f"activations of node {first.id}"]
    stored = sum(ins.len for ins in mine if ins.op == "ST" and out.addr <= ins.dst < out.end)
    assert stored == out.words == 2 * H * W * F


def test_launches_run_what_the_whole_program_does():
    """Four images at 512 words need more instructions than the instruction memory holds: refused
    by default, naming the count; with launches=True, pieces of at most IMEM_WORDS instructions
    each ending in HALT, whose counters add up (each launch's cycles are its serial timeline's
    end), and the outputs equal the interpreter's."""
    with pytest.raises(CompileError, match=re.escape("more than the 4096 the instruction memory holds")):
        compiled(512, batch=4)
    program, test = compiled(512, batch=4, launches=True)
    launches = program.launches()
    assert len(program.code) > DEFAULT.IMEM_WORDS and len(launches) == 2
    assert all(len(code) <= DEFAULT.IMEM_WORDS and code[-1].op == "HALT" for code in launches)
    assert [ins for code in launches for ins in code[:-1]] == program.code[:-1]
    outcome = program.run(test, warn=False)
    assert outcome.counters.cycles == sum(serial_timeline(code, DEFAULT)[-1].end for code in launches)
    assert (outcome.outputs["y"].ints == interpret(program, test)[program.graph.outputs()[0].id]).all()


@pytest.mark.slow
@pytest.mark.parametrize("overlap", (1, 2))
def test_launches_on_the_machine_whose_engines_overlap(overlap):
    """The same at OVERLAP = 1 and 2 (the scheduled program cut into launches, each HALT waiting
    for every engine): the outputs equal the interpreter's, and each launch takes at least its
    lower bound (compiler/bounds.py) and no more than the serial machine takes for the same
    instructions. Slow (25 s each, 45 s at a load of 9: scheduling 5,000 instructions); a CI step."""
    from compiler.bounds import bounds

    params = dataclasses.replace(DEFAULT, OVERLAP=overlap)
    program, test = compiled(512, base=params, batch=4, launches=True)
    launches = program.launches()
    assert len(launches) >= 2 and all(len(code) <= DEFAULT.IMEM_WORDS for code in launches)
    outcome = program.run(test, warn=False)
    assert (outcome.outputs["y"].ints == interpret(program, test)[program.graph.outputs()[0].id]).all()
    serial = dataclasses.replace(params, SPAD_WORDS=512, OVERLAP=0)
    assert (sum(bounds(code, program.machine).best for code in launches) <= outcome.counters.cycles
            <= sum(serial_timeline(code, serial)[-1].end for code in launches))


def test_the_global_pool_reads_the_whole_window_in_one_run():
    """The shared-tap pool over 6 x 5 pixels in the scratchpad: per image and group of T channels
    one MM of M = 1, K = 30 (the window's pixels one after another, ldb = C)."""
    program, _ = compiled(16384)
    pool = next(n for n in program.graph.nodes if n.op == "conv2d" and window_of(n).shared)
    mms = [ins for ins, owner in zip(program.code, program.owners, strict=True)
           if owner == pool.id and ins.op == "MM"]
    assert [(m.M, m.K, m.N, m.ldb) for m in mms] == [(1, 30, 4, F)] * (2 * 2)


@pytest.mark.rtl
@pytest.mark.slow
def test_activations_in_external_memory_and_launches_on_the_rtl():
    """Six images of the residual network on the default machine: its tensors of images through
    external memory (in bands, in place), more instructions than the instruction memory holds,
    so two launches; on Icarus and Verilator, one after the other from the scratchpad the first
    left, every memory word, the counters and the stop equal the reference machine's (CI)."""
    from cosim.jobs import Job
    from report.rtl import run_rtl

    program, test = compiled(4096, batch=6, launches=True)
    assert len(program.launches()) == 2 and any(name.startswith("activations") for name in program.ext)
    results = run_rtl(Job.of_launches(program, test, "residual net"), ("icarus", "verilator"))
    assert [r.simulator for r in results] == ["icarus", "verilator"]
    assert all(not r.failure and not r.differences and r.failed == 0 for r in results), \
        [r.summary() for r in results]


def test_a_relu_left_unfused_keeps_its_buffer_in_the_scratchpad():
    """With the fusion pass switched off a relu is an instruction of its own on its operand's
    buffer, so that buffer never lives in external memory (where no instruction would apply the
    relu): h = relu(conv(x)) stays in the scratchpad, and the outputs equal the interpreter's
    (before, h spilled and its relu was never applied: 192 of 225 values differed)."""
    rng = np.random.default_rng(0)
    h_, w_, c_ = 15, 5, 3
    g = Graph()
    x = g.input("x", (h_ * w_, c_))
    h = g.relu(g.conv2d(x, g.weight("w0", rng.normal(size=(9 * c_, c_)) / 5), (h_, w_), 3, 1, 1))
    y = g.conv2d(h, g.weight("w1", rng.normal(size=(c_, c_))), (h_, w_), 1, 1, 0,
                 bias=rng.normal(size=c_) * 0.3)
    g.output(g.add(x, y), "y")
    calibration = [{"x": rng.normal(size=(h_ * w_, c_))} for _ in range(3)]
    test = {"x": rng.normal(size=(h_ * w_, c_))}
    program = compile_graph(g, calibration, params=dataclasses.replace(DEFAULT, SPAD_WORDS=1024),
                            disable={"fusion"})
    assert f"activations of node {program.graph.nodes[h].ins[0]}" not in program.ext
    want = interpret(program, test)[program.graph.outputs()[0].id]
    assert (program.run(test, warn=False).outputs["y"].ints == want).all()
