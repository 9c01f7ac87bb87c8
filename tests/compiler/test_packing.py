"""compiler/packing.py and its use: int8 weights four to an external word, loaded by LD fmt=1.

Values worked by hand (the packed words), the reference machine (the same outputs and the same
cycles packed and unpacked) and the integer interpreter (the 200,000-parameter MLP)."""

import itertools

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.blocking import Matmul, packed_aligned, rank_blockings
from compiler.interpret import interpret
from compiler.layout import external_layout
from compiler.packing import aligned, int8_words, pack_int8
from compiler.testing import capacity
from sim.spec import DEFAULT, Params


def test_pack_int8_puts_element_4i_plus_j_in_byte_j_of_word_i():
    # -1 -> 0xff, 2 -> 0x02, -128 -> 0x80, 127 -> 0x7f; 5 then three zero bytes of padding
    assert list(pack_int8([-1, 2, -128, 127, 5])) == [0x7F8002FF, 0x00000005]
    assert int8_words(5) == 2 and int8_words(8) == 2 and int8_words(1) == 1
    assert aligned(0) and aligned(12) and not aligned(6)


def mlp(widths, batch, bias=True):
    """The biased (or unbiased) MLP of the capacity search: relu between the layers."""
    return capacity.mlp(widths, batch, bias)


def samples(graph, count=3):
    x = graph.nodes[0]
    return [{"x": np.random.default_rng(k).normal(size=x.shape)} for k in range(count)]


def test_packed_regions_take_a_quarter_and_only_int8_weights_pack():
    g = mlp((6, 5, 3), 2)   # w0: 30 values -> 8 words; w1: 15 -> 4 words
    g.weight("w4", np.ones((3, 3)), bits=4)   # int4 keeps its own packing: 9 values, 2 words
    entries, words = external_layout(g, pack=True, params=DEFAULT)
    shown = {e.name: (e.addr, e.words, e.fmt) for e in entries.values()}
    assert shown == {"x": (0, 12, 0), "w0": (12, 8, 1), "w1": (20, 4, 1), "w4": (24, 2, 0),
                     "bias of node 2": (26, 5, 0), "bias of node 5": (31, 3, 0), "y": (34, 6, 0)}
    assert words == 40
    plain, _ = external_layout(g, DEFAULT)   # the default packs only when the graph does not fit otherwise
    assert all(e.fmt == 0 for e in plain.values()) and plain["w0"].words == 30


def test_the_default_packs_only_when_one_value_a_word_does_not_fit():
    g = mlp((64, 64, 10), 4, bias=False)   # 256 + 4,096 + 640 + 40 words one a word; 1,024 + 160 packed
    small = Params(EXT_WORDS=4096)
    entries, words = external_layout(g, small)
    assert words == 256 + 1024 + 160 + 40 and entries["w0"].fmt == entries["w1"].fmt == 1
    with pytest.raises(CompileError) as refused:
        external_layout(g, small, pack=False)
    assert "compile_graph(..., pack=True)" in refused.value.fix
    with pytest.raises(CompileError) as refused:
        compile_graph(g, samples(g), pack="yes")
    assert refused.value.problem == "compile_graph: pack = 'yes' (a str) is not True, False or None"


@pytest.mark.parametrize("widths, batch", [((64, 256, 128, 10), 1), ((20, 36, 10), 8),
                                           ((64, 64, 64, 10), 16)])
def test_packed_and_unpacked_programs_compute_the_same_in_the_same_cycles(widths, batch):
    """LD fmt=1 writes the words an unpacked LD writes, in the same cycles (its latency counts
    the scratchpad words): only the external addresses and the fmt field differ."""
    g = mlp(widths, batch)
    cal = samples(g)
    plain, packed = (compile_graph(g, cal, pack=p) for p in (False, True))
    a, b = (p.run(cal[0], warn=False) for p in (plain, packed))
    assert np.array_equal(a.outputs["y"].ints, b.outputs["y"].ints)
    assert a.counters == b.counters
    moved = {"LD": ("src", "fmt"), "ST": ("dst",)}   # the external addresses, and LD's fmt
    for x, y in zip(plain.code, packed.code, strict=True):   # else the same instructions
        same = {k: v for k, v in y.fields.items() if k not in moved.get(x.op, ())}
        assert x.op == y.op and {k: x.fields[k] for k in same} == same
    assert any(ins.op == "LD" and ins.fmt == 1 for ins in packed.code)
    assert not any(ins.op == "LD" and ins.fmt == 1 for ins in plain.code)
    assert packed.ext_words < plain.ext_words


def test_a_packed_panel_loads_from_a_quarter_of_its_element_offset():
    """64-256-128-10 at batch 1: w0 (64 x 256) streams in column panels; a panel of `cols`
    columns holds 64 * cols elements, so panel p starts at word w0 + p * 64 * cols / 4."""
    g = mlp((64, 256, 128, 10), 1)
    program = compile_graph(g, samples(g), pack=True)
    entry = program.ext["w0"]
    loads = [ins for ins in program.code if ins.op == "LD" and entry.addr <= ins.src < entry.end]
    assert entry.panel and all(ins.fmt == 1 for ins in loads)
    assert [ins.src for ins in loads] == [entry.addr + p * 64 * entry.panel // 4 for p in range(len(loads))]
    assert sum(ins.len for ins in loads) == 64 * 256
    assert program.whose("ext", entry.addr + 1).startswith("weight 'w0' packed word 1 (int8 elements 4..7")


def test_a_gathered_block_of_a_packed_weight_must_start_on_a_word():
    """A B that two matmuls read is gathered row by row: the LD of row t of a block starting at
    column j0 starts at element t * n + j0, so with n = 10 only blocks that are the whole of B
    (one LD, offset 0) remain; with n = 12 blocks of 4 or 8 columns do."""
    def step(n, packed):
        return Matmul(0, 4, 16, n, b_streams=True, b_panels=False, b_packed=packed)
    assert not packed_aligned(step(10, True), 4, 4, False, True)
    assert packed_aligned(step(10, False), 4, 4, False, True)
    assert packed_aligned(step(12, True), 4, 4, False, True)
    assert {b.cols for b in rank_blockings(step(10, True), DEFAULT) if b.stream_b} == {10}
    assert {b.cols for b in rank_blockings(step(10, False), DEFAULT) if b.stream_b} == {4, 8, 10}


def test_a_shared_packed_weight_streams_bit_exact():
    """A weight that two matmuls read, too large for the scratchpad beside the activations:
    gathered row by row where aligned, and the machine equals the interpreter."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.input("x", (40, 64))
    w = g.weight("w", rng.normal(0, 0.1, (64, 60)))
    g.output(g.matmul(x, w), "y1")
    g.output(g.matmul(g.slice_rows(x, 0, 8), w), "y2")
    cal = [{"x": rng.normal(size=(40, 64))} for _ in range(2)]
    program = compile_graph(g, cal, pack=True, params=Params(SPAD_WORDS=4096))
    outcome = program.run(cal[0], warn=False)
    ints = interpret(program, cal[0])
    for name in ("y1", "y2"):
        assert np.array_equal(outcome.outputs[name].ints, ints[program.ext[name].node])
    assert any(ins.op == "LD" and ins.fmt == 1 for ins in program.code)


def test_a_200k_parameter_mlp_runs_bit_exact_on_the_default_machine():
    """64-512-320-128-10 with biases and relu: 239,818 parameters. One int8 a word its weights
    alone (238,848) are past the 65,536 external words; packed they take 8,192 + 40,960 +
    10,240 + 320 = 59,712, the biases 970, the input and output 74: 60,756 words. The machine
    equals the integer interpreter; its cycles are the reference machine's (the RTL's: GA2.md
    section 5)."""
    widths = (64, 512, 320, 128, 10)
    g = mlp(widths, 1)
    assert sum(a * b + b for a, b in itertools.pairwise(widths)) == 239_818
    cal = samples(g)
    with pytest.raises(CompileError, match="external memory is full"):
        compile_graph(g, cal, pack=False)
    program = compile_graph(g, cal)
    assert program.ext_words == 60_756
    assert all(e.fmt == (e.kind == "weight") for e in program.ext.values())
    outcome = program.run(cal[1], warn=False)
    assert np.array_equal(outcome.outputs["y"].ints, interpret(program, cal[1])[program.ext["y"].node])
    assert outcome.counters.cycles == 126_754
