"""A campaign's chunks of jobs on a farm of workers: each makes a chunk, runs it, compares it.

Used by ``python -m cosim seeds``, ``stress`` and ``faults`` and by the studies' RTL runs
(through :func:`run_stream`). A run is a list of :class:`Recipe` objects, one per chunk of at
most :data:`CHUNK` jobs: a module-level function and a small argument (a few seeds, a first seed
and a count) from which a worker makes the chunk's jobs itself. For each simulator and each
chunk a :class:`Task` goes to the campaign's farm (:mod:`cosim.farm`: a local pool of processes
for a small run, else Ray, on this machine or the cluster at ``RAY_ADDRESS``); the worker makes
the jobs, runs the reference machine, launches the simulator once for the whole chunk
(:func:`cosim.runner.run_batch`), compares every run (:func:`cosim.api.compare`) and sends back
a :class:`ChunkResult`: counts, cycle sums and the first few differences, never the memories.
So memory stays flat however many jobs there are, and every worker stays busy whatever the mix
of simulators.

The simulators are built (or found in the cache) first, on this machine, one thread each; a
simulator's tasks start as soon as its build is there. On Ray the build also goes into the
object store once, and a node other than this one unpacks it once into a folder named by its
hash (:mod:`cosim.farm.shipping`): no node builds. A launch that takes longer than its limit
(:func:`launch_limit`: its jobs' cycle limits at a rate far below the slowest simulator's) is
stopped and reported as a hung simulator. Progress (per job, from each launch's progress file)
comes back as the farm's messages and goes to the display (:mod:`cosim.board`).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from sim import spec
from sim.spec import DEFAULT, Params

from . import farm as farms
from . import runner
from .api import compare
from .batch import KEPT_FAILURES, Failure, Outcome, Tally, simulators
from .board import COLD_HINT, Board
from .errors import CosimError
from .farm import Farm, Shared, open_farm, shipping
from .farm.guard import guarded
from .jobs import Job
from .runner import Build
from .simulators import prepare_environment
from .verilog import fresh_verilog, verilog_params

CHUNK = 100
"""Jobs per simulator launch: the most that are made, run and compared at a time by one worker.
A launch costs about a second of start-up."""
SECONDS_PER_JOB = {"icarus": 1.0, "verilator": 0.08}
"""Rough cost of one job on one simulator for one worker (make, reference, simulation,
comparison; measured on a shared 2-core machine): the campaign's estimate (cosim.farm.choose)."""
LAUNCH_SECONDS = 300.0
FLOOR_RATE = {"icarus": 100.0, "verilator": 1_000.0}
"""A launch's time limit: LAUNCH_SECONDS plus its jobs' cycle limits at FLOOR_RATE cycles/s, ten
times below the slowest rate measured under cocotb (Icarus about 1,000 cycles/s with its
start-up, Verilator 10,000 and more: TOOLCHAIN.md); a launch still running then is hung."""


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
    """One chunk on one simulator: chunk ``number`` of the run, whose first job is job ``first``;
    the build and, on a cluster, its packed copy in the object store; ``limit`` overrides
    :func:`launch_limit` (seconds)."""

    simulator: str
    number: int
    first: int
    recipe: Recipe
    build: Build
    params: Params
    keep: bool = False
    shipped: Shared | None = None
    limit: float | None = None

    def __str__(self) -> str:
        last = self.first + self.recipe.size - 1
        return f"{self.simulator} chunk {self.number} (jobs {self.first}-{last})"


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


def launch_limit(jobs: Sequence[Job], simulator: str, params: Params) -> float:
    """Seconds a launch of ``jobs`` may take (see :data:`FLOOR_RATE`)."""
    return LAUNCH_SECONDS + sum(job.cycle_limit(params) for job in jobs) / FLOOR_RATE[simulator]


def run_task(task: Task) -> ChunkResult:
    """Make the chunk's jobs, run them in one launch and compare every run (in a worker).

    A launch past its limit is stopped: the result's ``error`` names the chunk and the limit."""
    made = task.recipe.make(task.recipe.arg, task.params)
    for job in made.jobs:
        job.expected(task.params)
    out = ChunkResult(task.simulator, task.number, task.first, info=made.info)
    build = shipping.materialise(task.build, task.shipped.fetch) \
        if farms.elsewhere() and task.shipped is not None else task.build

    def progress(n: int) -> None:
        farms.report((task.simulator, task.number, n))

    limit = task.limit if task.limit is not None else launch_limit(made.jobs, task.simulator, task.params)
    try:
        simulation = guarded(lambda jobs: runner.run_batch(build, jobs, task.params, keep=task.keep,
                                                           progress=progress),
                             made.jobs, limit, f"{task}: the simulator (a hung simulator?)")
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


def estimate(recipes: Sequence[Recipe], names: Sequence[str]) -> float:
    """The run's work in seconds of one worker (:data:`SECONDS_PER_JOB`)."""
    return sum(r.size for r in recipes) * sum(SECONDS_PER_JOB[n] for n in names)


class _Builds:
    """The simulators' builds, one thread each; a simulator's tasks wait for its build (and, on
    a cluster, for its packed copy in the object store)."""

    def __init__(self, names: Sequence[str], source: Path, board: Board, outcomes: dict[str, Outcome],
                 waves: bool, root: Path | None, farm: Farm | None):
        self.ready: dict[str, tuple[Build, Shared | None]] = {}
        self.lock = threading.Lock()
        self.farm = farm
        self.threads = [threading.Thread(target=self._build, args=(name, source, board, outcomes[name], waves,
                                                                   root), name=f"build-{name}", daemon=True)
                        for name in names]

    def _build(self, name: str, source: Path, board: Board, outcome: Outcome, waves: bool,
               root: Path | None) -> None:
        try:
            built = runner.build(name, source, waves=waves, root=root,
                                 starting=lambda: board.update(name, f"building ({COLD_HINT[name]})"))
            away = self.farm is not None and self.farm.engine == "ray"
            shipped = self.farm.share(shipping.pack(built)) if away else None
        except (CosimError, OSError) as e:
            outcome.error = str(e)
            board.update(name, "stopped (error)")
            return
        outcome.build = built
        if not built.cached and not board.live:
            board.note(f"{name}: built in {built.seconds:.1f} s ({built.directory})")
        board.update(name, "running")
        with self.lock:
            self.ready[name] = (built, shipped)

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
    limit: float | None = None
    queue: deque = field(default_factory=deque)
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


def _submit(run: _Run, farm: Farm, builds: _Builds, limit: int) -> None:
    """Hand tasks to the farm (at most ``limit`` in flight) whose simulator is built and fine."""
    skipped: deque = deque()
    while run.queue and farm.running < limit:
        simulator, number, first, recipe = run.queue.popleft()
        if run.outcomes[simulator].error:
            continue
        with builds.lock:
            ready = builds.ready.get(simulator)
        if ready is None:
            skipped.append((simulator, number, first, recipe))
            continue
        built, shipped = ready
        task = Task(simulator, number, first, recipe, built, run.params, run.keep, shipped, run.limit)
        farm.submit((simulator, number), run_task, task)
    run.queue.extendleft(reversed(skipped))


def _drain(run: _Run, farm: Farm) -> None:
    """Progress messages from the workers -> the board."""
    touched = set()
    for simulator, number, n in farm.messages():
        run.partial[(simulator, number)] = n
        touched.add(simulator)
    for simulator in touched:
        extra = sum(n for (s, _), n in run.partial.items() if s == simulator)
        run.board.update(simulator, done=run.outcomes[simulator].count + extra)


def _collect(run: _Run, farm: Farm) -> None:
    for done in farm.wait(0.1):
        simulator, number = done.key
        run.partial.pop((simulator, number), None)
        if isinstance(done.error, CosimError):
            result = ChunkResult(simulator, number, 0, error=str(done.error))
        elif done.error is not None:
            raise done.error
        else:
            result = done.value
        _count(run, result)
        if run.on_result is not None and not result.error:
            run.on_result(result)


def _work(run: _Run, farm: Farm, builds: _Builds) -> None:
    """Submit, wait, collect until every task is done or dropped (its simulator stopped)."""
    while True:
        _submit(run, farm, builds, 2 * farm.workers)
        if not farm.running:
            if not run.queue:
                return
            time.sleep(0.1)        # the remaining tasks wait for their simulator's build
            continue
        _collect(run, farm)
        _drain(run, farm)


def _remove_launches(farm: Farm, builds: _Builds) -> None:
    """The launch folders that the stopped local workers left (a killed worker cannot remove its
    own: cosim.runner.run_folders)."""
    for built, _ in builds.ready.values():
        for pid in getattr(farm, "pids", ()):
            for folder in runner.run_folders(built.directory, pid):
                shutil.rmtree(folder, ignore_errors=True)


def run_stream(recipes: Sequence[Recipe], choice: str, *, noun: str = "program", verilog: Path | None = None,
               waves: bool = False, build_root: Path | None = None, keep: bool = False,
               console: Console | None = None, jobs: int | None = None, done: Iterable[ChunkResult] = (),
               on_result: Callable[[ChunkResult], None] | None = None, engine: str = "auto",
               limit: float | None = None) -> list[Outcome]:
    """Build the simulators, then run every chunk on each of them on a farm of workers.

    Args:
        recipes: one per chunk, in order (job numbers follow them).
        choice: ``icarus``, ``verilator`` or ``both``.
        noun: what a job is called on the progress display.
        verilog, waves, build_root, keep: as :func:`cosim.api.simulate`.
        console: where progress and notes go (default: stderr).
        jobs: workers on this machine (default: one per core; a cluster has its own).
        done: results of chunks already run (a resumed campaign): counted, not run again.
        on_result: called in this process with every new :class:`ChunkResult`.
        engine: ``auto``, ``ray`` or ``local`` (:func:`cosim.farm.open_farm`).
        limit: seconds each launch may take (default: :func:`launch_limit`).

    Returns:
        One :class:`~cosim.batch.Outcome` per simulator, in :data:`cosim.simulators.SIMULATORS`
        order; a simulator that could not run has its ``error`` set. Each outcome's ``where``
        says where the run went (:attr:`cosim.farm.Farm.where`).

    Raises:
        whatever a recipe's ``make`` raises (every task is then stopped); CosimError when Ray
        cannot start or reach its cluster.
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
    run = _Run(outcomes, board, params, keep, on_result, limit, deque(tasks))
    for result in done:
        _count(run, result)
    farm = open_farm(engine, jobs=jobs, estimate=estimate(recipes, names), tasks=len(tasks)) \
        if tasks else None
    if farm is not None:
        board.note(f"running on {farm.where}")
        for o in outcomes.values():
            o.where = farm.where
    builds = _Builds(names, source, board, outcomes, waves, build_root, farm)
    try:
        with board:
            builds.start()
            if farm is not None:
                _work(run, farm, builds)
            for t in builds.threads:
                t.join()
    except BaseException:              # Ctrl-C, or a recipe that failed: stop, do not finish the queue
        if farm is not None:
            farm.stop()
            if not keep:
                _remove_launches(farm, builds)
        raise
    finally:
        if farm is not None:
            farm.close()
    for o in outcomes.values():
        if not o.error and o.count != total:
            o.error = f"ran {o.count:,} of the {total:,} {noun}s"
    return [outcomes[name] for name in names]
