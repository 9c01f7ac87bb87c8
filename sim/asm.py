"""GA-2 instructions as values: build, encode, decode, disassemble, assemble.

All layouts come from :mod:`sim.spec`. Text form (one instruction per line)::

    LD   dst=0 src=0 len=60
    MM   dst=240 A=8 B=72 M=3 K=10 N=4 tb=0 lda=10 ldb=9 ldc=11
    RQ   dst=180 src=240 len=50 m=12345678 s=30 relu=1
    HALT

The mnemonic is padded to four characters, then the fields follow in the order of GA2.md's
table. :func:`assemble` reads that form back; it also accepts a leading instruction index
(as in a numbered listing) and comments starting with ``#`` or ``;``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from . import spec
from .spec import INSTR_WORDS, OPCODE_BITS, WORD_BITS, InstrSpec, Params
from .words import as_words


class AsmError(ValueError):
    """An instruction that cannot be built, encoded, decoded or parsed; the message names
    the instruction and the field (or the line) at fault."""


@dataclass(frozen=True)
class Instruction:
    """One GA-2 instruction: a mnemonic and its field values, in the spec's field order.

    Build instances with :func:`build`; read fields as attributes (``ins.len``, ``ins.M``).
    """

    op: str
    values: tuple[int, ...]

    @property
    def spec(self) -> InstrSpec:
        return spec.BY_NAME[self.op]

    @property
    def fields(self) -> dict[str, int]:
        """Field name -> value, in the spec's order."""
        return dict(zip(self.spec.field_names, self.values, strict=True))

    def __getattr__(self, name: str) -> int:
        if name.startswith("_") or name in ("op", "values"):
            raise AttributeError(name)
        try:
            return self.fields[name]
        except KeyError:
            raise AttributeError(f"{self.op} has no field {name!r}") from None

    def encode(self) -> list[int]:
        """The instruction as INSTR_WORDS 32-bit words, least significant first."""
        bits = int(self.spec.opcode)
        for name, (lsb, _width) in self.spec.field_offsets().items():
            bits |= self.fields[name] << lsb
        mask = (1 << WORD_BITS) - 1
        return [(bits >> (WORD_BITS * i)) & mask for i in range(INSTR_WORDS)]

    def __str__(self) -> str:
        return disassemble(self)


def build(op: str, *, params: Params, strict: bool = True, **fields: int) -> Instruction:
    """Build an instruction, checking every field.

    Args:
        op: the mnemonic (``"LD"``, ``"MM"``, ...).
        params: the machine the legal ranges refer to.
        strict: when True (the default), every field must lie in its legal range; when
            False, only in its bit width, so that illegal programs can be built to test the
            machine's error checks.
        **fields: every field of the instruction, by name (one with a default may be left out).

    Raises:
        AsmError: unknown mnemonic, a missing or unknown field, a value that is not an int,
            does not fit the field's width, or (strict) lies outside the legal range.
    """
    if not isinstance(params, Params):
        raise AsmError(f"build: params must be a sim.spec.Params, got {params!r}")
    ispec = spec.BY_NAME.get(op) if isinstance(op, str) else None
    if ispec is None:
        raise AsmError(f"unknown instruction {op!r}; known: {', '.join(spec.BY_NAME)}")
    fields = ispec.defaults | fields
    missing = [n for n in ispec.field_names if n not in fields]
    unknown = [n for n in fields if n not in ispec.field_names]
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing field(s) {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown field(s) {', '.join(unknown)}")
        raise AsmError(f"{op}: {'; '.join(parts)} (fields: {' '.join(ispec.field_names) or 'none'})")
    values = []
    for f in ispec.fields:
        v = fields[f.name]
        if not isinstance(v, (int, np.integer)):  # bools are ints: tb=True means 1
            raise AsmError(f"{op} field {f.name}: expected an int, got {v!r}")
        v = int(v)
        if not 0 <= v < 1 << f.width:
            raise AsmError(f"{op} field {f.name}={v} does not fit in {f.width} bits "
                           f"(0..{(1 << f.width) - 1})")
        if strict:
            lo, hi = f.legal_range(params)
            if not lo <= v <= hi:
                raise AsmError(f"{op} field {f.name}={v} is outside its legal range {lo}..{hi}")
        values.append(v)
    return Instruction(op, tuple(values))


def decode(words: Sequence[int]) -> Instruction:
    """Decode INSTR_WORDS words into an instruction (bits above the last field are ignored).

    Raises:
        AsmError: not a list of 32-bit integers, the word count is wrong, or the opcode is
            unknown.
    """
    try:
        checked = as_words(words, "instruction")
    except (TypeError, ValueError) as e:
        raise AsmError(str(e)) from None
    if len(checked) != INSTR_WORDS:
        raise AsmError(f"an instruction is {INSTR_WORDS} words, got {len(checked)}")
    bits = 0
    for i, w in enumerate(checked):
        bits |= int(w) << (WORD_BITS * i)
    opcode = bits & ((1 << OPCODE_BITS) - 1)
    ispec = spec.BY_OPCODE.get(opcode)
    if ispec is None:
        raise AsmError(f"unknown opcode {opcode}")
    values = tuple((bits >> lsb) & ((1 << width) - 1) for lsb, width in ispec.field_offsets().values())
    return Instruction(ispec.name, values)


def encode_program(program: Iterable[Instruction]) -> list[int]:
    """Concatenate the encodings of a program's instructions."""
    return [w for ins in program for w in ins.encode()]


def decode_program(words: Sequence[int]) -> list[Instruction]:
    """Split words into instructions and decode each.

    Raises:
        AsmError: the word count is not a multiple of INSTR_WORDS, or an opcode is unknown
            (the message gives the instruction index).
    """
    try:
        words = [int(w) for w in as_words(words, "encoded program")]
    except (TypeError, ValueError) as e:
        raise AsmError(str(e)) from None
    if len(words) % INSTR_WORDS:
        raise AsmError(f"a program is a multiple of {INSTR_WORDS} words, got {len(words)}")
    out = []
    for i in range(0, len(words), INSTR_WORDS):
        try:
            out.append(decode(words[i:i + INSTR_WORDS]))
        except AsmError as e:
            raise AsmError(f"instruction {i // INSTR_WORDS}: {e}") from None
    return out


def disassemble(ins: Instruction) -> str:
    """One line of text: the mnemonic padded to four characters, then ``name=value`` fields
    (a field that has a default and holds it is left out: ``build`` fills it in again)."""
    shown = [f"{f.name}={v}" for f, v in zip(ins.spec.fields, ins.values, strict=True) if v != f.default]
    if not shown:
        return ins.op
    return f"{ins.op:<4} " + " ".join(shown)


def listing(program: Iterable[Instruction]) -> str:
    """A numbered listing, one instruction per line."""
    return "\n".join(f"{k:5d}  {disassemble(ins)}" for k, ins in enumerate(program))


_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(-?(?:0x[0-9a-fA-F]+|\d+))$")


def assemble(text: str, *, params: Params, strict: bool = True) -> list[Instruction]:
    """Parse the text form (see the module docstring) into instructions.

    Raises:
        AsmError: a line does not parse or an instruction is invalid; the message gives the
            line number and the line.
    """
    if not isinstance(text, str):
        raise AsmError(f"assemble takes the program as one str, got {type(text).__name__}")
    program = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = re.split(r"[#;]", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        if tokens[0].isdigit():
            tokens = tokens[1:]
        if not tokens:
            continue
        op, fields = tokens[0].upper(), {}
        try:
            for tok in tokens[1:]:
                m = _FIELD.match(tok)
                if not m:
                    raise AsmError(f"expected name=value, got {tok!r}")
                if m.group(1) in fields:
                    raise AsmError(f"field {m.group(1)} given twice")
                number = m.group(2)
                fields[m.group(1)] = int(number, 16) if "x" in number else int(number, 10)
            program.append(build(op, params=params, strict=strict, **fields))
        except AsmError as e:
            raise AsmError(f"line {lineno}: {e}: {raw.strip()!r}") from None
    return program

