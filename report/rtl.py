"""Co-simulation for the report: a program's runs on the RTL, PASS or FAIL per simulator.

:func:`run_rtl` runs jobs (a program's code and an external-memory image each) in one launch
per simulator through :mod:`cosim.api` and compares every run with the reference machine
(every memory word, every counter of the machine, the stop): :func:`cosim.api.compare`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from sim.spec import DEFAULT, counters

NUMBER_WORDS = {5: "five", 7: "seven"}
"""How a summary names the counters compared (sim.spec.counters of the jobs' machine)."""

SIMULATORS = ("icarus", "verilator")
SHOWN_CYCLES = 4
"""A summary lists the runs' cycle counts when they take at most this many values, else their range."""


@dataclass
class RtlResult:
    """One simulator's verdict on a set of runs.

    Attributes:
        simulator: ``icarus`` or ``verilator``.
        runs: how many jobs were run.
        differences: job index -> what differs from the reference (only the jobs that differ).
        cycles: the RTL's ``cycles`` counter of each run.
        seconds: wall time of the launch (build included).
        failure: why the simulator could not run (missing, a failed build), else "".
        counters: how many counters were compared.
        failed: how many runs differ (``differences`` keeps the first ones).
    """

    simulator: str
    runs: int
    differences: dict[int, list[str]] = field(default_factory=dict)
    cycles: list[int] = field(default_factory=list)
    seconds: float = 0.0
    failure: str = ""
    counters: int = 5
    failed: int = 0

    @property
    def passed(self) -> bool:
        """Every run bit-exact (and the simulator ran)."""
        return not self.failure and not self.differences and self.runs > 0

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL`` or ``NOT RUN``."""
        return "NOT RUN" if self.failure else "PASS" if self.passed else "FAIL"

    def summary(self) -> str:
        """One line: what ran, how it compared, how long it took (without the simulator's name)."""
        if self.failure:
            return f"could not run: {self.failure}"
        runs = f"{self.runs} run" + ("s" if self.runs != 1 else "")
        if self.differences:
            first = min(self.differences)
            lines = self.differences[first]
            named = f"; {lines[1]}" if len(lines) > 1 and lines[1].startswith(("ext[", "spad[")) else ""
            return (
                f"{max(self.failed, len(self.differences))} of {self.runs} runs differ from the reference; "
                f"the first, run {first}: {lines[0]}{named}"
            )
        distinct = sorted(set(self.cycles))
        cycles = (", ".join(str(c) for c in distinct) + " cycles each" if len(distinct) <= SHOWN_CYCLES
                  else f"{distinct[0]:,} to {distinct[-1]:,} cycles, {sum(self.cycles):,} in all")
        return (
            f"{runs} bit-exact (every memory word, the {NUMBER_WORDS.get(self.counters, self.counters)} "
            f"counters, the stop; {cycles}) in {self.seconds:.1f} s"
        )


def simulators(choice: str) -> tuple[str, ...]:
    """``both``, ``icarus``, ``verilator`` or ``none`` -> the simulators to run.

    Raises:
        ValueError: another word.
    """
    if choice == "both":
        return SIMULATORS
    if choice == "none":
        return ()
    if choice in SIMULATORS:
        return (choice,)
    raise ValueError(f"simulator {choice!r}: give icarus, verilator, both or none")


def given(jobs: list, params) -> object:
    """A chunk of jobs made already (a cosim.pool.Recipe's ``make``)."""
    from cosim.pool import Made

    return Made(list(jobs))


def run_rtl(jobs: Sequence[tuple], which: Sequence[str], *, engine: str = "auto") -> list[RtlResult]:
    """Run the jobs on each simulator of ``which`` and compare them with the reference machine.

    The jobs go in chunks (cosim.pool.CHUNK) to a campaign's farm (cosim.farm: a local pool for a
    few, else Ray on this machine or the cluster at RAY_ADDRESS), every simulator at once.

    Args:
        jobs: ``(code, ext_image, name)`` tuples or :class:`cosim.jobs.Job` objects (see
            :mod:`cosim.api`; ``Job.of_program`` keeps the compiled program, so that a FAIL names
            the tensor behind a differing word).
        which: simulator names.
        engine: ``auto``, ``ray`` or ``local`` (cosim.farm).

    Returns:
        one :class:`RtlResult` per simulator; a simulator that cannot run (missing, a failed
        build) gives a result whose ``failure`` says why, rather than an exception. ``differences``
        holds the first differing runs (cosim.batch.KEPT_FAILURES per chunk), ``failed`` counts all.

    Raises:
        TypeError, ValueError: a bad job (named).
    """
    from cosim.api import machine_of
    from cosim.jobs import as_jobs
    from cosim.pool import CHUNK, Recipe, run_stream
    from cosim.runner import CosimError, fresh_verilog, verilog_params

    if not which:
        return []
    start = time.perf_counter()
    machine = machine_of(list(jobs))
    results = {s: RtlResult(s, len(jobs), counters=len(counters(machine or DEFAULT))) for s in which}
    try:
        source = fresh_verilog(params=machine)
        batch = as_jobs(list(jobs), verilog_params(source))
    except CosimError as failed:
        for result in results.values():
            result.failure = str(failed).splitlines()[0]
        return list(results.values())
    chunks: dict[tuple[str, int], list[int]] = {}
    parts = [batch[k:k + CHUNK] for k in range(0, len(batch), CHUNK)]
    recipes = [Recipe(given, part, len(part)) for part in parts]
    choice = which[0] if len(which) == 1 else "both"
    outcomes = run_stream(recipes, choice, verilog=source, engine=engine,
                          on_result=lambda r: chunks.__setitem__((r.simulator, r.number), r.rtl_cycles))
    for o in outcomes:
        result = results[o.simulator]
        if o.error:
            result.failure = o.error.splitlines()[0]
            continue
        result.seconds = time.perf_counter() - start
        result.failed = o.failed
        result.differences = {f.index: f.lines for f in o.failures}
        result.cycles = [c for number in range(len(recipes)) for c in chunks[(o.simulator, number)]]
    return [results[s] for s in which]
