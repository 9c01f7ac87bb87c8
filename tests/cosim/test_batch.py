"""cosim/batch.py: choosing simulators, the PASS/FAIL lines, and streaming a run a chunk at a
time (on a stand-in for the simulators: memory stays flat, progress is shown)."""

from __future__ import annotations

import io
import time
import weakref
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from cosim import batch, runner
from cosim.batch import Failure, Outcome, simulators, verdict
from cosim.jobs import Job, RtlRun
from sim.asm import build
from sim.machine import Counters
from sim.spec import DEFAULT


def test_simulators():
    assert simulators("both") == ("icarus", "verilator")
    assert simulators("icarus") == ("icarus",)
    with pytest.raises(ValueError, match="simulator 'vcs': expected one of icarus, verilator, both"):
        simulators("vcs")


def test_fail_lines_name_the_programs_and_their_first_differences():
    o = Outcome("icarus", count=3, failed=2, failures=[
        Failure(1, "seed 4", ["ext: 2 words differ; first ...", "counter mxu: RTL 5, reference 4 (+1)"]),
        Failure(2, "seed 5", ["spad: 1 word differs; first ..."])])
    assert verdict(o, "memory") == [
        "icarus     FAIL: 2 of 3 programs differ from the reference",
        "    seed 4: ext: 2 words differ; first ...",
        "            counter mxu: RTL 5, reference 4 (+1)",
        "    seed 5: spad: 1 word differs; first ...",
    ]
    o.failed = 13
    assert verdict(o, "memory")[-1] == "    ... and 11 more programs"
    o.failed = 3
    assert verdict(o, "memory")[-1] == "    ... and 1 more program"


def test_pass_line_and_singular():
    o = Outcome("icarus", count=1)
    assert verdict(o, "memory") == [
        "icarus     PASS: 1 program matches the reference (memory), 0 cycles in total"]
    o.count, o.cycles = 2_000, 1_234_567
    assert verdict(o, "memory") == ["icarus     PASS: 2,000 programs match the reference (memory), "
                                    "1,234,567 cycles in total"]
    o.count, o.failed, o.failures = 1, 1, [Failure(0, "seed 3", ["spad: ..."])]
    assert verdict(o, "memory")[0] == "icarus     FAIL: 1 of 1 program differs from the reference"


def test_error_line():
    assert verdict(Outcome("verilator", error="verilator: building x failed"), "memory") == [
        "verilator  ERROR: verilator: building x failed"]


def test_timing_says_built_or_cached_once():
    b = runner.Build("icarus", Path("x"), "d", False, False, 0.3)
    o = Outcome("icarus", build=b, count=1, cycles=100, waited=100, seconds=2.0, sim_seconds=0.5, launches=1)
    line = batch.timing([o])[0]
    assert line.startswith("icarus     built in 0.3 s; run 2.0 s for 1 program: 200 cycles/s simulated")
    b.cached, o.launches, o.count = True, 3, 250
    line = batch.timing([o])[0]
    assert line.startswith("icarus     build cached; run 2.0 s for 250 programs in 3 launches: ")


# --------------------------------------------------------------------------- streaming, simulators stood in


def _exact(job: Job, simulator: str) -> RtlRun:
    want = job.expected()
    return RtlRun(name=job.name, simulator=simulator, params=DEFAULT, finished=True, limit=job.cycle_limit(),
                  waited=want.counters.cycles, ext=want.ext.copy(), spad=want.spad.copy(),
                  counters=Counters(*want.counters.as_tuple()), error=int(want.error_code != 0),
                  error_code=int(want.error_code), error_pc=want.error_pc, timing_fault=0,
                  ext_x=np.zeros(DEFAULT.EXT_WORDS, bool), spad_x=np.zeros(DEFAULT.SPAD_WORDS, bool))


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    """runner's Verilog, builds and launches replaced: a launch 'runs' its jobs exactly as the
    reference does, except that a job named '... bad' gets one wrong external-memory word."""
    launches = []

    def run_batch(b, jobs, params, *, keep=False, progress=None):
        launches.append(len(jobs))
        time.sleep(0.02)
        runs = [_exact(job, b.simulator) for job in jobs]
        for job, run in zip(jobs, runs, strict=True):
            if job.name.endswith("bad"):
                run.ext[100] ^= 1
        if progress is not None:
            progress(len(jobs))
        return runner.Simulation(runs, b, 0.01)

    monkeypatch.setattr(runner, "fresh_verilog", lambda verilog=None, say=print: tmp_path / "ga2_simtop.v")
    monkeypatch.setattr(runner, "verilog_params", lambda verilog: DEFAULT)
    monkeypatch.setattr(runner, "build", lambda name, source, **kw: runner.Build(name, tmp_path, "d", False,
                                                                                 True, 0.0))
    monkeypatch.setattr(runner, "run_batch", run_batch)
    return launches


PROGRAM = [build("LD", dst=0, src=0, len=4), build("ST", src=0, dst=100, len=4), build("HALT")]


def test_jobs_are_made_run_and_dropped_a_chunk_at_a_time(stand_in):
    made: list[weakref.ref] = []
    most = 0
    seen = []

    def make(params):
        nonlocal most
        for k in range(300):
            most = max(most, sum(ref() is not None for ref in made))
            job = Job(PROGRAM, [k, 1, 2, 3], f"seed {k}" + (" bad" if k % 50 == 7 else ""))
            made.append(weakref.ref(job))
            yield job

    console = Console(file=io.StringIO(), width=80)
    outcomes = batch.run_stream(make, 300, "both", console=console, chunk=10,
                                seen=lambda sim, k, run, d: seen.append((sim, k, bool(d))))
    assert stand_in == [10] * 60                  # 30 launches of 10 per simulator
    assert most <= 10 * 7, most                   # never more than a few chunks alive, not all 300
    for o in outcomes:
        assert (o.count, o.failed, o.launches, o.error) == (300, 6, 30, "")
        assert [f.index for f in o.failures] == [7, 57, 107, 157, 207, 257]
        assert o.failures[0].name == "seed 7 bad" and o.failures[0].lines[0].startswith("ext: 1 word differs")
    assert sorted(k for sim, k, bad in seen if sim == "icarus") == list(range(300))


def test_plain_progress_lines_when_not_a_terminal(stand_in, monkeypatch):
    monkeypatch.setattr(batch, "PLAIN_EVERY", 0.01)
    out = io.StringIO()

    def make(params):
        for k in range(40):
            yield Job(PROGRAM, [k], f"seed {k}")

    batch.run_stream(make, 40, "icarus", making="compiling", console=Console(file=out, width=80), chunk=10)
    lines = out.getvalue().splitlines()
    assert lines, "no progress line"
    assert all(line.startswith("[0:00] compiling ") and "; icarus " in line for line in lines), lines


def test_a_failure_while_making_stops_the_run(stand_in):
    def make(params):
        yield Job(PROGRAM, [], "fine")
        raise RuntimeError("seed 2 does not compile")

    with pytest.raises(RuntimeError, match="seed 2 does not compile"):
        batch.run_stream(make, 2, "both", console=Console(file=io.StringIO()), chunk=1)


def test_notes_are_not_wrapped_on_a_pipe():
    out = io.StringIO()
    board = batch._Board(Console(file=out, width=80), 1, "compiling", ("icarus",), "seed")
    text = (
        "exporting the Verilog (build/ga2_simtop.v older than hw/top.py): python -m flows.export --out build")
    board.note(text)
    assert out.getvalue() == text + "\n"
