"""compiler/testing/residual.py: relu(x + lin2(relu(lin1(x)))) from PyTorch, its ReLU fused into the
VADD's relu field; the machine against the integer interpreter, PyTorch and the RTL."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.frontend import run_torch
from compiler.interpret import interpret
from compiler.testing.residual import compile_residual
from cosim.api import compare, run_programs
from cosim.jobs import Job
from sim.machine import predict_counters
from sim.spec import BY_NAME, DEFAULT, latency
from tests.cosim.conftest import simulator  # noqa: F401  (the fixture: each simulator in turn)

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def fused():
    return compile_residual(params=DEFAULT)


@pytest.fixture(scope="module")
def carried():
    return compile_residual(carry=True, params=DEFAULT)


def test_the_relu_after_the_sum_is_the_vadds_flag(fused):
    ops = [ins.op for ins in fused.program.code]
    assert ops.count("VADD") == 1 and ops.count("MM") == 4     # two 8 x 8 weights: 2 tiles each
    (vadd,) = [ins for ins in fused.program.code if ins.op == "VADD"]
    assert vadd.relu == 1
    assert [ins.relu for ins in fused.program.code if ins.op == "RQ"].count(1) == 1   # relu(lin1(x))


def test_machine_equals_interpreter_and_follows_pytorch(fused):
    outcome = fused.program.run(fused.feed)
    (name,) = fused.lowered.outputs
    out_node = fused.program.ext[name].node
    ints = outcome.outputs[name].ints
    assert np.array_equal(ints, interpret(fused.program, fused.feed)[out_node])
    assert ints.min() == 0 and (ints > 0).any()              # the relu applied, not everything clipped
    (got,) = fused.lowered.unpack(outcome)
    (want,) = run_torch(fused.module, fused.x)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.05


def test_the_fused_block_saves_the_carry_layers_instructions(fused, carried):
    """The carried version (an identity Linear before the ReLU) loads its weight and has two more
    MMs and one more RQ; the fused one saves their cycles, as the spec's latencies count them."""
    extra = list(carried.program.code)
    for ins in fused.program.code:
        extra.remove(next(e for e in extra if e.op == ins.op))
    assert sorted(e.op for e in extra) == ["LD", "MM", "MM", "RQ"]
    saved = predict_counters(carried.program.code,
                             params=DEFAULT).cycles - predict_counters(fused.program.code,
                                                                       params=DEFAULT).cycles
    assert saved > 0
    mm = [e for e in extra if e.op == "MM"]
    assert saved >= sum(latency(BY_NAME["MM"], e.fields, params=DEFAULT) for e in mm)


def test_bit_exact_on_the_rtl(fused, simulator):  # noqa: F811 (the imported fixture)
    job = Job.of_program(fused.program, fused.feed, "residual block")
    (run,) = run_programs([job], simulator)
    assert compare(job, run) == []


def test_the_guides_listings_are_what_the_compiler_emits(fused, carried):
    """docs/add-an-instruction.md records both listings and their cycles (--record residual-listings)."""
    from tests.compiler.conftest import load_example

    guide = load_example("add_an_instruction")
    recorded = load_example("_excerpts").blocks_in(guide.GUIDE.read_text())["residual-listings"]
    assert recorded == guide.residual_listings(fused, carried), \
        "stale: run python examples/add_an_instruction.py --record residual-listings"
