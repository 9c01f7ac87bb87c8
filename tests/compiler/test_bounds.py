"""compiler/bounds.py: lower bounds on a program's cycles at OVERLAP = 1, hand-worked and never
above what the reference machine takes."""

from __future__ import annotations

import random
from functools import partial

import pytest

from compiler import compile_graph
from compiler.bounds import bounds
from compiler.workloads.random_graph import random_graph, sample_inputs
from sim.asm import build
from sim.spec import DEFAULT, Params

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

OVERLAP = Params(OVERLAP=1)


def test_a_load_then_its_requantization_is_one_chain():
    """LD of 16 words: 4 beats + LD_OVERHEAD 2 = 6 cycles; the RQ of them: 4 beats + RQ_OVERHEAD
    10 = 14, after the LD (read after write). Dispatch at the front end's 10, the chain ends at
    10 + 6 + 14 = 30, the stop 1 cycle: 31, which is what the machine takes."""
    code = [build("LD", dst=0, src=0, len=16), build("RQ", dst=16, src=0, len=16, m=1, s=1, relu=0),
            build("HALT")]
    b = bounds(code, OVERLAP)
    assert (b.dependences, b.issue, b.engine, b.read_port) == (31, 10 + 3 + 14 + 1, 14 + 11, 4 + 11)
    assert (b.mxu_roof, b.dma_roof) == (0, 4)
    assert b.best == 31 and b.limit == "dependences"
    assert b.chain == (("front end", 10), ("hazard", 6), ("last", 14 + 1))
    assert b.path == ((0, "front end"), (1, "hazard"))


def test_independent_instructions_are_bound_by_the_busiest_engine():
    """Three LDs of 64 words to separate places: 18 cycles each on the DMA, one at a time: 10 +
    54 + 1 = 65; no chain (the external regions are only read)."""
    code = [build("LD", dst=64 * k, src=64 * k, len=64) for k in range(3)] + [build("HALT")]
    b = bounds(code, OVERLAP)
    assert b.engine == 65 and b.dependences == 10 + 18 + 1 and b.dma_roof == 48
    assert b.limit == "engine"
    assert b.path == ((0, "front end"),) and b.chain == (("front end", 10), ("last", 18 + 1))


def test_what_follows_the_first_halt_is_left_out():
    """The machine stops at the first HALT: an instruction after it, legal or not, bounds nothing."""
    code = [build("LD", dst=0, src=0, len=16), build("HALT")]
    after = [build("LD", dst=64, src=0, len=64), build("LD", dst=4090, src=0, len=16, strict=False)]
    for params in (OVERLAP, Params(OVERLAP=2)):
        assert bounds(code + after, params) == bounds(code, params)


def test_an_illegal_instruction_is_refused_by_index():
    code = [build("LD", dst=0, src=0, len=16), build("LD", dst=4090, src=0, len=16, strict=False)]
    with pytest.raises(ValueError, match=r"instruction 1 \(LD\)"):
        bounds(code, OVERLAP)


@pytest.mark.parametrize("seed", range(100, 112))
def test_no_seed_program_runs_faster_than_its_bounds(seed):
    graph, names = random_graph(seed)
    rng = random.Random(seed)
    calibration = [sample_inputs(names, rng) for _ in range(8)]
    program = compile_graph(graph, calibration, params=OVERLAP)
    cycles = program.run(sample_inputs(names, rng), warn=False).counters.cycles
    b = bounds(program.code, OVERLAP)
    assert b.best <= cycles
    assert sum(n for _, n in b.chain) == b.dependences
    assert [pc for pc, _ in b.path] == sorted({pc for pc, _ in b.path})      # in program order
