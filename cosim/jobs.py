"""Jobs, expected results and RTL results, and the files that carry them into the simulator.

A *job* is one program and the external-memory image the host loads with it. The host side
(:mod:`cosim.api`) writes a batch of jobs to a ``.npz`` file; the cocotb test bench
(:mod:`cosim.tb`), which runs inside the simulator's process, reads it, runs every job back to
back and writes the results to another ``.npz`` file, which the host reads back as
:class:`RtlRun` objects.

This module needs numpy and :mod:`sim` only (no cocotb), so both sides import it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim import spec
from sim.asm import Instruction, encode_program
from sim.machine import Counters, Machine, MachineError, RunResult
from sim.spec import ErrorCode, Params
from sim.words import as_words

LIMIT_FACTOR = 2
LIMIT_SLACK = 200
"""A job's cycle limit is LIMIT_FACTOR x the reference's cycles + LIMIT_SLACK (the RTL must
reach exactly the reference's count; the margin only decides when to give up waiting)."""

X = -1
"""Stands for an unresolved value (X or Z) in the int64 arrays of a results file."""


@dataclass
class Expected:
    """What the reference machine (:class:`sim.machine.Machine`) does with a job.

    Attributes:
        spad, ext: the memories when it stopped (uint32).
        counters: the counters (sim.spec.ALL_COUNTERS).
        error_code: :class:`~sim.spec.ErrorCode` (NONE after a HALT).
        error_pc: the pc of the instruction that stopped it: the HALT's, the faulting one's,
            or the program length for NO_HALT (what the RTL's ``error_pc`` shows).
        detail: the reference's message for an error ("" after a HALT).
        timeline: every instruction that ran, in program order (``sim.spec.Placed``: its
            dispatch, end, waits and, at OVERLAP = 2, when it entered its queue), for coverage.
    """

    spad: np.ndarray
    ext: np.ndarray
    counters: Counters
    error_code: ErrorCode
    error_pc: int
    detail: str = ""
    timeline: list = field(default_factory=list)


@dataclass
class Job:
    """One program to run on the RTL.

    Attributes:
        program: the instructions (:class:`sim.asm.Instruction`), or the encoded 32-bit words
            (INSTR_WORDS per instruction; for programs holding an unknown opcode).
        ext: the external-memory image, at most EXT_WORDS words (padded with zeros); None:
            all zero (as :meth:`sim.machine.Machine.run` takes it).
        name: how reports name it (a seed, a file, an index).
        limit: cycles to wait for ``done`` before giving up; None: from the reference's
            cycle count (:data:`LIMIT_FACTOR`, :data:`LIMIT_SLACK`).
        machine: the machine parameters the program was made for (a compiled program's
            ``Program.machine``); a Verilog generated with other parameters refuses it before
            anything runs (:meth:`check`). None: made for any machine (hand-written programs).
        halts: the program must stop at its HALT (a compiled graph): a run where the
            reference machine stops with an error code is a difference, however well the RTL
            agrees (:func:`cosim.api.compare`).
        compiled: the compiled program (``compiler.Program``) the job was made from, or None;
            with it, :func:`cosim.api.compare` names the tensor behind a differing word
            (``Program.whose``), not only the instruction that wrote it.
        via_port: the test harness writes the program through the host's instruction-memory
            port (``imem_we``, one word per cycle after reset, as a user's SoC does) instead of
            into the memory's arrays by backdoor; the counters do not see those cycles.
    """

    program: Sequence[Instruction] | Sequence[int]
    ext: np.ndarray | Sequence[int] | None = None
    name: str = ""
    limit: int | None = None
    machine: Params | None = None
    halts: bool = False
    compiled: Any = field(default=None, repr=False, compare=False)
    via_port: bool = False
    _expected: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of_program(cls, program, inputs, name: str = "") -> Job:
        """The job of a compiled program (``compiler.Program``) on the given inputs: its code,
        its external-memory image (``program.ext_image(inputs)``), made for
        ``program.machine``, and required to halt; it keeps the program (:attr:`compiled`)."""
        return cls(program.code, program.ext_image(inputs), name, machine=program.machine, halts=True,
                   compiled=program)

    @classmethod
    def of_launches(cls, program, inputs, name: str = "") -> list[Job]:
        """The jobs of a compiled program that runs in launches (``Program.launches``, a
        program longer than the instruction memory), in order: launch k's external image is
        the one the reference machine leaves after launch k - 1 (its scratchpad comes from the
        run before it, as the test bench hands it over), so that run one after another in one
        batch they check the whole program. Each is required to halt."""
        jobs, state = [], None
        ext = program.ext_image(inputs)
        for k, code in enumerate(program.launches()):
            image = ext if state is None else state.ext
            jobs.append(cls(code, image, f"{name} launch {k + 1}", machine=program.machine, halts=True))
            state = Machine(program.machine).run(code, image, spad=None if state is None else state.spad)
        return jobs

    @property
    def words(self) -> np.ndarray:
        """The encoded program (uint32).

        Raises:
            TypeError: the program is not a list of Instructions or of integers.
            ValueError: a word does not fit 32 bits, or the words are not whole instructions.
        """
        return program_words(self.program)

    @property
    def length(self) -> int:
        """The program's length in instructions (``prog_len``)."""
        return len(self.words) // spec.INSTR_WORDS

    def ext_image(self, params: Params) -> np.ndarray:
        """The full external-memory image, EXT_WORDS uint32 words.

        Raises:
            TypeError: the image is not a list or array of integers.
            ValueError: it is longer than EXT_WORDS, not one-dimensional, or a value does not
                fit 32 bits.
        """
        image = np.zeros(params.EXT_WORDS, dtype=np.uint32)
        if self.ext is None:
            return image
        values = as_words(self.ext, "the external-memory image", params.EXT_WORDS)
        image[:len(values)] = values
        return image

    def check(self, params: Params) -> None:
        """Everything :func:`write_jobs` and the reference need, checked before any simulator
        starts: the program's words, its length, the image, the limit.

        Raises:
            TypeError, ValueError: what is wrong (without the job's name: see :func:`as_jobs`);
                ValueError names both parameter sets when the program was made for another
                machine.
        """
        if self.machine is not None and self.machine != params:
            raise ValueError(f"the program was made for the machine {_params_text(self.machine)}, but the "
                             f"Verilog was generated for {_params_text(params)}: compile it for the "
                             "Verilog's parameters, or export the Verilog for the program's "
                             "(python -m flows.export --param NAME=VALUE)")
        words = self.words
        if len(words) % spec.INSTR_WORDS:
            raise ValueError(f"the program has {len(words)} words, not a multiple of {spec.INSTR_WORDS} "
                             "(one instruction is that many words)")
        if len(words) // spec.INSTR_WORDS > params.IMEM_WORDS:
            raise ValueError(f"the program's {len(words) // spec.INSTR_WORDS} instructions do not fit "
                             f"IMEM_WORDS={params.IMEM_WORDS}")
        self.ext_image(params)
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int)
                                       or self.limit < 1):
            raise ValueError(f"limit={self.limit!r}: a cycle limit is a positive int (or None: from the "
                             "reference's cycles)")

    def expected(self, params: Params, spad: np.ndarray | None = None) -> Expected:
        """The reference machine's run of this job from the scratchpad ``spad`` (SPAD_WORDS
        uint32 words: what the previous program left, since reset does not clear it; None or
        all zero: as after configuration), computed once per params and starting scratchpad."""
        start = None if spad is None or not np.any(spad) else np.asarray(spad, np.uint32)
        key = (params, None if start is None else hashlib.sha256(start.tobytes()).hexdigest())
        if key not in self._expected:
            program = self.program if _is_instructions(self.program) else self.words
            self._expected[key] = reference(program, self.ext_image(params), params, start)
        return self._expected[key]

    def cycle_limit(self, params: Params) -> int:
        """The cycles to wait (:attr:`limit`, or from the reference's count, which no
        instruction's data changes: GA2.md section 5)."""
        if self.limit is not None:
            return self.limit
        return LIMIT_FACTOR * self.expected(params).counters.cycles + LIMIT_SLACK


def _params_text(params: Params) -> str:
    return " ".join(f"{f.name}={getattr(params, f.name)}" for f in dataclasses.fields(params))


JobLike = Job | tuple
"""A :class:`Job`, or a tuple (program, ext) or (program, ext, name); ext may be None."""


def as_job(job: JobLike, index: int = 0) -> Job:
    """Accept a :class:`Job` or a (program, ext[, name]) tuple; unnamed jobs are named by index.

    Raises:
        TypeError: anything else (the message names the job by its index).
    """
    if isinstance(job, Job):
        if not job.name:
            job.name = f"job {index}"
        return job
    if isinstance(job, tuple) and len(job) in (2, 3):
        name = job[2] if len(job) == 3 else f"job {index}"
        return Job(job[0], job[1], str(name))
    got = f"a tuple of {len(job)}" if isinstance(job, tuple) else type(job).__name__
    hint = ""
    if isinstance(job, (list, np.ndarray, Instruction, int)):
        hint = " (a list of jobs holds tuples: [(program, ext), ...], not the program itself)"
    elif isinstance(job, str):
        hint = " (sim.asm.assemble turns text into Instructions)"
    raise TypeError(f"job {index}: expected a cosim.jobs.Job or a (program, ext[, name]) tuple, "
                    f"got {got}{hint}")


def label(job: Job, index: int) -> str:
    """How an error names a job: ``job 3``, or ``job 3 (its name)``."""
    return f"job {index}" if job.name in ("", f"job {index}") else f"job {index} ({job.name})"


def as_jobs(jobs: Sequence[JobLike], params: Params) -> list[Job]:
    """Every job as a :class:`Job`, checked (:meth:`Job.check`) against the machine.

    Raises:
        TypeError, ValueError: the first bad job, named (``job 3 (its name): ...``).
    """
    if isinstance(jobs, (Job, str, bytes, dict)) or not hasattr(jobs, "__iter__"):
        raise TypeError(f"jobs must be a list of jobs (a Job or a (program, ext[, name]) tuple each), "
                        f"got {type(jobs).__name__}")
    out = []
    for k, item in enumerate(jobs):
        job = as_job(item, k)
        try:
            job.check(params)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{label(job, k)}: {e}") from None
        out.append(job)
    return out


def _is_instructions(program) -> bool:
    return len(program) > 0 and all(isinstance(ins, Instruction) for ins in program)


def program_words(program: Sequence[Instruction] | Sequence[int]) -> np.ndarray:
    """A program (Instructions, or encoded words) as its uint32 words.

    Raises:
        TypeError: not a list of Instructions or of integers (or a mix of both).
        ValueError: a word does not fit 32 bits.
    """
    if isinstance(program, str):
        raise TypeError("the program must be a list of sim.asm.Instruction or of 32-bit words, got str "
                        "(sim.asm.assemble turns text into Instructions)")
    if isinstance(program, (Sequence, np.ndarray)) and not isinstance(program, bytes):
        if _is_instructions(program):
            return np.asarray(encode_program(program), dtype=np.uint32)
        if any(isinstance(ins, Instruction) for ins in program):
            raise TypeError("the program mixes Instructions and words: give one or the other "
                            "(Instruction.encode() gives an instruction's words)")
    elif isinstance(program, Instruction):
        raise TypeError("the program is one Instruction, not a list of them")
    return as_words(program, "the program")


def reference(program: Sequence[Instruction] | Sequence[int], ext, params: Params,
              spad: np.ndarray | None = None) -> Expected:
    """Run a program on the reference machine (from the scratchpad ``spad``, None: zero); an
    illegal program's error becomes part of the result."""
    try:
        result: RunResult = Machine(params).run(program, ext, spad=spad)
    except MachineError as stop:
        r = stop.result
        return Expected(r.spad, r.ext, r.counters, stop.code, stop.pc, stop.detail, r.timeline)
    return Expected(result.spad, result.ext, result.counters, ErrorCode.NONE, result.steps - 1,
                    timeline=result.timeline)


@dataclass
class RtlRun:
    """One job as the RTL ran it (the memories and outputs the test harness dumped).

    Attributes:
        name: the job's name.
        simulator: ``icarus`` or ``verilator``.
        params: the machine the Verilog was generated for.
        finished: ``done`` rose within the cycle limit.
        limit: the cycle limit the test bench waited for.
        waited: clock cycles from ``start`` until ``done`` rose (the limit when it did not).
        ext, spad: the memories after the stop (uint32; an unresolved word reads 0 here and is
            flagged in ``ext_x`` / ``spad_x``).
        counters: ``count_cycles`` .. ``count_sfu``.
        error: the ``error`` output; error_code, error_pc as the RTL reports them (-1: X/Z).
        timing_fault: the core's ``timing_fault`` self-check (hw/top.py), read
            TIMING_CHECK_DELAY cycles after ``done`` rose: 1 when a unit's ``done`` and the
            execute stage's countdown disagreed in some cycle of the run, 0 when not (-1: X/Z).
        ext_x, spad_x: True where a word held X or Z bits.
        counters_x: the names of counters that held X or Z bits.
        seconds: wall time the test bench spent on the job (reset, load, run, read back).
        sim_seconds: the part of it the simulator spent on the job (from the test bench's
            request to the harness's answer: reset, loads, the run, the dumps).
        sim_cpu_seconds: the processor time of the simulator's process in that part (less
            sensitive than wall time to other work on the machine).
        spad_before: the scratchpad the program started from: the one the previous job of the
            same launch left (reset does not clear it: docs/GA2.md section 2; an unresolved
            word reads 0 here), None for a launch's first job (the Verilog's memories start
            at 0). :func:`cosim.api.compare` starts the reference machine from it.
        started: the simulation time, in ns, at which the harness raised ``start`` (the
            program's marker in a waveform), -1 when unknown.
        drift: bit i set when output ``cosim.harness.HELD[i]`` changed in the
            HOLD_CYCLES cycles after it was read (they must hold from the stop until the next
            reset), 0 when none did, -1 when unknown.
        unreset: bit i set when output ``cosim.harness.CLEARED[i]`` was not 0 right after the
            reset before this job (docs/GA2.md section 2: reset clears the registers and the
            counters), 0 when all were, -1 when unknown.
    """

    name: str
    simulator: str
    params: Params
    finished: bool
    limit: int
    waited: int
    ext: np.ndarray
    spad: np.ndarray
    counters: Counters
    error: int
    error_code: int
    error_pc: int
    timing_fault: int
    ext_x: np.ndarray
    spad_x: np.ndarray
    counters_x: tuple[str, ...] = ()
    seconds: float = 0.0
    sim_seconds: float = 0.0
    sim_cpu_seconds: float = 0.0
    spad_before: np.ndarray | None = field(default=None, repr=False)
    started: int = -1
    drift: int = 0
    unreset: int = 0


# --------------------------------------------------------------------------- files


def params_to_json(params: Params) -> str:
    return json.dumps(dataclasses.asdict(params), sort_keys=True)


def params_from_json(text: str) -> Params:
    return Params(**json.loads(text))


def write_jobs(path: Path, jobs: Sequence[Job], params: Params) -> None:
    """The batch file the test bench reads (see :func:`read_jobs`)."""
    for k, job in enumerate(jobs):
        try:
            job.check(params)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{job.name or label(job, k)}: {e}") from None
    words = [job.words for job in jobs]
    offsets = np.cumsum([0, *(len(w) for w in words)]).astype(np.int64)
    np.savez(
        path,
        params=np.array(params_to_json(params)),
        names=np.array([job.name for job in jobs], dtype=str),
        words=np.concatenate(words) if words else np.zeros(0, np.uint32),
        offsets=offsets,
        ext=np.stack([job.ext_image(params) for job in jobs]) if jobs
        else np.zeros((0, params.EXT_WORDS), np.uint32),
        limit=np.array([job.cycle_limit(params) for job in jobs], dtype=np.int64),
        port=np.array([bool(job.via_port) for job in jobs], dtype=bool),
    )


@dataclass
class JobBatch:
    """A batch as the test bench sees it."""

    params: Params
    names: list[str]
    words: list[np.ndarray]
    ext: np.ndarray
    limit: list[int]
    port: list[bool]

    def __len__(self) -> int:
        return len(self.names)


def read_jobs(path: Path) -> JobBatch:
    with np.load(path) as f:
        offsets = f["offsets"]
        words = f["words"]
        return JobBatch(
            params=params_from_json(str(f["params"])),
            names=[str(n) for n in f["names"]],
            words=[words[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)],
            ext=f["ext"],
            limit=[int(v) for v in f["limit"]],
            port=[bool(v) for v in f["port"]],
        )


RESULT_ARRAYS = ("finished", "waited", "ext", "spad", "ext_x", "spad_x", "counters", "counters_x",
                 "error", "error_code", "error_pc", "timing_fault", "seconds", "sim_seconds",
                 "sim_cpu_seconds", "started", "drift", "unreset")
"""The arrays of a results file, one row per job, as :func:`write_results` stores them."""


def empty_results(n: int, params: Params) -> dict[str, np.ndarray]:
    """Result arrays for n jobs, to be filled row by row by the test bench."""
    return {
        "finished": np.zeros(n, bool),
        "waited": np.zeros(n, np.int64),
        "ext": np.zeros((n, params.EXT_WORDS), np.uint32),
        "spad": np.zeros((n, params.SPAD_WORDS), np.uint32),
        "ext_x": np.zeros((n, params.EXT_WORDS), bool),
        "spad_x": np.zeros((n, params.SPAD_WORDS), bool),
        "counters": np.zeros((n, len(spec.ALL_COUNTERS)), np.int64),
        "counters_x": np.zeros((n, len(spec.ALL_COUNTERS)), bool),
        "error": np.full(n, X, np.int64),
        "error_code": np.full(n, X, np.int64),
        "error_pc": np.full(n, X, np.int64),
        "timing_fault": np.full(n, X, np.int64),
        "seconds": np.zeros(n, np.float64),
        "sim_seconds": np.zeros(n, np.float64),
        "sim_cpu_seconds": np.zeros(n, np.float64),
        "started": np.full(n, X, np.int64),
        "drift": np.full(n, X, np.int64),
        "unreset": np.full(n, X, np.int64),
    }


def write_results(path: Path, results: dict[str, np.ndarray]) -> None:
    np.savez(path, **results)


def read_results(path: Path, batch_names: Sequence[str], limits: Sequence[int], simulator: str,
                 params: Params) -> list[RtlRun]:
    """The results file as :class:`RtlRun` objects, in job order; each run's ``spad_before`` is
    the previous run's ``spad`` (the same array)."""
    with np.load(path) as f:
        r = {name: f[name] for name in RESULT_ARRAYS}
    runs = []
    for k, name in enumerate(batch_names):
        counters = Counters(*(int(v) for v in r["counters"][k]))
        runs.append(RtlRun(
            name=name, simulator=simulator, params=params,
            finished=bool(r["finished"][k]), limit=int(limits[k]), waited=int(r["waited"][k]),
            ext=r["ext"][k].copy(), spad=r["spad"][k].copy(), counters=counters,
            error=int(r["error"][k]), error_code=int(r["error_code"][k]), error_pc=int(r["error_pc"][k]),
            timing_fault=int(r["timing_fault"][k]),
            ext_x=r["ext_x"][k].copy(), spad_x=r["spad_x"][k].copy(),
            counters_x=tuple(n for n, bad in zip(spec.ALL_COUNTERS, r["counters_x"][k], strict=True) if bad),
            seconds=float(r["seconds"][k]), sim_seconds=float(r["sim_seconds"][k]),
            sim_cpu_seconds=float(r["sim_cpu_seconds"][k]),
            spad_before=runs[-1].spad if runs else None, started=int(r["started"][k]),
            drift=int(r["drift"][k]), unreset=int(r["unreset"][k]),
        ))
    return runs
