"""Grade one mutant: cosim's own command line on its Verilog, step by step, until the first FAIL.

The steps (:func:`plan`) are ``python -m cosim seeds 100-111``, ``python -m cosim faults`` (every
fault the checker must see, one short program each: cosim/faults.py) and then ``python -m cosim
stress`` over consecutive chunks of seeds (20 programs, then 40, 80, ...: a mutant caught early
costs little), each with ``--verilog <the mutant> --sim <simulator>``: the same runner, bench
and comparison as ``make cosim`` and ``make stress`` (which include the edge programs of
:mod:`cosim.edges`), so the grading gets faster when they do.

The exit status of each step decides: 0 (every program matches the reference) goes on to the
next step, 1 (a difference) means the mutant is caught, 2 (the simulator could not build or
run the mutant) is a tool error, and so is a run that takes longer than the mutant's time
limit. A mutant that makes the machine hang is caught, not an error: the test bench stops
every program at its cycle limit and reports "no stop within the cycle limit" as a difference.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..runner import ROOT

CAUGHT, SURVIVED, ERROR = "caught", "survived", "error"
HANG = "no stop within the cycle limit"
"""What :func:`cosim.api.compare` says of a program the RTL never finished."""
DETAIL_LINES = 3
"""Lines of a FAIL kept for the report."""
LOCAL = ("--engine", "local", "--jobs", "1")
"""Each ``python -m cosim`` step runs in the grading task's own worker, on one core (the mutants
are the farm's tasks: cosim.mutants_rtl.__main__); ``python -m cosim.axi`` runs one simulation
in its own process anyway."""


@dataclass(frozen=True)
class Step:
    """One cosim command: its name in the report and its arguments after ``python -m <module>``
    (``cosim``, or ``cosim.axi`` for the system top's mutants: cosim/mutants_rtl/bus.py)."""

    name: str
    argv: tuple[str, ...]
    module: str = "cosim"


FAULTS = Step("faults", ("faults",))


def plan(seeds: str, stress_n: int, stress_seed: int, first_chunk: int = 20, *,
         faults: bool = True) -> list[Step]:
    """seeds SEEDS, the fault sweep (``faults``), then stress over stress_seed .. stress_seed +
    stress_n - 1 in doubling chunks."""
    steps = [Step(f"seeds {seeds}", ("seeds", seeds))] if seeds else []
    steps += [FAULTS] if faults else []
    start, chunk, end = stress_seed, first_chunk, stress_seed + stress_n
    while start < end:
        n = min(chunk, end - start)
        argv = ("stress", "--seed", str(start), "--n", str(n))
        steps.append(Step(f"stress {start}..{start + n - 1}", argv))
        start, chunk = start + n, chunk * 2
    return steps


@dataclass
class Grade:
    """What cosim made of one mutant.

    Attributes:
        status: caught, survived or error.
        step: the step that caught it (or failed), "" for a survivor.
        detail: the first lines of the FAIL (or of the error).
        hang: caught because a program never stopped (the cycle limit).
        seconds: wall time of all its steps.
        steps: the steps run, in order.
    """

    status: str
    step: str = ""
    detail: list[str] = field(default_factory=list)
    hang: bool = False
    seconds: float = 0.0
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _run(argv: list[str], timeout: float) -> tuple[int | None, str]:
    """Run a command in its own process group; on timeout kill that group (the simulator the
    command started included). Returns (exit status or None on timeout, stdout + stderr)."""
    with subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
            return proc.returncode, out
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return None, out


def _fail_lines(output: str) -> list[str]:
    """The FAIL line and the lines under it (the first differing program), or the ERROR lines."""
    lines = [ln for ln in output.splitlines() if not ln.startswith("[")]
    for k, line in enumerate(lines):
        if " FAIL: " in line or " ERROR: " in line or line.startswith("error: "):
            return [ln.strip() for ln in lines[k:k + DETAIL_LINES] if ln.strip()]
    return [ln.strip() for ln in lines[-DETAIL_LINES:]]


def grade(verilog: Path, steps: list[Step], simulator: str, timeout: float) -> Grade:
    """Run the steps on the mutant's Verilog until one fails (see the module docstring)."""
    t0 = time.perf_counter()
    result = Grade(SURVIVED)
    for step in steps:
        left = timeout - (time.perf_counter() - t0)
        result.steps.append(step.name)
        if left <= 0:
            code, output = None, ""
        else:
            local = LOCAL if step.module == "cosim" else ()
            code, output = _run([sys.executable, "-m", step.module, *step.argv, "--verilog", str(verilog),
                                 "--sim", simulator, *local], left)
        if code == 0:
            continue
        result.step = step.name
        if code == 1:
            result.status, result.detail = CAUGHT, _fail_lines(output)
            result.hang = any(HANG in line for line in output.splitlines())
        elif code is None:
            result.status, result.detail = ERROR, [f"time limit of {timeout:.0f} s reached in {step.name}"]
        else:
            result.status, result.detail = ERROR, [f"exit {code}", *_fail_lines(output)]
        break
    result.seconds = time.perf_counter() - t0
    return result


@dataclass(frozen=True)
class Work:
    """One mutant to grade, as a farm task (:func:`grade_task`).

    Attributes:
        ident: its id.
        verilog: its Verilog (``ga2_ports.json`` beside it for the core's), under the project's
            folder.
        files: the two files packed (cosim.farm.Shared), for a node that lacks them; or None.
        steps, simulator, timeout: as :func:`grade`.
        keep: keep its simulator builds.
    """

    ident: str
    verilog: Path
    files: Any
    steps: tuple[Step, ...]
    simulator: str
    timeout: float
    keep: bool = False


def grade_task(work: Work) -> tuple[str, Grade]:
    """Grade one mutant in a farm's worker: on another node, first write its Verilog there (at
    the same place under the project's folder); then :func:`grade`, then :func:`clean`."""
    from ..farm import elsewhere, shipping

    if elsewhere() and work.files is not None:
        shipping.unpack_files(work.files.fetch(), work.verilog.parent)
    g = grade(work.verilog, list(work.steps), work.simulator, work.timeout)
    if not work.keep:
        clean(work.verilog)
    return work.ident, g


def clean(verilog: Path) -> None:
    """Remove the simulator builds beside a mutant's Verilog (cosim builds a file inside
    build/cosim in the file's own folder), keeping the Verilog."""
    for sub in Path(verilog).parent.iterdir():
        if sub.is_dir():
            shutil.rmtree(sub, ignore_errors=True)
