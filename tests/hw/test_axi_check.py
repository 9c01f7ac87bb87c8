"""hw/axi_check.py: each rule of the protocol checkers fires on a trace that breaks it (and the
fault names the first rule broken), and a clean trace leaves them at 0."""

from __future__ import annotations

import pytest
from amaranth.sim import Simulator

from hw.axi_check import LITE_RULES, RULES, AxiChecker, AxiLiteChecker
from sim.spec import DEFAULT

BASE = 0x1000


def run(cycles: list[dict], lite: bool = False) -> int:
    """Drive the checker's inputs with one dict of signal values per cycle (unnamed: 0); the
    fault code after the last cycle (0: none)."""
    dut = AxiLiteChecker(DEFAULT) if lite else AxiChecker(DEFAULT)
    prefix = "s_axil_" if lite else "m_axi_"
    code = []

    async def bench(ctx):
        if not lite:
            ctx.set(dut.base, BASE)
        for values in [*cycles, {}]:
            for name in dut.signature.members:
                if name.startswith(prefix):
                    ctx.set(getattr(dut, name), values.get(name[len(prefix):], 0))
            await ctx.tick()
        code.append(ctx.get(dut.code) if ctx.get(dut.fault) else 0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return code[0]


def rule(text: str, lite: bool = False) -> int:
    return (LITE_RULES if lite else RULES).index(text) + 1


AR = {"arvalid": 1, "araddr": BASE, "arlen": 1, "arsize": 4, "arburst": 1}
AW = {"awvalid": 1, "awaddr": BASE, "awlen": 1, "awsize": 4, "awburst": 1}


def test_clean_read_and_write_bursts():
    trace = [AR | {"arready": 1}, {"rvalid": 1, "rready": 1}, {"rvalid": 1, "rready": 1, "rlast": 1},
             AW | {"awready": 1}, {"wvalid": 1, "wready": 1, "wstrb": 0xFFFF},
             {"wvalid": 1, "wready": 1, "wstrb": 0xFFFF, "wlast": 1}, {"bvalid": 1, "bready": 1}]
    assert run(trace) == 0


@pytest.mark.parametrize(("trace", "text"), [
    ([AR, {}], "ARVALID fell before ARREADY"),
    ([AR, AR | {"araddr": BASE + 16}], "AR payload changed while ARVALID waited"),
    ([AR | {"arready": 1, "araddr": BASE + 0xFF0}], "AR burst crosses a 4 KiB boundary"),
    ([AR | {"arready": 1, "araddr": BASE + 4 * DEFAULT.EXT_WORDS}], "AR burst leaves the external window"),
    ([AR | {"arready": 1, "arsize": 2}], "AR burst is not INCR of full, aligned beats"),
    ([AW | {"awready": 1, "awaddr": BASE + 4}], "AW burst is not INCR of full, aligned beats"),
    ([{"rvalid": 1, "rready": 1}], "R beat with no read burst outstanding"),
    ([AR | {"arready": 1}, {"rvalid": 1, "rready": 1, "rlast": 1}],
     "RLAST misplaced (not on the ARLEN-th beat)"),
    ([AW | {"awready": 1}, {"wvalid": 1, "wready": 1, "wstrb": 1, "wlast": 1}],
     "W burst length differs from its AWLEN (WLAST misplaced)"),
    ([AW | {"awready": 1}, {"wvalid": 1, "wready": 1, "wstrb": 0}], "W beat with no byte strobe"),
    ([AW | {"awready": 1}, {"bvalid": 1, "bready": 1}], "B response with no write outstanding"),
])
def test_each_rule_fires(trace, text):
    assert run(trace) == rule(text)


def test_lite_rules():
    assert run([{"bvalid": 1}], lite=True) == rule("B response with no write taken", lite=True)
    assert run([{"arvalid": 1, "araddr": 4}, {"arvalid": 1, "araddr": 8}], lite=True) == \
        rule("AR payload changed while ARVALID waited", lite=True)
    clean = [{"arvalid": 1, "arready": 1, "araddr": 4}, {"rvalid": 1, "rready": 1, "rdata": 7}]
    assert run(clean, lite=True) == 0
