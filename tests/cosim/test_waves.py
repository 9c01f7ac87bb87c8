"""cosim/waves.py and the harness's markers: a waveform run (WAVES=1) marks every program and
writes a GTKWave save file beside the dump that names signals the dump holds.

The dump is read back with pywellen (the waveform reader behind the Surfer viewer): every
traced name must be a variable of the dump, ``program_index`` must step to each program's
index at its marker, ``program_name`` must spell its name, and the cycles the test bench logs
must be the ``count_cycles`` cosim's table prints.
"""

from __future__ import annotations

import re
from functools import partial

import pytest

from cosim import harness, runner, verilog, waves
from cosim.api import compare, simulate
from cosim.jobs import Job
from sim.asm import build
from sim.spec import DEFAULT

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

pywellen = pytest.importorskip("pywellen")

REQUANTIZE = [build("LD", dst=4, src=0, len=6), build("RQ", dst=20, src=4, len=6, m=1 << 23, s=23, relu=0),
              build("ST", src=20, dst=50, len=6), build("HALT")]
PRODUCT = [build("LD", dst=0, src=0, len=8),
           build("MM", dst=40, A=0, B=4, M=2, K=4, N=2, tb=1, lda=4, ldb=0, ldc=2), build("HALT")]
NO_HALT = [build("LD", dst=0, src=0, len=4), build("VADD", dst=8, src1=0, src2=0, len=4),
           build("ST", src=8, dst=9, len=4)]
JOBS = [Job(REQUANTIZE, [3, -7, 100, 200, -300, 5], "requantize six"),
        Job(PRODUCT, list(range(1, 9)), "a matrix product, via the port", via_port=True),
        Job(NO_HALT, [1, -2, 64, -64], "no HALT: stops with NO_HALT")]


def _modules() -> dict[str, set[str]]:
    return waves.declarations(verilog.fresh_verilog(params=DEFAULT).read_text())


def test_the_engines_and_the_control_signals_come_from_the_verilog():
    """The engines are the core's units with a start and a done (not the control); the control's
    pc and opcode are found (a rename in hw/control.py fails here, not in a viewer)."""
    modules = _modules()
    assert set(waves.engines(modules)) >= {"dma", "mxu", "requant", "softmax", "vector"}
    assert "control" not in waves.engines(modules)
    found = {t.alias: t for _, traces in waves.groups(modules) for t in traces}
    for alias in ("program", "name", "running", "pc (fetch)", "opcode issued", "count_cycles", "error_code",
                  "mxu busy", "mxu start", "mxu done", "dma busy"):
        assert alias in found, alias
    assert found["name"].fmt == "ascii" and found["program"].fmt == "dec"
    assert [g for g, _ in waves.groups(modules)] == ["programs", "control", "engines", "counters and errors"]


def test_a_name_is_held_as_ascii_words():
    words = harness.name_words("seed 100")
    assert len(words) == harness.NAME_CHARS // 4 == harness.JOB_WORDS - 4
    assert b"".join(w.to_bytes(4, "big") for w in words) == b"seed 100".ljust(harness.NAME_CHARS)
    assert harness.name_words("x" * 40) == harness.name_words("x" * harness.NAME_CHARS)
    assert harness.name_words("é")[0] >> 24 == ord("?")


def _name(value: int) -> str:
    return value.to_bytes(harness.NAME_CHARS, "big").decode("ascii").rstrip()


def test_a_waveform_run_marks_each_program_and_its_save_file_names_signals_of_the_dump(simulator, tmp_path):
    """Icarus (an FST) in make test; Verilator (a VCD, a cold build of minutes) in make test-all."""
    simulation = simulate(JOBS, simulator, waves=True, build_root=tmp_path)
    assert [compare(job, run) for job, run in zip(JOBS, simulation.runs, strict=True)] == [[], [], []]
    dump = simulation.waves
    save = waves.save_file(dump)
    assert save == dump.with_suffix(".gtkw") and save.is_file()
    text = save.read_text()
    assert f'[dumpfile] "{dump.resolve()}"' in text

    wave = pywellen.Waveform(str(dump))
    assert (wave.timescale.factor, str(wave.timescale.unit)) == (1, "ps")
    variables = {v.full_name: v for v in wave.all_vars()}
    names = waves.traced(save)
    assert len(names) >= 30
    assert [n for n in names if n not in variables] == []

    starts = [run.started for run in simulation.runs]
    assert starts == sorted(starts) and starts[0] > 0
    # the named markers A, B, C sit on the programs' starts, in the dump's unit (ps)
    marks = re.search(r"^\*-20\.000000 (\d+) (.*)$", text, re.M)
    assert int(marks[1]) == starts[0] * waves.DUMP_UNITS_PER_NS
    assert [int(t) for t in marks[2].split()[:4]] == [t * waves.DUMP_UNITS_PER_NS for t in starts] + [-1]
    scope = waves.SCOPE[simulator]
    index = variables[f"{scope}.program_index"].signal
    name = variables[f"{scope}.program_name"].signal
    start = variables[f"{scope}.start"].signal
    running = variables[f"{scope}.program_running"].signal
    for k, (job, t) in enumerate(zip(JOBS, starts, strict=True)):
        at = t * waves.DUMP_UNITS_PER_NS
        assert index.value_at(at) == k + 1
        assert _name(name.value_at(at)) == job.name
        assert start.value_at(at) == 1 and running.value_at(at) == 1
        assert start.value_at(at - 1) == 0
    # each program's line in the test bench's log: name, start, and the table's cycles
    log = (dump.parent / "sim.log").read_text()
    for k, (job, run) in enumerate(zip(JOBS, simulation.runs, strict=True)):
        line = re.search(rf"program {k + 1}, {re.escape(job.name)}.*", log)[0]
        assert f"started at {run.started} ns" in line
        assert f", {run.counters.cycles} cycles (count_cycles;" in line
        assert f"[*] {chr(ord('A') + k)}  {k + 1}  {job.name}  {run.started}  {run.counters.cycles}" in text


def test_without_waves_no_engine_probes_in_the_harness():
    """The busy wires read the engines through hierarchical names: only waveform builds have them."""
    description = verilog.describe(verilog.fresh_verilog(params=DEFAULT))
    plain = harness.render(description)
    assert "busy_" not in plain and "program_index" in plain
    probed = harness.render(description, engines=waves.engines(_modules()))
    assert "wire busy_mxu = dut.core.mxu.start || busy_mxu_q;" in probed
    assert runner.PRODUCT["icarus"] == "sim.vvp"
