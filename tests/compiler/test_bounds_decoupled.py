"""compiler/bounds.py at OVERLAP = 2 (sim.spec.Decoupled): lower bounds hand-worked from the
rule's constants, and never above the cycles the rule gives (random programs, the seeds)."""

from __future__ import annotations

import random
from functools import partial

import pytest

from compiler import compile_graph
from compiler.bounds import CHAIN_LINKS, bounds
from compiler.schedule import cycles_of
from compiler.workloads.random_graph import random_graph, sample_inputs
from sim import spec
from sim.asm import build
from sim.bench import random_program
from sim.spec import Params

DECOUPLED = Params(OVERLAP=2)
build = partial(build, params=DECOUPLED)


def test_the_constants_the_figures_below_use():
    """Instruction i is dispatched at 10 + 3 i + 2 at the earliest; the stop takes 1 cycle."""
    assert (spec.OVERLAP_FRONTEND_CYCLES, spec.ENTER_CYCLES, spec.ENTER_DISPATCH_CYCLES,
            spec.STOP_CYCLES) == (10, 3, 2, 1)


def test_a_load_then_its_requantization_is_one_chain():
    """LD of 16 words (6 cycles) from 12, ends at 18; the RQ of them (14 cycles, 4 reads)
    enters at 13 and could go at 15, waits for the LD: 18 + 14 = 32, the stop: 33, the rule's
    cycles. Issue: max(10 + 3 * 2, 12 + 6, 15 + 14) + 1 = 30; engine: the VPU 15 + 14 + 1 = 30;
    read port: 15 + 4 + 1 = 20."""
    code = [build("LD", dst=0, src=0, len=16), build("RQ", dst=16, src=0, len=16, m=1, s=1, relu=0),
            build("HALT")]
    b = bounds(code, DECOUPLED)
    assert (b.dependences, b.issue, b.engine, b.read_port, b.dma_roof) == (33, 30, 30, 20, 4)
    assert b.best == 33 == cycles_of(code, DECOUPLED) and b.limit == "dependences"
    assert b.chain == (("front end", 12), ("hazard", 6), ("last", 14 + 1))
    assert b.path == ((0, "front end"), (1, "hazard"))


def test_a_write_after_read_waits_for_the_reads_only():
    """RQ reads words 0..16 (4 cycles from 12) and writes 16..32; the LD that then overwrites
    0..16 may go at 12 + 4 = 16 (its own earliest is 15): it ends at 22, the RQ at 26: 27,
    the rule's cycles (at OVERLAP = 1 the LD would wait for the RQ's end)."""
    code = [build("RQ", dst=16, src=0, len=16, m=1, s=1, relu=0), build("LD", dst=0, src=0, len=16),
            build("HALT")]
    b = bounds(code, DECOUPLED)
    assert (b.dependences, b.issue, b.engine) == (27, 27, 27)
    assert b.best == 27 == cycles_of(code, DECOUPLED)
    assert b.chain == (("front end", 12), ("last", 14 + 1))       # the RQ ends last, waiting for nothing
    assert bounds(code, Params(OVERLAP=1)).dependences == 10 + 14 + 6 + 1
    overlapped = bounds(code, Params(OVERLAP=1))       # the LD waits for the RQ's end there
    assert overlapped.chain == (("front end", 10), ("hazard", 14), ("last", 6 + 1))
    assert overlapped.path == ((0, "front end"), (1, "hazard"))


def test_a_chain_through_a_read_window():
    """As above (the LD goes at 16, after the RQ's 4 cycles of reads, and ends at 22), then an
    SM of the LD's 16 words on the softmax unit (3 x 4 beats + SM_OVERHEAD 15 = 27 cycles): it
    waits for the LD's end, 22 + 27 = 49, the stop: 50, the rule's cycles. Its chain: the
    front end 12, the RQ's read window 4, the LD's 6 (a hazard), the SM's 27 and the stop."""
    assert spec.SM_OVERHEAD == 15
    code = [build("RQ", dst=16, src=0, len=16, m=1, s=1, relu=0), build("LD", dst=0, src=0, len=16),
            build("SM", dst=64, src=0, len=16), build("HALT")]
    b = bounds(code, DECOUPLED)
    assert b.dependences == 50 == cycles_of(code, DECOUPLED)
    assert b.chain == (("front end", 12), ("hazard", 6), ("read window", 4), ("last", 27 + 1))
    assert b.path == ((0, "front end"), (1, "read window"), (2, "hazard"))


def test_one_engine_runs_its_queue_in_order():
    """Three LDs of 64 words (18 cycles each) to separate places: 12 + 3 * 18 + 1 = 67, the
    rule's cycles; no scratchpad chain, but the DMA's queue is in order."""
    code = [build("LD", dst=64 * k, src=64 * k, len=64) for k in range(3)] + [build("HALT")]
    b = bounds(code, DECOUPLED)
    assert b.engine == b.dependences == 67 == cycles_of(code, DECOUPLED)
    assert b.chain == (("front end", 12), ("engine", 2 * 18), ("last", 18 + 1))
    assert b.path == ((0, "front end"), (1, "engine"), (2, "engine"))
    assert b.issue == 10 + 3 * 2 + 2 + 18 + 1


@pytest.mark.parametrize("seed", range(8))
def test_no_random_program_runs_faster_than_its_bounds(seed):
    code = random_program(40, seed=seed, params=DECOUPLED)
    b = bounds(code, DECOUPLED)
    assert b.best <= cycles_of(code, DECOUPLED)
    kinds = [kind for kind, _ in b.chain]
    assert sum(n for _, n in b.chain) == b.dependences and all(n > 0 for _, n in b.chain)
    assert kinds == [k for k in CHAIN_LINKS if k in kinds] and kinds[0] == "front end"


@pytest.mark.parametrize("seed", range(100, 112))
def test_no_seed_program_runs_faster_than_its_bounds(seed):
    graph, names = random_graph(seed)
    rng = random.Random(seed)
    calibration = [sample_inputs(names, rng) for _ in range(8)]
    program = compile_graph(graph, calibration, params=DECOUPLED)
    cycles = program.run(sample_inputs(names, rng), warn=False).counters.cycles
    assert cycles == cycles_of(program.code, DECOUPLED)
    assert bounds(program.code, DECOUPLED).best <= cycles
