"""GA-2's register map for a system bus (issue 29), written once.

The table below is the one place the host interface of GA-2 in a system is declared: the
AXI4-Lite slave's address decode (hw/axi_regs.py), the C header of the firmware
(:func:`c_header`), the Python host driver's constants (:mod:`sim.host`) and the reference page
``docs/reference/regmap.md`` (:func:`markdown`, checked for staleness) are all derived from it.

Every register is 32 bits wide at a byte offset that is a multiple of 4; a write may only use
all four byte lanes (a partial write is refused with SLVERR, as is an access to an offset the
table does not name). The instruction memory is a write-only window of
``IMEM_WORDS * INSTR_WORDS`` words at :func:`imem_base`: word w of the encoded program (word
w % 4 of instruction w // 4, :mod:`sim.asm`) is written at ``imem_base + 4*w``.

Counters: the machine's own (``sim.spec.ALL_COUNTERS``: a machine without OVERLAP reads 0 for
``hazard`` and ``port``) and ``mem_stall`` (docs/GA2.md section 8): the cycles the machine stood
still waiting for the memory bus. ``cycles`` is the time from start to done on the bus, stalls
included: ``cycles - mem_stall`` is the reference machine's ``cycles``; every other counter is
the reference machine's own.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from . import spec
from .machines import add_argument, describe, from_args
from .spec import DEFAULT, Params

REG_BYTES = 4
"""Every register is one 32-bit word."""
MAGIC = 0x4741_3201
"""The ID register's value: "GA2" in ASCII and the register map's version (1)."""
BUS_COUNTERS = ("mem_stall",)
"""Counters the system top adds to the machine's (``sim.spec.ALL_COUNTERS``)."""
COUNTER_BASE = 0x40
"""Byte offset of the first counter; the others follow, one word each."""

ACCESS = {
    "r": "read only",
    "w": "write only (reads 0)",
    "rw": "read and write",
    "w1c": "read; writing 1 to a bit clears it",
}
"""What each access mode of the table means."""


@dataclass(frozen=True)
class Field:
    """A field of a register: bits lsb .. lsb + width - 1."""

    name: str
    lsb: int
    width: int
    doc: str

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Register:
    """One register: its name, byte offset, access mode (a key of :data:`ACCESS`), meaning and
    fields (none: the whole word is one value)."""

    name: str
    offset: int
    access: str
    doc: str
    fields: tuple[Field, ...] = ()

    def field(self, name: str) -> Field:
        """The field of that name.

        Raises:
            KeyError: the register has no such field (the message lists the fields).
        """
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}; its fields: "
                       f"{', '.join(f.name for f in self.fields) or 'none'}")


def _log2(n: int) -> int:
    return n.bit_length() - 1


PARAM_FIELDS = (
    Field("T", 0, 5, "the array is T x T"),
    Field("LANES", 5, 5, "words per cycle through the scratchpad, the DMA and the vector units"),
    Field("OVERLAP", 10, 2, "0: one instruction at a time; 1: the engines side by side"),
    Field("SPAD_LOG2", 12, 5, "log2 of SPAD_WORDS"),
    Field("EXT_LOG2", 17, 5, "log2 of EXT_WORDS"),
    Field("K_MAX", 22, 8, "largest inner dimension of one MM"),
)
"""PARAMS: the machine the hardware was generated for, which the driver compares with the
program's (a program compiled for another machine is refused before it runs)."""


def params_word(params: Params) -> int:
    """The PARAMS register's value for a machine."""
    values = {"T": params.T, "LANES": params.LANES, "OVERLAP": params.OVERLAP,
              "SPAD_LOG2": _log2(params.SPAD_WORDS), "EXT_LOG2": _log2(params.EXT_WORDS),
              "K_MAX": params.K_MAX}
    return sum(values[f.name] << f.lsb for f in PARAM_FIELDS)


def counter_names() -> tuple[str, ...]:
    """Every counter register, in address order: the machine's, then the bus's."""
    return spec.ALL_COUNTERS + BUS_COUNTERS


def registers(params: Params) -> tuple[Register, ...]:
    """The register table of a machine (offsets are the same on every machine; the values of ID,
    PARAMS and IMEM_WORDS are the machine's)."""
    regs = [
        Register("ID", 0x00, "r", f"0x{MAGIC:08X}: \"GA2\" and the map's version"),
        Register("PARAMS", 0x04, "r", "the machine's parameters", PARAM_FIELDS),
        Register("IMEM_WORDS", 0x08, "r", "instruction memory capacity, in instructions"),
        Register("SM_MAX_LEN", 0x0C, "r", "longest softmax row, in elements"),
        Register("CTRL", 0x10, "w", "control", (
            Field("START", 0, 1, "1 starts the program at pc 0 (ignored while BUSY)"),
        )),
        Register("STATUS", 0x14, "r", "state of the machine and of its bus", (
            Field("BUSY", 0, 1, "running: from START until DONE"),
            Field("DONE", 1, 1, "stopped (HALT or an error) and every write answered; held until START"),
            Field("ERROR", 2, 1, "stopped on an error (ERROR_CODE, ERROR_PC)"),
            Field("BUS_ERROR", 3, 1, "a read or write on the master bus was answered SLVERR or DECERR "
                                     "since START"),
        )),
        Register("ERROR_CODE", 0x18, "r", "sim.spec.ErrorCode of the stop (0 after a HALT)"),
        Register("ERROR_PC", 0x1C, "r", "the pc of the instruction that stopped the machine"),
        Register("PROG_LEN", 0x20, "rw", "the program's length in instructions, read at START"),
        Register("EXT_BASE", 0x24, "rw", "byte address of external word 0 on the master bus "
                 "(its low bits, below LANES * 4 bytes, read 0)"),
        Register("IRQ_ENABLE", 0x28, "rw", "interrupt enables", (
            Field("DONE", 0, 1, "raise irq while IRQ_STATUS.DONE is set"),
        )),
        Register("IRQ_STATUS", 0x2C, "w1c", "interrupt events", (
            Field("DONE", 0, 1, "set when DONE rises"),
        )),
    ]
    for k, name in enumerate(counter_names()):
        doc = ("cycles from START to DONE, memory stalls included" if name == "cycles"
               else "cycles the machine stood still for the memory bus (stalls, and the last writes "
                    "after the stop)" if name == "mem_stall"
               else f"the machine's `{name}` counter (docs/GA2.md section 5)"
               + (" (0 without OVERLAP)" if name in spec.OVERLAP_COUNTERS else ""))
        regs.append(Register(name.upper(), COUNTER_BASE + REG_BYTES * k, "r", doc))
    return tuple(regs)


def imem_bytes(params: Params) -> int:
    """Size of the instruction-memory window in bytes."""
    return params.IMEM_WORDS * spec.INSTR_WORDS * REG_BYTES


def imem_base(params: Params) -> int:
    """Byte offset of the instruction-memory window: the window's size rounded up to a power of
    two (at least 4 KiB), so that the window is aligned and the registers sit below it."""
    return max(0x1000, 1 << (imem_bytes(params) - 1).bit_length())


def address_bits(params: Params) -> int:
    """Width of the slave's byte address: the registers and the window fit in 2 * imem_base."""
    return _log2(imem_base(params)) + 1


def by_name(params: Params) -> dict[str, Register]:
    return {r.name: r for r in registers(params)}


def offset(name: str, params: Params) -> int:
    """The byte offset of a register.

    Raises:
        KeyError: no register has that name (the message lists them).
    """
    table = by_name(params)
    if name not in table:
        raise KeyError(f"no register {name!r}; the registers: {', '.join(table)}")
    return table[name].offset


def prog_len_bits(params: Params) -> int:
    """Width of PROG_LEN and ERROR_PC: the pc's (PC_BITS, or more when IMEM_WORDS needs it: the
    NO_HALT pc of a full program is IMEM_WORDS itself; hw/checker.py's ``pc_bits``)."""
    return max(spec.PC_BITS, params.IMEM_WORDS.bit_length())


def write_mask(register: Register, params: Params) -> int:
    """The bits of a writable register that hold what is written (the others read 0): its
    fields, or PROG_LEN's width, or EXT_BASE above the beat's alignment (LANES * 4 bytes)."""
    if register.fields:
        return sum(f.mask for f in register.fields)
    if register.name == "PROG_LEN":
        return (1 << prog_len_bits(params)) - 1
    if register.name == "EXT_BASE":
        return 0xFFFF_FFFF & ~(params.LANES * REG_BYTES - 1)
    return 0xFFFF_FFFF


def fixed_values(params: Params) -> dict[str, int]:
    """The read-only registers whose value is the machine's, not the state's."""
    return {"ID": MAGIC, "PARAMS": params_word(params), "IMEM_WORDS": params.IMEM_WORDS,
            "SM_MAX_LEN": params.SM_MAX_LEN}


def check_table(params: Params) -> None:
    """Refuse a table whose registers overlap, are misaligned, reach the window, or whose
    fields overlap or leave the word.

    Raises:
        ValueError: naming the register or field at fault.
    """
    seen: dict[int, str] = {}
    for r in registers(params):
        if r.offset % REG_BYTES or r.offset in seen or r.offset >= imem_base(params):
            raise ValueError(f"register {r.name} at 0x{r.offset:X}: misaligned, taken by "
                             f"{seen.get(r.offset, '-')} or inside the instruction window")
        if r.access not in ACCESS:
            raise ValueError(f"register {r.name}: access {r.access!r} is not one of {', '.join(ACCESS)}")
        seen[r.offset] = r.name
        used = 0
        for f in r.fields:
            if f.mask & used or f.lsb + f.width > 32:
                raise ValueError(f"register {r.name}: field {f.name} overlaps another or leaves the word")
            used |= f.mask


# ------------------------------------------------------------------------------------ generated text

HEADER_PATH = Path(__file__).resolve().parent.parent / "flows" / "soc" / "firmware" / "ga2_regs.h"
DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "reference" / "regmap.md"
REGENERATE = "python -m sim.regmap --write"


def c_header(params: Params) -> str:
    """The C header of the firmware: offsets, fields (``_LSB``, ``_MASK``) and the machine."""
    out = [
        "/* GA-2's register map (generated by `python -m sim.regmap --c FILE`, from sim/regmap.py;",
        f" * do not edit). Machine: {describe(params)}. */",
        "#ifndef GA2_REGS_H",
        "#define GA2_REGS_H",
        "",
        f"#define GA2_MAGIC 0x{MAGIC:08X}u",
        f"#define GA2_PARAMS_VALUE 0x{params_word(params):08X}u",
        f"#define GA2_LANES {params.LANES}",
        f"#define GA2_EXT_WORDS {params.EXT_WORDS}u",
        f"#define GA2_INSTR_WORDS {spec.INSTR_WORDS}",
        f"#define GA2_IMEM_BASE 0x{imem_base(params):X}u",
        f"#define GA2_IMEM_BYTES 0x{imem_bytes(params):X}u",
        f"#define GA2_SPAN 0x{1 << address_bits(params):X}u",
        "",
    ]
    for r in registers(params):
        out.append(f"#define GA2_{r.name} 0x{r.offset:03X}u  /* {r.access}: {_c_comment(r.doc)} */")
        for f in r.fields:
            out.append(f"#define GA2_{r.name}_{f.name}_LSB {f.lsb}")
            out.append(f"#define GA2_{r.name}_{f.name}_MASK 0x{f.mask:08X}u")
    out += ["", "#endif", ""]
    return "\n".join(out)


def _c_comment(text: str) -> str:
    return text.replace("*/", "* /")


def markdown(params: Params) -> str:
    """The reference page ``docs/reference/regmap.md``."""
    out = [
        "# The register map",
        "",
        f"<!-- generated by `{REGENERATE}` from sim/regmap.py: do not edit -->",
        "",
        "GA-2 in a system (the AXI4-Lite slave of `hw/axi_top.py`, docs/guide/soc.md): 32-bit registers "
        "at byte offsets from the slave's base address, for the default machine "
        f"({describe(params)}). The same table gives the C header (`{HEADER_PATH.name}`, "
        "`python -m sim.regmap --c FILE`) and the Python driver's constants (`sim.host`). A partial "
        "write, or an access to an offset not listed, is answered SLVERR.",
        "",
        "| offset | name | access | meaning |",
        "|---|---|---|---|",
    ]
    for r in registers(params):
        out.append(f"| `0x{r.offset:03X}` | `{r.name}` | {r.access} | {r.doc} |")
    out += ["", "## Fields", ""]
    for r in registers(params):
        if not r.fields:
            continue
        out += [f"`{r.name}`:", "", "| bits | field | meaning |", "|---|---|---|"]
        for f in r.fields:
            bits = str(f.lsb) if f.width == 1 else f"{f.lsb + f.width - 1}..{f.lsb}"
            out.append(f"| {bits} | `{f.name}` | {f.doc} |")
        out.append("")
    out += [
        "## The instruction memory",
        "",
        f"A write-only window of {imem_bytes(params):,} bytes at `0x{imem_base(params):X}` "
        f"({params.IMEM_WORDS:,} instructions of {spec.INSTR_WORDS} words): word w of the encoded "
        f"program at `0x{imem_base(params):X} + 4*w`, written while the machine is idle (a write "
        "while BUSY is answered SLVERR). The slave decodes "
        f"{address_bits(params)} address bits ({1 << address_bits(params):,} bytes).",
        "",
        "## Access modes",
        "",
        "| access | meaning |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in ACCESS.items()]
    out.append("")
    return "\n".join(out)


GENERATED = {DOC_PATH: markdown, HEADER_PATH: c_header}
"""The checked-in files this module writes, for the default machine."""


def stale(params: Params) -> list[str]:
    """The checked-in generated files that differ from what the table gives now (their paths)."""
    return [str(p) for p, render in GENERATED.items()
            if not p.is_file() or p.read_text() != render(params)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim.regmap", description=(
        "GA-2's register map: write or check docs/reference/regmap.md and the firmware's C header "
        "(flows/soc/firmware/ga2_regs.h), or print the header of a machine."))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the page and the header")
    group.add_argument("--check", action="store_true", help="exit 1 when the page or the header is stale")
    group.add_argument("--c", type=Path, metavar="FILE",
                       help="write the C header of --param's machine to FILE")
    add_argument(parser)
    args = parser.parse_args(argv)
    params = from_args(args, parser)
    check_table(params)
    if args.c:
        args.c.parent.mkdir(parents=True, exist_ok=True)
        args.c.write_text(c_header(params))
        print(f"wrote {args.c}")
        return 0
    if (args.write or args.check) and params != DEFAULT:
        parser.error("the checked-in page and header are the default machine's; --c FILE writes another's")
    if args.check:
        bad = stale(params)
        for path in bad:
            print(f"{path} is stale: run `{REGENERATE}`", file=sys.stderr)
        if not bad:
            print("the register map's page and header are up to date")
        return 1 if bad else 0
    if args.write:
        for path, render in GENERATED.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(params))
            print(f"wrote {path}")
        return 0
    sys.stdout.write(markdown(params))
    return 0


if __name__ == "__main__":
    sys.exit(main())
