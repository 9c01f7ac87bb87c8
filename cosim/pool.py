"""Chunks of jobs on a pool of worker processes: each worker makes a chunk, runs it, compares it.

Used by ``python -m cosim seeds`` and ``python -m cosim stress`` (through :func:`run_stream`).
A run is a list of :class:`Recipe` objects, one per chunk of at most :data:`CHUNK` jobs: a
module-level function and a small argument (a few seeds, a first seed and a count) from which a
worker makes the chunk's jobs itself. For each simulator and each chunk a :class:`Task` goes to
a ``concurrent.futures.ProcessPoolExecutor`` (one worker per core by default); the worker makes
the jobs, runs the reference machine, launches the simulator once for the whole chunk
(:func:`cosim.runner.run_batch`), compares every run (:func:`cosim.api.compare`) and sends back
a :class:`ChunkResult`: counts, cycle sums and the first few differences, never the memories.
So memory stays flat however many jobs there are, and both cores stay busy whatever the mix of
simulators.

The simulators are built (or found in the cache) first, in the main process, one thread each;
a simulator's tasks start as soon as its build is there. Workers are forked before any thread
starts. Progress (per job, from each launch's progress file) comes back on a queue and goes to
the display (:mod:`cosim.board`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from sim import spec
from sim.spec import DEFAULT, Params

from . import runner
from .api import compare
from .batch import KEPT_FAILURES, Failure, Outcome, Tally, simulators
from .board import COLD_HINT, Board
from .errors import CosimError
from .jobs import Job
from .runner import Build
from .simulators import prepare_environment
from .verilog import fresh_verilog, verilog_params

CHUNK = 100
"""Jobs per simulator launch: the most that are made, run and compared at a time by one worker.
A launch costs about a second of start-up."""
STOP_WAIT = 5.0
"""Seconds to wait for each stopped worker to exit before its launch folders are removed."""


@dataclass
class Made:
    """A chunk's jobs, and what the maker reports besides them (table rows, coverage)."""

    jobs: list[Job]
    info: Any = None


@dataclass(frozen=True)
class Recipe:
    """How a worker makes one chunk: ``make(arg, params)`` returns a :class:`Made` of ``size``
    jobs. ``make`` is a module-level function and ``arg`` small and picklable."""

    make: Callable[[Any, Params], Made]
    arg: Any
    size: int


@dataclass(frozen=True)
class Task:
    """One chunk on one simulator: chunk ``number`` of the run, whose first job is job ``first``."""

    simulator: str
    number: int
    first: int
    recipe: Recipe
    build: Build
    params: Params
    keep: bool = False


@dataclass
class ChunkResult(Tally):
    """What a worker sends back for a :class:`Task` (also what a stress campaign records): a
    :class:`~cosim.batch.Tally` of the chunk's jobs, and

    Attributes:
        simulator, number, first: the task's.
        rtl_cycles: each job's cycles as the RTL counted them.
        waves: the launch's waveform file (with ``--waves``).
        info: the maker's :attr:`Made.info`.
        error: why the simulator could not run the chunk (a CosimError message), else "".
    """

    simulator: str
    number: int
    first: int
    rtl_cycles: list[int] = field(default_factory=list)
    waves: str | None = None
    info: Any = None
    error: str = ""


# --------------------------------------------------------------------------- the worker side

_progress: Any = None
"""The queue a worker reports progress on (set by :func:`_initialise`)."""


def _initialise(progress) -> None:
    """A worker's start: its own process group (the terminal's Ctrl-C goes to the main process,
    which stops the workers and their simulators as a whole: :func:`_stop_workers`), the default
    action for SIGINT and SIGTERM (a forked worker has the main process's handlers, which raise
    KeyboardInterrupt: concurrent.futures would catch it and go on with the next task), and the
    progress queue."""
    global _progress
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _progress = progress


def run_task(task: Task) -> ChunkResult:
    """Make the chunk's jobs, run them in one launch and compare every run (in a worker)."""
    made = task.recipe.make(task.recipe.arg, task.params)
    for job in made.jobs:
        job.expected(task.params)
    out = ChunkResult(task.simulator, task.number, task.first, info=made.info)

    def progress(n: int) -> None:
        if _progress is not None:
            _progress.put((task.simulator, task.number, n))

    try:
        simulation = runner.run_batch(task.build, made.jobs, task.params, keep=task.keep, progress=progress)
    except CosimError as e:
        out.error = str(e)
        return out
    for k, (job, run) in enumerate(zip(made.jobs, simulation.runs, strict=True)):
        differences = compare(job, run)
        out.count += 1
        out.cycles += run.counters.cycles
        out.waited += run.waited
        out.sim_seconds += run.sim_seconds
        out.rtl_cycles.append(run.counters.cycles)
        if differences:
            out.failed += 1
            if len(out.failures) < KEPT_FAILURES:
                out.failures.append(Failure(task.first + k, run.name, differences))
    out.seconds = simulation.seconds
    out.waves = None if simulation.waves is None else str(simulation.waves)
    return out


# --------------------------------------------------------------------------- the main side


def workers_for(tasks: int, jobs: int | None = None) -> int:
    """Worker processes: ``jobs`` (default: one per core), never more than there are tasks."""
    return max(1, min(jobs or os.cpu_count() or 1, tasks))


def _start_pool(workers: int) -> tuple[ProcessPoolExecutor, Any]:
    """A pool of forked workers, all started now (before this process starts any thread), and
    the queue they report progress on."""
    context = multiprocessing.get_context("fork")
    progress = context.Queue()
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_initialise, initargs=(progress,))
    pool.submit(int).result()      # the first submit forks every worker
    return pool, progress


def _stop_workers(pool: ProcessPoolExecutor, builds: Sequence[Path] = (), keep: bool = False) -> None:
    """Stop every worker and the simulator it runs (each worker is a process group) now; then,
    unless ``keep``, remove the launch folders they left under the build folders ``builds``
    (:func:`cosim.runner.run_folders`: a killed worker cannot remove its own)."""
    pool.shutdown(wait=False, cancel_futures=True)
    children = multiprocessing.active_children()
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGTERM)
    for child in children:
        child.join(STOP_WAIT)
    for directory in () if keep else builds:
        for child in children:
            for folder in runner.run_folders(directory, child.pid):
                shutil.rmtree(folder, ignore_errors=True)


class _Builds:
    """The simulators' builds, one thread each; a simulator's tasks wait for its build."""

    def __init__(self, names: Sequence[str], source: Path, board: Board, outcomes: dict[str, Outcome],
                 waves: bool, root: Path | None):
        self.ready: dict[str, Build] = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._build, args=(name, source, board, outcomes[name], waves,
                                                                   root), name=f"build-{name}", daemon=True)
                        for name in names]

    def _build(self, name: str, source: Path, board: Board, outcome: Outcome, waves: bool,
               root: Path | None) -> None:
        try:
            built = runner.build(name, source, waves=waves, root=root,
                                 starting=lambda: board.update(name, f"building ({COLD_HINT[name]})"))
        except CosimError as e:
            outcome.error = str(e)
            board.update(name, "stopped (error)")
            return
        outcome.build = built
        if not built.cached and not board.live:
            board.note(f"{name}: built in {built.seconds:.1f} s ({built.directory})")
        board.update(name, "running")
        with self.lock:
            self.ready[name] = built

    def start(self) -> None:
        for t in self.threads:
            t.start()


@dataclass
class _Run:
    """The state of a run in the main process."""

    outcomes: dict[str, Outcome]
    board: Board
    params: Params
    keep: bool
    on_result: Callable[[ChunkResult], None] | None
    queue: deque = field(default_factory=deque)
    running: dict[Future, tuple[str, int]] = field(default_factory=dict)
    partial: dict[tuple[str, int], int] = field(default_factory=dict)


def _count(run: _Run, result: ChunkResult) -> None:
    """Count a finished chunk in its simulator's outcome and on the board."""
    outcome = run.outcomes[result.simulator]
    if result.error:
        outcome.error = outcome.error or result.error
        run.board.update(result.simulator, "stopped (error)")
        return
    outcome.add_chunk(result)
    run.board.failed[result.simulator] = outcome.failed
    run.board.update(result.simulator, done=outcome.count)


def _submit(run: _Run, pool: ProcessPoolExecutor, builds: _Builds, limit: int) -> None:
    """Hand tasks to the pool (at most ``limit`` in flight) whose simulator is built and fine."""
    skipped: deque = deque()
    while run.queue and len(run.running) < limit:
        simulator, number, first, recipe = run.queue.popleft()
        if run.outcomes[simulator].error:
            continue
        with builds.lock:
            built = builds.ready.get(simulator)
        if built is None:
            skipped.append((simulator, number, first, recipe))
            continue
        task = Task(simulator, number, first, recipe, built, run.params, run.keep)
        run.running[pool.submit(run_task, task)] = (simulator, number)
    run.queue.extendleft(reversed(skipped))


def _drain(run: _Run, progress) -> None:
    """Progress messages from the workers -> the board."""
    touched = set()
    while True:
        try:
            simulator, number, n = progress.get_nowait()
        except Exception:   # queue.Empty, or a queue closed at shutdown
            break
        run.partial[(simulator, number)] = n
        touched.add(simulator)
    for simulator in touched:
        extra = sum(n for (s, _), n in run.partial.items() if s == simulator)
        run.board.update(simulator, done=run.outcomes[simulator].count + extra)


def _collect(run: _Run, done: set[Future]) -> None:
    for future in done:
        simulator, number = run.running.pop(future)
        run.partial.pop((simulator, number), None)
        error = future.exception()
        if isinstance(error, CosimError):
            result = ChunkResult(simulator, number, 0, error=str(error))
        elif error is not None:
            raise error
        else:
            result = future.result()
        _count(run, result)
        if run.on_result is not None and not result.error:
            run.on_result(result)


def _work(run: _Run, pool: ProcessPoolExecutor, progress, builds: _Builds, workers: int) -> None:
    """Submit, wait, collect until every task is done or dropped (its simulator stopped)."""
    while True:
        _submit(run, pool, builds, 2 * workers)
        if not run.running:
            if not run.queue:
                return
            time.sleep(0.1)        # the remaining tasks wait for their simulator's build
            continue
        done, _ = wait(run.running, timeout=0.1, return_when=FIRST_COMPLETED)
        _drain(run, progress)
        _collect(run, done)


def run_stream(recipes: Sequence[Recipe], choice: str, *, noun: str = "program", verilog: Path | None = None,
               waves: bool = False, build_root: Path | None = None, keep: bool = False,
               console: Console | None = None, jobs: int | None = None, done: Iterable[ChunkResult] = (),
               on_result: Callable[[ChunkResult], None] | None = None) -> list[Outcome]:
    """Build the simulators, then run every chunk on each of them over a pool of workers.

    Args:
        recipes: one per chunk, in order (job numbers follow them).
        choice: ``icarus``, ``verilator`` or ``both``.
        noun: what a job is called on the progress display.
        verilog, waves, build_root, keep: as :func:`cosim.api.simulate`.
        console: where progress and notes go (default: stderr).
        jobs: worker processes (default: one per core).
        done: results of chunks already run (a resumed campaign): counted, not run again.
        on_result: called in this process with every new :class:`ChunkResult`.

    Returns:
        One :class:`~cosim.batch.Outcome` per simulator, in :data:`cosim.simulators.SIMULATORS`
        order; a simulator that could not run has its ``error`` set.

    Raises:
        whatever a recipe's ``make`` raises (the pool is then shut down).
    """
    console = console or Console(stderr=True)
    names = simulators(choice)
    total = sum(r.size for r in recipes)
    outcomes = {name: Outcome(name) for name in names}
    firsts = [0]
    for r in recipes:
        firsts.append(firsts[-1] + r.size)
    finished = {(r.simulator, r.number) for r in done}
    tasks = [(name, number, firsts[number], recipe) for number, recipe in enumerate(recipes)
             for name in names if (name, number) not in finished]
    board = Board(console, total, names, noun)
    try:
        source = fresh_verilog(verilog, say=board.note, params=DEFAULT)   # none given: the default machine's
        params = verilog_params(source)
        for o in outcomes.values():
            o.counters = spec.counters(params)
    except CosimError as e:
        for o in outcomes.values():
            o.error = str(e)
        return list(outcomes.values())
    prepare_environment()              # once, for every worker's launches
    workers = workers_for(len(tasks), jobs)
    pool, progress = _start_pool(workers) if tasks else (None, None)
    run = _Run(outcomes, board, params, keep, on_result, deque(tasks))
    for result in done:
        _count(run, result)
    builds = _Builds(names, source, board, outcomes, waves, build_root)
    try:
        with board:
            builds.start()
            if pool is not None:
                _work(run, pool, progress, builds, workers)
            for t in builds.threads:
                t.join()
    except BaseException:              # Ctrl-C, or a recipe that failed: stop, do not finish the queue
        if pool is not None:
            _stop_workers(pool, [b.directory for b in builds.ready.values()], keep)
        raise
    if pool is not None:
        pool.shutdown()
    for o in outcomes.values():
        if not o.error and o.count != total:
            o.error = f"ran {o.count:,} of the {total:,} {noun}s"
    return [outcomes[name] for name in names]
