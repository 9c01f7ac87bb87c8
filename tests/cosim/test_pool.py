"""cosim/pool.py: chunks made, run and compared in worker processes, on a stand-in for the
simulators (the workers are forked, so they run the stand-in too): the results add up per
simulator, each worker holds one chunk at a time, progress is shown, errors stop what they
concern, a resumed run does not repeat finished chunks."""

from __future__ import annotations

import io
import os
import time
from functools import partial

import numpy as np
import pytest
from rich.console import Console

from cosim import board, pool, runner
from cosim.errors import BuildError
from cosim.jobs import Job, RtlRun
from sim.asm import build
from sim.machine import Counters
from sim.spec import DEFAULT

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

PROGRAM = [build("LD", dst=0, src=0, len=4), build("ST", src=0, dst=100, len=4), build("HALT")]


def _exact(job: Job, simulator: str) -> RtlRun:
    want = job.expected(DEFAULT)
    return RtlRun(name=job.name, simulator=simulator, params=DEFAULT, finished=True,
                  limit=job.cycle_limit(DEFAULT),
                  waited=want.counters.cycles, ext=want.ext.copy(), spad=want.spad.copy(),
                  counters=Counters(*want.counters.as_tuple()), error=int(want.error_code != 0),
                  error_code=int(want.error_code), error_pc=want.error_pc, timing_fault=0,
                  ext_x=np.zeros(DEFAULT.EXT_WORDS, bool), spad_x=np.zeros(DEFAULT.SPAD_WORDS, bool))


def _run_batch(b, jobs, params, *, keep=False, progress=None):
    """A launch that runs its jobs as the reference does, but for one wrong word in '... bad'."""
    time.sleep(0.01)
    runs = [_exact(job, b.simulator) for job in jobs]
    for job, run in zip(jobs, runs, strict=True):
        if job.name.endswith("bad"):
            run.ext[100] ^= 1
    if progress is not None:
        progress(len(jobs))
    return runner.Simulation(runs, b, 0.01)


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    monkeypatch.setattr(pool, "fresh_verilog", lambda verilog=None, say=print, **_: tmp_path / "ga2_simtop.v")
    monkeypatch.setattr(pool, "verilog_params", lambda verilog: DEFAULT)
    monkeypatch.setattr(runner, "build", lambda name, source, **kw: runner.Build(name, tmp_path, "d", False,
                                                                                 True, 0.0))
    monkeypatch.setattr(runner, "run_batch", _run_batch)


def make_ten(first: int, params) -> pool.Made:
    """Jobs first .. first+9; every fiftieth (from 7) is 'bad'. The info: who made them."""
    jobs = [Job(PROGRAM, [k, 1, 2, 3], f"seed {k}" + (" bad" if k % 50 == 7 else ""))
            for k in range(first, first + 10)]
    return pool.Made(jobs, {"pid": os.getpid(), "jobs": len(jobs)})


def make_failing(first: int, params) -> pool.Made:
    raise RuntimeError(f"seed {first} does not compile")


def _recipes(n: int = 30, make=make_ten) -> list[pool.Recipe]:
    return [pool.Recipe(make, 10 * k, 10) for k in range(n)]


def _console() -> Console:
    return Console(file=io.StringIO(), width=80)


def test_chunks_run_in_workers_and_add_up(stand_in):
    seen = []
    outcomes = pool.run_stream(_recipes(), "both", console=_console(), jobs=2, engine="local",
                               on_result=seen.append)
    for o in outcomes:
        assert (o.count, o.failed, o.launches, o.error) == (300, 6, 30, "")
        assert [f.index for f in o.failures] == [7, 57, 107, 157, 207, 257]
        assert o.failures[0].name == "seed 7 bad" and o.failures[0].lines[0].startswith("ext: 1 word differs")
    assert sorted((r.simulator, r.number) for r in seen) == sorted(
        (s, k) for s in ("icarus", "verilator") for k in range(30))
    assert {r.info["jobs"] for r in seen} == {10}                     # one chunk per launch
    assert os.getpid() not in {r.info["pid"] for r in seen}           # made in the workers
    assert all(r.first == 10 * r.number for r in seen)


def test_plain_progress_lines_when_not_a_terminal(stand_in, monkeypatch):
    monkeypatch.setattr(board, "PLAIN_EVERY", 0.01)
    out = io.StringIO()
    pool.run_stream(_recipes(4), "icarus", console=Console(file=out, width=80), jobs=1,
                    engine="local")
    where, *lines = out.getvalue().splitlines()
    assert where == "running on this machine, a local pool of 1 worker process"
    assert lines, "no progress line"
    assert all(line.startswith("[0:00] icarus ") and " of 40 programs" in line for line in lines), lines


def test_a_failure_while_making_stops_the_run(stand_in):
    # both chunks fail to make: whichever worker fails first stops the run
    with pytest.raises(RuntimeError, match=r"seed (0|10) does not compile"):
        pool.run_stream(_recipes(2, make_failing), "both", console=_console(), jobs=2, engine="local")


def test_a_failed_build_stops_that_simulator_only(stand_in, monkeypatch, tmp_path):
    def build_(name, source, **kw):
        if name == "verilator":
            raise BuildError("verilator: building x failed; the log: y")
        return runner.Build(name, tmp_path, "d", False, True, 0.0)

    monkeypatch.setattr(runner, "build", build_)
    icarus, verilator = pool.run_stream(_recipes(3), "both", console=_console(), jobs=2, engine="local")
    assert (icarus.count, icarus.error) == (30, "")
    assert (verilator.count, verilator.error) == (0, "verilator: building x failed; the log: y")


def test_a_resumed_run_counts_the_finished_chunks_without_running_them(stand_in):
    first = []
    pool.run_stream(_recipes(3), "icarus", console=_console(), jobs=1, engine="local", on_result=first.append)
    kept = [r for r in first if r.number != 1]
    again = []
    (o,) = pool.run_stream(_recipes(3), "icarus", console=_console(), jobs=1, engine="local", done=kept,
                           on_result=again.append)
    assert [r.number for r in again] == [1]
    assert (o.count, o.failed, o.launches) == (30, 1, 3)

