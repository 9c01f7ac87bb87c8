"""Run GA-2 programs on the RTL and compare them with the reference machine.

    from cosim.api import run_programs, compare
    runs = run_programs([(program, ext_image)], "verilator")
    assert compare((program, ext_image), runs[0]) == []

A job is a :class:`cosim.jobs.Job` or a tuple ``(program, ext)`` / ``(program, ext, name)``:
the program a list of :class:`sim.asm.Instruction` (or encoded words), ``ext`` the external-
memory image (integers of 32 bits, signed or unsigned, up to EXT_WORDS words; None for all
zeros, as :meth:`sim.machine.Machine.run` takes it). Every job is checked before a simulator
starts; a bad one raises TypeError or ValueError naming it (``job 3 (its name): ...``).
:func:`run_programs` runs all of them in
one launch of the simulator, back to back, and returns one :class:`cosim.jobs.RtlRun` each
(memories, counters, error outputs); :func:`compare` lists how a run differs from the
reference machine (:class:`sim.machine.Machine`): an empty list means bit-exact, every
memory word and every counter, the same error code and pc, and the core's
``timing_fault`` self-check at 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sim import spec
from sim.spec import DEFAULT, ErrorCode, Params

from . import harness, runner, where
from .errors import CosimError
from .jobs import Job, JobLike, RtlRun, as_job, as_jobs
from .runner import Simulation
from .simulators import check_simulator
from .text import counted, verb
from .verilog import fresh_verilog, verilog_params

__all__ = ["CosimError", "Job", "RtlRun", "compare", "run_programs", "simulate"]

SHOWN = 3
"""Differing words shown per memory by :func:`compare`."""
TIMING_FAULT = ("timing_fault: a unit's done and the execute stage's count disagreed (the spec latency "
                "of some instruction is not what the RTL does)")
""":func:`compare`'s line for a run whose ``timing_fault`` output is 1."""


def simulate(jobs: Sequence[JobLike], simulator: str, *, verilog: Path | None = None,
             waves: bool = False, build_root: Path | None = None, keep: bool = False,
             progress: Callable[[int], None] | None = None,
             say: Callable[[str], None] = print) -> Simulation:
    """Build if needed, then run the jobs in one launch; with the build and timing details.

    Args:
        jobs: the jobs (see the module docstring).
        simulator: ``icarus`` or ``verilator``.
        verilog: the Verilog of ``ga2_simtop`` (default: the Verilog of the machine the jobs
            were made for, :attr:`Job.machine`, e.g. ``build/machines/T8-LANES8/ga2_simtop.v``
            for programs compiled at T = 8, or ``build/ga2_simtop.v`` for the default machine
            and hand-written jobs; exported again when the generator's sources changed); its
            machine parameters come from the ``ga2_ports.json`` beside it, and a job made for
            other parameters is refused.
        waves: record a waveform (the :class:`~cosim.runner.Simulation` says where).
        build_root: where the cached builds live (default: ``build/cosim`` for the default
            Verilog, :func:`cosim.runner.default_root` for another file).
        keep: keep the launch's folder (jobs, results, simulator log).
        progress: called with the number of finished jobs.
        say: where notes go (an export of the Verilog).

    Raises:
        TypeError, ValueError: a bad job (named), or an unknown simulator.
        cosim.errors.CosimError: no simulator, a failed build or simulation.
    """
    check_simulator(simulator)
    source = fresh_verilog(verilog, say=say, params=machine_of(jobs))
    params = verilog_params(source)
    batch = as_jobs(jobs, params)
    built = runner.build(simulator, source, waves=waves, root=build_root)
    return runner.run_batch(built, batch, params, keep=keep, progress=progress)


def machine_of(jobs: Sequence[JobLike]) -> Params:
    """The machine the jobs were made for (their :attr:`Job.machine`, when they name one and all
    the same), else the default machine. Jobs of several machines are refused later, by
    :func:`cosim.jobs.as_jobs`, naming both parameter sets."""
    made = {job.machine for job in jobs if isinstance(job, Job) and job.machine is not None}
    return made.pop() if len(made) == 1 else DEFAULT


def run_programs(jobs: Sequence[JobLike], simulator: str = "verilator", **options) -> list[RtlRun]:
    """Run the jobs on the RTL under one simulator; one :class:`RtlRun` per job, in order.

    Takes the keyword options of :func:`simulate`.

    Raises:
        TypeError, ValueError: a bad job (named), or an unknown simulator.
        cosim.errors.CosimError: no simulator, a failed build or simulation.
    """
    return simulate(jobs, simulator, **options).runs


def _word(value: int, unresolved: bool = False) -> str:
    if unresolved:
        return "X"
    signed = value - (1 << 32) if value >= 1 << 31 else value
    return f"0x{value:08x} ({signed})"


def _code(code: int) -> str:
    if code < 0:
        return "X"
    try:
        return f"{code} ({spec.ERROR_TEXT[ErrorCode(code)]})"
    except ValueError:
        return f"{code} (not an error code)"


def _drift(drift: int) -> str:
    """The line for outputs that moved after the stop (:attr:`RtlRun.drift`)."""
    moved = "unknown (X)" if drift < 0 else \
        ", ".join(name for k, name in enumerate(harness.HELD) if drift >> k & 1)
    return (f"outputs that moved after the stop: {moved} (within {harness.HOLD_CYCLES} cycles after "
            "the harness read them; they hold until the next reset: hw/README.md)")


def _unreset(unreset: int) -> str:
    """The line for outputs that reset did not clear (:attr:`RtlRun.unreset`)."""
    left = "unknown (X)" if unreset < 0 else \
        ", ".join(name for k, name in enumerate(harness.CLEARED) if unreset >> k & 1)
    return (f"outputs not 0 right after reset: {left} (reset clears the registers and the counters: "
            "docs/GA2.md section 2)")


def compare(job: JobLike, run: RtlRun, *, shown: int = SHOWN) -> list[str]:
    """How the RTL's run of a job differs from the reference machine's; empty when bit-exact.

    The reference machine starts from the scratchpad the RTL started from
    (:attr:`RtlRun.spad_before`: reset does not clear it, docs/GA2.md section 2).

    Checks, in this order: for a job that must halt (:attr:`Job.halts`: a compiled graph), that
    the reference machine did (an error code there is a difference even when the RTL agrees);
    that the RTL stopped within the cycle limit; the error code and pc
    (and that ``error`` agrees with the code); that reset left every output of
    :data:`cosim.harness.CLEARED` at 0 (:attr:`RtlRun.unreset`); that no output moved after the stop
    (:attr:`RtlRun.drift`); that ``timing_fault`` is 0 (hw/top.py: it is 1
    when a unit finished in another cycle than the execute stage counted, which the counters
    and, often, the memories cannot show); each counter (sim.spec.ALL_COUNTERS); every external-memory
    word, then every scratchpad word (an unresolved word is a difference). Each line names
    what differs with the RTL's and the reference's values; a memory line gives the number of
    differing words and the first ``shown`` addresses, and is followed by a line naming the
    first one in the program's terms (:mod:`cosim.where`: the instruction that last wrote it,
    with its disassembly, and for a compiled program the tensor, its node, operation, name,
    row and column); after them, the earliest instruction whose written words differ, when
    those lines do not name it.

    Raises:
        TypeError, ValueError: the job is bad (as :func:`run_programs` checks it), or ``run``
            is not an :class:`RtlRun`.
    """
    if not isinstance(run, RtlRun):
        hint = " (run_programs returns a list: compare each job with its own run)" \
            if isinstance(run, (list, tuple)) else ""
        raise TypeError(f"run must be a cosim.jobs.RtlRun (one of run_programs' results), "
                        f"got {type(run).__name__}{hint}")
    job = as_job(job)
    try:
        job.check(run.params)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{job.name}: {e}") from None
    want = job.expected(run.params, run.spad_before)
    out = []
    if job.halts and want.error_code != ErrorCode.NONE:
        out.append(f"the reference machine stops with error {_code(int(want.error_code))} at pc "
                   f"{want.error_pc} ({want.detail}): a compiled program must end at its HALT")
    if not run.finished:
        out.append(f"no stop within the cycle limit of {run.limit} cycles (the reference stops after "
                   f"{want.counters.cycles}); the RTL's counters then: {run.counters}")
    if (run.error_code, run.error_pc) != (int(want.error_code), want.error_pc):
        reason = f": {want.detail}" if want.detail else ""
        out.append(f"stop: RTL error_code {_code(run.error_code)} at pc {run.error_pc}, reference "
                   f"{_code(int(want.error_code))} at pc {want.error_pc}{reason}")
    if run.error != int(want.error_code != ErrorCode.NONE):
        out.append(f"error output: RTL {'X' if run.error < 0 else run.error}, reference "
                   f"{int(want.error_code != ErrorCode.NONE)}")
    if run.unreset:
        out.append(_unreset(run.unreset))
    if run.finished and run.drift:
        out.append(_drift(run.drift))
    if run.timing_fault == 1:
        out.append(TIMING_FAULT)
    elif run.timing_fault != 0:
        out.append(f"timing_fault: RTL {'X' if run.timing_fault < 0 else run.timing_fault}, expected 0")
    for name, got, expected in zip(spec.ALL_COUNTERS, run.counters.as_tuple(spec.ALL_COUNTERS),
                                   want.counters.as_tuple(spec.ALL_COUNTERS), strict=True):
        if name in run.counters_x:
            out.append(f"counter {name}: RTL X, reference {expected}")
        elif got != expected:
            out.append(f"counter {name}: RTL {got}, reference {expected} ({got - expected:+d})")
    differing, summaries = {}, {}
    for memory, got, unresolved, expected in (("ext", run.ext, run.ext_x, want.ext),
                                              ("spad", run.spad, run.spad_x, want.spad)):
        bad = np.flatnonzero((got != expected) | unresolved)
        if len(bad):
            first = "; ".join(f"[{a}] RTL {_word(int(got[a]), bool(unresolved[a]))}, reference "
                              f"{_word(int(expected[a]))}" for a in bad[:shown])
            summaries[memory] = (f"{memory}: {counted(len(bad), 'word')} "
                                 f"{verb(len(bad), 'differs', 'differ')}; first {first}")
            differing[memory] = bad
    if differing:
        named = where.lines(job, want, run.params, differing)
        for memory, summary in summaries.items():
            out += [summary, named[memory]]
        if "earliest" in named:
            out.append(named["earliest"])
    return out
