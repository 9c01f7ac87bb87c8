"""``AxiSimTop(params)``: :class:`~hw.axi_top.GA2Axi` with the protocol checkers, for simulation.

The ports are GA2Axi's (a cocotb test bench drives the register slave with cocotbext-axi's
``AxiLiteMaster`` and answers the master with its ``AxiRam``) and the checkers' verdicts:
``axi_fault`` / ``axi_code`` for the master port (:class:`hw.axi_check.AxiChecker`, against the
EXT_BASE register's window) and ``axil_fault`` / ``axil_code`` for the slave port
(:class:`hw.axi_check.AxiLiteChecker`), sticky from reset. A system build takes GA2Axi alone.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from sim.spec import Params

from . import axi
from .axi_check import AxiChecker, AxiLiteChecker
from .axi_top import GA2Axi
from .component import Checked, check_params


class AxiSimTop(Checked):
    """GA2Axi and its protocol checkers.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.
        burst_bytes: as :class:`~hw.axi_top.GA2Axi`.

    Members: GA2Axi's, and axi_fault Out(1), axi_code Out(8), axil_fault Out(1), axil_code Out(8).

    Raises:
        TypeError, ValueError: as :class:`~hw.axi_top.GA2Axi`.
    """

    @classmethod
    def check(cls, params: Params, burst_bytes: int = axi.BOUNDARY) -> None:
        check_params(cls.__name__, params)
        GA2Axi.check(params, burst_bytes)

    def __init__(self, params: Params, burst_bytes: int = axi.BOUNDARY):
        self.params = params
        self.top = GA2Axi(params, burst_bytes)
        members = dict(self.top.signature.members.items())
        super().__init__({**members, "axi_fault": Out(1), "axi_code": Out(8),
                          "axil_fault": Out(1), "axil_code": Out(8)})
        self.checker = AxiChecker(params)
        self.lite_checker = AxiLiteChecker(params)

    def elaborate(self, platform):
        m = Module()
        top = self.top
        m.submodules.top = top
        m.submodules.checker, m.submodules.lite_checker = self.checker, self.lite_checker
        for name, member in top.signature.members.items():
            ours, theirs = getattr(self, name), getattr(top, name)
            m.d.comb += theirs.eq(ours) if member.flow == wiring.In else ours.eq(theirs)
        for table, prefix, checker in ((axi.AXI4, "m_axi", self.checker),
                                       (axi.AXI4_LITE, "s_axil", self.lite_checker)):
            for name, _, _ in table:
                m.d.comb += getattr(checker, f"{prefix}_{name}").eq(getattr(self, f"{prefix}_{name}"))
        m.d.comb += [
            self.checker.base.eq(top.regs.ext_base),
            self.axi_fault.eq(self.checker.fault), self.axi_code.eq(self.checker.code),
            self.axil_fault.eq(self.lite_checker.fault), self.axil_code.eq(self.lite_checker.code),
        ]
        return m
