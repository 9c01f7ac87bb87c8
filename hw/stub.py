"""A unit that executes nothing but takes exactly the spec's latency.

It evaluates :attr:`sim.spec.InstrSpec.latency_formula` on the dispatched fields, on Amaranth
values (:data:`hw.formula.HDL`), and raises ``done`` in cycle d + L - 1. The control
tests run the execute stage against it, so they check dispatch, errors and counters without
any real unit.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, Value

from sim import spec
from sim.spec import Params

from .component import Checked
from .formula import HDL
from .isa import fields_view
from .ports import unit_members

LATENCY_BITS = 20
"""Wide enough for every latency the spec's formulas give (UNPACK of 65535 words is 2^17 + 1)."""


def latency(params: Params, opcode: Value, fields: Value) -> Value:
    """The spec's latency of the instruction (opcode, fields) as an Amaranth value (0 for
    an unknown opcode)."""
    out = Const(0, LATENCY_BITS)
    for ispec in spec.instructions(params):
        view = fields_view(ispec.name, fields)
        values = {f.name: Value.cast(getattr(view, f.name)) for f in ispec.fields}
        lat = Value.cast(ispec.latency_formula(HDL, values, params))
        out = Mux(opcode == int(ispec.opcode), lat, out)
    return out[:LATENCY_BITS]


class LatencyStub(Checked):
    """Stands in for every unit: no memory access, ``done`` after exactly the spec's latency.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.

    Members: start, opcode, fields In; done Out (``hw.ports.unit_members(params, n_read=0,
    write=False)``).

    Latency: ``sim.spec.latency`` of the dispatched instruction.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    def __init__(self, params: Params):
        self.params = params
        super().__init__(unit_members(params, n_read=0, write=False))

    def latency(self) -> Value:
        """The dispatched instruction's latency, from ``opcode`` and ``fields`` (the spec's;
        a subclass may change it, as the timing-fault tests do)."""
        return latency(self.params, self.opcode, self.fields)

    def elaborate(self, platform):
        m = Module()
        lat = Signal(LATENCY_BITS)
        left = Signal(LATENCY_BITS)   # cycles after this one until done
        running = Signal()
        m.d.comb += lat.eq(self.latency())
        with m.If(self.start):
            m.d.comb += self.done.eq(lat <= 1)
            m.d.sync += [running.eq(lat > 1), left.eq(lat - 2)]
        with m.Elif(running):
            m.d.comb += self.done.eq(left == 0)
            m.d.sync += [running.eq(left != 0), left.eq(left - 1)]
        return m
