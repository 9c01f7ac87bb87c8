"""A run's verdict per simulator: outcomes summed over chunks, the PASS/FAIL lines, timings.

Used by ``python -m cosim seeds``, ``stress`` and ``faults``, whose chunks run on a farm of
workers (:mod:`cosim.pool`, :mod:`cosim.farm`); each finished chunk is added to its simulator's
:class:`Outcome` as counts, cycle sums and the first few differences, so memory stays flat however many jobs
there are.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import waves
from .runner import Build
from .simulators import SIMULATORS
from .text import counted, verb

BOTH = "both"
SIM_CHOICES = (*SIMULATORS, BOTH)

KEPT_FAILURES = 10
"""Differing jobs whose differences an :class:`Outcome` keeps (the rest are counted)."""


def simulators(choice: str) -> tuple[str, ...]:
    """``icarus``, ``verilator`` or ``both`` -> the simulators to run."""
    if choice == BOTH:
        return SIMULATORS
    if choice not in SIMULATORS:
        raise ValueError(f"simulator {choice!r}: expected one of {', '.join(SIM_CHOICES)}")
    return (choice,)


@dataclass
class Failure:
    """A job whose RTL run differs from the reference.

    Attributes:
        index: its position in the run (0 for the first job).
        name: its name.
        lines: the lines of :func:`cosim.api.compare`.
    """

    index: int
    name: str
    lines: list[str]


@dataclass(kw_only=True)
class Tally:
    """What the comparisons of some jobs add up to (a chunk's, or a simulator's whole run).

    Attributes:
        count: jobs run and compared.
        failed: how many of them differ from the reference.
        failures: the first :data:`KEPT_FAILURES` of those (by job), with their differences.
        cycles: the RTL's cycles, summed over the jobs.
        waited: cycles the harness waited for ``done``, summed.
        seconds: wall time of the launches (start-up, files, runs), summed.
        sim_seconds: the part of it the simulator spent on the jobs (loads, runs, dumps).
    """

    count: int = 0
    failed: int = 0
    failures: list[Failure] = field(default_factory=list)
    cycles: int = 0
    waited: int = 0
    seconds: float = 0.0
    sim_seconds: float = 0.0

    def add(self, other: Tally) -> None:
        """Add another tally (the failures kept stay the first ones of the run)."""
        self.count += other.count
        self.failed += other.failed
        self.failures = sorted(self.failures + other.failures, key=lambda f: f.index)[:KEPT_FAILURES]
        self.cycles += other.cycles
        self.waited += other.waited
        self.seconds += other.seconds
        self.sim_seconds += other.sim_seconds


@dataclass
class Outcome(Tally):
    """One simulator's part of a run, summed over its chunks (a :class:`Tally`).

    Attributes:
        simulator: its name.
        error: why it could not run, or stopped (a :class:`~cosim.errors.CosimError` message).
        build: its build (None when it failed).
        launches: simulator launches (one per chunk).
        waves: the waveform file of each launch (with ``--waves``).
        counters: the counters compared, by name (``sim.spec.counters`` of the Verilog's
            machine: five, or seven with OVERLAP = 1); () before the machine is known.
        where: where its chunks ran (:attr:`cosim.farm.Farm.where`), "" when none ran.
    """

    simulator: str
    error: str = ""
    build: Build | None = None
    launches: int = 0
    waves: list[Path] = field(default_factory=list)
    counters: tuple[str, ...] = ()
    where: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not self.failed

    def add_chunk(self, chunk) -> None:
        """Count one finished chunk (a :class:`cosim.pool.ChunkResult`)."""
        self.add(chunk)
        self.launches += 1
        if chunk.waves is not None:
            self.waves = sorted([*self.waves, Path(chunk.waves)])


NUMBER_WORDS = {5: "five", 7: "seven"}


def counters_phrase(outcome: Outcome) -> str:
    """``all five counters``, or ``all seven counters`` where OVERLAP = 1 adds hazard and port."""
    n = len(outcome.counters) or 5
    return f"all {NUMBER_WORDS.get(n, str(n))} counters"


def verdict(outcome: Outcome, what: str, *, listed: int = KEPT_FAILURES, lines_each: int = 6) -> list[str]:
    """The PASS or FAIL lines of one simulator.

    Args:
        outcome: the simulator's part.
        what: what matched, in parentheses after "match the reference"; ``{counters}`` in it
            becomes :func:`counters_phrase`.
        listed: failing programs listed in full (at most :data:`KEPT_FAILURES`).
        lines_each: difference lines shown per failing program.
    """
    label = f"{outcome.simulator:<10} "
    what = what.replace("{counters}", counters_phrase(outcome))
    if outcome.error:
        return [f"{label}ERROR: {outcome.error}"]
    n = outcome.count
    if not outcome.failed:
        return [f"{label}PASS: {counted(n, 'program')} {verb(n, 'matches', 'match')} the reference ({what}), "
                f"{outcome.cycles:,} cycles in total"]
    out = [f"{label}FAIL: {outcome.failed:,} of {counted(n, 'program')} "
           f"{verb(outcome.failed, 'differs', 'differ')} from the reference"]
    for failure in outcome.failures[:listed]:
        first, *rest = failure.lines[:lines_each]
        pad = " " * len(failure.name)
        out.append(f"    {failure.name}: {first}")
        out += [f"    {pad}  {line}" for line in rest]
        more = len(failure.lines) - lines_each
        if more > 0:
            out.append(f"    {pad}  ... {more} more")
    hidden = outcome.failed - min(listed, len(outcome.failures))
    if hidden > 0:
        out.append(f"    ... and {counted(hidden, 'more program', 'more programs')}")
    return out


def timing(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per simulator: the build (cached or not), the launches' wall time, and simulated
    cycles per second while the core runs (from start to done) and over the whole launches."""
    out = []
    for o in outcomes:
        if o.build is None or not o.launches:
            continue
        build = "build cached" if o.build.cached else f"built in {o.build.seconds:.1f} s"
        core = o.waited / o.sim_seconds if o.sim_seconds else 0.0
        overall = o.cycles / o.seconds if o.seconds else 0.0
        launches = f" in {o.launches:,} launches" if o.launches > 1 else ""
        out.append(f"{o.simulator:<10} {build}; run {o.seconds:.1f} s for {counted(o.count, 'program')}"
                   f"{launches}: {core:,.0f} cycles/s simulated, {overall:,.0f} cycles/s with start-up, "
                   "loads, read-back")
    wheres = sorted({o.where for o in outcomes if o.where})
    out += [f"ran on {where}" for where in wheres]
    return out


def waves_lines(outcomes: Sequence[Outcome], shown: int = 3) -> list[str]:
    """Where the waveforms went: one file per launch (the first ``shown``, then how many more),
    each with its GTKWave save file (:mod:`cosim.waves`) and the command that opens it."""
    out = []
    for o in outcomes:
        for path in o.waves[:shown]:
            out.append(f"{o.simulator:<10} waveform: {path}")
            out.append(f"{'':<10} open it: gtkwave {waves.save_file(path)}  (program markers, key signals)")
    if out and shutil.which("gtkwave") is None:
        out.append(f"{'':<10} (gtkwave is not installed here: sudo apt-get install gtkwave, or open the "
                   "waveform itself in Surfer, https://surfer-project.org, without the markers)")
        if len(o.waves) > shown:
            out.append(f"{o.simulator:<10} ... and {counted(len(o.waves) - shown, 'more waveform')} "
                       f"(one per launch) in {o.waves[0].parent.parent}")
    return out


def emit(lines: Sequence[str]) -> None:
    for line in lines:
        print(line)
    sys.stdout.flush()
