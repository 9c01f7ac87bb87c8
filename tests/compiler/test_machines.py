"""Capra on machines of other sizes (sim.machines): T x T tiles, the spec's latencies on the
machine's LANES, the machine's memory sizes; the values a program computes do not depend on
the machine (each output is one MM's int32 sum, whatever the tile), so every machine's program
leaves the same outputs as the default machine's."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, compile_graph
from compiler.workloads.seedtable import attention_step_network, compile_seed
from sim import spec
from sim.machines import PRESETS
from sim.spec import DEFAULT, Params

from .conftest import single_matmul

OTHERS = ("t2", "t8", "t16")


@pytest.mark.parametrize("seed", [100, 103, 105, 110])
def test_every_machine_computes_the_same_outputs(seed):
    default = compile_seed(seed, params=DEFAULT)
    for name in OTHERS:
        run = compile_seed(seed, PRESETS[name])
        assert run.program.machine == PRESETS[name]
        for output, value in default.outcome.outputs.items():
            assert np.array_equal(run.outcome.outputs[output].ints, value.ints), (name, output)
        assert run.program.requantizers == default.program.requantizers, name


def test_tiles_are_t_by_t():
    g = single_matmul(10, 12, 9)
    calibration = [{"x": np.linspace(-1, 1, 120).reshape(10, 12)}]
    for name, tiles in (("t2", 5 * 5), ("t4", 3 * 3), ("t8", 2 * 2), ("t16", 1)):
        code = compile_graph(g, calibration, params=PRESETS[name]).code
        mms = [ins for ins in code if ins.op == "MM"]
        t = PRESETS[name].T
        assert len(mms) == tiles, name
        assert max(ins.M for ins in mms) == min(t, 10) and max(ins.N for ins in mms) == min(t, 9), name


def test_cycles_are_the_spec_latencies_of_the_machine():
    graph, calibration, test = attention_step_network()
    for name in ("t4", "t8"):
        params = PRESETS[name]
        program = compile_graph(graph, calibration, params=params)
        cycles = sum(spec.latency(ins.spec, ins.fields, params) for ins in program.code[:-1])
        assert program.run(test).counters.cycles == spec.FRONTEND_CYCLES + cycles + spec.STOP_CYCLES


def test_memory_sizes_come_from_the_machine():
    g = single_matmul(16, 64, 16)            # 1024 + 1024 + 256 + 256 scratchpad words
    calibration = [{"x": np.ones((16, 64))}]
    compile_graph(g, calibration, params=Params(T=8, LANES=8))
    with pytest.raises(CompileError, match="scratchpad is full"):
        compile_graph(g, calibration, params=Params(T=8, LANES=8, SPAD_WORDS=2048), stream=False)
    with pytest.raises(CompileError, match="1024 words the machine has"):
        compile_graph(g, calibration, params=Params(T=8, LANES=8, EXT_WORDS=1024), stream=False)
