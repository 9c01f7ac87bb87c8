"""compiler/int4.py: packing int4 levels eight to a word, as UNPACK reads them back."""

from functools import partial

import numpy as np

from compiler import Graph
from compiler.int4 import INT4_PER_WORD, is_int4, pack_int4, packed_words
from sim.asm import build
from sim.machine import Machine, s8
from sim.spec import DEFAULT

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""


def test_pack_int4_by_hand():
    words = pack_int4([1, -1, 2, -8, 7, 0, 3, -2, 5])
    assert words.tolist() == [0xE30782F1, 0x5]


def test_the_machine_unpacks_what_pack_int4_packed():
    levels = np.array([-7, -3, 0, 1, 7, 6, -8, 2, 4, -1])
    packed = pack_int4(levels)
    program = [build("LD", dst=0, src=0, len=2), build("UNPACK", dst=8, src=0, len=2), build("HALT")]
    state = Machine(DEFAULT).run(program, packed)
    assert s8(state.spad[8:18]).tolist() == levels.tolist()


def test_packed_words_round_up_to_whole_words():
    assert [packed_words(n) for n in (1, 8, 9, 16, 17)] == [1, 1, 2, 2, 3]
    assert INT4_PER_WORD == 8   # GA2.md section 2: UNPACK expands 8 values per word


def test_only_a_weight_built_with_four_bits_is_int4():
    g = Graph()
    x = g.input("x", (1, 2))
    w8, w4 = g.weight("a", [[1.0]]), g.weight("b", [[1.0]], bits=4)
    assert [is_int4(g.nodes[n]) for n in (x, w8, w4)] == [False, False, True]


def test_a_convolution_with_int4_weights_per_output_channel_equals_the_interpreter():
    """Per-channel scales of an int4 weight are max |W[:, j]| / 7 (its levels -7..7): each column's
    largest value is level +-7, and the machine's outputs equal the interpreter's (at / 127 the
    levels overflowed the packed nibbles: 471 of 480 values differed)."""
    import dataclasses

    from compiler import compile_graph
    from compiler.channels import quantize_columns
    from compiler.interpret import interpret

    rng = np.random.default_rng(0)
    h, w, c = 6, 10, 8
    g = Graph()
    x = g.input("x", (h * w, c))
    weight = g.weight("w", rng.normal(size=(c, c)) / 3, bits=4)
    g.output(g.conv2d(x, weight, (h, w), 1, 1, 0, per_channel=True), "y")
    program = compile_graph(g, [{"x": rng.normal(size=(h * w, c))} for _ in range(3)],
                            params=dataclasses.replace(DEFAULT, OVERLAP=0))
    levels = quantize_columns(program.graph.nodes[weight], program.scales[weight])
    assert (np.abs(levels).max(axis=0) == 7).all()
    test = {"x": rng.normal(size=(h * w, c))}
    want = interpret(program, test)[program.graph.outputs()[0].id]
    assert (program.run(test, warn=False).outputs["y"].ints == want).all()
