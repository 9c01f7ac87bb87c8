"""Jobs on one or both simulators, a chunk at a time, with progress and a verdict per simulator.

Used by ``python -m cosim seeds`` and ``python -m cosim stress``. :func:`run_stream` takes the
jobs lazily (a seed is compiled, a program drawn, only when its chunk is due) and works through
them :data:`CHUNK` at a time: while the simulators run one chunk (at the same time, one thread
each, each waiting on its own simulator process, one launch per chunk), the next chunk is made.
Each chunk's runs are compared with the reference at once and kept only as counts, cycle sums
and the first few differences, so memory stays flat however many jobs there are.

Progress goes to stderr: on a terminal a ``rich`` bar for the making of the jobs (compiling,
drawing) and one per simulator (its build, then its programs); elsewhere (a pipe, a log) a
plain line every :data:`PLAIN_EVERY` seconds, so a long run is never silent.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sim.spec import Params

from . import runner
from .api import compare
from .jobs import Job, RtlRun
from .runner import Build, CosimError
from .text import counted, verb

BOTH = "both"
SIM_CHOICES = (*runner.SIMULATORS, BOTH)

COLD_HINT = {"verilator": "about 30 s", "icarus": "a few seconds"}
"""How long a cold build takes on a 2-core machine (shown while it runs)."""
CHUNK = 100
"""Jobs per simulator launch: the most that are made, run and compared at a time. A launch
costs about a second of start-up; a hundred programs take some 10 s under Icarus."""
KEPT_FAILURES = 10
"""Differing jobs whose differences an :class:`Outcome` keeps (the rest are counted)."""
PLAIN_EVERY = 10.0
"""Seconds between the plain progress lines when stderr is not a terminal."""


def simulators(choice: str) -> tuple[str, ...]:
    """``icarus``, ``verilator`` or ``both`` -> the simulators to run."""
    if choice == BOTH:
        return runner.SIMULATORS
    if choice not in runner.SIMULATORS:
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


@dataclass
class Outcome:
    """One simulator's part of a run, summed over its launches.

    Attributes:
        simulator: its name.
        error: why it could not run, or stopped (a :class:`~cosim.runner.CosimError` message).
        build: its build (None when it failed).
        count: jobs run and compared.
        failed: how many of them differ from the reference.
        failures: the first :data:`KEPT_FAILURES` of those, with their differences.
        cycles: the RTL's cycles, summed over the jobs.
        waited: cycles the test bench waited for ``done``, summed.
        seconds: wall time of the launches (start-up, loads, runs, read-back), summed.
        sim_seconds: the part of it spent simulating from ``start`` to ``done``.
        launches: simulator launches (one per chunk).
        waves: the waveform file of each launch (with ``--waves``).
    """

    simulator: str
    error: str = ""
    build: Build | None = None
    count: int = 0
    failed: int = 0
    failures: list[Failure] = field(default_factory=list)
    cycles: int = 0
    waited: int = 0
    seconds: float = 0.0
    sim_seconds: float = 0.0
    launches: int = 0
    waves: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error and not self.failed

    def add(self, index: int, run: RtlRun, differences: list[str]) -> None:
        """Count one compared run."""
        self.count += 1
        self.cycles += run.counters.cycles
        self.waited += run.waited
        self.sim_seconds += run.sim_seconds
        if differences:
            self.failed += 1
            if len(self.failures) < KEPT_FAILURES:
                self.failures.append(Failure(index, run.name, differences))


Seen = Callable[[str, int, RtlRun, list[str]], None]
"""Called with (simulator, job index, its RTL run, its differences) for every compared run."""


class _Board:
    """The progress display: a ``rich`` bar per task on a terminal, else plain lines."""

    def __init__(self, console: Console, total: int, making: str, names: Sequence[str], noun: str):
        self.console = console
        self.live = console.is_terminal
        self.total = total
        self.noun = noun
        self.progress = Progress(TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, disable=not self.live, transient=True)
        self.state = {making: ["", 0], **{name: ["checking the build", 0] for name in names}}
        self.failed = dict.fromkeys(names, 0)
        self.making = making
        self.tasks = {making: self.progress.add_task(making, total=total),
                      **{name: self.progress.add_task(f"{name}: checking the build", total=total)
                         for name in names}}
        self.started = time.perf_counter()
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def note(self, text: str) -> None:
        """A line on stderr, whole (no wrapping at 80 columns when it is not a terminal)."""
        if self.live:
            self.console.print(text, highlight=False)
        else:
            with self.lock:
                print(text, file=self.console.file, flush=True)

    def update(self, key: str, what: str | None = None, done: int | None = None) -> None:
        with self.lock:
            if what is not None:
                self.state[key][0] = what
            if done is not None:
                self.state[key][1] = done
        description = None if what is None else what if key == self.making else f"{key}: {what}"
        self.progress.update(self.tasks[key], description=description, completed=done)

    def line(self) -> str:
        """The plain progress line: elapsed time, then each task's state and count."""
        seconds = int(time.perf_counter() - self.started)
        parts = []
        with self.lock:
            for key, (what, done) in self.state.items():
                if key == self.making:
                    parts.append(f"{self.making} {done:,} of {self.total:,}")
                else:
                    differ = f" ({self.failed[key]:,} {verb(self.failed[key], 'differs', 'differ')})" \
                        if self.failed[key] else ""
                    parts.append(f"{key} {what} {done:,} of {self.total:,}{differ}")
        return f"[{seconds // 60}:{seconds % 60:02d}] " + "; ".join(parts)

    def _tick(self) -> None:
        while not self.stop.wait(PLAIN_EVERY):
            self.note(self.line())

    def __enter__(self) -> _Board:
        self.progress.__enter__()
        if not self.live:
            threading.Thread(target=self._tick, name="cosim-progress", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.progress.__exit__(*exc)


def _hand(inbox: queue.Queue, item, finished: threading.Event) -> None:
    """Put item in a simulator's inbox, waiting while it is full; dropped if the simulator
    has stopped (an error)."""
    while not finished.is_set():
        try:
            inbox.put(item, timeout=0.2)
            return
        except queue.Full:
            continue


def run_stream(make: Callable[[Params], Iterable[Job]], total: int, choice: str, *,
               making: str = "making the jobs", noun: str = "program", verilog: Path | None = None,
               waves: bool = False, build_root: Path | None = None, keep: bool = False,
               console: Console | None = None, chunk: int = CHUNK, seen: Seen | None = None) -> list[Outcome]:
    """Make the jobs, run them on the chosen simulators and compare every run, a chunk at a time.

    Args:
        make: given the machine's parameters (those of the Verilog), yields the jobs, made as
            they are asked for.
        total: how many jobs it yields (for the progress display).
        choice: ``icarus``, ``verilator`` or ``both``.
        making: what making a job is called on the progress display ("compiling").
        noun: what a job is called there.
        verilog, waves, build_root, keep: as :func:`cosim.api.simulate`.
        console: where progress and notes go (default: stderr).
        chunk: jobs per launch (:data:`CHUNK`).
        seen: called for every compared run (:data:`Seen`), from the simulator's thread.

    Returns:
        One :class:`Outcome` per simulator, in :data:`cosim.runner.SIMULATORS` order.

    Raises:
        whatever ``make`` raises (the simulators are then stopped after their current launch).
    """
    console = console or Console(stderr=True)
    names = simulators(choice)
    outcomes = {name: Outcome(name) for name in names}
    board = _Board(console, total, making, names, noun)
    try:
        source = runner.fresh_verilog(verilog, say=board.note)
    except CosimError as e:
        for o in outcomes.values():
            o.error = str(e)
        return list(outcomes.values())
    params = runner.verilog_params(source)
    inboxes = {name: queue.Queue(maxsize=1) for name in names}
    finished = {name: threading.Event() for name in names}
    abandon = threading.Event()

    def work(name: str) -> None:
        outcome, inbox = outcomes[name], inboxes[name]
        done = 0
        try:
            started = time.perf_counter()
            built = runner.build(name, source, waves=waves, root=build_root,
                                 starting=lambda: board.update(name, f"building ({COLD_HINT[name]})"))
            outcome.build = built
            if not built.cached and not board.live:
                board.note(f"{name}: built in {time.perf_counter() - started:.1f} s ({built.directory})")
            board.update(name, "running")
            while not abandon.is_set():
                try:
                    item = inbox.get(timeout=0.2)
                except queue.Empty:
                    continue
                if item is None:
                    break
                first, jobs = item
                simulation = runner.run_batch(
                    built, jobs, params, keep=keep,
                    progress=lambda n, before=done: board.update(name, done=before + n))
                for k, (job, run) in enumerate(zip(jobs, simulation.runs, strict=True)):
                    differences = compare(job, run)
                    outcome.add(first + k, run, differences)
                    if seen is not None:
                        seen(name, first + k, run, differences)
                outcome.seconds += simulation.seconds
                outcome.launches += 1
                if simulation.waves is not None:
                    outcome.waves.append(simulation.waves)
                done += len(jobs)
                board.failed[name] = outcome.failed
                board.update(name, done=done)
            board.update(name, "done")
        except CosimError as e:
            outcome.error = str(e)
            board.update(name, "stopped (error)")
        except Exception as e:  # a bug here must not pass for a PASS of the jobs run so far
            outcome.error = f"cosim failed: {type(e).__name__}: {e}\n{traceback.format_exc()}"
            board.update(name, "stopped (error)")
        finally:
            finished[name].set()

    threads = [threading.Thread(target=work, args=(name,), name=f"cosim-{name}", daemon=True)
               for name in names]
    with board:
        for t in threads:
            t.start()
        try:
            pending: list[Job] = []
            first = made = 0
            board.update(making, making)
            for job in make(params):
                job.expected(params)      # the reference's run, here rather than in each simulator's thread
                pending.append(job)
                made += 1
                board.update(making, done=made)
                if len(pending) == chunk:
                    for name in names:
                        _hand(inboxes[name], (first, pending), finished[name])
                    first, pending = first + len(pending), []
            if pending:
                for name in names:
                    _hand(inboxes[name], (first, pending), finished[name])
            del pending
            board.update(making, f"{making}: done")
            for name in names:
                _hand(inboxes[name], None, finished[name])
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except BaseException:
            abandon.set()
            raise
    for o in outcomes.values():
        if not o.error and o.count != made:
            o.error = f"ran {o.count:,} of the {counted(made, noun)}"
    return [outcomes[name] for name in names]


def verdict(outcome: Outcome, what: str, *, listed: int = KEPT_FAILURES, lines_each: int = 4) -> list[str]:
    """The PASS or FAIL lines of one simulator.

    Args:
        outcome: the simulator's part.
        what: what matched, in parentheses after "match the reference".
        listed: failing programs listed in full (at most :data:`KEPT_FAILURES`).
        lines_each: difference lines shown per failing program.
    """
    label = f"{outcome.simulator:<10} "
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
    return out


def waves_lines(outcomes: Sequence[Outcome], shown: int = 3) -> list[str]:
    """Where the waveforms went: one file per launch (the first ``shown``, then how many more)."""
    out = []
    for o in outcomes:
        for path in o.waves[:shown]:
            out.append(f"{o.simulator:<10} waveform: {path}")
        if len(o.waves) > shown:
            out.append(f"{o.simulator:<10} ... and {counted(len(o.waves) - shown, 'more waveform')} "
                       f"(one per launch) in {o.waves[0].parent.parent}")
    return out


def emit(lines: Sequence[str]) -> None:
    for line in lines:
        print(line)
    sys.stdout.flush()
