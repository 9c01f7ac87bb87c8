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


@pytest.mark.slow          # Yosys prepares the AXI top's netlist: most of a minute
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
        return verdicts.judge(net, graph.modules, graph.attribute(draw.parse(line)), "eq",
                          params=DEFAULT, proofs=False)

    same = judge("cnot1", 5, 14)
    assert same.equivalent and same.method == "note" and "0x11" in same.why and "bit 14" in same.why
    assert not judge("cnot0", 5, 14).equivalent
    assert not judge("cnot1", 5, 4).equivalent


def _reader_mux(graph, select: str, port: str, register: str) -> str:
    """The read side's multiplexer selected by ``select`` whose ``port`` carries ``register``'s value
    (cosim.mutants_rtl.verdicts.register_chain)."""
    reader = graph.modules[verdicts.READER]
    for name, cell in reader["cells"].items():
        conn = cell["connections"]
        if cell["type"] != "$mux" or not any(select == n for n in _names(reader, conn["S"][0])):
            continue
        at = verdicts.Site(None, "$mux", tuple(conn[port]), DEFAULT, reader)
        if tuple(conn[port]) in verdicts.register_chain(at, register)[0]:
            return name
    raise AssertionError(f"no {select} multiplexer on {register}'s value")


def _names(module: dict, bit) -> list[str]:
    return [n for n, net in module["netnames"].items() if not net.get("hide_name") and bit in net["bits"]]


def _judge(bus_netlist, cell: str, port: str, mode: str, portbit: int, ctrlbit: int = -1) -> verdicts.Verdict:
    net, graph = bus_netlist
    line = f"mutate -mode {mode} -module {verdicts.READER} -cell {cell} -port {port} -portbit {portbit}"
    line += f" -ctrlbit {ctrlbit}" if ctrlbit >= 0 else ""
    return verdicts.judge(net, graph.modules, graph.attribute(draw.parse(line)), "reader",
                          params=DEFAULT, proofs=False)


@pytest.mark.slow          # the same netlist
def test_the_read_sides_count_above_the_largest_region_is_equivalent(bus_netlist):
    """left (the words an LD still takes) is at most SPAD_WORDS = 4096 on a legal program: its bit
    13 forced to 0 (bus mutant b09 of the second draw) is equivalent, its bit 12 is not, nor bit 13
    forced to 1."""
    cell = _reader_mux(bus_netlist[1], "start", "Y", "left")
    assert verdicts.reader_bounds(DEFAULT)["left"] == 4096
    same = _judge(bus_netlist, cell, "Y", "const0", 13)
    assert same.equivalent and same.method == "note" and "left" in same.why and "at most 4096" in same.why
    assert not _judge(bus_netlist, cell, "Y", "const0", 12).equivalent
    assert not _judge(bus_netlist, cell, "Y", "const1", 13).equivalent


@pytest.mark.slow          # the same netlist (two minutes of Yosys at a load of 5)
def test_the_address_an_ld_start_holds_is_equivalent(bus_netlist):
    """ARADDR's value held through an LD's start (bus mutant b03 of the second draw) is never read:
    no AR waits then, and the next request loads ARADDR afresh; the same bit where the request
    loads it (the other multiplexer) is no equivalence."""
    graph = bus_netlist[1]
    held = _reader_mux(graph, "start", "B", "m_axi_araddr")
    same = _judge(bus_netlist, held, "B", "const0", 17)
    assert same.equivalent and same.method == "note" and "ARVALID is 0" in same.why
    reader = graph.modules[verdicts.READER]
    loads = next(n for n, c in reader["cells"].items() if c["type"] == "$mux" and n != held
                 and tuple(c["connections"]["Y"]) == tuple(reader["cells"][held]["connections"]["A"]))
    assert not _judge(bus_netlist, loads, "B", "const0", 17).equivalent
