"""compiler/schedule.py: the list scheduler for OVERLAP = 1 keeps every dependency (the program
computes what it did) and issues an independent load ahead of the work before it."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.schedule import dependencies, schedule
from compiler.testing.seedtable import TABLE_SEEDS, compile_seed
from sim.asm import assemble
from sim.machine import Machine, predict_counters
from sim.spec import DEFAULT, Params

OVERLAP = Params(OVERLAP=1)


def test_the_serial_machine_keeps_its_order():
    code = compile_seed(100).program.code
    assert schedule(code, DEFAULT) == list(code)


def test_an_independent_load_goes_ahead():
    code = assemble("LD dst=0 src=0 len=16\n"
                    "MM dst=100 A=0 B=16 M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\n"   # reads the LD's words
                    "RQ dst=200 src=100 len=16 m=8388608 s=24 relu=0\n"          # reads the MM's
                    "LD dst=300 src=64 len=64\n"                                  # independent
                    "HALT")
    assert dependencies(code[:4]) == [set(), {0}, {1}, set()]
    new = schedule(code, OVERLAP)
    assert [ins.op for ins in new] == ["LD", "MM", "LD", "RQ", "HALT"]
    # by hand: LD 10..16; then the MM and the second LD could both start at 16: the earlier in
    # the program goes, MM 16..29; the LD (18 cycles, writing in its last 16) at 27, when its
    # writes follow the MM's end, ..45, before the RQ, which could start at 29 (the MM's end)
    # and so waits for its writes (its last 4 of 14 cycles) to follow the LD's: 35..49; HALT 50
    assert [p.start for p in Machine(OVERLAP).run(new).timeline] == [10, 16, 27, 35]
    assert predict_counters(new, OVERLAP).cycles == 50
    # in the emitted order: RQ 29..43, the LD waits for the write port until 41, ..59; HALT 60
    assert predict_counters(code, OVERLAP).cycles == 60


def test_a_conflict_on_external_memory_is_kept():
    code = assemble("ST src=0 dst=10 len=4\nLD dst=100 src=8 len=4\nHALT")
    assert dependencies(code[:2]) == [set(), {0}]


@pytest.mark.parametrize("seed", TABLE_SEEDS[:4])
def test_a_scheduled_seed_computes_what_it_did(seed):
    run = compile_seed(seed, OVERLAP)
    program = run.program
    emitted = compile_seed(seed).program
    # the same MMs (the RQs of a matmul taller than T come one per block of T rows)
    assert sorted(str(i) for i in program.code if i.op != "RQ") == sorted(str(i) for i in emitted.code
                                                                          if i.op != "RQ")
    image = program.ext_image(run.test_inputs)
    a = Machine(OVERLAP).run(program.code, image)
    b = Machine(DEFAULT).run(emitted.code, image)
    assert np.array_equal(a.ext, b.ext)
    assert a.counters.cycles <= predict_counters(emitted.code, OVERLAP).cycles


def test_a_streamed_weight_is_double_buffered():
    from compiler.testing.mlpbench import compile_for

    program = compile_for(1, OVERLAP)
    serial = compile_for(1, DEFAULT)
    x = {"x": np.random.default_rng(5).normal(size=(1, 64))}
    got, want = program.run(x, warn=False), serial.run(x, warn=False)
    assert all(np.array_equal(got.outputs[k].ints, want.outputs[k].ints) for k in want.outputs)
    # the first layer streams its weight (64 x 256) in column blocks of 28 (1,792 words, loaded
    # in 7 pieces of 256: compiler.schedule.split_loads): the blocks' loads go to two B blocks in
    # turn, so the next one loads while the MMs read this one
    assert program.blockings[2].stream_b and program.blockings[2].cols == 28
    weight = program.ext["w0"]
    block = 28 * 64
    pieces = [ins for ins in program.code if ins.op == "LD" and weight.addr <= ins.src < weight.end]
    assert len(pieces) == -(-64 * 256 // 256)            # every word of the weight once, 256 a piece
    first = min(ins.dst for ins in pieces)
    for ins in pieces:   # the c-th column block's pieces land in B block c mod 2
        assert (ins.dst - first) // block == (ins.src - weight.addr) // block % 2
    assert got.counters.cycles < want.counters.cycles


def test_long_loads_are_cut_into_pieces():
    from compiler.schedule import LOAD_PIECE, split_loads

    code = assemble(f"LD dst=10 src=100 len={2 * LOAD_PIECE + 3}\nLD dst=0 src=8 len={LOAD_PIECE + 8} fmt=1\n"
                    "LD dst=5 src=0 len=7\nHALT")
    pieces = split_loads(code)
    assert [(i.dst, i.src, i.len, i.fmt) for i in pieces[:-1]] == [
        (10, 100, LOAD_PIECE, 0), (10 + LOAD_PIECE, 100 + LOAD_PIECE, LOAD_PIECE, 0),
        (10 + 2 * LOAD_PIECE, 100 + 2 * LOAD_PIECE, 3, 0),
        (0, 8, LOAD_PIECE, 1), (LOAD_PIECE, 8 + LOAD_PIECE // 4, 8, 1),
        (5, 0, 7, 0)]
    image = list(range(1, 4000))
    assert np.array_equal(Machine().run(pieces, image).spad, Machine().run(code, image).spad)
