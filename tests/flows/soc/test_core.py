"""flows/soc/core.py: the LiteX wrapper connects every port of GA-2's system top (needs LiteX)."""

from __future__ import annotations

import pytest

pytest.importorskip("litex", reason="LiteX is the soc extra's (make soc-setup)")

from amaranth.lib import wiring

from hw.axi_top import GA2Axi
from sim.spec import DEFAULT


def test_every_port_is_connected_in_its_direction(tmp_path):
    from litex.build.sim import SimPlatform
    from migen import Instance

    from flows.soc.core import GA2

    platform = SimPlatform("SIM", [])
    module = GA2(platform, tmp_path / "ga2_axi.v", DEFAULT)
    instance = next(s for s in module._fragment.specials if isinstance(s, Instance))
    assert instance.of == "ga2_axi"
    seen = {item.name: type(item).__name__ for item in instance.items}
    top = GA2Axi(DEFAULT)
    want = {name: "Input" if m.flow == wiring.In else "Output" for name, m in top.signature.members.items()}
    want |= {"clk": "Input", "rst": "Input"}
    assert seen == want
    assert module.span == 1 << 17 and len(module.dma.r.data) == 128
