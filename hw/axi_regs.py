"""The AXI4-Lite slave of GA-2's system top: the register map's decode, generated from the table.

Every register, its offset, its access mode and its writable bits come from :mod:`sim.regmap`;
this module only turns them into logic. One transfer at a time: a write is taken in the cycle
both AW and W are valid (AWREADY and WREADY together) and answered on B the next cycle; a read
is taken when AR is valid and answered on R the next cycle. A write that uses fewer than four
byte lanes, an offset the table does not name, a write to a read-only register, a read of the
instruction window, or a write into it while the machine is busy is answered SLVERR and changes
nothing.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from sim import regmap, spec
from sim.spec import Params

from . import axi
from .component import Checked

WRITABLE = ("rw", "w", "w1c")
READABLE = ("r", "rw", "w1c")


def member(register: regmap.Register) -> str:
    """The member of a register: its name in lower case."""
    return register.name.lower()


class AxiLiteRegs(Checked):
    """The register map (:func:`sim.regmap.registers`) behind an AXI4-Lite slave port.

    Parameters:
        params: the machine (the fixed registers' values, the window's size).

    Members:
        s_axil_*: the slave port (:data:`hw.axi.AXI4_LITE`, :func:`sim.regmap.address_bits` wide).
        <name> In(32), for each read-only register other than the fixed ones (ID, PARAMS,
            IMEM_WORDS, SM_MAX_LEN, whose values this unit holds) and each w1c register: the
            value a read returns.
        <name> Out(32), for each rw register: what was last written (its writable bits;
            0 after reset).
        <name>_write Out(1), for each w and w1c register: high in the cycle a write to it is
            taken, with write_data Out(32).
        imem_we Out(1), imem_waddr Out(16+), imem_wdata Out(32): a word of the instruction
            window (hw/control.py's host write port).
        busy In(1): the machine runs (the window refuses writes).
    """

    def __init__(self, params: Params):
        self.params = params
        regmap.check_table(params)
        self.table = regmap.registers(params)
        self.fixed = regmap.fixed_values(params)
        window_words = params.IMEM_WORDS * spec.INSTR_WORDS
        ports = axi.members(axi.AXI4_LITE, "s_axil", master=False, addr_bits=regmap.address_bits(params))
        own = {}
        for r in self.table:
            if r.access in ("r", "w1c") and r.name not in self.fixed:
                own[member(r)] = In(32)
            if r.access == "rw":
                own[member(r)] = Out(32)
            if r.access in ("w", "w1c"):
                own[f"{member(r)}_write"] = Out(1)
        super().__init__({
            **ports, **own, "write_data": Out(32), "busy": In(1),
            "imem_we": Out(1), "imem_waddr": Out(range(window_words)), "imem_wdata": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        self._writes(m)
        self._reads(m)
        return m

    def _window(self, addr) -> tuple:
        """(inside the instruction window, the word's index in it) of a byte address."""
        base = regmap.imem_base(self.params)
        index = (addr - base)[2:]
        inside = (addr >= base) & (addr < base + regmap.imem_bytes(self.params))
        return inside, index

    def _writes(self, m: Module) -> None:
        take = Signal()
        ok = Signal()
        addr, wdata = self.s_axil_awaddr, self.s_axil_wdata
        m.d.comb += [
            take.eq(self.s_axil_awvalid & self.s_axil_wvalid & ~self.s_axil_bvalid),
            self.s_axil_awready.eq(take),
            self.s_axil_wready.eq(take),
            self.write_data.eq(wdata),
        ]
        whole = self.s_axil_wstrb == 0b1111
        inside, index = self._window(addr)
        with m.If(inside):
            m.d.comb += ok.eq(whole & ~self.busy)
            m.d.comb += [self.imem_we.eq(take & ok), self.imem_waddr.eq(index), self.imem_wdata.eq(wdata)]
        with m.Else(), m.Switch(addr[2:]):
            for r in self.table:
                if r.access not in WRITABLE:
                    continue
                with m.Case(r.offset >> 2):
                    m.d.comb += ok.eq(whole)
                    if r.access == "rw":
                        with m.If(take & whole):
                            m.d.sync += getattr(self, member(r)).eq(wdata & regmap.write_mask(r, self.params))
                    else:
                        m.d.comb += getattr(self, f"{member(r)}_write").eq(take & whole)
        with m.If(take):
            m.d.sync += [self.s_axil_bvalid.eq(1), self.s_axil_bresp.eq(response(ok))]
        with m.Elif(self.s_axil_bready):
            m.d.sync += self.s_axil_bvalid.eq(0)

    def _reads(self, m: Module) -> None:
        take = Signal()
        m.d.comb += [take.eq(self.s_axil_arvalid & ~self.s_axil_rvalid), self.s_axil_arready.eq(take)]
        value = Signal(32)
        ok = Signal()
        with m.Switch(self.s_axil_araddr[2:]):
            for r in self.table:
                if r.access == "w":
                    with m.Case(r.offset >> 2):
                        m.d.comb += ok.eq(1)           # a write-only register reads 0
                elif r.access in READABLE:
                    with m.Case(r.offset >> 2):
                        source = self.fixed[r.name] if r.name in self.fixed else getattr(self, member(r))
                        m.d.comb += [ok.eq(1), value.eq(source)]
        inside, _ = self._window(self.s_axil_araddr)
        with m.If(take):
            m.d.sync += [self.s_axil_rvalid.eq(1), self.s_axil_rdata.eq(value),
                         self.s_axil_rresp.eq(response(ok & ~inside))]
        with m.Elif(self.s_axil_rready):
            m.d.sync += self.s_axil_rvalid.eq(0)


def response(ok):
    """xRESP: OKAY when ok, else SLVERR."""
    return Mux(ok, axi.OKAY, axi.SLVERR)
