"""The GA-2 instruction set, declared once.

Everything that another part of the project needs to know about the machine lives here:
the parameters (GA2.md section 1), the opcodes and each instruction's fields with their
bit widths and legal ranges (GA2.md section 3), the fixed-width binary encoding, the error
codes and the order in which they are checked, the memory regions each instruction reads
and writes (for the bounds and overlap checks), and each instruction's latency in cycles as
a closed-form function of its fields (GA2.md sections 5 and 6).

The encoder, decoder and disassembler (:mod:`sim.asm`), the reference machine
(:mod:`sim.machine`), the ISA reference page (``docs/isa.md``, written by :mod:`sim.isadoc`)
and the hardware decoder and checker (``hw/``) are all derived from this module.

The formulas (region extents, latencies) take the arithmetic they run on as their first
argument (:class:`Arith`): Python ints for the reference machine, Amaranth values (pipelined or
not) for the hardware, text for the ISA page, all from the one formula.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

# --------------------------------------------------------------------------- encoding

WORD_BITS = 32
"""Width of a memory word and of an instruction word."""
INSTR_WORDS = 4
"""An instruction is encoded in this many 32-bit words (128 bits), least significant word first."""
INSTR_BITS = INSTR_WORDS * WORD_BITS
OPCODE_BITS = 4
"""The opcode sits in bits 3..0 of the first word; the fields follow, packed upwards in table order."""
ADDR_BITS = 16
"""Width of every address, length and stride field."""
PC_BITS = 16
"""Width of the program counter (and of the error pc the RTL reports)."""


# --------------------------------------------------------------------------- parameters

T_MAX = 16
"""The largest array the generator builds (Params.T; the M and N fields have room for more)."""
LANES_BUILT = (4, 8, 16)
"""The data path widths the generator builds (Params.LANES), in words per cycle."""


@dataclass(frozen=True, repr=False)
class Params:
    """The machine's size parameters (GA2.md section 1).

    The hardware generator, the reference machine and the compiler take the same object; a
    value none of them can build or run is refused here, before anything is built or written.

    Attributes:
        T: the systolic array is T x T; one MM computes at most T x T outputs. 1..16 (the
            generator's sizes), at most LANES.
        K_MAX: largest inner dimension of one MM (1..255: the K field is 8 bits).
        SPAD_WORDS: scratchpad size in 32-bit words, a power of two from LANES to 65536 (the
            16-bit address fields reach every word).
        EXT_WORDS: external memory seen by the DMA, in 32-bit words (same rule).
        IMEM_WORDS: instruction memory capacity, in instructions.
        SM_MAX_LEN: longest softmax row, in elements.
        LANES: words moved per cycle by the scratchpad ports, the DMA and the vector units
            (GA2.md section 6): 4, 8 or 16, and at least T (the MXU reads a row of B and
            writes a row of the output in one access, and M <= T rows of A per LANES steps).
        OVERLAP: 0, the serial machine (one instruction at a time); 1, the engines (DMA, MXU,
            vector unit, softmax unit) run side by side, by the issue rule of :class:`Issue`
            (GA2.md section 7); 2, the engines decoupled: each has its own in-order queue and an
            instruction starts when its own hazards clear, by the rule of :class:`Decoupled`
            (GA2.md section 7).

    Raises:
        ValueError: a parameter is out of the range the encoding or the hardware supports;
            the message names the parameter, shows the bad value and the legal range.
    """

    T: int = 4
    K_MAX: int = 64
    SPAD_WORDS: int = 4096
    EXT_WORDS: int = 65536
    IMEM_WORDS: int = 4096
    SM_MAX_LEN: int = 64
    LANES: int = 4
    OVERLAP: int = 0

    def __post_init__(self) -> None:
        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise ValueError(f"Params.{name} = {getattr(self, name)!r}: {what}")

        for name in PARAM_NAMES:
            value = getattr(self, name)
            if name == "OVERLAP":
                need(isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2), name,
                     "must be 0 (serial), 1 (engines side by side) or 2 (engines decoupled)")
                continue
            need(isinstance(value, int) and not isinstance(value, bool) and value >= 1, name,
                 "must be a positive int")
        need(self.LANES in LANES_BUILT, "LANES",
             f"must be one of {', '.join(map(str, LANES_BUILT))} (the widths the generator builds)")
        need(self.T <= T_MAX, "T", f"must be 1..{T_MAX} (the array sizes the generator builds)")
        need(self.T <= self.LANES, "LANES",
             f"must be at least T = {self.T} (the MXU moves a row of B and of the output in one "
             f"access): LANES in {', '.join(str(n) for n in LANES_BUILT if n >= self.T)}")
        need(self.K_MAX <= 255, "K_MAX", "must be 1..255 (the K field is 8 bits)")
        for name in ("SPAD_WORDS", "EXT_WORDS"):
            value = getattr(self, name)
            need(value & (value - 1) == 0 and self.LANES <= value <= 1 << ADDR_BITS, name,
                 f"must be a power of two from LANES = {self.LANES} to {1 << ADDR_BITS} "
                 f"(address fields are {ADDR_BITS} bits)")
        need(4096 <= self.IMEM_WORDS <= 1 << 16, "IMEM_WORDS",
             "must be 4096..65536 (GA2.md section 1 asks for 4096; the pc is 16 bits)")
        need(64 <= self.SM_MAX_LEN <= 1024, "SM_MAX_LEN",
             "must be 64..1024 (GA2.md section 1 asks for 64; the softmax sum is 27 bits)")

    def __repr__(self) -> str:
        # OVERLAP is left out while 0, so that the serial machine reads as it did before it
        # existed (compiler reports, golden files, build records)
        shown = [name for name in PARAM_NAMES if name != "OVERLAP" or self.OVERLAP]
        return f"Params({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"


PARAM_NAMES: tuple[str, ...] = tuple(Params.__dataclass_fields__)
"""The parameters' names, in declaration order."""
DEFAULT = Params()
"""The default machine: GA2.md section 1 (T = 4, LANES = 4, SPAD_WORDS = 4096, EXT_WORDS = 65536)."""

class Opcode(enum.IntEnum):
    """Opcode values (design). 0 is deliberately not an instruction: a zeroed word is an
    unknown opcode, so a machine that runs into uninitialised memory stops with an error."""

    LD = 1
    ST = 2
    MM = 3
    RQ = 4
    SM = 5
    VADD = 6
    AMAX = 7
    UNPACK = 8
    LUT = 9
    MMRQ = 11
    LN = 12
    GATHER = 13
    HALT = 15


class ErrorCode(enum.IntEnum):
    """Why a machine stopped (design; GA2.md section 3 lists the cases).

    When one instruction has several faults, the lowest-numbered code is reported: the
    checks run in this order.
    """

    NONE = 0
    BAD_OPCODE = 1
    """The opcode is not one of :class:`Opcode`."""
    BAD_FIELD = 2
    """A field is outside its legal range (M or N outside 1..T, K outside 1..K_MAX, len = 0,
    a softmax row longer than SM_MAX_LEN, s = 0, ...)."""
    SPAD_RANGE = 3
    """A scratchpad region reaches past SPAD_WORDS."""
    EXT_RANGE = 4
    """An external-memory region reaches past EXT_WORDS."""
    OVERLAP = 5
    """A destination region overlaps a source region (dst == src is allowed for RQ and VADD)."""
    NO_HALT = 6
    """The program counter ran past the last instruction without a HALT."""
    BAD_INDEX = 7
    """A GATHER's row number, the word S[idx] read as unsigned 32-bit, is not below its field
    ``rows`` (GA2.md section 3). The only code that depends on data: the checks above look at the
    instruction alone, in the front end; this one is found by the DMA while the GATHER runs, which
    then writes nothing and ends after its latency, and the machine stops there (an OVERLAP = 1
    machine issues nothing after a GATHER before it ends, an OVERLAP = 2 machine enters nothing
    after it into the station before it ends: ``InstrSpec.fence``)."""
    STALL = 8
    """OVERLAP = 2: the watchdog stopped a machine on which nothing happened for
    WATCHDOG_CYCLES cycles while an instruction waited (no engine busy, nothing dispatched).
    Not a fault of the program: no correct machine reaches it (GA2.md section 7 shows why);
    it stops a broken one instead of letting it hang. The pc is the oldest instruction not
    dispatched."""


ERROR_TEXT = {
    ErrorCode.NONE: "no error",
    ErrorCode.BAD_OPCODE: "unknown opcode",
    ErrorCode.BAD_FIELD: "field out of its legal range",
    ErrorCode.SPAD_RANGE: "scratchpad access out of range",
    ErrorCode.EXT_RANGE: "external-memory access out of range",
    ErrorCode.OVERLAP: "destination partly overlaps a source",
    ErrorCode.NO_HALT: "ran off the end of the program without HALT",
    ErrorCode.BAD_INDEX: "row number out of the table",
    ErrorCode.STALL: "stalled: the watchdog stopped the machine",
}

DATA_ERRORS = (ErrorCode.BAD_INDEX,)
"""The error codes found while an instruction runs, from the data it reads (not by :func:`check`,
which looks at the instruction alone: the front end's checks, hw/checker.py)."""
MACHINE_FAULTS = (ErrorCode.STALL,)
"""The codes a machine raises about itself, not about the program: no check of an instruction
gives them, nor its data."""
CHECK_CODES = tuple(c for c in ErrorCode
                    if c is not ErrorCode.NONE and c not in MACHINE_FAULTS and c not in DATA_ERRORS)
"""The codes the checks of the program give (an illegal instruction, a missing HALT), in
:class:`ErrorCode` order: :func:`check` gives all but NO_HALT."""

ERROR_CODE_BITS = 4
"""Width of the error code output of the RTL."""

# --------------------------------------------------------------------------- formula arithmetic


class Arith(Protocol):
    """The arithmetic a spec formula runs on, passed to it as its first argument.

    A formula (a region's extent, an instruction's latency) is written with ``+ - *`` on its
    values (the fields, ints) and the methods below for what Python's operators cannot say on
    every kind of value. The evaluators: :data:`INT` (Python ints: the reference machine and the
    checks), ``hw.formula.HDL`` (Amaranth values), ``hw.formula.PipelinedArith`` (Amaranth values
    with a register after every multiply: the hardware checker) and ``sim.isadoc.TEXT`` (the
    formula's text, for docs/isa.md).
    """

    def max(self, a: Any, b: Any) -> Any:
        """The larger of a and b."""

    def select(self, cond: Any, if_true: Any, if_false: Any) -> Any:
        """``if_true`` when the 1-bit ``cond`` is 1, else ``if_false``."""

    def ceil_div(self, a: Any, n: int) -> Any:
        """ceil(a / n) for a non-negative a and a constant positive n."""

    def const(self, name: str) -> Any:
        """The timing constant ``name`` (a key of :data:`TIMING_CONSTANTS`)."""


class IntArith:
    """:class:`Arith` on Python ints: exact, for the reference machine and :func:`check`.

    ``constants`` maps a timing constant's name to its value (:data:`TIMING_CONSTANTS`); ``const``
    is that mapping's own lookup (the reference machine evaluates a latency per instruction).
    """

    def __init__(self, constants: Mapping[str, int]):
        self.const = constants.__getitem__

    @staticmethod
    def max(a: int, b: int) -> int:
        return a if a >= b else b

    @staticmethod
    def select(cond: int, if_true: int, if_false: int) -> int:
        return if_true if cond else if_false

    @staticmethod
    def ceil_div(a: int, n: int) -> int:
        return (a + (n - 1)) // n


FieldFormula = Callable[[Arith, Mapping[str, Any]], Any]
"""``(arith, fields) -> value``: a region's extent in words (or a latency, its params bound)."""
LatencyFormula = Callable[[Arith, Mapping[str, Any], "Params"], Any]
"""``(arith, fields, params) -> cycles``: an instruction's latency."""


# --------------------------------------------------------------------------- fields


@dataclass(frozen=True)
class Field:
    """One operand field of an instruction.

    Attributes:
        name: the field's name, as the assembler and disassembler spell it.
        width: bits in the encoding (unsigned).
        doc: what the field means, with its unit.
        lo, hi: the legal range, inclusive. An int, the name of a :class:`Params` attribute,
            or None (no limit beyond the width). A value outside the range but within the
            width encodes, and stops the machine with ``BAD_FIELD``.
        default: the value the assembler fills in when a program leaves the field out, or
            None (the field must be given). A field added to an existing instruction gets one,
            so that every program written before it still assembles and means what it meant;
            the disassembler leaves such a field out while it holds its default.
        data: the field holds a number a compiler computes from a model's values (a
            requantization multiplier or shift), not a place, a size or a mode: two compilations
            of one model whose floating-point calibration differs in its last bits (another
            CPU's kernels) differ only in such fields and in the data of external memory.
    """

    name: str
    width: int
    doc: str
    lo: int | str | None = None
    hi: int | str | None = None
    default: int | None = None
    data: bool = False

    def bound(self, which: int | str | None, params: Params) -> int | None:
        if which is None or isinstance(which, int):
            return which
        return getattr(params, which)

    def legal_range(self, params: Params) -> tuple[int, int]:
        """The legal values of this field as (lowest, highest), both inclusive."""
        lo = self.bound(self.lo, params)
        hi = self.bound(self.hi, params)
        return (0 if lo is None else lo, (1 << self.width) - 1 if hi is None else hi)


def _addr(name: str, doc: str) -> Field:
    return Field(name, ADDR_BITS, doc)


def _len(doc: str = "number of elements", hi: int | str | None = None) -> Field:
    return Field("len", ADDR_BITS, doc, lo=1, hi=hi)


@dataclass(frozen=True)
class FieldRule:
    """A condition across fields that makes an instruction BAD_FIELD when it holds (besides each
    field's own range).

    Attributes:
        holds: ``(fields, params) -> truth``, written with ``& | < > == !=`` on the fields so
            that it evaluates on Python ints and on Amaranth values alike (the hardware checker
            builds it); the params are Python ints.
        blames: the field the BAD_FIELD message names.
        doc: the rule in words (docs/isa.md prints it under the instruction).
        breaking: ``params -> fields``: values that, set on a legal instruction of the kind,
            make the rule hold (the fault sweep and the stress generator break the rule with
            them, so that every rule is checked against the RTL).
    """

    holds: Callable[[Mapping[str, Any], Params], Any]
    blames: str
    doc: str
    breaking: Callable[[Params], dict[str, int]]


# --------------------------------------------------------------------------- regions


class Mem(enum.Enum):
    SPAD = "S"
    EXT = "E"


@dataclass(frozen=True)
class Region:
    """A contiguous span of words an instruction reads or writes.

    ``start`` names the field holding the first address; ``formula`` gives the number of
    words from there to one past the last word touched (for a strided access, the span), on
    any :class:`Arith`; :meth:`extent` evaluates it on ints.
    """

    mem: Mem
    start: str
    formula: FieldFormula
    writes: bool
    also_read_if: str | None = None
    """For a written region: the 1-bit field that, when 1, makes the instruction read the
    region's old words too (MM's acc). No overlap check applies between the two (they are the
    same words, read before written); a hazard analysis must count the read."""
    in_place: bool = True
    """For a read region of an instruction with ``in_place_ok``: whether the destination may
    start where it starts (False: the unit reads the region again after results are written,
    as RQ's table, so every overlap with the destination is refused)."""

    def extent(self, fields: Mapping[str, int]) -> int:
        """The extent in words for these field values (Python ints)."""
        return self.formula(INT, fields)


@dataclass(frozen=True)
class InstrSpec:
    """One instruction of the ISA.

    Attributes:
        name: the mnemonic.
        opcode: the opcode value.
        fields: the operand fields, in the order of GA2.md's table (and of the disassembly).
        counter: which unit counter its cycles go to (``dma``, ``mxu``, ``vpu``, ``sfu``), or
            None for HALT (its cycle counts in ``cycles`` only).
        effect: one line of semantics, as GA2.md section 3 states it.
        regions: the memory spans read and written, for the bounds and overlap checks.
        in_place_ok: True when dst == src is allowed although the two regions overlap (for
            each read region whose ``Region.in_place`` holds).
        latency_formula: cycles from dispatch to the dispatch of the next instruction, as a
            formula of the fields (a mapping from field name to value) and the parameters, on
            any :class:`Arith`; :meth:`latency` evaluates it on ints. (docs/isa.md prints it.)
        reads_formula: the scratchpad read window (OVERLAP = 1, GA2.md section 7): the unit
            requests scratchpad reads (either read port) only in the first ``reads`` cycles
            from its dispatch; 0 when it reads none. A formula like the latency.
        writes_formula: the scratchpad write window: the unit requests writes only in the last
            ``writes`` cycles of its latency; 0 when it writes none.
        overlap_min: the lowest OVERLAP of a machine that builds it (below).
        fence: the instruction's data can stop the machine (GATHER: BAD_INDEX, from the row
            number it reads). With OVERLAP = 1 nothing after it is dispatched before it ends, so a
            stop it causes leaves the memories as the serial machine leaves them; and it holds
            the write port for its window like every writer but an LD (GA2.md section 7).
    """

    name: str
    opcode: Opcode
    fields: tuple[Field, ...]
    counter: str | None
    effect: str
    regions: tuple[Region, ...]
    latency_formula: LatencyFormula
    in_place_ok: bool = False
    extra_checks_doc: str = ""
    field_rules: tuple[FieldRule, ...] = ()
    """Conditions across fields that make the instruction BAD_FIELD (:class:`FieldRule`),
    checked in this order after the fields' own ranges."""
    reads_formula: LatencyFormula = lambda a, f, p: 0
    writes_formula: LatencyFormula = lambda a, f, p: 0
    fence: bool = False
    overlap_min: int = 0
    """The lowest OVERLAP of a machine that has the instruction (MMRQ: 2, GA2.md section 7); on
    the others its opcode stops the machine with BAD_OPCODE, as an unknown one does
    (:func:`built`)."""

    def latency(self, fields: Mapping[str, int], params: Params) -> int:
        """Cycles for these field values (Python ints) on the machine ``params``."""
        return self.latency_formula(INT, self.complete(fields), params)

    def complete(self, fields: Mapping[str, int]) -> Mapping[str, int]:
        """``fields`` with every field that has a default (:attr:`Field.default`) and is
        missing set to it (the same object when none is missing)."""
        missing = {f.name: f.default for f in self.fields if f.default is not None and f.name not in fields}
        return {**fields, **missing} if missing else fields

    @functools.cached_property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @functools.cached_property
    def defaults(self) -> dict[str, int]:
        """The fields a program may leave out, with the values they then take (Field.default)."""
        return {f.name: f.default for f in self.fields if f.default is not None}

    def field_offsets(self) -> dict[str, tuple[int, int]]:
        """Bit position of each field in the 128-bit instruction: name -> (lsb, width)."""
        pos = OPCODE_BITS
        out = {}
        for f in self.fields:
            out[f.name] = (pos, f.width)
            pos += f.width
        assert pos <= INSTR_BITS, f"{self.name}: fields need {pos} bits"
        return out


# --------------------------------------------------------------------------- timing (GA2.md section 6)
#
# The LANES-wide machine. Every latency below is the number of cycles from the cycle in which the
# execute stage dispatches the instruction to the cycle before it dispatches the next one; the
# front end (fetch, decode, checks) works ahead and is hidden, except for FRONTEND_CYCLES
# before the first dispatch. These constants are the pipeline depths the RTL realises; they are
# the contract between hw/ and the reference machine (tests/hw assert each unit against them).

SPAD_READ_LATENCY = 3
"""Cycles from a scratchpad read request to its data: the request register (the units'
requests, ORed, registered before the banks' address adders), the block RAM's read, a register
on its output, then the rotation network (hw/banked.py; timing on the ECP5: hw/README.md).
Writes pass the same request register, so a read sees every write issued before it."""
EXT_READ_LATENCY = 1
"""Cycles from an external-memory read request to its data (the bus of hw/ports.ExtPort)."""
FRONTEND_CYCLES = 8
"""Cycles from start to the first dispatch: instruction-memory read (1), the checker's five
pipeline stages (the read register; three computing every region's end and the latency, a
register after each multiply; bounds and overlaps), a slot of the queue in front of the execute
stage (1), the dispatch register (1). The front end then works ahead: later instructions cost
only their own latency (hw/control.py, hw/checker.py)."""
OVERLAP_FRONTEND_CYCLES = FRONTEND_CYCLES + 2
"""OVERLAP = 1: cycles from start to the first dispatch. Two more than the serial machine's: the
issue stage decides from hazard and port flags computed for the queue's head in two register
stages (the region comparisons, then their reduction) in the two cycles before it is issued
(hw/overlap.py)."""
OVERLAP_ISSUE_CYCLES = 3
"""OVERLAP = 1: the fewest cycles from one dispatch to the next (in program order, whatever the
engines). After an issue, the hazard and port flags of the new head take the two following
cycles (two register stages), so the head can be issued in the one after (hw/overlap.py)."""
ENTER_CYCLES = OVERLAP_ISSUE_CYCLES
"""OVERLAP = 2: the fewest cycles from one instruction entering its engine's queue (the
station) to the next one entering (in program order, whatever the engines). As at OVERLAP = 1,
the front end's head is compared with the instructions in the station in two register stages
(the region comparisons, then their reduction into the head's dependences) in the two cycles
before it enters (hw/station.py); the first enters OVERLAP_FRONTEND_CYCLES after start."""
ENTER_DISPATCH_CYCLES = 2
"""OVERLAP = 2: the fewest cycles from an instruction entering the station to its dispatch:
its entry is written as it enters, its readiness is computed from the entry in the next cycle
and registered, and the issue decision taken on that register dispatches it a cycle later."""
DISPATCH_CYCLES = 2
"""OVERLAP = 2: the fewest cycles from one dispatch to the next, whatever the engines: each
queue's readiness is a register computed a cycle ahead, which a dispatch makes stale (the
ports it takes, its engine) for one cycle."""
WATCHDOG_CYCLES = 64
"""OVERLAP = 2: the watchdog stops the machine with STALL once, while it runs, nothing has been
dispatched or entered the station and no engine has been busy for this many cycles in a row.
More than any wait of a correct machine with its engines idle (its front end's first
OVERLAP_FRONTEND_CYCLES and the paces above)."""
STATION_SLOTS = 4
"""OVERLAP = 2: the entries of each engine in the station: one for the instruction it runs (kept,
with the hazards on it, until it ends) and STATION_SLOTS - 1 for the instructions waiting in its
queue; the front end waits when the next instruction's engine has no waiting entry free."""
STOP_CYCLES = 1
"""Cycles taken by HALT, or by an instruction that stops the machine with an error: the cycle
after the execute stage takes it, at whose end done (and error) rise (hw/control.py)."""
LD_OVERHEAD = EXT_READ_LATENCY + 1
"""LD: external-memory read latency and the data register; beat b is read in the dispatch
cycle + b and written LD_OVERHEAD cycles later (hw/dma.py)."""
ST_OVERHEAD = SPAD_READ_LATENCY + 1
"""ST: scratchpad read latency and the data register; beat b is read in the dispatch cycle + b
and written ST_OVERHEAD cycles later (hw/dma.py)."""
MM_OVERHEAD = SPAD_READ_LATENCY + 2
"""MM: scratchpad read latency, the multiplier input registers (1), the product register (1);
step t enters the array tb*(N-1) + SPAD_READ_LATENCY + t cycles after the dispatch, row i is
written as its sums become final, one row per cycle, the last K + M + tb*(N-1) + MM_OVERHEAD - 1
cycles after the dispatch (hw/mxu.py)."""
RQ_OVERHEAD = SPAD_READ_LATENCY + 7
"""RQ: scratchpad read latency and the seven-stage requantizer pipeline (inputs, partial
products at the DSP blocks, the products again at the adders, partial sums, product, shift,
round-and-saturate); beat b is read in the dispatch cycle + b and written RQ_OVERHEAD cycles
later (hw/requant.py)."""
RQ_TENSOR_SHIFT_LO = 1
"""The lowest shift of RQ per tensor (pc = 0): its field ``s`` takes 0..63 because pc = 1 needs
s = 0, and RQ's rule across fields makes pc = 0 with s below this BAD_FIELD (a compiler picks
per-tensor shifts from RQ_TENSOR_SHIFT_LO..63: compiler.requant.shift_range)."""
RQ_PC_CYCLES = 2
"""RQ with pc = 1 (per output channel): the cycles the data reads start after the table's. Beat
b's table entries (LANES words at tab + (b*LANES mod C), on ``rd1``) are read in the dispatch
cycle + b and registered on arrival; in the next cycle each lane picks its entry (its own word,
or, past the table's end, one of the first LANES entries held since beat 0) into a register;
beat b's data is read on ``rd0`` in cycle + b + RQ_PC_CYCLES and meets its entries at the
requantizer's input registers (hw/requant.py)."""
VADD_OVERHEAD = SPAD_READ_LATENCY + 2
"""VADD: scratchpad read latency, the data registers, the add-and-saturate register; beat k
is read in the dispatch cycle + k and written VADD_OVERHEAD cycles later (hw/vector.py)."""
AMAX_OVERHEAD = SPAD_READ_LATENCY + 3
"""AMAX: scratchpad read latency, the data registers, the lane-pair maxima, the running
maximum; beat k is read in the dispatch cycle + k, the index written three cycles after the
last beat's data arrives, AMAX_OVERHEAD after its read (hw/vector.py)."""
UNPACK_OVERHEAD = SPAD_READ_LATENCY + 1
"""UNPACK: scratchpad read latency and the data register; the len packed words become
ceil(8*len/LANES) beats of LANES int8 words, beat b written in the dispatch cycle + b +
UNPACK_OVERHEAD, from the packed words read LANES/8 at a time in cycle + b (LANES >= 8) or
once for 8/LANES beats in cycle + b - b mod (8/LANES) (LANES = 4: word i read in cycle + 2i,
written as two beats; hw/vector.py)."""
MM_ACC_CYCLES = 1
"""MM with acc = 1: the extra cycle of the read-modify-write of the output rows. Row i's old
value is read on ``rd1`` R cycles before the row's sums are final (the B stream is over by
then), the sums and the old row are registered side by side, and their int32 sum is written one
cycle later than acc = 0 writes the row (hw/mxu.py)."""
CHAIN_CYCLES = RQ_OVERHEAD - SPAD_READ_LATENCY
"""MMRQ (OVERLAP = 2): the requantizer's seven stages on the matrix unit's way out. Each output
row (its sums, plus the old int32 row with acc = 1) enters the chained requantizer in the cycle MM
would write it, with the row's (m, s) pairs, read on ``rd1`` at tau = D + K + 1 (after the B
stream, before acc's old rows) and registered on arrival; its int8 results are written
CHAIN_CYCLES later (hw/mxu.py, hw/requant.Requantizer)."""
LUT_TABLE_WORDS = 256
"""LUT: entries of a table, one per int8 input value -128..127 (entry x + 128 for input x)."""
LUT_OVERHEAD = SPAD_READ_LATENCY + 4
"""LUT: after the table's ceil(256/LANES) beats are read into the unit's table memory (beat b
read in the dispatch cycle + b), the source's beat k is read in cycle + ceil(256/LANES) + k,
registered on arrival (R + 1), looked up in the table memory (a synchronous read, 1), the table
word registered as it leaves the memory (1), the lane's entry selected and registered (1), then
written: LUT_OVERHEAD cycles after its read (hw/lut.py)."""
SM_PASS_OVERHEAD = 1
"""SM: idle read cycles between pass 0 (max) and pass 1 (exp and sum): the row maximum is
final two register stages after pass 0's last data (lane pairs, then the running maximum).
Pass 2 (divide) follows pass 1 directly (hw/softmax.py)."""
SM_DIV_LATENCY = 9
"""SM: stages of the pipelined divider, radix 4 (two quotient bits per stage, 18 bits with the
rounding bit; hw/divider.py)."""
SM_OVERHEAD = SPAD_READ_LATENCY + 2 + SM_PASS_OVERHEAD + SM_DIV_LATENCY
"""SM: scratchpad read latency, the data register (1), the exp register (1), the pass gap,
the divider. With n = ceil(len/LANES) beats per pass, beat k of pass 0 is read in the dispatch
cycle + k, of pass p > 0 in the dispatch cycle + p*n + SM_PASS_OVERHEAD + k, and pass 2's beat
k is written SM_OVERHEAD - SM_PASS_OVERHEAD cycles after its read (hw/softmax.py)."""

LN_MAX_LEN = 1024
"""LN: the longest row (GA2.md section 4). A row of 1024 int8 values keeps N*var below 2^34
(var <= 127.5^2 < 2^14), so D = 256 * N^2 * var + eps stays below 2^44: a 22-bit root. GPT-2's
widest d_model (1024, medium) fits; the GPT of issue 26 has 64."""
LN_EPS_FRAC = 8
"""LN: D = 2^LN_EPS_FRAC * (N * S2 - S1^2) + eps: the field eps counts 1/256 of a unit of
N^2 * var (GA2.md section 4), so that a small epsilon is not rounded to 0 or 1."""
LN_ROOT_BITS = 22
"""LN: bits of the root r = isqrt(D * 4^k), 2^21 <= r < 2^22 (D shifted left by an even count 2k
to fill 44 bits)."""
LN_RECIP_BITS = 2 * LN_ROOT_BITS
"""LN: the reciprocal is R = floor(2^LN_RECIP_BITS / r), 2^22 < R <= 2^23."""
LN_QUOTIENT_BITS = LN_RECIP_BITS - LN_ROOT_BITS + 2
"""LN: bits of R (24: R = 2^23 when r = 2^21)."""
LN_FRAC_BITS = 16
"""LN: y = round(2^16 * z): the normalised value z in units of 2^-16 (GA2.md section 4)."""
LN_SHIFT = LN_RECIP_BITS - LN_FRAC_BITS - LN_EPS_FRAC // 2
"""LN: y_i = round(d_i * R / 2^(LN_SHIFT - k)), LN_SHIFT - k from 3 (k = 21) to 24 (k = 0)."""
LN_VARIANCE_CYCLES = 6
"""LN: from the sums S1, S2 final to D * 4^k final: the products N * S2 and S1^2 (registered at
the DSP blocks, then again), V = N * S2 - S1^2, D = 256 * V + eps, k (two leading zeros per step),
D * 4^k (hw/layernorm.py)."""
LN_SQRT_CYCLES = LN_ROOT_BITS
"""LN: the square root, digit by digit, one bit of r a cycle."""
LN_RECIP_CYCLES = LN_QUOTIENT_BITS
"""LN: the reciprocal R, a restoring division, one bit of R a cycle."""
LN_SCALE_CYCLES = 2
"""LN: A = N * R and C = S1 * R, registered at the DSP blocks, then again."""
LN_GAP_CYCLES = 1 + LN_VARIANCE_CYCLES + LN_SQRT_CYCLES + LN_RECIP_CYCLES + LN_SCALE_CYCLES
"""LN: pass 2's beat k is read in cycle d + n + LN_GAP_CYCLES + k (pass 1's in d + k; n =
ceil(len/LANES), d the dispatch cycle). Pass 1's sums are final in d + n + R + 2
(arrival, data register, the lanes' squares, the running sums), A and C LN_VARIANCE_CYCLES +
LN_SQRT_CYCLES + LN_RECIP_CYCLES + LN_SCALE_CYCLES later, when pass 2's first beat reaches its
data register (R + 1 after its read)."""
LN_LANE_STAGES = 6
"""LN: pass 2's stages after the data register: x * A (at the DSP blocks), again, v = x * A - C,
the rounding term added (2^(s-1), or 2^(s-1) - 1 for v < 0), the arithmetic shift right by s,
the bias added; the beat is written in the next cycle."""
LN_BIAS_LAG_CYCLES = LN_LANE_STAGES - 1
"""LN: the bias's beat k is read on the second read port this many cycles after pass 2's beat k,
so that it reaches its data register as y reaches the last stage (the bias's add)."""
LN_OVERHEAD = LN_GAP_CYCLES + SPAD_READ_LATENCY + 1 + LN_LANE_STAGES
"""LN: L = 2 * ceil(len/LANES) + LN_OVERHEAD: pass 2's beat k is written SPAD_READ_LATENCY + 1 +
LN_LANE_STAGES cycles after its read (hw/layernorm.py)."""
GATHER_INDEX_CYCLES = SPAD_READ_LATENCY + 3
"""GATHER: the row number S[idx] read in the dispatch cycle d, registered on arrival (d + R + 1),
its row's offset (row * words per row) and the range check registered (d + R + 2), the row's
external address registered (d + R + 3): the first beat's read, as an LD's from then on
(hw/dma.py)."""
GATHER_OVERHEAD = GATHER_INDEX_CYCLES + LD_OVERHEAD
"""GATHER: L = ceil(len/LANES) + GATHER_OVERHEAD; beat b is read in d + GATHER_INDEX_CYCLES + b
and written LD_OVERHEAD cycles later."""


INT4_PER_WORD = 8
"""int4 values in one packed word (UNPACK; GA2.md section 2)."""
INT8_PER_WORD = 4
"""int8 values in one packed external word (LD fmt = 1; GA2.md section 2)."""


def _beats(a: Arith, n: Any, params: Params) -> Any:
    """Cycles to move n consecutive words at LANES words per cycle (any alignment)."""
    return a.ceil_div(n, params.LANES)


def _row_words(a: Arith, f: Mapping[str, Any]) -> Any:
    """External words of a row of ``len`` elements: len, or ceil(len/4) packed int8 (fmt = 1)."""
    return a.select(f.get("fmt", 0), a.ceil_div(f["len"], INT8_PER_WORD), f["len"])


CHAIN_DIM_BITS = (T_MAX).bit_length()
"""MMRQ: bits of its M and N fields (1..T, T at most T_MAX = 16): narrower than MM's 8, so that
the requantizer's entries' address fits the 124 bits beside the opcode."""
CHAIN_STRIDE_BITS = 12
"""MMRQ: bits of its strides lda, ldb, ldc (0..4095, every stride of a matrix in the default
machine's 4096-word scratchpad; a compiler keeps MM and RQ where a stride is wider)."""


def _mm_skew(a: Arith, f: Mapping[str, Any]) -> Any:
    # tb = 1: the first step waits for the first chunk of all N rows of B^T, read one per cycle
    return a.select(f["tb"], f["N"] - 1, 0)


_MM_OPERANDS = (
    Region(Mem.SPAD, "A", lambda a, f: (f["M"] - 1) * f["lda"] + f["K"], writes=False),
    Region(Mem.SPAD, "B",
           lambda a, f: a.select(f["tb"], (f["N"] - 1) * f["ldb"] + f["K"], (f["K"] - 1) * f["ldb"] + f["N"]),
           writes=False),
)
"""The regions MM and MMRQ read: A (M rows lda apart, K words each) and B (K rows of N, or N rows
of K when tb = 1, ldb apart)."""
_MM_OUTPUT = Region(Mem.SPAD, "dst", lambda a, f: (f["M"] - 1) * f["ldc"] + f["N"], writes=True,
                    also_read_if="acc")
"""The region MM and MMRQ write: M rows of N words, ldc apart (read first when acc = 1)."""


def _mm_latency(a: Arith, f: Mapping[str, Any], params: Params) -> Any:
    """MM's latency (hw/mxu.py): K steps, M rows, the skew of tb = 1, the pipeline, acc's cycle."""
    return (f["K"] + f["M"] + _mm_skew(a, f) + a.const("MM_OVERHEAD")
            + a.select(f["acc"], a.const("MM_ACC_CYCLES"), 0))


# --------------------------------------------------------------------------- the instructions

INSTRUCTIONS: tuple[InstrSpec, ...] = (
    InstrSpec(
        "LD", Opcode.LD,
        (_addr("dst", "scratchpad address of the first word written"),
         _addr("src", "external-memory address of the first word read"),
         _len("number of words written"),
         Field("fmt", 1, "0: one word per word; 1: packed int8, four per external word, byte j "
               "of E[src+i] becoming the sign-extended word S[dst+4i+j]", default=0)),
        "dma", "S[dst+i] = E[src+i] (fmt = 0), or s8(E[src+i//4] >> 8*(i%4)) (fmt = 1), for i < len",
        (Region(Mem.EXT, "src", _row_words, writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: _beats(a, f["len"], p) + a.const("LD_OVERHEAD"),
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
    ),
    InstrSpec(
        "ST", Opcode.ST,
        (_addr("src", "scratchpad address of the first word read"),
         _addr("dst", "external-memory address of the first word written"),
         _len("number of words")),
        "dma", "E[dst+i] = S[src+i] for i < len",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.EXT, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: _beats(a, f["len"], p) + a.const("ST_OVERHEAD"),
        reads_formula=lambda a, f, p: _beats(a, f["len"], p),
    ),
    InstrSpec(
        "MM", Opcode.MM,
        (_addr("dst", "scratchpad address of output (0, 0), int32"),
         _addr("A", "scratchpad address of A[0][0], int8"),
         _addr("B", "scratchpad address of B[0][0] (of B^T[0][0] when tb = 1), int8"),
         Field("M", 8, "rows of A and of the output", lo=1, hi="T"),
         Field("K", 8, "inner dimension", lo=1, hi="K_MAX"),
         Field("N", 8, "columns of B and of the output", lo=1, hi="T"),
         Field("tb", 1, "1: B is stored transposed (element (t, j) at B + j*ldb + t)"),
         _addr("lda", "row stride of A, words"),
         _addr("ldb", "row stride of B as stored, words"),
         _addr("ldc", "row stride of the output, words"),
         Field("acc", 1, "1: add the product into the int32 already at dst (dst += A @ B), "
               "wrapping modulo 2^32; 0: overwrite", default=0)),
        "mxu",
        "S[dst+i*ldc+j] = acc*s32(S[dst+i*ldc+j]) + sum_t s8(S[A+i*lda+t]) * s8(Bv) for i < M, "
        "j < N, t < K (mod 2^32); Bv = S[B+t*ldb+j] (tb = 0) or S[B+j*ldb+t] (tb = 1); rows "
        "written in increasing i",
        (*_MM_OPERANDS, _MM_OUTPUT),
        _mm_latency,
        reads_formula=lambda a, f, p: (f["K"] + f["M"] + _mm_skew(a, f)
                                       + a.select(f["acc"],
                                                  a.const("MM_OVERHEAD") - a.const("SPAD_READ_LATENCY"), 0)),
        writes_formula=lambda a, f, p: f["M"],
        field_rules=(FieldRule(
            lambda f, p: f["acc"] & (f["M"] > 1) & (f["ldc"] < f["N"]), "ldc",
            "With acc = 1 the output rows must not overlap each other: M > 1 with ldc < N is "
            "BAD_FIELD (field ldc), since every row's old value is read before the rows above it "
            "are written.",
            lambda p: {"acc": 1, "M": 2, "N": 1, "ldc": 0}),),
    ),
    InstrSpec(
        "MMRQ", Opcode.MMRQ,
        (_addr("dst", "scratchpad address of output (0, 0), int8 (with acc = 1 the int32 read "
               "there first)"),
         _addr("A", "scratchpad address of A[0][0], int8"),
         _addr("B", "scratchpad address of B[0][0] (of B^T[0][0] when tb = 1), int8"),
         Field("M", CHAIN_DIM_BITS, "rows of A and of the output", lo=1, hi="T"),
         Field("K", 8, "inner dimension", lo=1, hi="K_MAX"),
         Field("N", CHAIN_DIM_BITS, "columns of B and of the output", lo=1, hi="T"),
         Field("tb", 1, "1: B is stored transposed (element (t, j) at B + j*ldb + t)"),
         Field("lda", CHAIN_STRIDE_BITS, "row stride of A, words"),
         Field("ldb", CHAIN_STRIDE_BITS, "row stride of B as stored, words"),
         Field("ldc", CHAIN_STRIDE_BITS, "row stride of the output, words"),
         Field("acc", 1, "1: the int32 already at dst is added to the product before it is "
               "requantized (a bias, or the sum of the earlier pieces of a long K); 0: not read"),
         _addr("tab", "scratchpad address of the requantization entries (GA2.md section 2)"),
         Field("pc", 1, "1: per output channel, column j takes the entry at tab + j; 0: every "
               "column takes the entry at tab (per tensor)"),
         Field("relu", 1, "1: clamp negative results to 0")),
        "mxu",
        "S[dst+i*ldc+j] = requant(acc*s32(S[dst+i*ldc+j]) + sum_t s8(S[A+i*lda+t]) * s8(Bv) (mod 2^32), "
        "m_j, s_j, relu) for i < M, j < N, t < K, (m_j, s_j) the pair of S[tab + pc*j]; Bv as MM's; "
        "rows written in increasing i",
        (*_MM_OPERANDS, Region(Mem.SPAD, "tab", lambda a, f: a.select(f["pc"], f["N"], 1), writes=False),
         _MM_OUTPUT),
        lambda a, f, p: _mm_latency(a, f, p) + a.const("CHAIN_CYCLES"),
        reads_formula=lambda a, f, p: (f["K"] + _mm_skew(a, f)
                                       + a.select(f["acc"],
                                                  f["M"] + a.const("MM_OVERHEAD")
                                                  - a.const("SPAD_READ_LATENCY"),
                                                  a.max(f["M"], 2))),
        writes_formula=lambda a, f, p: f["M"],
        field_rules=(FieldRule(
            lambda f, p: f["acc"] & (f["M"] > 1) & (f["ldc"] < f["N"]), "ldc",
            "With acc = 1 the output rows must not overlap each other: M > 1 with ldc < N is "
            "BAD_FIELD (field ldc), as for MM.",
            lambda p: {"acc": 1, "M": 2, "N": 1, "ldc": 0}),),
        extra_checks_doc=("Built only when OVERLAP = 2 (GA2.md section 7): elsewhere opcode 11 stops "
                          "the machine with BAD_OPCODE. dst is disjoint from A, B and the entries: "
                          "the entries are read after the B stream, the old rows (acc) just before "
                          "their results are written in place."),
        overlap_min=2,
    ),
    InstrSpec(
        "RQ", Opcode.RQ,
        (_addr("dst", "scratchpad address of the first int8 result"),
         _addr("src", "scratchpad address of the first int32 input"),
         _len(),
         Field("m", 24, "requantization multiplier (24-bit mantissa); 0 when pc = 1", data=True),
         Field("s", 6, "requantization shift: 1..63 when pc = 0, 0 when pc = 1", lo=0, hi=63, data=True),
         Field("relu", 1, "1: clamp negative results to 0"),
         Field("pc", 1, "1: per output channel: element i takes the pair (m, s) of the table "
               "entry at tab + (i mod C) (GA2.md section 2); 0: the fields m and s", default=0),
         Field("tab", ADDR_BITS, "pc = 1: scratchpad address of the requantization table, C words "
               "(0 when pc = 0)", default=0),
         Field("C", ADDR_BITS, "pc = 1: channels, the table's entries; element i is channel i mod C "
               "(0 when pc = 0)", default=0)),
        "vpu", "S[dst+i] = requant(s32(S[src+i]), m, s, relu) for i < len (pc = 0), "
        "requant(s32(S[src+i]), m_c, s_c, relu) with (m_c, s_c) the pair of S[tab + (i mod C)] (pc = 1)",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "tab", lambda a, f: f.get("C", 0), writes=False, in_place=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: (_beats(a, f["len"], p) + a.const("RQ_OVERHEAD")
                         + a.select(f["pc"], a.const("RQ_PC_CYCLES"), 0)),
        reads_formula=lambda a, f, p: _beats(a, f["len"], p) + a.select(f["pc"], a.const("RQ_PC_CYCLES"), 0),
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
        in_place_ok=True,
        extra_checks_doc=("dst may coincide with src (in place), never overlap the table: the "
                          "unit reads the table beside the data, beat by beat."),
        field_rules=(
            FieldRule(lambda f, p: (f["pc"] == 0) & (f["s"] == 0), "s",
                      "pc = 0 (per tensor) with s = 0 is BAD_FIELD (field s): the shift is 1..63.",
                      lambda p: {"pc": 0, "tab": 0, "C": 0, "s": 0}),
            FieldRule(lambda f, p: (f["pc"] == 0) & (f["tab"] != 0), "tab",
                      "pc = 0 with tab != 0 is BAD_FIELD (field tab): without a table, tab and C are 0.",
                      lambda p: {"pc": 0, "C": 0, "tab": 1}),
            FieldRule(lambda f, p: (f["pc"] == 0) & (f["C"] != 0), "C",
                      "pc = 0 with C != 0 is BAD_FIELD (field C): without a table, tab and C are 0.",
                      lambda p: {"pc": 0, "tab": 0, "C": p.LANES}),
            FieldRule(lambda f, p: (f["pc"] == 1) & (f["m"] != 0), "m",
                      "pc = 1 (per channel) with m != 0 is BAD_FIELD (field m): the table holds "
                      "the pairs, the fields m and s are 0.",
                      lambda p: {"pc": 1, "C": p.LANES, "s": 0, "m": 1}),
            FieldRule(lambda f, p: (f["pc"] == 1) & (f["s"] != 0), "s",
                      "pc = 1 with s != 0 is BAD_FIELD (field s): the table holds the pairs, the "
                      "fields m and s are 0.",
                      lambda p: {"pc": 1, "C": p.LANES, "m": 0, "s": 1}),
            FieldRule(lambda f, p: (f["pc"] == 1) & (f["C"] < p.LANES), "C",
                      "pc = 1 with C < LANES is BAD_FIELD (field C): a table of fewer channels "
                      "than LANES is written repeated (C' = C * ceil(LANES / C) entries, element i "
                      "then takes the same pair), so that a beat's channels wrap past the table's "
                      "end at most once.",
                      lambda p: {"pc": 1, "m": 0, "s": 0, "C": p.LANES - 1}),
        ),
    ),
    InstrSpec(
        "SM", Opcode.SM,
        (_addr("dst", "scratchpad address of the first probability (Q16, unsigned)"),
         _addr("src", "scratchpad address of the row (int8, Q4.4)"),
         _len("row length", hi="SM_MAX_LEN")),
        "sfu", "S[dst..dst+len-1] = softmax_fixed(s8(S[src..src+len-1]))",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: 3 * _beats(a, f["len"], p) + a.const("SM_OVERHEAD"),
        reads_formula=lambda a, f, p: 3 * _beats(a, f["len"], p) + a.const("SM_PASS_OVERHEAD"),
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
    ),
    InstrSpec(
        "VADD", Opcode.VADD,
        (_addr("dst", "scratchpad address of the first int8 sum"),
         _addr("src1", "scratchpad address of the first operand"),
         _addr("src2", "scratchpad address of the second operand"),
         _len(),
         Field("relu", 1, "1: clamp negative sums to 0 (a ReLU after the add)", default=0),
         Field("max", 1, "0: the saturating add; 1: the larger of the two (int8 maximum, a max pool's "
               "step)", default=0)),
        "vpu", "S[dst+i] = sat_add(s8(S[src1+i]), s8(S[src2+i]), relu) (max = 0) or "
        "vmax(s8(S[src1+i]), s8(S[src2+i]), relu) (max = 1) for i < len",
        (Region(Mem.SPAD, "src1", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "src2", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: _beats(a, f["len"], p) + a.const("VADD_OVERHEAD"),
        reads_formula=lambda a, f, p: _beats(a, f["len"], p),
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
        in_place_ok=True,
    ),
    InstrSpec(
        "AMAX", Opcode.AMAX,
        (_addr("dst", "scratchpad address of the index"),
         _addr("src", "scratchpad address of the row (int8)"),
         _len("row length")),
        "vpu", "S[dst] = index of the first maximum of s8(S[src+i]), i < len",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: 1, writes=True)),
        lambda a, f, p: _beats(a, f["len"], p) + a.const("AMAX_OVERHEAD"),
        reads_formula=lambda a, f, p: _beats(a, f["len"], p),
        writes_formula=lambda a, f, p: 1,
    ),
    InstrSpec(
        "UNPACK", Opcode.UNPACK,
        (_addr("dst", "scratchpad address of the first int8 result"),
         _addr("src", "scratchpad address of the first packed word"),
         _len("number of packed words (8 int4 values each)")),
        "vpu", "S[dst+8i+j] = signed int4 in bits 4j+3..4j of S[src+i], i < len, j < 8",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: INT4_PER_WORD * f["len"], writes=True)),
        lambda a, f, p: _beats(a, INT4_PER_WORD * f["len"], p) + a.const("UNPACK_OVERHEAD"),
        reads_formula=lambda a, f, p: _beats(a, INT4_PER_WORD * f["len"], p),
        writes_formula=lambda a, f, p: _beats(a, INT4_PER_WORD * f["len"], p),
    ),
    InstrSpec(
        "LUT", Opcode.LUT,
        (_addr("dst", "scratchpad address of the first int8 result"),
         _addr("src", "scratchpad address of the first int8 input"),
         _len(),
         _addr("table", "scratchpad address of the 256-entry table (entry x + 128 for input x, int8)")),
        "vpu", "S[dst+i] = s8(S[table + s8(S[src+i]) + 128]) for i < len",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "table", lambda a, f: LUT_TABLE_WORDS, writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: (_beats(a, LUT_TABLE_WORDS, p) + _beats(a, f["len"], p)
                         + a.const("LUT_OVERHEAD")),
        reads_formula=lambda a, f, p: _beats(a, LUT_TABLE_WORDS, p) + _beats(a, f["len"], p),
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
        in_place_ok=True,
        extra_checks_doc=("The whole table is read into the unit before the first result is "
                          "written, so dst may also coincide with table (in_place_ok covers both)."),
    ),
    InstrSpec(
        "LN", Opcode.LN,
        (_addr("dst", "scratchpad address of the first result (int32: y_i plus the bias)"),
         _addr("src", "scratchpad address of the row (int8)"),
         _len("row length N", hi=LN_MAX_LEN),
         _addr("bias", "scratchpad address of the bias row (int32, added modulo 2^32)"),
         Field("eps", 32, "epsilon, in units of 2^-8 of N^2 * var (GA2.md section 4)")),
        "sfu",
        "S[dst+i] = layernorm_fixed(s8(S[src..src+len-1]), eps)_i + s32(S[bias+i]) (mod 2^32) for i < len",
        (Region(Mem.SPAD, "src", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "bias", lambda a, f: f["len"], writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: 2 * _beats(a, f["len"], p) + a.const("LN_OVERHEAD"),
        reads_formula=lambda a, f, p: (2 * _beats(a, f["len"], p) + a.const("LN_GAP_CYCLES")
                                       + a.const("LN_BIAS_LAG_CYCLES")),
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
        in_place_ok=True,
        extra_checks_doc=("The row is read whole (pass 1) before the first result is written, and "
                          "pass 2 reads a beat of src and of bias before it writes that beat, so dst "
                          "may coincide with src or with bias (in_place_ok covers both)."),
    ),
    InstrSpec(
        "GATHER", Opcode.GATHER,
        (_addr("dst", "scratchpad address of the first word written"),
         _addr("src", "external-memory address of the table's row 0"),
         _len("elements per row"),
         Field("fmt", 1, "0: one word per element, row r at src + r*len; 1: packed int8, four per "
               "external word, row r at src + r*ceil(len/4)", default=0),
         _addr("idx", "scratchpad address of the row number r (the word read as unsigned 32-bit)"),
         Field("rows", ADDR_BITS, "rows of the table: r must be below it, else BAD_INDEX", lo=1)),
        "dma",
        "r = u32(S[idx]), BAD_INDEX if r >= rows; S[dst+i] = E[src+r*len+i] (fmt = 0), or "
        "s8(E[src+r*ceil(len/4)+i//4] >> 8*(i%4)) (fmt = 1), for i < len",
        (Region(Mem.EXT, "src", lambda a, f: f["rows"] * _row_words(a, f), writes=False),
         Region(Mem.SPAD, "idx", lambda a, f: 1, writes=False),
         Region(Mem.SPAD, "dst", lambda a, f: f["len"], writes=True)),
        lambda a, f, p: _beats(a, f["len"], p) + a.const("GATHER_OVERHEAD"),
        reads_formula=lambda a, f, p: 1,
        writes_formula=lambda a, f, p: _beats(a, f["len"], p),
        fence=True,
        extra_checks_doc=("An LD's fields come first, in an LD's bits (the DMA reads dst, len and fmt "
                          "of either from the same bits), then the row number's address and the "
                          "table's rows. The whole table (rows rows) must lie in external memory, so that "
                          "no row "
                          "number below rows reads past it; the row number itself is checked when the "
                          "GATHER runs (BAD_INDEX: nothing is written, the machine stops after the "
                          "GATHER's latency)."),
    ),
    InstrSpec(
        "HALT", Opcode.HALT, (), None, "stop; done rises", (),
        lambda a, f, p: a.const("STOP_CYCLES"),
    ),
)

BY_NAME: dict[str, InstrSpec] = {s.name: s for s in INSTRUCTIONS}
BY_OPCODE: dict[int, InstrSpec] = {int(s.opcode): s for s in INSTRUCTIONS}
UNKNOWN_OPCODES: tuple[int, ...] = tuple(op for op in range(1 << OPCODE_BITS) if op not in BY_OPCODE)
"""The opcode values no instruction has (0 among them): each stops the machine with BAD_OPCODE;
the nonzero ones are free for a new instruction."""


def built(ispec: InstrSpec, params: Params) -> bool:
    """Whether the machine ``params`` has the instruction (``InstrSpec.overlap_min``); on one
    that does not, its opcode stops the machine with BAD_OPCODE, as an unknown opcode does."""
    return ispec.overlap_min <= params.OVERLAP


def instructions(params: Params) -> tuple[InstrSpec, ...]:
    """The instructions the machine ``params`` has (:func:`built`), in :data:`INSTRUCTIONS`'s
    order: what its hardware decodes, its reference machine runs and its stress programs draw."""
    return tuple(s for s in INSTRUCTIONS if built(s, params))


def bad_opcodes(params: Params) -> tuple[int, ...]:
    """The opcode values that stop the machine ``params`` with BAD_OPCODE: :data:`UNKNOWN_OPCODES`
    and those of the instructions it does not have."""
    return tuple(sorted((*UNKNOWN_OPCODES, *(int(s.opcode) for s in INSTRUCTIONS if not built(s, params)))))


# --------------------------------------------------------------------------- the requantization table


def _field_width(instruction: str, name: str) -> int:
    return next(f.width for f in BY_NAME[instruction].fields if f.name == name)


RQ_ENTRY_M_BITS = _field_width("RQ", "m")
"""A requantization table entry (GA2.md sections 2 and 4): the multiplier m of the pair (m, s) in
bits RQ_ENTRY_M_BITS-1..0, as wide as RQ's field ``m`` (24)."""
RQ_ENTRY_S_BITS = _field_width("RQ", "s")
"""The entry's shift s, as wide as RQ's field ``s`` (6), in the bits right above m (29..24)."""
RQ_ENTRY_S_LSB = RQ_ENTRY_M_BITS
"""Bit position of the entry's s: the entry is the pair packed upwards, m first."""
RQ_ENTRY_BITS = RQ_ENTRY_M_BITS + RQ_ENTRY_S_BITS
"""Bits of a table word the machine reads (30); the bits above (31..30) are ignored, and the
compiler writes them 0. An entry cannot stop the machine: every (m, s) it holds is legal, s = 0
included (shift 0 and no rounding term, GA2.md section 4). ``sim.arith.pack_rq_pair`` and
``unpack_rq_pair`` write and read it."""

COUNTERS = ("cycles", "dma", "mxu", "vpu", "sfu")
"""The five 32-bit cycle counters (GA2.md section 5), in the order the RTL reports them."""
COUNTER_BITS = 32

TIMING_CONSTANTS = {
    name: value for name, value in globals().items()
    if name.isupper() and (name.endswith(("_OVERHEAD", "_CYCLES", "_LATENCY")))
}
"""Every named pipeline constant, for the ISA page and for tests."""

INT = IntArith(TIMING_CONSTANTS)
"""The arithmetic of Python ints (:class:`IntArith`)."""

# --------------------------------------------------------------------------- the checks


def field_errors(spec: InstrSpec, fields: Mapping[str, int], params: Params) -> list[str]:
    """Names of the fields outside their legal range (empty when all are legal; a field left
    out holds its default)."""
    bad = []
    for f in spec.fields:
        lo, hi = f.legal_range(params)
        if not lo <= fields.get(f.name, f.default) <= hi:
            bad.append(f.name)
    return bad


def check(spec: InstrSpec, fields: Mapping[str, int], params: Params) -> tuple[ErrorCode, str]:
    """Check one decoded instruction against GA2.md section 3, in :class:`ErrorCode` order.

    Args:
        spec: the instruction's spec (its opcode is known to be valid).
        fields: field name -> value, each within its bit width.
        params: the machine's parameters.

    Returns:
        (ErrorCode.NONE, "") when the instruction is legal, else the first fault's code and a
        sentence naming the field or region at fault.
    """
    fields = spec.defaults | dict(fields)
    bad = field_errors(spec, fields, params)
    if bad:
        name = bad[0]
        lo, hi = next(f for f in spec.fields if f.name == name).legal_range(params)
        return ErrorCode.BAD_FIELD, f"{spec.name} field {name}={fields[name]} is outside {lo}..{hi}"
    for rule in spec.field_rules:
        if rule.holds(fields, params):
            name = rule.blames
            return ErrorCode.BAD_FIELD, f"{spec.name} field {name}={fields[name]}: {rule.doc}"
    spans = [(r, fields[r.start], r.extent(fields)) for r in spec.regions]
    for code, mem, size in ((ErrorCode.SPAD_RANGE, Mem.SPAD, params.SPAD_WORDS),
                            (ErrorCode.EXT_RANGE, Mem.EXT, params.EXT_WORDS)):
        for r, start, extent in spans:
            if r.mem is mem and start + extent > size:
                where = "scratchpad" if mem is Mem.SPAD else "external memory"
                return code, (f"{spec.name} {r.start}={start}: words {start}..{start + extent - 1} "
                              f"reach past the {size}-word {where}")
    for w, wstart, wext in spans:
        if not w.writes:
            continue
        for r, rstart, rext in spans:
            if r.writes or r.mem is not w.mem:
                continue
            if spec.in_place_ok and r.in_place and wstart == rstart:
                continue
            if wstart < rstart + rext and rstart < wstart + wext:
                return ErrorCode.OVERLAP, (
                    f"{spec.name} {w.start}={wstart} (words {wstart}..{wstart + wext - 1}) "
                    f"overlaps {r.start}={rstart} (words {rstart}..{rstart + rext - 1})")
    return ErrorCode.NONE, ""


def latency(spec: InstrSpec, fields: Mapping[str, int], params: Params) -> int:
    """Cycles the instruction occupies the execute stage (GA2.md section 5)."""
    return int(spec.latency_formula(INT, spec.complete(fields), params))


def reads(spec: InstrSpec, fields: Mapping[str, int], params: Params) -> int:
    """The instruction's scratchpad read window: it requests reads only in the first ``reads``
    cycles from its dispatch (0: it reads none). GA2.md section 7."""
    return int(spec.reads_formula(INT, spec.complete(fields), params))


def writes(spec: InstrSpec, fields: Mapping[str, int], params: Params) -> int:
    """The instruction's scratchpad write window: it requests writes only in the last ``writes``
    cycles of its latency (0: it writes none). GA2.md section 7."""
    return int(spec.writes_formula(INT, spec.complete(fields), params))


# ------------------------------------------------------------------------- the issue rule (GA2.md section 7)

ENGINES = ("dma", "mxu", "vpu", "sfu")
"""The engines, named by their counters: each runs one instruction at a time; with OVERLAP = 1
the four run side by side."""

OVERLAP_COUNTERS = ("hazard", "port")
"""OVERLAP = 1: two more 32-bit counters (GA2.md section 7): ``hazard``, cycles an instruction
waited for an instruction in flight on another engine whose scratchpad regions conflict with
its own; ``port``, cycles it then waited for the scratchpad's read or write port."""


ALL_COUNTERS = COUNTERS + OVERLAP_COUNTERS
"""Every counter a machine may report: what cosim reads and compares (a machine without
OVERLAP reports 0 for the two it lacks, as the reference machine counts them)."""


def counters(params: Params) -> tuple[str, ...]:
    """The counters this machine reports, in the order the RTL reports them: :data:`COUNTERS`,
    and :data:`OVERLAP_COUNTERS` after them when OVERLAP = 1."""
    return COUNTERS + OVERLAP_COUNTERS if params.OVERLAP else COUNTERS


Access = tuple[int, int, bool, bool]
"""A scratchpad region as the hazard rule sees it: (first word, one past the last, read, written)."""


def spad_accesses(spec: InstrSpec, fields: Mapping[str, int]) -> list[Access]:
    """The scratchpad regions of an instruction (its spec's region formulas), each marked read
    and/or written; MM's dst is read too when acc = 1 (``Region.also_read_if``)."""
    f = spec.complete(fields)
    out = []
    for r in spec.regions:
        if r.mem is not Mem.SPAD:
            continue
        start = f[r.start]
        read = not r.writes or (r.also_read_if is not None and bool(f[r.also_read_if]))
        out.append((start, start + r.extent(f), read, r.writes))
    return out


def conflict(a: list[Access], b: list[Access]) -> bool:
    """True when two instructions' scratchpad regions overlap with at least one of the two
    writing: read after write, write after read, or write after write."""
    for s1, e1, r1, w1 in a:
        for s2, e2, r2, w2 in b:
            if s1 < e2 and s2 < e1 and ((w1 and (r2 or w2)) or (r1 and w2)):
                return True
    return False


@dataclass(frozen=True)
class Costs:
    """What the issue rule asks of one instruction, all fixed by its fields on one machine:
    ``latency`` (cycles, :func:`latency`), its scratchpad ``accesses`` (:func:`spad_accesses`)
    and its read and write windows (cycles, :func:`reads`, :func:`writes`). A scheduler that
    places the same instruction many times on copies of one :class:`Issue` works them out once
    (:func:`costs`) and hands them to :meth:`Issue.place`."""

    latency: int
    accesses: list[Access]
    reads: int
    writes: int


def costs(spec: InstrSpec, fields: Mapping[str, int], params: Params) -> Costs:
    """:class:`Costs` of a legal instruction on the machine ``params``."""
    return Costs(latency(spec, fields, params), spad_accesses(spec, fields),
                 reads(spec, fields, params), writes(spec, fields, params))


@dataclass(frozen=True)
class Placed:
    """One instruction placed by :class:`Issue`: dispatched in cycle ``start`` (cycles from the
    start of the run), its engine busy until ``end`` (start + latency); ``hazard`` and ``port``
    are the cycles it waited on each cause (OVERLAP = 1 and 2; 0 on the serial machine);
    ``entered``, the cycle it entered its engine's queue (OVERLAP = 2, :class:`Decoupled`; None
    on the other machines)."""

    pc: int
    op: str
    engine: str | None
    start: int
    end: int
    hazard: int = 0
    port: int = 0
    entered: int | None = None


SHARED_WRITER = "dma"
"""OVERLAP = 1: the engine whose scratchpad writes share the write port beat by beat (its LDs
yield to the other engines' write windows) instead of holding it for a window (GA2.md section 7)."""


class Issue:
    """The issue rule: when each instruction of a run is dispatched (GA2.md sections 5 and 7).

    Give it the legal instructions in program order (:meth:`place`), then ask for the cycle in
    which the stop (HALT, an illegal instruction, the end of the program) is taken (:meth:`stop`);
    the ``cycles`` counter is that cycle plus STOP_CYCLES, each unit counter ``busy[engine]``.

    OVERLAP = 0 (serial): the first instruction is dispatched after FRONTEND_CYCLES, each next
    one when the previous one ends.

    OVERLAP = 1: instruction i on engine e is dispatched in the first cycle d with

    * d >= OVERLAP_FRONTEND_CYCLES (i = 0), d >= d(i-1) + OVERLAP_ISSUE_CYCLES (i > 0): in order;
    * d >= the end of every earlier instruction on e (the engine is free);
    * d >= the end of every earlier fence (a GATHER, ``InstrSpec.fence``: its data may stop the
      machine, so nothing after it starts before it is over);
    * d >= the end of every earlier instruction whose scratchpad regions :func:`conflict` with
      its own (hazard; external-memory regions are only the DMA's, which runs one at a time);
    * if it reads the scratchpad: d >= d(j) + reads(j) for every earlier j (the read ports);
    * if it writes and is not an LD: d + latency - writes >= the end of every earlier j that
      writes and is not an LD (the write port; such writes are in the last ``writes`` cycles of
      an instruction, its write window, and the windows never overlap).

    An LD (the DMA, :data:`SHARED_WRITER`; a GATHER, on the DMA too, holds the port as the others
    do) does not hold the write port: its n = ``writes``
    beats are written in order, in the first n cycles from d + LD_OVERHEAD that are in no other
    engine's write window (the windows of every instruction placed before it or after it). Its
    end is one past its last beat: d + latency plus the cycles of those windows that fell among
    its beats; its span (and ``busy["dma"]``) grows by as much. So the LD's end can grow after
    it is placed: when a later writer's window starts before the LD's end, the LD's beats from
    that cycle on move past the window (:meth:`place` updates ``engine_end``, the LD's entry
    in ``in_flight`` and ``busy``, and, with ``record``, the LD's :class:`Placed` in
    ``timeline``). No instruction that waited on the LD's end (its hazard, or the DMA being
    free) ever sees that end move afterwards: an instruction X that waited on it is dispatched
    in d(X) >= the end E as it was when X was placed, every instruction placed after X is
    dispatched at d(X) + OVERLAP_ISSUE_CYCLES or later, and its writes come after its
    dispatch; so its window starts after E, after every beat of the LD, and moves none. The
    writers placed before X are already counted in E. (The same argument holds for the stop.)

    A stop is taken in the first cycle >= d(i-1) + OVERLAP_ISSUE_CYCLES (OVERLAP_FRONTEND_CYCLES
    when it is the first instruction) in which every engine is free. ``hazard`` counts, per
    instruction, the cycles from the first one the order and its engine allow to the first one
    its hazards allow; ``port`` the rest of its wait.
    """

    def __init__(self, params: Params, *, record: bool = False):
        """``record``: keep every placed instruction in ``timeline`` (program order), each LD
        with its final end (a caller that only asks for dispatch cycles need not pay for it)."""
        self.params = params
        self.overlap = bool(params.OVERLAP)
        self.next = FRONTEND_CYCLES                  # serial: the next dispatch
        self.last: int | None = None                 # overlap: the last dispatch
        self.engine_end = dict.fromkeys(ENGINES, 0)
        self.in_flight: dict[str, tuple[int, list[Access]]] = {}
        self.reads_until = 0
        self.writes_until = 0
        self.hazard = 0
        self.port = 0
        self.busy = dict.fromkeys(ENGINES, 0)
        """Cycles each engine was busy: the sum of its instructions' spans (the unit counters)."""
        self.windows: list[tuple[int, int]] = []
        """The write windows [first, end) of the non-LD writers placed so far that end after the
        last dispatch (in placement order, so in time order: they never overlap)."""
        self.ld: tuple[int, int] | None = None
        """The DMA's last instruction when it is an LD: (its index in ``timeline``, or -1; the
        cycle of its first beat, d + LD_OVERHEAD). Its end is ``engine_end["dma"]``."""
        self.timeline: list[Placed] | None = [] if record else None
        self.fence = 0
        """The end of the last instruction placed with ``InstrSpec.fence`` (a GATHER): nothing is
        dispatched before it (OVERLAP = 1)."""

    def _earliest(self) -> int:
        return OVERLAP_FRONTEND_CYCLES if self.last is None else self.last + OVERLAP_ISSUE_CYCLES

    def copy(self) -> Issue:
        """A copy that placing on does not change this one (its dicts and lists copied, one
        level deep: what they hold is never changed in place)."""
        twin = object.__new__(type(self))
        state = self.__dict__.copy()
        for k, v in state.items():
            if type(v) is dict or type(v) is list:
                state[k] = v.copy()
        twin.__dict__ = state
        return twin

    def peek(self, ispec: InstrSpec, fields: Mapping[str, int], known: Costs | None = None) -> int:
        """The cycle :meth:`place` would dispatch this instruction in, next, without placing it
        (a scheduler's question: which of the instructions it may issue next starts first).
        ``known``: as for :meth:`place`."""
        if not self.overlap:
            return self.next
        return self._when(ispec, costs(ispec, fields, self.params) if known is None else known)[0]

    def floor(self, engine: str) -> int:
        """OVERLAP = 1: the first cycle the order, the engine (a name of :data:`ENGINES`) and the
        fences allow the instruction placed next (its dispatch is never earlier: :meth:`peek`
        adds its hazards and ports), worked out without its fields (a scheduler skips what
        cannot start first)."""
        return max(self._earliest(), self.engine_end[engine], self.fence)

    def _when(self, ispec: InstrSpec, known: Costs) -> tuple[int, int, int]:
        """OVERLAP = 1: (the dispatch cycle of the instruction placed next, the cycles it waits
        on its hazards, the cycles it then waits on the ports); nothing changes."""
        engine = ispec.counter
        base = self.floor(engine)
        accesses = known.accesses
        # an instruction in flight that ends by base cannot hold this one: its regions need no look
        hazard = max((end for end, other in self.in_flight.values()
                      if end > base and conflict(accesses, other)), default=0)
        n_reads, n_writes = known.reads, known.writes
        port = 0
        if n_reads:
            port = self.reads_until
        if n_writes and not (engine == SHARED_WRITER and not ispec.fence):
            port = max(port, self.writes_until - (known.latency - n_writes))
        start = max(base, hazard, port)
        return start, max(0, hazard - base), start - max(base, hazard)

    def _ld_end(self, t: int, left: int) -> int:
        """The end of an LD placed now whose ``left`` beats are written from cycle ``t`` on:
        one past the first ``left`` cycles from t in none of ``windows``."""
        for first, end in self.windows:
            if end <= t:
                continue
            if first >= t + left:
                break
            left -= max(0, first - t)
            t = end
        return t + left

    def place(self, pc: int, ispec: InstrSpec, fields: Mapping[str, int],
              known: Costs | None = None) -> Placed:
        """Dispatch one legal unit instruction (not HALT) and return where it runs (an LD's
        ``end`` as far as the instructions placed so far decide it: see the class). ``known``:
        the instruction's :class:`Costs` on this machine, when the caller has them already."""
        engine = ispec.counter
        assert engine is not None, "a stop is taken with Issue.stop"
        if not self.overlap:
            length = latency(ispec, fields, self.params) if known is None else known.latency
            start = self.next
            self.next = start + length
            self.busy[engine] += length
            return self._record(Placed(pc, ispec.name, engine, start, start + length))
        if known is None:
            known = costs(ispec, fields, self.params)
        start, waited_hazard, waited_port = self._when(ispec, known)
        end = self._occupy(engine, start, known.latency, known.accesses, known.reads, known.writes,
                           -1 if self.timeline is None else len(self.timeline), ispec.fence)
        self.hazard += waited_hazard
        self.port += waited_port
        return self._record(Placed(pc, ispec.name, engine, start, end, waited_hazard, waited_port))

    def _occupy(self, engine: str, start: int, length: int, accesses: list[Access], n_reads: int,
                n_writes: int, index: int, fence: bool) -> int:
        """Dispatch an instruction in cycle ``start`` (every instruction dispatched before it was
        dispatched earlier): its engine, its read and write windows, an LD's beats among the
        write windows, a window's move of the last LD's end. ``index`` names the instruction
        for :meth:`_moved`; ``fence``: it is one (a GATHER, which holds the write port for its
        window as every writer but an LD does; ``self.fence`` becomes its end). Returns its end."""
        shares = engine == SHARED_WRITER and n_writes > 0 and not fence
        end = start + length
        self.last = start
        while self.windows and self.windows[0][1] <= start:   # no LD from now on meets them
            self.windows.pop(0)
        if engine == SHARED_WRITER:
            self.ld = None
        if shares:
            first = end - n_writes
            self.ld = (index, first)
            end = self._ld_end(first, n_writes)
        self.engine_end[engine] = end
        self.in_flight[engine] = (end, accesses)
        self.busy[engine] += end - start
        if n_reads:
            self.reads_until = max(self.reads_until, start + n_reads)
        if n_writes and not shares:
            self.writes_until = max(self.writes_until, end)
            self.windows.append((end - n_writes, end))
            if self.ld is not None:
                self._move_ld(end - n_writes, end)
        if fence:
            self.fence = end
        return end

    def _record(self, placed: Placed) -> Placed:
        if self.timeline is not None:
            self.timeline.append(placed)
        return placed

    def _move_ld(self, first: int, end: int) -> None:
        """A writer's window [first, end) was just placed: the last LD's beats in it and after
        it move past it. Every earlier window ends by ``first`` (the write port rule), so the
        LD's cycles from max(first, its first beat) to its end are all beats: they move by the
        window's cycles from there."""
        index, ld_first = self.ld
        old = self.engine_end[SHARED_WRITER]
        lo = max(first, ld_first)
        if lo >= old or end <= lo:
            return
        new = old + end - lo
        self.engine_end[SHARED_WRITER] = new
        self.in_flight[SHARED_WRITER] = (new, self.in_flight[SHARED_WRITER][1])
        self.busy[SHARED_WRITER] += new - old
        self._moved(index, new)

    def _moved(self, index: int, end: int) -> None:
        """The LD ``index`` (its place in ``timeline``) now ends in cycle ``end``."""
        if self.timeline is not None:
            self.timeline[index] = replace(self.timeline[index], end=end)

    def stop(self) -> int:
        """The cycle in which the stop is taken (the serial machine: when the last instruction ends)."""
        if not self.overlap:
            return self.next
        return max(self._earliest(), *self.engine_end.values())


def war_only(new: list[Access], older: list[Access]) -> bool:
    """True when the only conflicts of ``new`` with the ``older`` instruction (:func:`conflict`)
    are writes after read: ``new`` writes words ``older`` reads, and neither reads nor writes
    a word ``older`` writes. ``new`` may then start once ``older`` has read (GA2.md section 7)."""
    war = False
    for s1, e1, r1, w1 in new:
        for s2, e2, r2, w2 in older:
            if s1 < e2 and s2 < e1:
                if w2 and (r1 or w1):
                    return False
                war = war or (w1 and r2)
    return war


NEVER = 1 << 62
"""A cycle later than any run's: what waits on an instruction not yet dispatched."""


class Decoupled(Issue):
    """The issue rule of the decoupled machine (OVERLAP = 2, GA2.md section 7).

    Every instruction goes, in program order, through the front end into its engine's queue
    (the station: STATION_SLOTS entries per engine, the running instruction included), and from
    there to its engine in the queue's order; instructions of different engines pass each other.
    Give it the legal instructions in program order (:meth:`place`), then ask for the stop
    (:meth:`stop`): a dispatch can depend on a later instruction (one that took a port first), so
    every cycle is known only then; ``timeline`` (program order), ``busy``, ``hazard``, ``port``
    and ``stall`` follow. Cycles counted from start; "at t" means dispatched (entered, stopped) in
    cycle t, decided in cycle t - 1, as at OVERLAP = 1. Instruction i of engine e:

    * it enters (is queued) at q(i), the first cycle with q(i) >= OVERLAP_FRONTEND_CYCLES
      (i = 0), q(i) >= q(i-1) + ENTER_CYCLES (i > 0), and, when STATION_SLOTS - 1 instructions
      of e came before it, q(i) >= d(j) + 1 for the one STATION_SLOTS - 1 places before it on
      e, j: a waiting entry is free once its instruction is dispatched (the running instruction
      keeps an entry of its own); and q(i) >= end(g) for the last fence g before it (a GATHER,
      ``InstrSpec.fence``: its row number may stop the machine, BAD_INDEX, and then nothing
      after it has entered, so nothing after it runs: the memories are the serial machine's);
    * it is dispatched at the first d(i) with d(i) >= q(i) + ENTER_DISPATCH_CYCLES; d(i) >=
      end(k) for the instruction k before it on e (its engine is free, in its queue's order);
      d(i) >= end(j) for every earlier j whose scratchpad regions :func:`conflict` with its own
      (its hazards; external-memory regions are only the DMA's, which runs in order), except
      that when i only writes what j reads (:func:`war_only`) d(i) >= d(j) + reads(j) suffices
      (j has read them; d(i) >= d(j) + DISPATCH_CYCLES holds anyway, and until then the wait
      counts as a hazard too); the read and write ports as at OVERLAP = 1, against every instruction
      dispatched before d(i): if it reads, d(i) >= d(j) + reads(j), if it writes and is not an
      LD, d(i) + latency - writes >= end(j) for the writers j other than LDs; and d(i) >= d +
      DISPATCH_CYCLES for the last dispatch d, of any engine;
    * when several instructions may be dispatched in the same cycle, the earliest in program
      order is; the others wait (at least DISPATCH_CYCLES);
    * an LD shares the write port beat by beat, as at OVERLAP = 1 (its beats skip every other
      engine's write window, the windows of instructions dispatched before it or after it); a
      GATHER, on the DMA too, holds the port for its window like the other engines' writers;
    * a stop (HALT, an illegal instruction, the end of the program) is taken at the first t >=
      q(last) + ENTER_CYCLES (OVERLAP_FRONTEND_CYCLES with no instruction before it) with
      every instruction before it dispatched and ended (t >= every end). A GATHER whose row
      number is out of its table (BAD_INDEX) is a stop too, taken as that one (nothing after
      it has entered: the stop's t >= every end of the instructions entered, the GATHER's
      among them).

    Every instruction that waits is waiting on something that ends: nothing is entered or
    dispatched out of order with an instruction it conflicts with, and the wait of each is on
    earlier ones (section 7's argument), so a machine that follows the rule never stalls; should
    one (a broken rule) find nothing it can ever dispatch, the watchdog stops it: ``stall`` is then
    the pc of the earliest instruction not dispatched, and the stop is taken WATCHDOG_CYCLES after
    the last cycle in which something was entered, dispatched, or an engine was busy.

    ``hazard`` counts, per instruction, the cycles from the first its queue, its engine and its
    entry allow (q(i) + ENTER_DISPATCH_CYCLES, end(k)) to the first its hazards allow; ``port``
    the rest of its wait (ports, the dispatch pace, an earlier instruction dispatched first).
    """

    def __init__(self, params: Params, *, record: bool = False):
        super().__init__(params, record=record)
        self.code: list[tuple[int, InstrSpec, Mapping[str, int]]] = []
        self.stall: int | None = None
        """The pc of the earliest instruction not dispatched when the watchdog stopped the run."""
        self._stop: int | None = None

    def place(self, pc: int, ispec: InstrSpec, fields: Mapping[str, int]) -> None:  # type: ignore[override]
        """Add the next legal unit instruction (not HALT), in program order."""
        assert ispec.counter is not None, "a stop is taken with Decoupled.stop"
        self.code.append((pc, ispec, fields))
        self._stop = None

    def peek(self, ispec: InstrSpec, fields: Mapping[str, int]) -> int:
        raise TypeError("Decoupled.peek: at OVERLAP = 2 a dispatch can depend on later instructions; "
                        "place them all, then stop()")

    def stop(self) -> int:
        """The cycle in which the stop is taken (every instruction placed so far has run)."""
        if self._stop is None:
            self._stop = _Station(self).run()
        return self._stop

    def _moved(self, index: int, end: int) -> None:
        self._ends[index] = end


class _Station:
    """One run of :class:`Decoupled`'s rule over the instructions placed: the events (an
    instruction entering, a dispatch, the stop) in the order of their cycles."""

    def __init__(self, rule: Decoupled):
        p = rule.params
        timeline = rule.timeline
        Issue.__init__(rule, p, record=timeline is not None)
        if timeline is not None:            # the same list, filled again (the machine holds it)
            timeline.clear()
            rule.timeline = timeline
        rule.stall = None
        self.rule = rule
        code = rule.code
        n = len(code)
        self.engine = [ispec.counter for _, ispec, _ in code]
        self.length = [latency(ispec, f, p) for _, ispec, f in code]
        self.reads = [reads(ispec, f, p) for _, ispec, f in code]
        self.writes = [writes(ispec, f, p) for _, ispec, f in code]
        self.access = [spad_accesses(ispec, f) for _, ispec, f in code]
        self.fenced = [ispec.fence for _, ispec, _ in code]
        self.shares = [e == SHARED_WRITER and w > 0 and not fenced
                       for e, w, fenced in zip(self.engine, self.writes, self.fenced, strict=True)]
        self.queue: dict[str, list[int]] = {e: [] for e in ENGINES}
        self.rank = []
        for i, e in enumerate(self.engine):
            self.rank.append(len(self.queue[e]))
            self.queue[e].append(i)
        self.head = dict.fromkeys(ENGINES, 0)
        self.entered: list[int | None] = [None] * n
        self.start: list[int | None] = [None] * n
        rule._ends = self.end = [NEVER] * n
        self.deps: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
        self.waits: list[tuple[int, int]] = [(0, 0)] * n
        self.live: list[int] = []
        self.next = 0
        self.last_enter: int | None = None
        self.last_dispatch: int | None = None
        self.last_fence: int | None = None       # the last fence entered

    def run(self) -> int:
        """Every event in order; returns the stop's cycle (and fills the rule's results)."""
        while True:
            enter = self._enter_time()
            chosen, when = None, NEVER
            for e in ENGINES:
                i = self._head(e)
                if i is not None:
                    t = self._dispatch_time(i)[0]
                    if t < when or (t == when and chosen is not None and i < chosen):
                        chosen, when = i, t
            if enter >= NEVER and when >= NEVER:
                return self._stalled()
            if enter <= when:
                if self.next == len(self.engine):
                    return self._finish(enter)
                self._enter(self.next, enter)
            else:
                self._dispatch(chosen, when)

    def _head(self, e: str) -> int | None:
        k = self.head[e]
        if k < len(self.queue[e]) and self.entered[self.queue[e][k]] is not None:
            return self.queue[e][k]
        return None

    def _enter_time(self) -> int:
        """When the front end's next instruction enters the station (or the stop is taken)."""
        t = OVERLAP_FRONTEND_CYCLES if self.last_enter is None else self.last_enter + ENTER_CYCLES
        k = self.next
        if k == len(self.engine):
            if any(s is None for s in self.start):
                return NEVER
            return max(t, *self.end) if self.end else t
        g = self.last_fence
        if g is not None:                        # nothing enters after a fence before it ends
            t = max(t, self.end[g]) if self.start[g] is not None else NEVER
        waiting = STATION_SLOTS - 1
        if self.rank[k] >= waiting:
            j = self.queue[self.engine[k]][self.rank[k] - waiting]
            t = max(t, self.start[j] + 1) if self.start[j] is not None else NEVER
        return t

    def _enter(self, k: int, t: int) -> None:
        self.live = [j for j in self.live if self.start[j] is None or self.end[j] > t]
        mine = self.access[k]
        self.deps[k] = [(j, war_only(mine, self.access[j])) for j in self.live
                        if self.engine[j] != self.engine[k] and conflict(mine, self.access[j])]
        self.live.append(k)
        if self.fenced[k]:
            self.last_fence = k
        self.entered[k] = t
        self.last_enter = t
        self.next += 1

    def _dispatch_time(self, i: int) -> tuple[int, int, int]:
        """(the cycle i would be dispatched in if nothing else happened first, the first cycle its
        queue and engine allow, the first its hazards allow)."""
        e = self.engine[i]
        base = self.entered[i] + ENTER_DISPATCH_CYCLES
        if self.head[e]:
            base = max(base, self.end[self.queue[e][self.head[e] - 1]])
        hazard = base
        for j, war in self.deps[i]:
            if self.start[j] is None:
                return NEVER, base, NEVER
            hazard = max(hazard, self.start[j] + max(self.reads[j], DISPATCH_CYCLES) if war else self.end[j])
        t = hazard
        rule = self.rule
        if self.reads[i]:
            t = max(t, rule.reads_until)
        if self.writes[i] and not self.shares[i]:
            t = max(t, rule.writes_until - (self.length[i] - self.writes[i]))
        if self.last_dispatch is not None:
            t = max(t, self.last_dispatch + DISPATCH_CYCLES)
        return t, base, hazard

    def _dispatch(self, i: int, t: int) -> None:
        _, base, hazard = self._dispatch_time(i)
        self.waits[i] = (hazard - base, t - hazard)
        e = self.engine[i]
        self.start[i] = t
        self.end[i] = t + self.length[i]          # an LD's grows in _occupy (Decoupled._moved)
        self.end[i] = self.rule._occupy(e, t, self.length[i], self.access[i], self.reads[i],
                                        self.writes[i], i, self.fenced[i])
        self.head[e] += 1
        self.last_dispatch = t

    def _finish(self, t: int) -> int:
        """The results of the instructions dispatched (all of them, unless the run stalled)."""
        rule = self.rule
        for i, (pc, ispec, _) in enumerate(rule.code):
            if self.start[i] is None:
                continue
            rule.hazard += self.waits[i][0]
            rule.port += self.waits[i][1]
            if rule.timeline is not None:
                rule.timeline.append(Placed(pc, ispec.name, self.engine[i], self.start[i], self.end[i],
                                            *self.waits[i], entered=self.entered[i]))
        return t

    def _stalled(self) -> int:
        """Nothing can ever be dispatched (a broken rule): the watchdog's stop, taken
        WATCHDOG_CYCLES after the first quiet cycle (cycle 1 is the first of the run). The heads
        that wait count their waits until the machine stops, as every cycle of a run does."""
        rule = self.rule
        rule.stall = rule.code[min(i for i, s in enumerate(self.start) if s is None)][0]
        quiet = max([1, self.last_enter or 0, self.last_dispatch or 0,
                     *(self.end[i] for i, s in enumerate(self.start) if s is not None)])
        stop = quiet + WATCHDOG_CYCLES
        last = stop + STOP_CYCLES            # the last cycle counted: t = last decided in last - 1
        for e in ENGINES:
            i = self._head(e)
            if i is not None:
                _, base, hazard = self._dispatch_time(i)
                self.waits[i] = (max(0, min(hazard, last + 1) - base), max(0, last + 1 - max(base, hazard)))
                rule.hazard += self.waits[i][0]
                rule.port += self.waits[i][1]
        return self._finish(stop)


def issue_rule(params: Params, *, record: bool = False) -> Issue:
    """The issue rule of the machine ``params``: :class:`Decoupled` at OVERLAP = 2, else
    :class:`Issue` (the serial machine, OVERLAP = 1)."""
    return (Decoupled if params.OVERLAP == 2 else Issue)(params, record=record)
