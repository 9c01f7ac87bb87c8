"""``SimTop(params)``: the GA-2 core plus an external memory, for simulation (cosim).

The external memory is a :class:`~hw.banked.BankedMemory` of EXT_WORDS words with one read
port, on the core's external bus (read data EXT_READ_LATENCY cycles after ``rd_en``). A
test bench loads the instruction memory and the external memory through their arrays
(flows/memmap.py names them), pulses ``start``, waits for ``done`` and reads the memories, the
counters and the stop back, and ``timing_fault`` (the core's self-check, hw/top.py).
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from sim import spec
from sim.spec import Params

from .banked import BankedMemory, attach_bus
from .component import Checked, check_params
from .control import host_members
from .top import GA2, UNIT_MODULES


class SimTop(Checked):
    """GA-2 with its external memory.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.
        stub_missing, modules: passed to :class:`~hw.top.GA2`.

    Members: the host interface of the core (``hw.control.host_members``) and the core's
        ``timing_fault`` Out(1) (:class:`~hw.top.GA2`: a unit's ``done`` and the execute
        stage's countdown disagreed in some cycle since the last start).

    Attributes: core (the :class:`~hw.top.GA2`), ext (the external :class:`~hw.banked.BankedMemory`).

    Latency: as the core; the external memory answers reads in EXT_READ_LATENCY cycles.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: as :class:`~hw.top.GA2`.
    """

    @classmethod
    def check(cls, params: Params, *, stub_missing: bool = False,
              modules: tuple[str, ...] = UNIT_MODULES) -> None:
        """Refuse what the core refuses (:meth:`hw.top.GA2.check`), before anything is built."""
        check_params(cls.__name__, params)
        GA2.check(params, stub_missing=stub_missing, modules=modules)

    def __init__(self, params: Params, *, stub_missing: bool = False,
                 modules: tuple[str, ...] = UNIT_MODULES):
        self.params = params
        super().__init__(host_members(params) | {"timing_fault": Out(1)})
        self.core = GA2(params, stub_missing=stub_missing, modules=modules)
        self.ext = BankedMemory(params.EXT_WORDS, n_read=1, lanes=params.LANES,
                                latency=spec.EXT_READ_LATENCY)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.ext = ext = self.ext
        for name in host_members(self.params):
            ours, theirs = getattr(self, name), getattr(core, name)
            if self.signature.members[name].flow == wiring.In:
                m.d.comb += theirs.eq(ours)
            else:
                m.d.comb += ours.eq(theirs)
        m.d.comb += self.timing_fault.eq(core.timing_fault)
        attach_bus(m, core.ext, ext)
        return m
