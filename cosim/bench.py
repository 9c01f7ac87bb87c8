"""``make bench-cosim`` (``python -m cosim bench``): how fast co-simulation runs, per simulator.

For each simulator (builds cached, or built first), three figures:

* **launch overhead**: the wall time of a launch that runs one HALT program, less the time the
  test bench spent on that program: starting the simulator and Python in it, cocotb, reading
  the jobs, writing the results;
* **simulated cycles per second** on a long program: a legal random program of LONG_LENGTH
  instructions (:func:`cosim.stress.long_program`), its cycles from ``start`` to ``done``
  over the time the simulator spent on the program (loads and dumps included), over the
  processor time of the simulator in that part, and over the whole launch;
* **warm ``make cosim SEEDS=100-111``**: the wall time of ``python -m cosim seeds 100-111 --sim
  <simulator>`` in a fresh process (compiling the twelve graphs, the reference, the launch).

These are figures, not checks; the targets of issue 12 are printed beside them, and the load
average of the machine with them (the machine is shared: compare ratios measured in one run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence

from sim.asm import build
from sim.spec import DEFAULT

from . import runner
from .api import compare
from .jobs import Job
from .stress import long_program
from .verilog import ROOT, fresh_verilog, verilog_params

LONG_LENGTH = 3_000
LONG_SEED = 1
TARGETS = {"cycles/s": 300_000, "launch": 1.0, "seeds": 3.0}
"""Issue 12: Verilator at least 300,000 simulated cycles/s on a long program, a launch at most
1 s, warm make cosim SEEDS=100-111 at most 3 s per simulator."""


def _launch_overhead(b: runner.Build, params) -> float:
    simulation = runner.run_batch(b, [Job([build("HALT", params=params)], None, "HALT")], params)
    return simulation.seconds - simulation.runs[0].seconds


def _long(b: runner.Build, params, job: Job) -> tuple[runner.Simulation, list[str]]:
    simulation = runner.run_batch(b, [job], params)
    return simulation, compare(job, simulation.runs[0])


def _seed_table(simulator: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cosim", "seeds", "100-111", "--sim", simulator], cwd=ROOT,
                          capture_output=True, text=True)
    return time.perf_counter() - t0, done.returncode


def main(simulators: Sequence[str], length: int = LONG_LENGTH) -> int:
    """Measure and print; returns 0, or 1 when a run differs from the reference."""
    source = fresh_verilog(params=DEFAULT)
    params = verilog_params(source)
    job = long_program(LONG_SEED, length, params)
    print(f"cosim benchmark: {job.name}, {job.expected(params).counters.cycles:,} cycles; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    status = 0
    for name in simulators:
        b = runner.build(name, source)
        print(f"{name:10s} {'build cached' if b.cached else f'built in {b.seconds:.1f} s'}")
        overhead = _launch_overhead(b, params)
        print(f"{name:10s} launch overhead {overhead:.2f} s (target at most {TARGETS['launch']:.0f} s)")
        simulation, differences = _long(b, params, job)
        run = simulation.runs[0]
        target = f" (target at least {TARGETS['cycles/s']:,})" if name == "verilator" else ""
        print(f"{name:10s} long program: {run.waited:,} cycles in {run.sim_seconds:.2f} s, "
              f"{run.waited / run.sim_seconds:,.0f} cycles/s simulated{target}; per processor second "
              f"{run.waited / max(run.sim_cpu_seconds, 1e-9):,.0f}; with the launch "
              f"{run.waited / simulation.seconds:,.0f} ({simulation.seconds:.2f} s)")
        if differences:
            status = 1
            print(f"{name:10s} the long program differs from the reference: {differences[0]}")
        wall, code = _seed_table(name)
        failed = "" if code == 0 else f"; it exited with {code}"
        print(f"{name:10s} warm make cosim SEEDS=100-111: {wall:.2f} s (target at most "
              f"{TARGETS['seeds']:.0f} s){failed}")
        status = status or int(code != 0)
    return status
