"""compiler/blocking.py on the decoupled machine (OVERLAP = 2, issue 27, item 5): each candidate's
``run_cycles`` are the reference machine's cycles for its instructions, the ranking is by them
there (and by the serial cycles at OVERLAP = 0 and 1), and a compiled program takes the fastest."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from compiler import blocking
from compiler.blocking import Matmul, Whole, rank_blockings, run_cycles, run_floor, step_code, tile_cycles
from sim.asm import build
from sim.machine import Machine
from sim.spec import Params

DECOUPLED = Params(OVERLAP=2)


def program(mm: Matmul, b: blocking.Blocking, params: Params) -> list:
    """The candidate's instructions as run_cycles times them, with a HALT: a program of its own."""
    return [*(build(op, params=params, **fields) for op, fields in step_code(mm, b, params)),
            build("HALT", params=params)]


def small_matmuls(count: int, seed: int):
    draw = random.Random(seed)
    for node in range(count):
        m, k, n = draw.randrange(1, 13), draw.randrange(1, 40), draw.randrange(1, 17)
        yield Matmul(node, m, k, n, transpose_b=draw.random() < 0.3, a=Whole(m * k, 0, 7, m * k, 1),
                     b=Whole(k * n, 0, 9, k * n, 1), a_streams=True, b_streams=True,
                     b_panels=draw.random() < 0.5, out=m * n, bias=draw.random() < 0.3, k_max=16)


@pytest.mark.parametrize("seed", range(3))
def test_every_candidates_run_cycles_are_the_reference_machines(seed):
    """Each candidate of 6 random steps (K cut at 16, biases, B gathered, in panels, transposed),
    run as a program of its own on the reference machine at OVERLAP = 2: its ``cycles`` counter
    is the candidate's run_cycles, and the floor is never above them."""
    params = dataclasses.replace(DECOUPLED, K_MAX=16)
    checked = 0
    for mm in small_matmuls(6, seed):
        mxu = tile_cycles(mm, params)[0]
        for b in rank_blockings(mm, params):
            run = Machine(params).run(program(mm, b, params), np.zeros(4096, dtype=np.int64))
            cycles = run.counters.cycles
            assert b.run_cycles == cycles, b.describe()
            assert run_floor(mm, b, params, mxu) <= cycles
            checked += 1
    assert checked > 40


def test_the_ranking_is_by_run_cycles_at_overlap_2_and_by_the_latencies_elsewhere():
    """A 16 x 32 by 32 x 32 step whose operands stream: at OVERLAP = 2 the candidates come fastest
    on the machine first (ties by the serial cycles); at OVERLAP = 0 and 1 by the serial cycles,
    run_cycles 0, the same list on both; the machine's first is not the serial first."""
    mm = Matmul(0, m=16, k=32, n=32, a=Whole(512, 0, 130, 512, 1), b=Whole(1024, 0, 258, 1024, 1),
                a_streams=True, b_streams=True, b_panels=True, out=512)
    serial, overlapped = rank_blockings(mm, Params()), rank_blockings(mm, Params(OVERLAP=1))
    assert serial == overlapped and all(b.run_cycles == 0 for b in serial)
    assert [b.cycles for b in serial] == sorted(b.cycles for b in serial)
    decoupled = rank_blockings(mm, DECOUPLED)
    keys = [(b.run_cycles, b.cycles) for b in decoupled]
    assert keys == sorted(keys) and all(b.run_cycles > 0 for b in decoupled)
    assert {dataclasses.replace(b, run_cycles=0) for b in decoupled} == set(serial)
    assert decoupled[0].run_cycles < run_cycles(mm, serial[0], DECOUPLED)


def test_past_the_budget_candidates_are_not_run_and_come_after():
    """A 64 x 64 by 64 x 256 step has 329 candidates of 364,523 instructions: those run (in the
    order of their floors) hold at most RUN_BUDGET instructions, and are ranked before the rest."""
    mm = Matmul(0, m=64, k=64, n=256, a=Whole(4096, 0, 1000, 4096, 1), b=Whole(16384, 0, 4000, 16384, 1),
                a_streams=True, b_streams=True, b_panels=True, out=16384)
    ranked = rank_blockings(mm, Params(OVERLAP=2, SPAD_WORDS=32768))
    ran = [b for b in ranked if b.run_cycles]
    assert len(ranked) == 329 and 0 < len(ran) < len(ranked)
    assert ranked[:len(ran)] == ran
    assert sum(b.instructions for b in ran) <= blocking.RUN_BUDGET
