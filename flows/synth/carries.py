"""Carry chains rewritten so that nextpnr-ecp5 packs them without extra carry cells.

Yosys maps an adder, a subtraction or a comparison to a chain of CCU2C cells
(``+/lattice/arith_map_ccu2c.v``), each two halves of a slice: a 4-input LUT and the carry
logic. The chain's carry-in is Yosys's constant (1 for a subtraction or a comparison, 0 for an
addition) on the first cell's CIN, and its carry-out, when something reads it (a comparison's
result), is the last cell's COUT. nextpnr-ecp5 (``ecp5/pack.cc``, ``split_carry_chain``) gives
each chain whose first CIN is connected a *feed-in* cell, a whole CCU2C that brings the value
in through a LUT input, and each chain whose last COUT is connected (read, or left on a net
nothing reads) a *feed-out* cell, another CCU2C that brings the carry out on its sum. On GA-2 at
T = 8, OVERLAP = 2 these are 2,644 feed-ins and 2,687 feed-outs: 10,662 logic cells of the
85,740 nextpnr packs, against the part's 83,640.

This pass rewrites each chain whose carry-in is a constant, on Yosys's netlist (JSON) before
place and route, into halves that need neither:

* the first half *injects* the constant: its LUT is 0 whatever its inputs (all tied high), so
  its carry-out is its LUT2 (the CCU2C's model: ``cout = ~LUT4 & LUT2 | LUT4 & CIN``), the
  constant; the cell's CIN is left unconnected;
* then the chain's own halves, each with its INIT, INJECT1 and inputs, in the same order, so
  each sees the carry it saw;
* then, when the carry-out is read, a half whose LUT is 0: its sum is its carry-in
  (``S = LUT4 ^ CIN``), the chain's carry-out, on the net the last COUT drove; the last cell's
  COUT is left unconnected;
* halves at the end whose sums nothing reads are dropped when the carry-out is not read, and an
  odd count is padded with an unused half.

A chain of n halves costs ceil((n + 2) / 2) cells with its carry-out read, ceil((n + 1) / 2)
without, against nextpnr's ceil(n / 2) + 2 and + 1 (+ 2 when the COUT is on an unread net).
Chains whose carry-in is not a constant, or with a carry read inside them, are left as they
are (an unread COUT is still disconnected). The netlist keeps its meaning:
:func:`flows.synth.dsp_regs.equivalence_script` has Yosys prove a rewritten netlist equivalent to
its own (``tests/flows/synth/test_carries.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .netlist import readers, top_module
from .wrapper import TOP_NAME

CARRY = "CCU2C"
INPUTS = ("A", "B", "C", "D")
ZERO = "0" * 16
"""An INIT whose LUT4 and LUT2 are 0 for every input (MSB first, as Yosys writes INIT)."""
ONE_WHEN_HIGH = "0000000000001000"
"""An INIT whose LUT4 is 0 and LUT2 is 1 when A, B, C and D are high (bit 15 clear, bit 3 set)."""


@dataclass
class Half:
    """One half of a CCU2C: its INIT (16 bits, MSB first), INJECT1 and connections."""
    init: str
    inject: str
    inputs: dict[str, list] = field(default_factory=dict)
    sum: list = field(default_factory=lambda: ["x"])

    @staticmethod
    def of(cell: dict, h: int) -> Half:
        conn, params = cell["connections"], cell.get("parameters", {})
        return Half(str(params.get(f"INIT{h}", ZERO)).strip(), str(params.get(f"INJECT1_{h}", "NO")).strip(),
                    {p: list(conn[f"{p}{h}"]) for p in INPUTS if f"{p}{h}" in conn},
                    list(conn.get(f"S{h}", ["x"])))

    @staticmethod
    def constant(init: str, sum_bits: list | None = None) -> Half:
        return Half(init, "NO", {p: ["1"] for p in INPUTS}, sum_bits or ["x"])


@dataclass(frozen=True)
class Rewritten:
    """What :func:`rewrite_carries` did: chains rewritten and left, CCU2C cells before and
    after, and nextpnr-ecp5's feed-in and feed-out cells (:func:`packer_cells`) before and after."""
    chains: int
    left: int
    cells_before: int
    cells_after: int
    packer_before: tuple[int, int]
    packer_after: tuple[int, int]

    @property
    def logic_cells_saved(self) -> int:
        """Logic cells (two per CCU2C) nextpnr-ecp5 packs fewer."""
        return 2 * (self.cells_before + sum(self.packer_before) - self.cells_after - sum(self.packer_after))


def _chains(module: dict, sinks: dict) -> list[list[str]]:
    """The carry chains, each as its cells in carry order: a cell follows another when the other's
    COUT is read by its CIN (and perhaps by the fabric too: nextpnr-ecp5's ``find_chains``)."""
    cells = module["cells"]
    after: dict[str, str] = {}
    for name, cell in cells.items():
        if cell["type"] != CARRY:
            continue
        nxt = [reader for reader, port in _cout_readers(cell, sinks)
               if port == "CIN" and cells.get(reader, {}).get("type") == CARRY]
        if len(nxt) == 1:
            after[name] = nxt[0]
    followers = set(after.values())
    chains = []
    for name, cell in cells.items():
        if cell["type"] == CARRY and name not in followers:
            chain = [name]
            while chain[-1] in after:
                chain.append(after[chain[-1]])
            chains.append(chain)
    return chains


def packer_cells(netlist: dict, top: str = TOP_NAME) -> tuple[int, int]:
    """(feed-ins, feed-outs) nextpnr-ecp5 adds to this netlist's carry chains (``ecp5/pack.cc``,
    ``split_carry_chain``): a feed-in where a chain's first CIN is connected (a constant
    included), a feed-out where its last COUT is connected, read or not, or where a COUT is read
    by more than the next cell (a feed-out that also carries on). Chains longer than a row of the
    part (hundreds of cells) would be split as well; GA-2 has none.

    Raises:
        ValueError: the netlist has no module ``top``.
    """
    module = top_module(netlist, top)
    cells = module["cells"]
    feed_in = feed_out = 0
    sinks = readers(module)
    for chain in _chains(module, sinks):
        feed_in += _connected(cells[chain[0]], "CIN")
        feed_out += _connected(cells[chain[-1]], "COUT")
        feed_out += sum(len(_cout_readers(cells[name], sinks)) > 1 for name in chain[:-1])
    return feed_in, feed_out


def _cout_readers(cell: dict, sinks: dict) -> list[tuple[str, str]]:
    bit = cell["connections"].get("COUT", ["x"])[0]
    return sinks.get(bit, []) if not isinstance(bit, str) else []


def _connected(cell: dict, port: str) -> bool:
    return cell["connections"].get(port, ["x"])[0] not in ("x", "z")


def rewrite_carries(netlist: dict, top: str = TOP_NAME) -> Rewritten:
    """Rewrite the carry chains of ``netlist`` (in place; see the module's docstring for which
    and how). ``netlist``: Yosys's ``write_json`` of the mapped design; ``top``: its top module
    (flows/synth/wrapper.py's TOP_NAME).

    Raises:
        ValueError: the netlist has no module ``top``.
    """
    packer_before = packer_cells(netlist, top)
    module = top_module(netlist, top)
    cells = module["cells"]
    sinks = readers(module)
    before = sum(c["type"] == CARRY for c in cells.values())
    next_bit = 1 + max((b for bits in _all_bits(module) for b in bits if isinstance(b, int)), default=1)
    done = left = 0
    for chain in _chains(module, sinks):
        first, last = cells[chain[0]], cells[chain[-1]]
        cout = last["connections"].get("COUT", ["x"])
        cout_reads = _cout_readers(last, sinks)
        carry_in = first["connections"].get("CIN", ["x"])[0]
        read_inside = any(len(_cout_readers(cells[name], sinks)) > 1 for name in chain[:-1])
        if carry_in not in ("0", "1") or read_inside:
            left += 1
            if not cout_reads:
                last["connections"]["COUT"] = ["x"]
            continue
        halves = [Half.of(cells[name], h) for name in chain for h in (0, 1)]
        if cout_reads:
            halves.append(Half.constant(ZERO, cout))
        else:
            while halves and not any(sinks.get(b) for b in halves[-1].sum if not isinstance(b, str)):
                halves.pop()
        halves.insert(0, Half.constant(ONE_WHEN_HIGH if carry_in == "1" else ZERO))
        if len(halves) % 2:
            halves.append(Half.constant(ZERO))
        next_bit = _place(cells, chain, halves, next_bit)
        done += 1
    after = sum(c["type"] == CARRY for c in cells.values())
    return Rewritten(done, left, before, after, packer_before, packer_cells(netlist, top))


def _all_bits(module: dict) -> Iterator[list]:
    """Every list of net bits in the module: cells' connections, ports and net names."""
    yield from (c["connections"].get(p, []) for c in module["cells"].values() for p in c["connections"])
    yield from (p.get("bits", []) for p in module.get("ports", {}).values())
    yield from (n.get("bits", []) for n in module.get("netnames", {}).values())


def _place(cells: dict, chain: list[str], halves: list[Half], next_bit: int) -> int:
    """Replace the cells of ``chain`` by cells holding ``halves`` in pairs, linked CIN to COUT;
    return the next free net bit."""
    template = cells[chain[0]]
    count = len(halves) // 2
    names = chain[:count] + [f"{chain[-1]}$carry{i}" for i in range(count - len(chain))]
    for name in chain[count:]:
        del cells[name]
    carry = ["x"]
    for i, name in enumerate(names):
        h0, h1 = halves[2 * i], halves[2 * i + 1]
        old = cells.get(name, template)
        cout = [next_bit] if i < count - 1 else ["x"]
        next_bit += i < count - 1
        connections = {"CIN": carry, "COUT": cout, "S0": h0.sum, "S1": h1.sum}
        for h, half in ((0, h0), (1, h1)):
            connections.update({f"{p}{h}": bits for p, bits in half.inputs.items()})
        cells[name] = {
            "hide_name": old.get("hide_name", 1), "type": CARRY,
            "parameters": {"INIT0": h0.init, "INIT1": h1.init,
                           "INJECT1_0": h0.inject, "INJECT1_1": h1.inject},
            "attributes": dict(old.get("attributes", {})),
            "port_directions": dict(template["port_directions"]),
            "connections": connections}
        carry = cout
    return next_bit
