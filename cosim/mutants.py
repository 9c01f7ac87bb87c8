"""Deliberately broken copies of the generated Verilog, to show that co-simulation catches them.

``python -m cosim seeds 100-111 --mutant rq-round`` runs the seed programs on a copy of
``build/ga2_simtop.v`` whose requantizer truncates instead of rounding; it must print FAIL
with the first differing words. With ``--mutant dma-late`` the DMA raises ``done`` a
cycle late: the memories and the counters stay right (the execute stage counts the spec's
latency, not the units' ``done``), and only the core's ``timing_fault`` self-check makes it
FAIL. ``vadd-norelu`` and ``vadd-relu-bit`` break VADD's relu field (the ReLU dropped; the
field read from len's lowest bit): docs/add-an-instruction.md shows which checks catch them.
``ln-truncate`` drops the LayerNorm unit's rounding term (y = floor(v / 2^s), not v / 2^s
rounded half away from zero); ``gather-nocheck`` never refuses a GATHER's row number (a row out
of its table is read, past the table: the silent wrong read BAD_INDEX exists to prevent).
``hazard-off`` and ``write-port-off`` break the issue rule of a machine with OVERLAP = 1 (their
pattern is only in its Verilog, in the module of its execute stage, hw/overlap.py's
``OverlapExecute``: ``--param OVERLAP=1``): the hazard flag, or the write port's, never holds
an instruction back; ``dma-yield-off``: the DMA's LD beats never yield the write port to
another engine's window (``dma_hold`` always 0). ``counter-reset`` resets ``count_cycles`` to 128:
every start sets it to 1, so only the harness's check of the outputs right after reset sees it
(the RTL mutants' m03 of the default machine's draw of 2026-12-07).
Each mutant is a text edit of the exported Verilog that must
apply (a mutant that no longer finds its pattern raises, so a changed RTL cannot silently
turn the check into a no-op).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flows.memmap import PORTS_JSON
from sim.spec import BY_NAME, OPCODE_BITS


class MutantError(ValueError):
    """A mutant's pattern is not in the Verilog (the RTL changed), or the mutant is unknown."""


def _module(text: str, suffix: str) -> tuple[int, int]:
    """(start, end) of the Verilog module whose name ends with ``suffix``."""
    m = re.search(rf"^module \\?\S*{re.escape(suffix)} \(.*?^endmodule", text, re.S | re.M)
    if not m:
        raise MutantError(f"no module named *{suffix} in the Verilog")
    return m.start(), m.end()


def _requant_truncates(text: str) -> tuple[str, int]:
    # hw/requant.py stage 7: rounded = (q - corr + 1) >> 1; Amaranth writes the "+ 1" as
    # `$signed(\$N ) + (* src = ".../requant.py:L" *) $signed(2'h1);`, one per lane
    start, end = _module(text, ".requant.lanes")
    body, n = re.subn(r"(\+ \(\* src = \"[^\"]*requant\.py:\d+\" \*\) \$signed\()2'h1(\);)", r"\g<1>2'h0\2",
                      text[start:end])
    return text[:start] + body + text[end:], n


def _dma_done_late(text: str) -> tuple[str, int]:
    # hw/dma.py: done = (write_spad & last) | (write_ext & last), one `assign done = ...;` in the
    # DMA's module; it becomes a register of that expression (no reset: the DMA keeps done low
    # while idle, so the register is low again one cycle after the last instruction)
    start, end = _module(text, ".dma")
    body, n = re.subn(r"^(\s*)assign done = (.+);$",
                      r"\1reg done_late = 1'h0;\n\1always @(posedge clk) done_late <= \2;\n"
                      r"\1assign done = done_late;", text[start:end], flags=re.M)
    return text[:start] + body + text[end:], n


def _vadd_field_bit(name: str) -> int:
    """Where VADD's field ``name`` starts in the units' ``fields`` port (the instruction less its
    opcode), from the spec's encoding."""
    return BY_NAME["VADD"].field_offsets()[name][0] - OPCODE_BITS


def _vadd_relu_dropped(text: str) -> tuple[str, int]:
    # hw/vector.py _vadd: relu_total = Mux(tag_x.relu & total[-1], 0, total), one per lane; Amaranth
    # writes the condition as `tag_x_0[K] & (* src = ".../vector.py:L" *) \$N [7];` where bit K is
    # the tag's relu (`assign \tag_x_0.relu  = tag_x_0[K];`): the condition becomes 0
    start, end = _module(text, ".vector")
    body = text[start:end]
    tag = re.search(r"assign \\tag_x_0\.relu\s+= (tag_x_0\[\d+\]);", body)
    if not tag:
        return text, 0
    body, n = re.subn(rf"= {re.escape(tag[1])} & (\(\* src = \"[^\"]*vector\.py:\d+\" \*\) \\\$\d+ \[7\];)",
                      r"= 1'h0 & \1", body)
    return text[:start] + body + text[end:], n


def _vadd_relu_wrong_bit(text: str) -> tuple[str, int]:
    # hw/vector.py: cur_relu = Mux(start, vadd_f.relu, relu) reads the field as `fields[B]`; the mutant
    # reads len's lowest bit instead (a field offset computed wrong), so a VADD of odd length
    # applies the ReLU and one of even length does not
    start, end = _module(text, ".vector")
    right, wrong = _vadd_field_bit("relu"), _vadd_field_bit("len")
    body, n = re.subn(rf"(\(\* src = \"[^\"]*vector\.py:\d+\" \*\) )fields\[{right}\]( : relu;)",
                      rf"\g<1>fields[{wrong}]\2", text[start:end])
    return text[:start] + body + text[end:], n


def _overlap_flag_off(flag: str) -> Callable[[str], tuple[str, int]]:
    # hw/overlap.py: the registered flag ``haz_q`` (a hazard holds the head back), ``wr_ok_q``
    # (the write port is free for it) or ``dma_hold``, one `flag <= \$N ;` in the module of the
    # execute stage (OverlapExecute, the control's submodule ``execute``; the serial machine has
    # none): the hazard flag and dma_hold become 0 (never a hazard, never a hold), the port flag 1
    # (always free)
    value = "1'h1" if flag == "wr_ok_q" else "1'h0"

    def edit(text: str) -> tuple[str, int]:
        if not re.search(r"^module \\?\S*\.core\.control\.execute \(", text, re.M):
            return text, 0
        start, end = _module(text, ".core.control.execute")
        body, n = re.subn(rf"^(\s*){flag} <= \\\$\d+ ;$", rf"\g<1>{flag} <= {value};", text[start:end],
                          flags=re.M)
        return text[:start] + body + text[end:], n
    return edit


def _ln_truncates(text: str) -> tuple[str, int]:
    # hw/layernorm.py _normalise: t = v + Mux(v[-1], half_less, half), one per lane; Amaranth writes
    # the Mux as `\$N = ln_vK[B] ? (* src = ".../layernorm.py:L" *) half_less : half;`: the
    # rounding term becomes 0 (of the same width), so y = t >> s is the floor of v / 2^s
    start, end = _module(text, ".core.layernorm")
    body, n = re.subn(r"= ln_v\d+\[\d+\] \? \(\* src = \"[^\"]*layernorm\.py:\d+\" \*\) half_less : half;",
                      "= 24'h000000;", text[start:end])
    return text[:start] + body + text[end:], n


def _gather_no_check(text: str) -> tuple[str, int]:
    # hw/dma.py _row_number: bad <= (row >= rows), one `bad <= \$N ;` in the DMA's module: it
    # becomes 0, so no GATHER faults and one out of its table reads past it
    start, end = _module(text, ".core.dma")
    body, n = re.subn(r"^(\s*)bad <= \\\$\d+ ;$", r"\g<1>bad <= 1'h0;", text[start:end], flags=re.M)
    return text[:start] + body + text[end:], n


def _counter_reset_value(text: str) -> tuple[str, int]:
    # hw/control.py _counters: reset sets count_cycles to 0; Amaranth writes its next value as an
    # always block ending `if (rst) begin \$N  = 32'd0; end`, in the control's module: the
    # reset value becomes 128 (bit 7), which a start overwrites, so only a read right after reset,
    # before any start, sees it
    start, end = _module(text, ".core.control")
    pattern = r"(\\\$(\d+)  = count_cycles;\n(?:(?!always @).)*?if \(rst\) begin\n\s*\\\$\2  = )32'd0;"
    body, n = re.subn(pattern, r"\g<1>32'd128;", text[start:end], flags=re.S)
    return text[:start] + body + text[end:], n


@dataclass(frozen=True)
class Mutant:
    """A named break of the RTL.

    Attributes:
        name: how the command line names it.
        unit: the RTL unit it breaks.
        what: what the broken unit does instead.
        edit: text -> (mutated text, number of places changed).
    """

    name: str
    unit: str
    what: str
    edit: Callable[[str], tuple[str, int]]


MUTANTS = {m.name: m for m in (
    Mutant("rq-round", "hw/requant.py (Requantizer, stage 7)",
           "truncates (q - corr) >> 1 instead of rounding half away from zero", _requant_truncates),
    Mutant("dma-late", "hw/dma.py (DMA, its done output)",
           "raises done one cycle after its last write, a cycle later than the spec's latency "
           "(memories and counters stay right: only timing_fault shows it)", _dma_done_late),
    Mutant("vadd-norelu", "hw/vector.py (VectorUnit._vadd, the relu select)",
           "writes a negative sum of a VADD with relu=1 as it is (the ReLU dropped)", _vadd_relu_dropped),
    Mutant("vadd-relu-bit", "hw/vector.py (VectorUnit, VADD's relu field)",
           f"reads VADD's relu from bit {_vadd_field_bit('len')} of the fields (len's lowest bit) instead "
           f"of bit {_vadd_field_bit('relu')}", _vadd_relu_wrong_bit),
    Mutant("ln-truncate", "hw/layernorm.py (LayerNormUnit._normalise, the rounding term)",
           "shifts x*A - C right without adding 2^(s-1) first: the floor of v / 2^s, not v / 2^s "
           "rounded half away from zero", _ln_truncates),
    Mutant("gather-nocheck", "hw/dma.py (DMA._row_number, the row number's check)",
           "never refuses a GATHER's row number: one out of its table is read from past the table "
           "(no BAD_INDEX)", _gather_no_check),
    Mutant("counter-reset", "hw/control.py (Control._counters, count_cycles's reset value)",
           "resets count_cycles to 128, not 0 (every start sets it to 1, so only the harness's read "
           "right after reset shows it: cosim.harness.CLEARED)", _counter_reset_value),
    Mutant("hazard-off", "hw/overlap.py (OVERLAP = 1: the issue stage's hazard flag)",
           "issues an instruction while one in flight on another engine reads or writes its "
           "scratchpad regions (the RAW/WAR/WAW check gone)", _overlap_flag_off("haz_q")),
    Mutant("write-port-off", "hw/overlap.py (OVERLAP = 1: the issue stage's write-port flag)",
           "issues an instruction whose scratchpad writes fall in another engine's (two units on "
           "the write port at once)", _overlap_flag_off("wr_ok_q")),
    Mutant("dma-yield-off", "hw/overlap.py (OVERLAP = 1: the DMA's yield of the write port, dma_hold)",
           "lets an LD write its beats in another engine's write window (two units on the write port "
           "at once; the LD's end, its busy cycles and its hazards as if it never waited)",
           _overlap_flag_off("dma_hold")),
)}


def mutate(verilog: Path, name: str, out_dir: Path) -> Path:
    """Write the mutant's copy of ``verilog`` (and the ga2_ports.json beside it) into out_dir.

    Returns:
        The mutated Verilog file.

    Raises:
        MutantError: unknown mutant, or its pattern is not in the Verilog.
    """
    if name not in MUTANTS:
        raise MutantError(f"mutant {name!r}: known mutants are {', '.join(MUTANTS)}")
    mutant = MUTANTS[name]
    text, changed = mutant.edit(Path(verilog).read_text())
    if not changed:
        raise MutantError(f"mutant {name!r}: its pattern in {mutant.unit} is not in {verilog} "
                          "(the RTL changed; update cosim/mutants.py)")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / Path(verilog).name
    target.write_text(text)
    ports = Path(verilog).with_name(PORTS_JSON)
    if ports.is_file():
        shutil.copyfile(ports, out_dir / PORTS_JSON)
    return target
