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
