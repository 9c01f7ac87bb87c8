"""The GA-2 reference machine: the golden model the RTL is compared against.

``Machine(params).run(program, ext)`` executes a program to HALT and returns the final
scratchpad, external memory and the cycle counters (five; seven at OVERLAP = 1). It is plain
code: each instruction is one numpy expression of GA2.md section 3's semantics, using
:mod:`sim.arith` for the arithmetic and :mod:`sim.spec` for the checks and the latencies.

Memories hold 32-bit words as ``numpy.uint32``; an int8 operand is the low byte of a word,
read as signed, and every result is stored sign-extended to 32 bits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import numpy as np

from . import arith, spec
from .asm import AsmError, Instruction, decode
from .spec import INSTR_WORDS, ErrorCode, Params
from .words import WORD_MASK, as_words


@dataclass
class Counters:
    """The 32-bit cycle counters (GA2.md section 5), in cycles: the five of every machine, and
    ``hazard`` and ``port`` (GA2.md section 7), which only a machine with OVERLAP = 1 reports
    (0 on the serial machine)."""

    cycles: int = 0
    dma: int = 0
    mxu: int = 0
    vpu: int = 0
    sfu: int = 0
    hazard: int = 0
    port: int = 0

    def as_tuple(self, names: tuple[str, ...] = spec.COUNTERS) -> tuple[int, ...]:
        """The counters ``names`` (default the five of :data:`sim.spec.COUNTERS`; a machine's
        own list is ``sim.spec.counters(params)``), in that order."""
        return tuple(getattr(self, name) for name in names)

    def __str__(self) -> str:
        # hazard and port only when a machine with OVERLAP = 1 counted a wait
        names = spec.COUNTERS + tuple(n for n in spec.OVERLAP_COUNTERS if getattr(self, n))
        return " ".join(f"{name}={getattr(self, name)}" for name in names)


@dataclass
class RunResult:
    """The machine's state when it stopped.

    Attributes:
        spad: the scratchpad, SPAD_WORDS uint32 words.
        ext: the external memory, EXT_WORDS uint32 words.
        counters: the cycle counters.
        steps: instructions dispatched, the final HALT (or faulting instruction) included.
        timeline: every unit instruction that ran, in program order (:class:`sim.spec.Placed`:
            pc, op, engine, start, end, and its hazard and port waits).
    """

    spad: np.ndarray
    ext: np.ndarray
    counters: Counters
    steps: int = 0
    timeline: list[spec.Placed] = field(default_factory=list)


class MachineError(Exception):
    """An illegal program stopped the machine (GA2.md section 3).

    Attributes:
        code: the :class:`~sim.spec.ErrorCode`, as the RTL reports it.
        pc: index of the offending instruction (for NO_HALT, the program length).
        detail: what was wrong, naming the field or region.
        result: the machine's state at the stop (memories as they were, counters including
            the STOP_CYCLES of the faulting instruction).
    """

    def __init__(self, code: ErrorCode, pc: int, detail: str, result: RunResult):
        self.code = code
        self.pc = pc
        self.detail = detail
        self.result = result
        super().__init__(f"error {int(code)} ({spec.ERROR_TEXT[code]}) at instruction {pc}: {detail}")


class DataFault(Exception):
    """Raised by an instruction's semantics when its data stops the machine (a code of
    :data:`sim.spec.DATA_ERRORS`: a GATHER's row number out of its table); the machine turns it
    into a :class:`MachineError` at that instruction, after its latency (GA2.md section 3)."""

    def __init__(self, code: ErrorCode, detail: str):
        self.code = code
        self.detail = detail
        super().__init__(detail)


class StepLimit(Exception):
    """The run was stopped by the caller's ``max_steps`` before the program stopped."""


def s8(words: np.ndarray) -> np.ndarray:
    """The low byte of each word as a signed int8 value (int64 array)."""
    return ((np.asarray(words, dtype=np.int64) & 0xFF) ^ 0x80) - 0x80


def s32(words: np.ndarray) -> np.ndarray:
    """Each word as a signed 32-bit value (int64 array)."""
    return np.asarray(words, dtype=np.uint32).view(np.int32).astype(np.int64)


def to_words(values: np.ndarray) -> np.ndarray:
    """Signed integers as 32-bit two's-complement words (uint32)."""
    return (np.asarray(values, dtype=np.int64) & WORD_MASK).astype(np.uint32)


# A decoded program entry: (spec, fields) or (None, raw opcode) for an unknown opcode.
_Decoded = tuple[spec.InstrSpec | None, dict[str, int] | int]


def _normalise(program: Sequence[Instruction] | Sequence[int]) -> list[_Decoded]:
    if isinstance(program, np.ndarray) or (len(program) and not isinstance(program[0], Instruction)):
        words = [int(w) for w in as_words(program, "encoded program")]
        if len(words) % INSTR_WORDS:
            raise ValueError(f"an encoded program is a multiple of {INSTR_WORDS} words, got {len(words)}")
        out: list[_Decoded] = []
        for i in range(0, len(words), INSTR_WORDS):
            chunk = words[i:i + INSTR_WORDS]
            try:
                ins = decode(chunk)
                out.append((ins.spec, ins.fields))
            except AsmError:
                out.append((None, chunk[0] & ((1 << spec.OPCODE_BITS) - 1)))
        return out
    out = []
    for k, ins in enumerate(program):
        if not isinstance(ins, Instruction):
            raise TypeError(f"program[{k}] is {type(ins).__name__}: a program is all Instructions "
                            "or all 32-bit words, not a mix")
        out.append((ins.spec, ins.fields))
    return out


class Machine:
    """The reference GA-2.

    Args:
        params: the machine's parameters (GA2.md section 1).
    """

    def __init__(self, params: Params):
        if not isinstance(params, Params):
            raise TypeError(f"Machine(params): expected sim.spec.Params, got {params!r}")
        self.params = params

    def run(self, program: Sequence[Instruction] | Sequence[int],
            ext: Sequence[int] | np.ndarray | None = None,
            *, spad: Sequence[int] | np.ndarray | None = None,
            max_steps: int | None = None) -> RunResult:
        """Run a program from reset to HALT.

        Args:
            program: a list of :class:`~sim.asm.Instruction`, or the encoded words
                (INSTR_WORDS per instruction).
            ext: the external-memory image the host loads, at most EXT_WORDS words (signed or
                unsigned 32-bit values); the rest is zero.
            spad: the scratchpad the program starts from, at most SPAD_WORDS words (the rest
                zero). Reset does not clear the scratchpad (GA2.md section 2): a program run
                after another starts from that one's final scratchpad, which cosim hands over
                here. None: all zero, as after configuration.
            max_steps: stop with :class:`StepLimit` after this many instructions. The machine
                has no branches, so every program stops by itself within len(program) + 1
                steps; this is a guard for callers.

        Returns:
            The final state (:class:`RunResult`).

        Raises:
            MachineError: the program is illegal (GA2.md section 3); carries the code, the pc
                and the state at the stop.
            TypeError: the program is not a list (a str, a dict or a set: no order of
                instructions), or an image is not a list of integers.
            ValueError: the program does not fit IMEM_WORDS, an image does not fit
                EXT_WORDS (SPAD_WORDS), or an image value does not fit 32 bits.
            StepLimit: more than max_steps instructions ran.
        """
        p = self.params
        if isinstance(program, (str, bytes)) or not hasattr(program, "__iter__"):
            raise TypeError("program must be a list of Instructions or of 32-bit words, "
                            f"got {type(program).__name__} (sim.asm.assemble turns text into Instructions)")
        if isinstance(program, (Mapping, AbstractSet)):
            raise TypeError(f"program must be a list of Instructions or of 32-bit words, got a "
                            f"{type(program).__name__}, which has no order of instructions (give a list)")
        if not isinstance(program, (Sequence, np.ndarray)):
            program = list(program)  # a generator or another iterable
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int)):
            raise TypeError(f"max_steps must be an int or None, got {max_steps!r}")
        decoded = _normalise(program)
        if len(decoded) > p.IMEM_WORDS:
            raise ValueError(f"program of {len(decoded)} instructions does not fit IMEM_WORDS={p.IMEM_WORDS}")
        state = RunResult(_image(spad, "SPAD_WORDS", p, "initial scratchpad"),
                          _image(ext, "EXT_WORDS", p, "external-memory image"), Counters())
        issue = spec.issue_rule(p, record=True)
        state.timeline = issue.timeline     # an LD's end grows while later writers are placed
        pc = 0
        while True:
            if max_steps is not None and state.steps >= max_steps:
                raise StepLimit(f"stopped after max_steps={max_steps} instructions, at pc {pc}")
            state.steps += 1
            if pc == len(decoded):
                self._stop(state, issue, ErrorCode.NO_HALT, pc, f"no HALT in the {len(decoded)} instructions")
            ispec, fields = decoded[pc]
            if ispec is None:
                self._stop(state, issue, ErrorCode.BAD_OPCODE, pc, f"opcode {fields}")
            if not spec.built(ispec, p):
                self._stop(state, issue, ErrorCode.BAD_OPCODE, pc,
                           f"opcode {int(ispec.opcode)} ({ispec.name}) is built only at OVERLAP >= "
                           f"{ispec.overlap_min}, this machine has OVERLAP = {p.OVERLAP}")
            code, detail = spec.check(ispec, fields, p)
            if code is not ErrorCode.NONE:
                self._stop(state, issue, code, pc, detail)
            if ispec.counter is None:  # HALT
                self._finish(state, issue)
                return state
            issue.place(pc, ispec, fields)
            # every earlier instruction's effect first: the issue rule keeps the order's meaning
            try:
                _EXECUTE[ispec.name](state.spad, state.ext, fields)
            except DataFault as fault:   # it ran its latency and wrote nothing; nothing after it ran
                self._stop(state, issue, fault.code, pc, fault.detail)
            pc += 1

    @staticmethod
    def _finish(state: RunResult, issue: spec.Issue) -> None:
        """The counters at the stop; a machine whose watchdog stopped it (OVERLAP = 2: a broken
        issue rule, never a correct one) raises STALL there."""
        _count(state.counters, issue)
        stall = getattr(issue, "stall", None)
        if stall is not None:
            raise MachineError(ErrorCode.STALL, stall, "the watchdog stopped the machine: nothing "
                               "could be dispatched", state)

    @classmethod
    def _stop(cls, state: RunResult, issue: spec.Issue, code: ErrorCode, pc: int, detail: str) -> None:
        cls._finish(state, issue)
        raise MachineError(code, pc, detail, state)


def _count(c: Counters, issue: spec.Issue) -> None:
    """The counters of a run the issue rule has placed, at its stop."""
    c.cycles = issue.stop() + spec.STOP_CYCLES
    for engine, busy in issue.busy.items():
        setattr(c, engine, busy)
    c.hazard, c.port = issue.hazard, issue.port


def _image(values: Sequence[int] | np.ndarray | None, size: str, params: Params, what: str) -> np.ndarray:
    """A memory of ``params.<size>`` words: ``values`` (checked 32-bit words), then zeros."""
    image = np.zeros(getattr(params, size), dtype=np.uint32)
    if values is not None:
        words = as_words(values, what)
        if len(words) > len(image):
            raise ValueError(f"{what} of {len(words)} words does not fit {size}={len(image)}")
        image[:len(words)] = words
    return image


def predict_counters(program: Sequence[Instruction], params: Params) -> Counters:
    """The counters a legal program ending in HALT reaches, without running it (assuming no
    GATHER's row number is out of its table: that depends on the data, :data:`sim.spec.DATA_ERRORS`).

    Raises:
        ValueError: an instruction before the first HALT is illegal, or there is no HALT.
    """
    c = Counters()
    issue = spec.issue_rule(params)
    for pc, ins in enumerate(program):
        if not spec.built(ins.spec, params):
            raise ValueError(f"instruction {pc} ({ins.op}) is not built on this machine (OVERLAP = "
                             f"{params.OVERLAP}; it needs {ins.spec.overlap_min})")
        code, detail = spec.check(ins.spec, ins.fields, params)
        if code is not ErrorCode.NONE:
            raise ValueError(f"instruction {pc} is illegal ({spec.ERROR_TEXT[code]}): {detail}")
        if ins.spec.counter is None:
            _count(c, issue)
            return c
        issue.place(pc, ins.spec, ins.fields)
    raise ValueError("the program has no HALT")


# --------------------------------------------------------------------------- semantics, one per instruction
# Each function applies one legal instruction (already checked) to the memories in place.


def _ld(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    n = f["len"]
    if f.get("fmt", 0):
        # packed int8: byte j of E[src+i] is element 4i+j (GA2.md section 2)
        words = ext[f["src"]:f["src"] + -(-n // spec.INT8_PER_WORD)].astype(np.int64)
        nbytes = (words[:, None] >> (8 * np.arange(spec.INT8_PER_WORD))[None, :]) & 0xFF
        spad[f["dst"]:f["dst"] + n] = to_words(s8(nbytes.ravel()[:n]))
    else:
        spad[f["dst"]:f["dst"] + n] = ext[f["src"]:f["src"] + n]


def _st(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    ext[f["dst"]:f["dst"] + f["len"]] = spad[f["src"]:f["src"] + f["len"]]


def _mm(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    _write_rows(spad, f, to_words(_mm_product(spad, f)))


def _mmrq(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    # MM's int32 result (acc included, modulo 2^32), requantized per column: (m_j, s_j) is the
    # pair of S[tab + pc*j] (GA2.md section 3); the entries are read before any row is written
    total = s32(to_words(_mm_product(spad, f)))
    m, s = arith.unpack_rq_pair_array(spad[f["tab"] + f["pc"] * np.arange(f["N"])])
    _write_rows(spad, f, to_words(arith.requant_array(total, m[None, :], s[None, :], bool(f["relu"]))))


def _write_rows(spad: np.ndarray, f: dict[str, int], out: np.ndarray) -> None:
    for row in range(f["M"]):                              # rows in increasing i: a later row wins
        start = f["dst"] + row * f["ldc"]
        spad[start:start + f["N"]] = out[row]


def _mm_product(spad: np.ndarray, f: dict[str, int]) -> np.ndarray:
    """MM's M x N result as int64 (not yet wrapped): A @ B, plus the old int32 rows with acc = 1."""
    i = np.arange(f["M"])[:, None]
    t = np.arange(f["K"])
    j = np.arange(f["N"])[None, :]
    a = s8(spad[f["A"] + i * f["lda"] + t[None, :]])       # M x K
    if f["tb"]:
        b = s8(spad[f["B"] + j * f["ldb"] + t[:, None]])   # K x N, element (t, j) at B + j*ldb + t
    else:
        b = s8(spad[f["B"] + t[:, None] * f["ldb"] + j])   # K x N, element (t, j) at B + t*ldb + j
    product = a @ b
    if f.get("acc", 0):                                    # dst += A @ B, modulo 2^32; the rows
        rows = f["dst"] + i * f["ldc"] + j                 # are disjoint (spec.check)
        product = product + s32(spad[rows])
    return product


def _rq(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    a = s32(spad[f["src"]:f["src"] + f["len"]])
    if f.get("pc", 0):     # per channel: element i takes the pair of table entry i mod C
        m, s = arith.unpack_rq_pair_array(spad[f["tab"] + np.arange(f["len"]) % f["C"]])
    else:
        m, s = f["m"], f["s"]
    spad[f["dst"]:f["dst"] + f["len"]] = to_words(arith.requant_array(a, m, s, bool(f["relu"])))


def _sm(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    row = s8(spad[f["src"]:f["src"] + f["len"]])
    spad[f["dst"]:f["dst"] + f["len"]] = to_words(arith.softmax_fixed_array(row))


def _vadd(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    a = s8(spad[f["src1"]:f["src1"] + f["len"]])
    b = s8(spad[f["src2"]:f["src2"] + f["len"]])
    combine = arith.vmax_array if f.get("max", 0) else arith.sat_add_array
    spad[f["dst"]:f["dst"] + f["len"]] = to_words(combine(a, b, bool(f["relu"])))


def _amax(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    # np.argmax returns the index of the first maximum
    spad[f["dst"]] = int(np.argmax(s8(spad[f["src"]:f["src"] + f["len"]])))


def _unpack(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    words = spad[f["src"]:f["src"] + f["len"]].astype(np.int64)
    # element 8i + j sits in bits 4j+3..4j of word i
    nibbles = (words[:, None] >> (4 * np.arange(8))[None, :]) & 0xF
    spad[f["dst"]:f["dst"] + 8 * f["len"]] = to_words(np.where(nibbles >= 8, nibbles - 16, nibbles).ravel())


def _lut(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    table = s8(spad[f["table"]:f["table"] + spec.LUT_TABLE_WORDS])   # read whole, before any write
    x = s8(spad[f["src"]:f["src"] + f["len"]])
    spad[f["dst"]:f["dst"] + f["len"]] = to_words(table[x + 128])


def _ln(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    x = s8(spad[f["src"]:f["src"] + f["len"]])
    bias = s32(spad[f["bias"]:f["bias"] + f["len"]])        # read whole before any write
    spad[f["dst"]:f["dst"] + f["len"]] = to_words(arith.layernorm_fixed_array(x, f["eps"]) + bias)


def gather_row(spad: np.ndarray, f: dict[str, int]) -> int:
    """The row a GATHER reads: S[idx] as unsigned 32-bit.

    Raises:
        DataFault: BAD_INDEX, the row is not below ``rows``; the message names the fields.
    """
    row = int(spad[f["idx"]])
    if row >= f["rows"]:
        shown = row - (1 << 32) if row >> 31 else row
        raise DataFault(ErrorCode.BAD_INDEX, f"GATHER idx={f['idx']}: row number S[{f['idx']}] = {row} "
                        f"({shown} as signed) is not below rows={f['rows']}")
    return row


def _gather(spad: np.ndarray, ext: np.ndarray, f: dict[str, int]) -> None:
    row = gather_row(spad, f)
    words = -(-f["len"] // spec.INT8_PER_WORD) if f["fmt"] else f["len"]
    _ld(spad, ext, {"dst": f["dst"], "src": f["src"] + row * words, "len": f["len"], "fmt": f["fmt"]})


def apply(ins: Instruction, spad: np.ndarray, ext: np.ndarray) -> None:
    """Apply one instruction's semantics to the memories, in place, with no checks and no counters.

    For unit test benches that start from a given scratchpad; the instruction must be legal
    (check it with :func:`sim.spec.check`). HALT does nothing.

    Raises:
        DataFault: a GATHER's row number is out of its table (the memories are unchanged).
    """
    if ins.op != "HALT":
        _EXECUTE[ins.op](spad, ext, ins.fields)


_EXECUTE = {"LD": _ld, "ST": _st, "MM": _mm, "MMRQ": _mmrq, "RQ": _rq, "SM": _sm,
            "VADD": _vadd, "AMAX": _amax, "UNPACK": _unpack,
            "LUT": _lut, "LN": _ln, "GATHER": _gather}
assert set(_EXECUTE) | {"HALT"} == set(spec.BY_NAME), "every instruction of the spec has semantics here"
