"""flows/synth/wrapper.py: the out-of-context top registers every port of the core."""

from __future__ import annotations

from amaranth.hdl import Fragment
from amaranth.lib import wiring

from flows import synth
from flows.export import ports
from hw.top import GA2
from sim.spec import DEFAULT


def test_wrapper_has_the_core_ports_each_registered():
    top = synth.SynthTop(DEFAULT)
    assert isinstance(top.core, GA2) and ports(top) == ports(top.core)
    Fragment.get(top, None)   # elaborates
    paths = [path for path, _member, _value in top.signature.flatten(top)]
    assert ("ext", "rd_data") in paths and ("count_cycles",) in paths
    assert all(member.flow in (wiring.In, wiring.Out) for _p, member, _v in top.signature.flatten(top))
