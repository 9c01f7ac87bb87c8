"""GA-2 as a LiteX peripheral: its system top's Verilog (``ga2_axi``, flows/axi.py) behind Migen.

:class:`GA2` instantiates the Verilog and exposes LiteX interfaces: ``bus``, an AXI4-Lite slave
for the register map (sim/regmap.py), ``dma``, an AXI4 master of LANES * 32 bits for the
external memory, and ``ev.irq``, the interrupt (LiteX connects a module's ``ev.irq`` to the CPU
when the SoC registers an interrupt under the module's name).

    ga2 = GA2(platform, verilog, params)              # flows.axi.export(..., ("ga2_axi",))
    soc.ga2 = ga2
    soc.bus.add_slave("ga2", ga2.bus, SoCRegion(origin=0x8000_0000, size=ga2.span, cached=False))
    soc.bus.add_master("ga2_dma", ga2.dma)
    soc.irq.add("ga2")
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from litex.soc.interconnect import axi
from migen import ClockSignal, Instance, Module, ResetSignal, Signal

from hw.axi import AXI4, AXI4_LITE
from sim import regmap, spec
from sim.spec import Params

MODULE = "ga2_axi"


class GA2(Module):
    """The ``ga2_axi`` Verilog module with LiteX AXI interfaces.

    Args:
        platform: the LiteX platform (the Verilog is added to its sources).
        verilog: the exported ``ga2_axi.v``.
        params: the machine it was exported for.

    Attributes:
        bus: ``axi.AXILiteInterface`` (slave; ``regmap.address_bits`` bits decoded).
        dma: ``axi.AXIInterface`` (master, LANES * 32 data bits, bursts).
        span: bytes of the register map (for the slave's region).
        ev: a namespace with ``irq`` (the interrupt line).
    """

    def __init__(self, platform, verilog: Path, params: Params):
        self.params = params
        self.span = 1 << regmap.address_bits(params)
        self.bus = axi.AXILiteInterface(data_width=32, address_width=32)
        self.dma = axi.AXIInterface(data_width=params.LANES * spec.WORD_BITS, address_width=32, id_width=1,
                                    bursting=True)
        self.ev = SimpleNamespace(irq=Signal())
        ports = {"i_clk": ClockSignal(), "i_rst": ResetSignal(), "o_irq": self.ev.irq}
        unused = {"timing_fault", "bridge_fault"}
        for name, _, by_master in AXI4_LITE:
            ports[f"{'i' if by_master else 'o'}_s_axil_{name}"] = _field(self.bus, name, self.span)
        for name, _, by_master in AXI4:
            ports[f"{'o' if by_master else 'i'}_m_axi_{name}"] = _field(self.dma, name)
        for name in unused:
            ports[f"o_{name}"] = Signal()
        self.specials += Instance(MODULE, **ports)
        platform.add_source(str(verilog))


def _field(interface, name: str, span: int | None = None):
    """The LiteX signal of an AXI signal name: ``awaddr`` -> ``interface.aw.addr`` (the slave's
    address cut to the bits it decodes)."""
    channel = name[:2] if name[:2] in ("aw", "ar") else name[0]
    field = name[len(channel):]
    signal = getattr(getattr(interface, channel), field)
    if field == "addr" and span is not None:
        return signal[:(span - 1).bit_length()]
    return signal
