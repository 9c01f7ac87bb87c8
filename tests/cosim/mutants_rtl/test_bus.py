"""cosim/mutants_rtl/bus.py: the bus mutants' scope, homes and grading steps (through AXI)."""

from __future__ import annotations

import argparse

from cosim.mutants_rtl import __main__ as cli
from cosim.mutants_rtl import bus, draw


def test_bus_rows_are_graded_through_axi():
    args = argparse.Namespace(seeds="100-111", stress_n=140, stress_seed=1, bus_stress_n=40)
    steps = cli.steps_for("b03", args)
    assert [(s.module, s.argv) for s in steps] == [
        ("cosim.axi", ("seeds", "100-111", "--pause", bus.PAUSE)),
        ("cosim.axi", ("stress", "--seed", "1", "--n", "40", "--pause", bus.PAUSE))]
    assert [s.module for s in cli.steps_for(cli.BUS_NONE, args)] == ["cosim.axi"] * 2
    assert {s.module for s in cli.steps_for("m03", args)} == {"cosim"}


def test_the_scope_leaves_out_the_core_and_the_checkers():
    selected = bus.SCOPE.split()
    assert f"{bus.TOP}.top.reader" in selected and f"{bus.TOP}.top.regs" in selected
    assert not any(".core" in s or "checker" in s for s in selected)
    assert draw.home(f"{bus.TOP}.top.writer.wq") == "hw/axi_fifo.py"
    assert draw.home(f"{bus.TOP}.top") == "hw/axi_top.py"
