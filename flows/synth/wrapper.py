"""The top that is synthesised out of context: GA-2 with a register on every port."""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Value
from amaranth.lib import wiring

from hw.component import Checked
from hw.top import GA2
from sim.spec import Params

TOP_NAME = "ga2_synth"
"""The Verilog module name of the wrapper."""


class SynthTop(Checked):
    """GA-2 with a register on every port: the top that is synthesised out of context.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.

    Members: those of :class:`~hw.top.GA2` (the host interface and ``ext``, the external-memory
    bus), each registered once between the port and the core: inputs are sampled into
    registers that drive the core, the core's outputs into registers that drive the ports.
    The wrapper adds one cycle each way; it is a timing harness, not a machine to run.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: GA2 is not built for these parameters (T > LANES).
    """

    @classmethod
    def check(cls, params: Params) -> None:
        """Refuse what the core refuses (:meth:`hw.top.GA2.check`)."""
        GA2.check(params)

    def __init__(self, params: Params):
        self.core = GA2(params)
        self.params = params
        super().__init__(dict(self.core.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        ours = {path: (member, value) for path, member, value in self.signature.flatten(self)}
        for path, member, theirs in core.signature.flatten(core):
            mine = ours[path][1]
            name = "port_" + "_".join(str(p) for p in path)
            reg = Signal(Value.cast(theirs).shape(), name=name)
            if member.flow == wiring.In:       # into the core
                m.d.sync += reg.eq(mine)
                m.d.comb += theirs.eq(reg)
            else:                              # out of the core
                m.d.sync += reg.eq(theirs)
                m.d.comb += mine.eq(reg)
        return m
