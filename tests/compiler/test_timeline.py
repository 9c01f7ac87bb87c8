"""compiler.timeline: each instruction's span on the serial machine, checked against the
reference machine's counters and the spec's latency formulas worked by hand."""

import itertools
import math
from functools import partial

import pytest

from compiler import compile_graph
from compiler.timeline import serial_timeline, unit_totals
from compiler.workloads.seedtable import TABLE_SEEDS, attention_step_network, compile_seed
from sim import spec
from sim.asm import build
from sim.machine import Machine
from sim.spec import DEFAULT

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""


@pytest.fixture(scope="module")
def example_a():
    graph, calibration, test = attention_step_network()
    program = compile_graph(graph, calibration)
    return program, test


def test_spans_follow_each_other_from_the_front_end(example_a):
    program, _ = example_a
    spans = serial_timeline(program.code, params=DEFAULT)
    assert spans[0].start == spec.FRONTEND_CYCLES
    assert all(a.end == b.start for a, b in itertools.pairwise(spans))
    assert [s.pc for s in spans] == list(range(len(program.code)))
    assert spans[-1].op == "HALT" and spans[-1].unit is None


def test_example_a_by_hand(example_a):
    program, _ = example_a
    spans = serial_timeline(program.code, params=DEFAULT)
    # pc 0: LD of 40 words at 4 words a cycle; pc 3: MM M=1 K=8 N=4 tb=1
    assert spans[0].cycles == math.ceil(40 / 4) + spec.LD_OVERHEAD
    assert spans[3].cycles == 8 + 1 + (4 - 1) + spec.MM_OVERHEAD
    assert spans[-1].end == 164  # README's bench table: example A takes 164 cycles


def test_the_spans_sum_to_the_machines_counters(example_a):
    program, test = example_a
    counters = Machine(DEFAULT).run(program.code, program.ext_image(test)).counters
    totals = unit_totals(serial_timeline(program.code, params=DEFAULT))
    assert tuple(totals[name] for name in spec.COUNTERS) == counters.as_tuple()


@pytest.mark.parametrize("seed", TABLE_SEEDS)
def test_the_spans_sum_to_the_counters_on_the_seeds(seed):
    run = compile_seed(seed, params=DEFAULT)
    totals = unit_totals(serial_timeline(run.program.code, params=DEFAULT))
    assert tuple(totals[name] for name in spec.COUNTERS) == run.outcome.counters.as_tuple()


def test_an_illegal_instruction_is_named_by_its_pc():
    code = [
        build("LD", dst=0, src=0, len=4),
        build("LD", dst=4095, src=0, len=4, strict=False),
        build("HALT"),
    ]
    with pytest.raises(ValueError, match=r"instruction 1 \(LD\) is illegal"):
        serial_timeline(code, params=DEFAULT)


def test_a_program_without_halt_is_refused():
    with pytest.raises(ValueError, match="no HALT"):
        serial_timeline([build("LD", dst=0, src=0, len=4)], params=DEFAULT)


def test_the_issue_rules_timeline_is_the_serial_one_on_the_serial_machine(example_a):
    from compiler.timeline import timeline

    program, _ = example_a
    assert timeline(program.code, params=DEFAULT) == serial_timeline(program.code, params=DEFAULT)


@pytest.mark.parametrize("seed", TABLE_SEEDS[:3])
def test_the_overlapped_timeline_sums_to_the_counters(seed):
    from compiler.timeline import timeline

    params = spec.Params(OVERLAP=1)
    run = compile_seed(seed, params)
    spans = timeline(run.program.code, params)
    counters = run.outcome.counters
    totals = unit_totals(spans)
    assert tuple(totals[name] for name in spec.COUNTERS) == counters.as_tuple()
    assert (sum(s.hazard for s in spans), sum(s.port for s in spans)) == (counters.hazard, counters.port)
    # engines side by side: the busy counters add up to more than the run
    assert sum(totals[e] for e in spec.ENGINES) + spec.OVERLAP_FRONTEND_CYCLES > counters.cycles
