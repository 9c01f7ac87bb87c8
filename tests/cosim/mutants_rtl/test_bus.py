"""cosim/mutants_rtl/bus.py: the bus mutants' scope, homes and grading steps (through AXI)."""

from __future__ import annotations

import argparse

import pytest

from cosim import runner
from cosim.mutants_rtl import __main__ as cli
from cosim.mutants_rtl import bus, draw, verdicts, yosys
from sim import regmap
from sim.spec import DEFAULT


def test_bus_rows_are_graded_through_axi():
    args = argparse.Namespace(seeds="100-111", stress_n=140, stress_seed=1, bus_stress_n=40)
    steps = cli.steps_for("b03", args)
    assert [(s.module, s.argv) for s in steps] == [
        ("cosim.axi", ("seeds", "100-111", "--pause", bus.PAUSE)),
        ("cosim.axi", ("stress", "--seed", "1", "--n", "40", "--pause", bus.PAUSE)),
        ("cosim.axi", ("long", "--pause", bus.PAUSE))]
    assert [s.module for s in cli.steps_for(cli.BUS_NONE, args)] == ["cosim.axi"] * 3
    assert {s.module for s in cli.steps_for("m03", args)} == {"cosim"}


def test_the_scope_leaves_out_the_core_and_the_checkers():
    selected = bus.SCOPE.split()
    assert f"{bus.TOP}.top.reader" in selected and f"{bus.TOP}.top.regs" in selected
    assert not any(".core" in s or "checker" in s for s in selected)
    assert draw.home(f"{bus.TOP}.top.writer.wq") == "hw/axi_fifo.py"
    assert draw.home(f"{bus.TOP}.top") == "hw/axi_top.py"


@pytest.fixture(scope="module")
def bus_netlist():
    try:
        yosys.command()
    except yosys.YosysError as e:
        pytest.skip(str(e))
    verilog = bus.verilog(say=lambda _: None)
    net = yosys.prepare(verilog, runner.BUILD / "mutants-rtl", top=bus.TOP, strip=False)
    return net, draw.Netlist(net.json)


def test_a_flip_only_where_the_compared_constant_differs_is_equivalent(bus_netlist):
    """The read decode's comparison of ARADDR[16:2] with DMA's word offset 0x11 (bus mutant b04 of
    the first campaign): bit 5 flipped when bit 14 is 1 (cnot1) cannot make it equal, since 0x11
    has bit 14 clear; flipped when bit 14 is 0 (cnot0) or when bit 4 is 1 (where 0x11 has a 1), it
    can (reading 0xc4 or 0x04 would answer as DMA), and no note covers those."""
    net, graph = bus_netlist
    module = f"{bus.TOP}.top.regs"
    regs = graph.modules[module]
    araddr = regs["netnames"]["s_axil_araddr"]["bits"][2:]
    word = regmap.offset("DMA", DEFAULT) >> 2
    cell = next(name for name, c in regs["cells"].items() if c["type"] == "$eq"
                and c["connections"]["A"] == araddr and all(b in "01" for b in c["connections"]["B"])
                and int("".join(reversed(c["connections"]["B"])), 2) == word)

    def judge(mode: str, portbit: int, ctrlbit: int) -> verdicts.Verdict:
        line = (f"mutate -mode {mode} -module {module} -cell {cell} -port A -portbit {portbit} "
                f"-ctrlbit {ctrlbit}")
        return verdicts.judge(net, graph.modules, graph.attribute(draw.parse(line)), "eq", proofs=False)

    same = judge("cnot1", 5, 14)
    assert same.equivalent and same.method == "note" and "0x11" in same.why and "bit 14" in same.why
    assert not judge("cnot0", 5, 14).equivalent
    assert not judge("cnot1", 5, 4).equivalent
