"""One batch of jobs on one or both simulators, with a progress display and a verdict per simulator.

Used by ``python -m cosim seeds`` and ``python -m cosim stress``. The simulators run at the
same time (one thread each, each waiting on its own simulator process); on a terminal a
``rich`` progress bar per simulator shows the build and then the programs as they finish
(the test bench reports each one through a progress file).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import runner
from .api import compare
from .jobs import Job
from .runner import CosimError, Simulation

BOTH = "both"
SIM_CHOICES = (*runner.SIMULATORS, BOTH)

COLD_HINT = {"verilator": "about 30 s", "icarus": "a few seconds"}
"""How long a cold build takes on a 2-core machine (shown while it runs)."""


def simulators(choice: str) -> tuple[str, ...]:
    """``icarus``, ``verilator`` or ``both`` -> the simulators to run."""
    if choice == BOTH:
        return runner.SIMULATORS
    if choice not in runner.SIMULATORS:
        raise ValueError(f"simulator {choice!r}: expected one of {', '.join(SIM_CHOICES)}")
    return (choice,)


@dataclass
class Outcome:
    """One simulator's part of a batch.

    Attributes:
        simulator: its name.
        simulation: the launch (None when it could not run).
        error: why it could not run (a :class:`~cosim.runner.CosimError` message).
        differences: per job, the lines of :func:`cosim.api.compare` (empty: bit-exact).
    """

    simulator: str
    simulation: Simulation | None = None
    error: str = ""
    differences: list[list[str]] = field(default_factory=list)

    @property
    def failed(self) -> list[int]:
        """Indices of the jobs that differ."""
        return [k for k, d in enumerate(self.differences) if d]

    @property
    def ok(self) -> bool:
        return not self.error and not self.failed

    @property
    def cycles(self) -> int:
        return sum(r.counters.cycles for r in self.simulation.runs) if self.simulation else 0


def run_batch(jobs: Sequence[Job], choice: str, *, verilog: Path | None = None, waves: bool = False,
              build_root: Path | None = None, keep: bool = False,
              console: Console | None = None) -> list[Outcome]:
    """Run the jobs on the chosen simulators (at the same time) and compare every run.

    Args:
        jobs: the jobs (named).
        choice: ``icarus``, ``verilator`` or ``both``.
        verilog, waves, build_root, keep: as :func:`cosim.api.simulate`.
        console: where progress and notes go (default: stderr).

    Returns:
        One :class:`Outcome` per simulator, in :data:`cosim.runner.SIMULATORS` order.
    """
    console = console or Console(stderr=True)
    names = simulators(choice)
    outcomes = {name: Outcome(name) for name in names}
    try:
        source = runner.fresh_verilog(verilog, say=lambda text: console.print(text, highlight=False))
    except CosimError as e:
        for o in outcomes.values():
            o.error = str(e)
        return list(outcomes.values())
    params = runner.verilog_params(source)
    live = console.is_terminal
    progress = Progress(TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, disable=not live, transient=True)
    tasks = {name: progress.add_task(f"{name}: checking the build", total=len(jobs)) for name in names}

    def work(name: str) -> None:
        outcome = outcomes[name]
        try:
            started = time.perf_counter()
            built = runner.build(name, source, waves=waves, root=build_root, starting=lambda: progress.update(
                tasks[name], description=f"{name}: building ({COLD_HINT[name]})"))
            if not built.cached and not live:
                console.print(f"{name}: built in {time.perf_counter() - started:.1f} s ({built.directory})",
                              highlight=False)
            progress.update(tasks[name], description=f"{name}: running")
            outcome.simulation = runner.run_batch(
                built, jobs, params, keep=keep,
                progress=lambda n: progress.update(tasks[name], completed=n))
            progress.update(tasks[name], description=f"{name}: comparing")
            outcome.differences = [compare(job, run) for job, run in zip(jobs, outcome.simulation.runs,
                                                                         strict=True)]
            progress.update(tasks[name], description=f"{name}: done")
        except CosimError as e:
            outcome.error = str(e)

    with progress:
        threads = [threading.Thread(target=work, args=(name,), name=f"cosim-{name}") for name in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return [outcomes[name] for name in names]


def verdict(outcome: Outcome, jobs: Sequence[Job], what: str, *, listed: int = 10,
            lines_each: int = 4) -> list[str]:
    """The PASS or FAIL lines of one simulator.

    Args:
        outcome: the simulator's part.
        jobs: the jobs (for their names).
        what: what matched, in parentheses after "match the reference".
        listed: failing programs listed in full.
        lines_each: difference lines shown per failing program.
    """
    label = f"{outcome.simulator:<10} "
    if outcome.error:
        return [f"{label}ERROR: {outcome.error}"]
    n = len(jobs)
    failed = outcome.failed
    if not failed:
        programs = "1 program matches" if n == 1 else f"{n} programs match"
        return [f"{label}PASS: {programs} the reference ({what}), {outcome.cycles} cycles in total"]
    differ = "differs" if len(failed) == 1 else "differ"
    out = [f"{label}FAIL: {len(failed)} of {n} program{'s' if n > 1 else ''} {differ} from the reference"]
    for k in failed[:listed]:
        first, *rest = outcome.differences[k][:lines_each]
        out.append(f"    {jobs[k].name}: {first}")
        out += [f"    {' ' * len(jobs[k].name)}  {line}" for line in rest]
        more = len(outcome.differences[k]) - lines_each
        if more > 0:
            out.append(f"    {' ' * len(jobs[k].name)}  ... {more} more")
    if len(failed) > listed:
        out.append(f"    ... and {len(failed) - listed} more programs")
    return out


def timing(outcomes: Sequence[Outcome]) -> list[str]:
    """One line per simulator: the build (cached or not), the launch's wall time, and simulated
    cycles per second while the core runs (from start to done) and over the whole launch."""
    out = []
    for o in outcomes:
        if o.simulation is None:
            continue
        s = o.simulation
        build = "cached" if s.build.cached else f"built in {s.build.seconds:.1f} s"
        simulating = sum(r.sim_seconds for r in s.runs)
        core = sum(r.waited for r in s.runs) / simulating if simulating else 0.0
        overall = o.cycles / s.seconds if s.seconds else 0.0
        out.append(f"{o.simulator:<10} build {build}; run {s.seconds:.1f} s for {len(s.runs)} programs: "
                   f"{core:,.0f} cycles/s simulated, {overall:,.0f} cycles/s with start-up, loads, read-back")
    return out


def waves_lines(outcomes: Sequence[Outcome]) -> list[str]:
    return [f"{o.simulator:<10} waveform: {o.simulation.waves}" for o in outcomes
            if o.simulation is not None and o.simulation.waves is not None]


def emit(lines: Sequence[str]) -> None:
    for line in lines:
        print(line)
    sys.stdout.flush()
