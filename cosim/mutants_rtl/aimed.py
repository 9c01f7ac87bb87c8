"""Aimed mutants: one mutation of each feature the even draw can miss, on top of it.

Yosys's even sampling spreads the drawn mutants over the units but not over what each unit
does: a feature that is one Python line (VADD's relu, MM's accumulation into the old output,
LD's packed int8 format, the table unit's byte select) may get no mutant in a draw of 48. Each
:class:`Aim` names such a line by its text (so that it follows the line when the file
changes), the kind of cell (Yosys names a cell by its operator: ``$and``, ``$add``,
``$ternary`` for a multiplexer), the port and the mode, and Yosys lists the mutations there
(``mutate -list -src <file>:<line> -port .. -mode ..``); one of them, picked from the seed,
is graded like the drawn ones. A mutant caught only by the programs that use the feature
shows that cosim and stress test it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..runner import ROOT
from . import yosys
from .draw import Mutation, Netlist, parse
from .verdicts import unchanged_in

LISTED = 200
"""Mutations Yosys lists at each aimed line (before the cell filter)."""


@dataclass(frozen=True)
class Aim:
    """A feature's line and the mutations wanted there.

    Attributes:
        name: the feature, for the table.
        file: the Python file, from the repository root.
        marker: text that occurs on exactly one line of the file: that line.
        cell: the cell's operator (the start of its Yosys name, ``$and``).
        port, mode: Yosys's port and mutation mode.
        why: what the mutant breaks.
        select: for a multiplexer, a wire its select bit must belong to (when the line holds
            several), else "".
        overlap: the lowest OVERLAP of a machine that has the line's logic (the chained MMRQ
            path: 2, ``sim.spec.InstrSpec.overlap_min``); the aim is left out on the others.
    """

    name: str
    file: str
    marker: str
    cell: str
    port: str
    mode: str
    why: str
    select: str = ""
    overlap: int = 0

    def line(self, root: Path = ROOT) -> int:
        """The line of the file that holds the marker.

        Raises:
            ValueError: the marker is on no line or on several (the file changed: update the aim).
        """
        lines = (root / self.file).read_text().splitlines()
        found = [k + 1 for k, text in enumerate(lines) if self.marker in text]
        if len(found) != 1:
            raise ValueError(f"aimed mutant {self.name!r}: {self.marker!r} is on {len(found)} lines of "
                             f"{self.file} (expected one: update cosim/mutants_rtl/aimed.py)")
        return found[0]


AIMS = (
    Aim("VADD relu", "hw/vector.py", "relu_total = Mux(tag_x.relu & total[-1], 0, total)", "$and", "Y",
        "const0", "relu never zeroes a negative sum"),
    Aim("MM acc = 1", "hw/mxu.py", "Mux(summed, (row_q + old[j])", "$add", "B", "inv",
        "a bit of the old output word flipped in the sum"),
    Aim("LD fmt = 1 data", "hw/dma.py", "Mux(packed, self._unpacked", "$ternary",
        "B", "inv", "a bit of the unpacked int8 lanes flipped", select="fields"),
    Aim("LD fmt = 1 step", "hw/dma.py", "Mux(ld_now & ld.fmt, lanes // spec.INT8_PER_WORD, lanes)",
        "$ternary", "S", "const0", "a packed LD steps its external address by LANES words, not LANES/4"),
    Aim("LUT byte select", "hw/lut.py", "picked.append(word.word_select(sel, BYTE))", "$mul", "Y", "inv",
        "a lane picks another byte of the table word it read"),
    Aim("VADD max", "hw/vector.py", "total = Mux(tag_x.max, Mux(b8[i] > a8[i], b8[i], a8[i])", "$gt", "Y",
        "inv", "VADD max = 1 keeps the smaller operand where the two differ"),
    Aim("RQ pc = 1 pair", "hw/requant.py", "lanes_.m[k].eq(Mux(rq.pc, entries[k][:M_BITS], rq.m))",
        "$ternary", "B", "inv", "a bit of a lane's table mantissa flipped (per output channel)",
        select="fields"),
    Aim("RQ pc = 1 past the table's end", "hw/requant.py", "onehot = [own_a > k] + [own_a == k - j", "$eq",
        "Y", "const0", "a lane past the table's end does not take its entry from the table's first words"),
    Aim("RQ pc = 1 table wrap", "hw/requant.py", "Mux(whole_q, r_q - lanes, r_q - lanes + rq.C)", "$add",
        "B", "inv", "the channels left after a beat that wraps past the table's end counted with a bit of "
        "C flipped"),
    Aim("GATHER row check", "hw/dma.py", "bad.eq(row >= f.rows)", "$ge", "Y", "const0",
        "a row number out of the table is never refused: the GATHER reads past its table"),
    Aim("GATHER row address", "hw/dma.py", "offset.eq((row[:spec.ADDR_BITS] * words_per_row)", "$mul", "Y",
        "inv", "a bit of the row's offset flipped: another row is read"),
    Aim("LN rounding term", "hw/layernorm.py", "t.eq(v + Mux(v[-1], half[1], half[0]))", "$add", "B", "inv",
        "a bit of the rounding term 2^(s-1) flipped"),
    Aim("LN root step", "hw/layernorm.py", "rem.eq(Mux(fits, diff, wide))", "$ternary", "S", "const0",
        "the square root never subtracts its trial: the remainder grows, the root's bits stay 0"),
    Aim("LN reciprocal bit", "hw/layernorm.py", "quot.eq(Cat(fits & root.any(), quot))", "$and", "Y", "inv",
        "the reciprocal's quotient bits inverted"),
    Aim("LN bias", "hw/layernorm.py", "o.eq(y + bias[i])", "$add", "B", "inv",
        "a bit of a bias word flipped in the sum"),
    Aim("MMRQ entries read", "hw/mxu.py", "m.d.comb += tab_read.eq(chained & delay(", "$and", "Y", "const0",
        "MMRQ never reads its (m, s) entries: every row is requantized with the entries held from before",
        overlap=2),
    Aim("MMRQ per channel", "hw/mxu.py", "entries[j].eq(Mux(pc, self.rd1.data[j], self.rd1.data[0]))",
        "$ternary", "S", "const0", "MMRQ pc = 1 gives every column the entry of column 0 (per tensor)",
        overlap=2),
    Aim("MMRQ row address", "hw/mxu.py", "m.d.sync += late_dst.eq(late_dst + ldc)", "$add", "B", "inv",
        "a bit of ldc flipped in the address of MMRQ's later rows", overlap=2),
)
"""The aimed mutants (in this order after the drawn ones)."""


def src_prefix(graph: Netlist) -> str:
    """What the netlist's ``src`` attributes put before ``hw/<file>.py`` (the folder the Verilog
    was exported from, which Amaranth writes as an absolute path).

    Raises:
        ValueError: no cell names a Python line of hw/.
    """
    for module in graph.modules.values():
        for cell in module["cells"].values():
            for src in cell.get("attributes", {}).get("src", "").split("|"):
                m = PY_LINE.match(src)
                if m:
                    return m[1]
    raise ValueError("no cell of the netlist has a src attribute naming hw/<file>.py")


PY_LINE = re.compile(r"^(.*?)hw/[\w/]+\.py:\d+")


def listing(net: yosys.Netlist, aim: Aim, seed: int, prefix: str, root: Path = ROOT) -> list[str]:
    """Yosys's mutations at the aim's line, port and mode (cached beside the netlist); ``prefix``:
    :func:`src_prefix`."""
    line = aim.line(root)
    slug = re.sub(r"\W+", "-", aim.name).strip("-").lower()
    name = f"{net.folder}/aimed-{slug}-{line}-{seed}"
    where = f"-src {prefix}{aim.file}:{line} -port {aim.port} -mode {aim.mode}"
    out = net.cached(name, f"read_rtlil {net.rtlil}\n"
                           f"mutate -list {LISTED} -seed {seed} -o {name}.txt {where} {yosys.SCOPE}\n")
    return [text for text in out.read_text().splitlines() if text.startswith("mutate ")]


def pick(net: yosys.Netlist, graph: Netlist, aim: Aim, seed: int, root: Path = ROOT) -> Mutation:
    """One mutation of the aim (its cell kind; not one that changes nothing), from the seed.

    Raises:
        ValueError: Yosys lists none there (the line holds no such cell any more).
    """
    found = []
    for text in listing(net, aim, seed, src_prefix(graph), root):
        m = parse(text)
        if m.cell.startswith(aim.cell + "$") and not unchanged_in(graph.modules, m) and \
                (not aim.select or aim.select in _select_wires(graph.modules[m.module], m.cell)):
            found.append(graph.attribute(m))
    if not found:
        raise ValueError(f"aimed mutant {aim.name!r}: Yosys lists no {aim.mode} of a {aim.cell} cell's port "
                         f"{aim.port} at {aim.file}:{aim.line(root)}")
    found.sort(key=lambda m: m.line)
    return random.Random(f"{seed} {aim.name}").choice(found)


def _select_wires(module: dict, cell: str) -> set[str]:
    """The public wires that hold the select bit of a multiplexer cell."""
    bits = module["cells"][cell]["connections"].get("S", [])
    return {name.lstrip("\\") for name, net in module["netnames"].items()
            if any(b in net["bits"] for b in bits)}


def aims_for(params) -> tuple[Aim, ...]:
    """The aims whose logic the machine ``params`` (a ``sim.spec.Params``) has (``Aim.overlap``)."""
    return tuple(aim for aim in AIMS if aim.overlap <= params.OVERLAP)


def pick_all(net: yosys.Netlist, graph: Netlist, seed: int, aims: tuple[Aim, ...] = AIMS,
             root: Path = ROOT) -> list[tuple[Aim, Mutation]]:
    """:func:`pick` for every aim."""
    return [(aim, pick(net, graph, aim, seed, root)) for aim in aims]
