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
    """

    simulator: str
    runs: int
    differences: dict[int, list[str]] = field(default_factory=dict)
    cycles: list[int] = field(default_factory=list)
    seconds: float = 0.0
    failure: str = ""
    counters: int = 5

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
                f"{len(self.differences)} of {self.runs} runs differ from the reference; "
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


def run_rtl(jobs: Sequence[tuple], which: Sequence[str]) -> list[RtlResult]:
    """Run the jobs on each simulator of ``which`` and compare them with the reference machine.

    Args:
        jobs: ``(code, ext_image, name)`` tuples or :class:`cosim.jobs.Job` objects (see
            :mod:`cosim.api`; ``Job.of_program`` keeps the compiled program, so that a FAIL names
            the tensor behind a differing word).
        which: simulator names.

    Returns:
        one :class:`RtlResult` per simulator; a simulator that cannot run (missing, a failed
        build) gives a result whose ``failure`` says why, rather than an exception.
    """
    from cosim.api import compare, run_programs
    from cosim.runner import CosimError

    results = []
    for simulator in which:
        start = time.perf_counter()
        machine = getattr(jobs[0], "machine", None) if jobs else None
        result = RtlResult(simulator, len(jobs), counters=len(counters(machine or DEFAULT)))
        try:
            runs = run_programs(list(jobs), simulator)
        except CosimError as failed:
            result.failure = str(failed).splitlines()[0]
            results.append(result)
            continue
        result.seconds = time.perf_counter() - start
        for k, (job, run) in enumerate(zip(jobs, runs, strict=True)):
            found = compare(job, run)
            if found:
                result.differences[k] = found
            result.cycles.append(run.counters.cycles)
        results.append(result)
    return results
