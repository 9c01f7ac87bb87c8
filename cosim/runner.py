"""Build the test harness and the simulation top under Icarus or Verilator; run batches of jobs.

Everything goes through ``cocotb_tools.runner`` (cocotb 2.1). What this module adds:

* **cached builds**: one folder per simulator, ``build/cosim/<sim>/`` (``<sim>-waves`` for a
  build that records waveforms), holding a copy of the Verilog it was built from, the harness
  generated for it (:mod:`cosim.harness`) and a stamp with the SHA-256 of both and of the build
  recipe (:mod:`cosim.simulators`). A build is redone only when the stamp differs. A file lock
  serialises builds (pytest-xdist workers, parallel make runs, the workers of a pool).
* **a batch per launch**: the jobs go to a file, the test bench (:mod:`cosim.tb`) runs them
  all in one simulator process and writes a results file; a progress file lets the caller
  show how far it got.

Errors are :class:`~cosim.errors.CosimError` subclasses whose messages say what to do: a
missing simulator (with how to install it), a failed build or simulation (with the log's path).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cocotb

from flows.memmap import SIMTOP
from sim.spec import Params

from . import harness
from . import waves as waves_io
from .errors import BuildError, CosimError, SimulationError, SimulatorMissing, writing
from .jobs import Job, RtlRun, read_results, write_jobs
from .simulators import (
    SIMULATORS,
    TIMESCALE,
    VERILATOR_ARGS,
    check_simulator,
    prepare_environment,
    runner_for,
    simulator_version,
    verilator_makeflags,
)
from .verilog import (
    BUILD,
    COSIM_BUILD,
    ROOT,
    VERILOG,
    describe,
    flock,
    fresh_verilog,
    reading,
    verilog_params,
)

__all__ = [
    "BUILD",
    "COSIM_BUILD",
    "ROOT",
    "SIMULATORS",
    "Build",
    "BuildError",
    "CosimError",
    "Simulation",
    "SimulationError",
    "SimulatorMissing",
    "build",
    "default_root",
    "fresh_verilog",
    "run_batch",
    "verilog_params",
]
"""This module's builds and launches, and names other code imported from here before they moved
to cosim/verilog.py, cosim/simulators.py and cosim/errors.py (defined there, re-exported here)."""

TEST_MODULE = "cosim.tb"
TEST_ENV = {"COCOTB_REWRITE_ASSERTION_FILES": ""}
"""The test bench's environment besides its files. cocotb rewrites the assertions of test modules
with pytest's hook, whose configuration loads every installed pytest plugin (pytest-xdist and
execnet: 0.4-0.8 s of each launch); the test bench raises its own errors with their messages,
so the hook is switched off."""


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return ""
    return "\n".join("    " + ln for ln in text[-lines:])


@dataclass
class Build:
    """A simulator build of one Verilog file and its harness.

    Attributes:
        simulator: ``icarus`` or ``verilator``.
        directory: the build folder (``build/cosim/<sim>``).
        digest: SHA-256 of the Verilog, the harness and the build recipe (the stamp).
        waves: built to record waveforms.
        cached: it was already there (no build ran).
        seconds: time spent building (or checking the cache).
    """

    simulator: str
    directory: Path
    digest: str
    waves: bool
    cached: bool
    seconds: float

    @property
    def log(self) -> Path:
        return self.directory / "build.log"


PRODUCT = {"icarus": "sim.vvp", "verilator": harness.TOP}
"""What a build leaves in its folder for a launch to run (cocotb_tools' names): a build whose
stamp is intact but whose product is gone (deleted, a cleaned folder) is built again."""


def _recipe(simulator: str, waves: bool) -> str:
    verilator = simulator == "verilator"
    return json.dumps({"simulator": simulator, "version": simulator_version(simulator), "waves": waves,
                       "args": VERILATOR_ARGS if verilator else (), "timescale": TIMESCALE,
                       "cocotb": cocotb.__version__, "makeflags": verilator_makeflags() if verilator else ""})


def default_root(verilog: Path) -> Path:
    """Where the builds of a Verilog file live: ``build/cosim`` for ``build/ga2_simtop.v``;
    ``build/machines/<tag>/cosim`` for another machine's exported Verilog (cosim.verilog); the
    file's own folder when it is inside ``build/cosim`` or a machine's ``cosim`` (mutants); else a folder of
    ``build/cosim/other`` named by the file's path. A copy never overwrites the main builds."""
    verilog = Path(verilog).resolve()
    if verilog == VERILOG.resolve():
        return COSIM_BUILD
    machines = (BUILD / "machines").resolve()
    if verilog.parent.parent == machines:
        return verilog.parent / "cosim"
    if COSIM_BUILD.resolve() in verilog.parents or (
            machines in verilog.parents and "cosim" in verilog.relative_to(machines).parts):
        return verilog.parent
    return COSIM_BUILD / "other" / hashlib.sha256(str(verilog).encode()).hexdigest()[:12]


def _compile(simulator: str, directory: Path, sources: list[Path], waves: bool, verilog: Path) -> None:
    log = directory / "build.log"
    prepare_environment()
    try:
        runner_for(simulator).build(
            sources=sources, hdl_toplevel=harness.TOP, build_dir=directory, always=True,
            timescale=TIMESCALE, waves=waves, log_file=log,
            build_args=list(VERILATOR_ARGS) if simulator == "verilator" else [])
    except (RuntimeError, SystemExit, subprocess.CalledProcessError) as e:
        raise BuildError(f"{simulator}: building {verilog} failed ({e}); the log: {log}\n{_tail(log)}") \
            from None


def build(simulator: str, verilog: Path, *, waves: bool = False, root: Path | None = None,
          starting: Callable[[], None] | None = None) -> Build:
    """Build (or find in the cache) the simulator's model of the harness and ``ga2_simtop``.

    Args:
        simulator: ``icarus`` or ``verilator``.
        verilog: the Verilog file (:func:`cosim.verilog.fresh_verilog`), its ``ga2_ports.json``
            beside it.
        waves: build for waveform recording (a separate folder, ``<sim>-waves``).
        root: where the build folders live (default: :func:`default_root`).
        starting: called when a build really starts (not when the cache has it).

    Raises:
        SimulatorMissing, BuildError, CosimError (no ``ga2_ports.json``).
    """
    t0 = time.perf_counter()
    check_simulator(simulator)
    root = Path(root) if root is not None else default_root(verilog)
    directory = root / (f"{simulator}-waves" if waves else simulator)
    with reading(verilog):
        text = Path(verilog).read_bytes()
    units = waves_io.engines(waves_io.declarations(text.decode(errors="replace"))) if waves else ()
    top = harness.render(describe(verilog), binary=harness.BINARY[simulator], engines=units).encode()
    digest = hashlib.sha256(text + b"\0" + top + b"\0" + _recipe(simulator, waves).encode()).hexdigest()
    stamp = directory / "stamp.sha256"
    with flock(root / f"{directory.name}.lock", exclusive=True):
        product = directory / PRODUCT[simulator]
        if stamp.is_file() and stamp.read_text().strip() == digest and product.is_file():
            return Build(simulator, directory, digest, waves, True, time.perf_counter() - t0)
        if starting is not None:
            starting()
        sources = [directory / f"{harness.TOP}.v", directory / f"{SIMTOP}.v"]
        with writing(root):
            if directory.exists():
                shutil.rmtree(directory)
            directory.mkdir(parents=True)
            sources[0].write_bytes(top)
            sources[1].write_bytes(text)       # the build's own copy: later exports do not touch it
        _compile(simulator, directory, sources, waves, verilog)
        stamp.write_text(digest + "\n")
    return Build(simulator, directory, digest, waves, False, time.perf_counter() - t0)


@dataclass
class Simulation:
    """One simulator launch over a batch.

    Attributes:
        runs: one :class:`RtlRun` per job, in order.
        build: the build that ran.
        seconds: wall time of the launch (simulator start, every job, results).
        run_dir: the folder of the launch (kept when asked, or for waves), else None.
        waves: the waveform file, when recorded.
    """

    runs: list[RtlRun]
    build: Build
    seconds: float
    run_dir: Path | None = None
    waves: Path | None = None


def waves_file(b: Build, run_dir: Path) -> Path:
    """Where a launch of this build records its waveform (FST for Icarus, VCD for Verilator)."""
    return run_dir / (f"{harness.TOP}.fst" if b.simulator == "icarus" else "dump.vcd")


def _launch(b: Build, run_dir: Path, env: dict[str, str], progress_file: Path,
            progress: Callable[[int], None] | None) -> BaseException | None:
    """Run the test bench in the simulator, polling its progress file; the exception it
    raised (cocotb_tools raises SystemExit for a failed test), or None."""
    failure: list[BaseException] = []
    plusargs = [f"+dumpfile_path={waves_file(b, run_dir)}"] if b.waves and b.simulator == "icarus" else []

    def launch() -> None:
        try:
            runner_for(b.simulator).test(
                test_module=TEST_MODULE, hdl_toplevel=harness.TOP, hdl_toplevel_lang="verilog",
                build_dir=b.directory, test_dir=run_dir, extra_env=env, waves=b.waves,
                plusargs=plusargs, log_file=run_dir / "sim.log", results_xml=str(run_dir / "results.xml"))
        except BaseException as e:
            failure.append(e)

    with flock(b.directory.parent / f"{b.directory.name}.lock", exclusive=False):
        worker = threading.Thread(target=launch, name=f"cosim-{b.simulator}")
        worker.start()
        seen = 0
        while worker.is_alive():
            worker.join(0.1)
            if progress is not None:
                count = len(progress_file.read_text().split())
                if count != seen:
                    seen = count
                    progress(count)
    return failure[0] if failure else None


def run_prefix(pid: int | None = None) -> str:
    """How a launch's folder under ``<build>/runs/`` begins: the time and the id of the process
    that made it (``193012-4242-``), so that whoever stops that process finds its folders
    (:func:`cosim.pool.run_stream` on Ctrl-C); None: this process, now."""
    return f"{time.strftime('%H%M%S')}-{os.getpid() if pid is None else pid}-"


def run_folders(directory: Path, pid: int) -> list[Path]:
    """The launch folders process ``pid`` made under a build folder (:func:`run_prefix`)."""
    return sorted((Path(directory) / "runs").glob(f"*-{pid}-*"))


def run_batch(b: Build, jobs: Sequence[Job], params: Params, *, keep: bool = False,
              progress: Callable[[int], None] | None = None) -> Simulation:
    """Run jobs back to back in one launch of a build (:mod:`cosim.tb`).

    Args:
        b: the build.
        jobs: the jobs (named, with their cycle limits).
        params: the machine the Verilog was generated for.
        keep: keep the launch's folder (jobs, results, simulator log); waves builds always do.
        progress: called with the number of finished jobs as they finish.

    No jobs: no launch (an empty :class:`Simulation`).

    Raises:
        SimulationError: the simulator or the test bench failed (the message names the log).
    """
    t0 = time.perf_counter()
    if not jobs:
        return Simulation([], b, 0.0)
    runs_root = b.directory / "runs"
    with writing(runs_root):
        runs_root.mkdir(parents=True, exist_ok=True)
        run_dir = Path(tempfile.mkdtemp(prefix=run_prefix(), dir=runs_root))
    jobs_file, results_file, progress_file = (run_dir / n for n in ("jobs.npz", "results.npz", "progress"))
    with writing(run_dir):
        write_jobs(jobs_file, jobs, params)
        progress_file.touch()
    prepare_environment()
    env = {"COSIM_JOBS": str(jobs_file), "COSIM_RESULTS": str(results_file),
           "COSIM_PROGRESS": str(progress_file), "COSIM_BINARY": str(int(harness.BINARY[b.simulator])),
           **TEST_ENV}
    failure = _launch(b, run_dir, env, progress_file, progress)
    if failure or not results_file.is_file():
        log = run_dir / "sim.log"
        why = f"{type(failure).__name__}: {failure}" if failure else "no results file"
        raise SimulationError(f"{b.simulator}: the simulation failed ({why}); the log: {log}\n{_tail(log)}")
    runs = read_results(results_file, [job.name for job in jobs], [job.cycle_limit(params) for job in jobs],
                        b.simulator, params)
    if progress is not None:
        progress(len(jobs))
    if b.waves:
        waves_io.write_save_file(waves_file(b, run_dir), b.directory / f"{SIMTOP}.v", b.simulator,
                                 waves_io.markers(runs))
    kept = keep or b.waves
    if not kept:
        shutil.rmtree(run_dir, ignore_errors=True)
    return Simulation(runs, b, time.perf_counter() - t0, run_dir if kept else None,
                      waves_file(b, run_dir) if b.waves else None)
