"""``GA2(params)``: the core. Scratchpad, control, and one unit per instruction kind.

The units share the scratchpad's two read ports and its write port, and the DMA drives the
external bus. An idle unit drives 0 on every output (hw/README.md), so the requests are ORed
(:func:`share`); read data goes to every unit. On the serial machine (OVERLAP = 0) one
instruction executes at a time, so that is all. With the engines side by side (OVERLAP = 1,
GA2.md section 7) one instruction per engine may run at once: the execute stage's issue rule
(hw/overlap.py) gives each scratchpad port to one unit at a time, and a running unit's requests
are taken only while its ``en`` is high (``share``'s gate); the DMA's LD beats yield the write
port to the other engines' write windows (its ``hold``, the control's ``dma_hold``); the
self-check compares each engine's units with that engine's last cycle
(:func:`overlap_timing_check`).

The units are found in :data:`UNIT_MODULES`: each module defines one ``wiring.Component``
with an ``OPCODES`` attribute naming the instructions it executes, built as ``cls(params)``.
"""

from __future__ import annotations

import importlib

from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from sim import spec
from sim.spec import Params

from .banked import BankedMemory
from .component import Checked, check_params
from .control import Control, dispatch_registers, host_members
from .lanes import any_of
from .ports import ExtPort, addr_bits
from .stub import LatencyStub

UNIT_MODULES = ("hw.dma", "hw.mxu", "hw.requant", "hw.vector", "hw.softmax", "hw.lut", "hw.layernorm")
"""Where the units live (hw/README.md's block table)."""

UNIT_OPCODES = tuple(s.name for s in spec.INSTRUCTIONS if s.counter is not None)
"""Every instruction that some unit executes (all but HALT)."""


def unit_classes(modules: tuple[str, ...] = UNIT_MODULES) -> dict[str, type]:
    """Instruction name -> the unit class that executes it, for those of the modules that exist.

    Raises:
        ValueError: two units claim the same instruction, or a unit claims an unknown one.
    """
    found: dict[str, type] = {}
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            continue
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, wiring.Component) and obj.__module__ == module_name
                    and hasattr(obj, "OPCODES")):
                for name in obj.OPCODES:
                    if name not in UNIT_OPCODES:
                        raise ValueError(f"{obj.__name__}.OPCODES names {name!r}, not a unit instruction")
                    if name in found:
                        raise ValueError(f"{name} is claimed by {found[name].__name__} and {obj.__name__}")
                    found[name] = obj
    return found


def missing_units(modules: tuple[str, ...] = UNIT_MODULES) -> list[str]:
    """The instructions no unit module executes yet (empty in the finished core)."""
    have = unit_classes(modules)
    return [name for name in UNIT_OPCODES if name not in have]


class GA2(Checked):
    """The GA-2 core.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.
        stub_missing: let a :class:`~hw.stub.LatencyStub` (exact timing, no effect on memory)
            stand in for instructions whose unit is not in ``modules``. For tests only, which
            is why it stays: tests/hw/test_timing_fault.py builds a core of stubs alone
            (``modules=()``) and makes one finish a cycle early or late. False (the default)
            refuses to build an incomplete core.
        modules: the modules to take the units from (default :data:`UNIT_MODULES`; the
            timing-fault tests name none).

    Members:
        the host interface of :class:`~hw.control.Control` (``hw.control.host_members``):
            start, prog_len, busy, done, error, error_code, error_pc, imem_we, imem_waddr,
            imem_wdata, and a ``count_<name>`` Out(32) per counter of ``sim.spec.counters``:
            count_cycles, count_dma, count_mxu, count_vpu, count_sfu, and at OVERLAP = 1
            count_hazard and count_port (GA2.md section 7);
        ext Out(ExtPort(addr_bits(EXT_WORDS), LANES)): the external-memory bus (the DMA's),
            read data EXT_READ_LATENCY cycles after rd_en.
        timing_fault Out(1): a self-check of the execute stage's countdown (:func:`timing_check`;
            at OVERLAP = 1 per engine, :func:`overlap_timing_check`): 1 once, in some cycle of
            the run, the OR of the units' ``done`` differed from the control's ``ex_last``
            (at OVERLAP = 1: an engine's units' from that engine's ``eng_last``), i.e. a unit
            finished earlier or later than the spec's latency of its instruction, which the
            counters cannot show: they follow the countdown. Held
            until the next accepted ``start`` clears it; 0 after reset. It lags the cycle it
            judges by TIMING_CHECK_DELAY cycles: in the first cycle ``done`` is high it has
            judged every cycle up to the last instruction's last one, TIMING_CHECK_DELAY
            cycles later every cycle up to that first ``done`` cycle (what test benches read).

    Attributes (for test benches and the Verilog memory map, flows/memmap.py):
        control, spad (the scratchpad :class:`~hw.banked.BankedMemory`), units (name -> unit).

    Latency: per instruction as ``sim.spec``; FRONTEND_CYCLES before the first, STOP_CYCLES
    after the last.

    Errors: as :class:`~hw.control.Control`.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: an instruction has no unit (and stub_missing is False). (Params itself
            refuses a machine the generator does not build, T > LANES among them.)
    """

    @classmethod
    def check(cls, params: Params, *, stub_missing: bool = False,
              modules: tuple[str, ...] = UNIT_MODULES) -> None:
        """Refuse what :class:`GA2` cannot be built from, before any part is built (the
        Raises of the class)."""
        check_params(cls.__name__, params)
        missing = missing_units(modules)
        if missing and not stub_missing:
            raise ValueError(f"GA2: no unit executes {', '.join(missing)} "
                             f"(looked in {', '.join(modules)}); stub_missing=True builds without")

    def __init__(self, params: Params, *, stub_missing: bool = False,
                 modules: tuple[str, ...] = UNIT_MODULES):
        classes = unit_classes(modules)
        missing = [s.name for s in spec.instructions(params)
                   if s.counter is not None and s.name not in classes]
        self.params = params
        ext = ExtPort(addr_bits(params.EXT_WORDS), params.LANES)
        super().__init__(host_members(params) | {"ext": Out(ext), "timing_fault": Out(1)})
        self.control = Control(params)
        self.spad = BankedMemory(params.SPAD_WORDS, n_read=2, lanes=params.LANES,
                                 latency=spec.SPAD_READ_LATENCY)
        self.units: dict[str, wiring.Component] = {}
        self.opcodes: dict[str, tuple[str, ...]] = {}
        for cls in dict.fromkeys(classes.values()):
            name = cls.__module__.rsplit(".", 1)[-1]
            self.units[name] = cls(params)
            self.opcodes[name] = tuple(op for op in cls.OPCODES if spec.built(spec.BY_NAME[op], params))
        if missing:
            self.units["stub"] = LatencyStub(params)
            self.opcodes["stub"] = tuple(missing)
        self.missing = tuple(missing)

    def elaborate(self, platform):
        m = Module()
        m.submodules.control = ctl = self.control
        m.submodules.spad = spad = self.spad
        for name, unit in self.units.items():
            m.submodules[name] = unit

        # the host interface is the control's
        for name in host_members(self.params):
            ours, theirs = getattr(self, name), getattr(ctl, name)
            if self.signature.members[name].flow == wiring.In:
                m.d.comb += theirs.eq(ours)
            else:
                m.d.comb += ours.eq(theirs)

        # dispatch: each unit's start, opcode and fields from registers beside it
        for name, unit in self.units.items():
            dispatch_registers(m, ctl, unit, self.opcodes[name], name)
        # a unit's data fault (the DMA's: a GATHER's row number out of its table, BAD_INDEX)
        m.d.comb += ctl.unit_fault.eq(any_of(u.fault for u in self.units.values()
                                             if "fault" in u.signature.members))
        # the execute stage counts each instruction's latency down itself (hw/control.py) and
        # does not wait for the units' done; the units' done only feeds the self-check
        if self.params.OVERLAP:
            # the DMA's LD beats yield the write port to the other engines' windows, which the
            # execute stage knows (hw/overlap.py); a stub DMA (tests) does not see them
            dma = self.units.get("dma")
            if dma is not None and "hold" in dma.signature.members:
                m.d.comb += dma.hold.eq(ctl.dma_hold)
            engine_of = {name: spec.BY_NAME[self.opcodes[name][0]].counter for name in self.units}
            overlap_timing_check(m, ctl, self.units, engine_of, self.start, self.timing_fault)
        else:
            timing_check(m, ctl, self.units, self.start, self.timing_fault)

        # shared ports: requests ORed, read data to every unit
        def users(port: str) -> list:
            return [getattr(u, port) for u in self.units.values() if port in u.signature.members]

        gate = bool(self.params.OVERLAP)   # units of two engines may run at once
        for k in range(spad.n_read):
            share(m, spad.rd[k], users(f"rd{k}"), requests=("en", "addr"), replies=("data",), gate=gate)
        share(m, spad.wr, users("wr"), requests=("en", "addr", "mask", "data"), replies=(), gate=gate)
        share(m, self.ext, users("ext"), requests=("addr", "rd_en", "wr_en", "wr_mask", "wr_data"),
              replies=("rd_data",))
        return m


def share(m: Module, target, ports: list, *, requests: tuple[str, ...], replies: tuple[str, ...],
          gate: bool = False) -> None:
    """One port shared by units of which at most one is active (an idle unit drives 0): each
    request member of ``target`` is the OR of the units' (:func:`hw.lanes.any_of`), each reply
    member goes to every unit.

    With ``gate`` (OVERLAP = 1: a unit of another engine may be running, between its own
    requests) every request member but ``en`` is taken from a unit only while its ``en`` is high:
    the issue rule gives each port to one unit at a time (its read or write window), but a
    running unit need not drive 0 outside its requests."""
    for name in requests:
        if gate and name != "en":
            values = [Mux(p.en, Value.cast(getattr(p, name)), 0) for p in ports]
        else:
            values = [Value.cast(getattr(p, name)) for p in ports]
        m.d.comb += getattr(target, name).eq(any_of(values))
    for name in replies:
        m.d.comb += [getattr(p, name).eq(getattr(target, name)) for p in ports]


TIMING_CHECK_DELAY = 2
"""Cycles from a cycle whose ``done`` and ``ex_last`` disagree to ``timing_fault`` showing it:
the register of each unit's ``done`` (and of ``ex_last``), then the sticky register."""


def timing_check(m: Module, control: Control, units: dict[str, wiring.Component], start, fault) -> None:
    """The sticky ``timing_fault`` of :class:`GA2`: the units' ``done`` against ``ex_last``.

    Built for timing, not for speed of detection: each unit's ``done`` (at the end of its own
    logic, far away on the chip) goes into a register of its own, named ``<unit>_done_q``, whose
    only input is that ``done`` (so the placer puts it beside the unit); ``ex_last`` into one
    beside the control. The path into ``fault`` then
    starts at those registers: the OR of the registered bits, compared with the registered
    ``ex_last``, ORed into ``fault`` (a few LUTs of 1-bit logic, nothing else behind it).

    An accepted ``start`` (``start`` while the control is not busy, as the control takes it)
    clears ``fault`` and wins over a mismatch seen in that cycle, which is one of the cycle
    before the start: nothing from an earlier run can set it. (The last ``ex_last`` of a run
    comes STOP_CYCLES + 1 cycles or more before the control can accept the next start, and a
    unit that is not running keeps ``done`` low, so in a correct core the registers hold 0 by
    then anyway.)

    Args:
        m: the module of the core.
        control: the :class:`~hw.control.Control` (its ``ex_last`` and ``busy``).
        units: name -> unit, each with a ``done`` output.
        start: the host's ``start`` input.
        fault: the sticky output (1 bit).
    """
    done_q = []
    for name, unit in units.items():
        q = Signal(name=f"{name}_done_q")
        m.d.sync += q.eq(unit.done)
        done_q.append(q)
    ex_last_q = Signal(name="ex_last_q")
    m.d.sync += ex_last_q.eq(control.ex_last)
    mismatch = Signal(name="timing_mismatch")
    m.d.comb += mismatch.eq(any_of(done_q) ^ ex_last_q)
    with m.If(start & ~control.busy):
        m.d.sync += fault.eq(0)
    with m.Elif(mismatch):
        m.d.sync += fault.eq(1)


def overlap_timing_check(m: Module, control: Control, units: dict[str, wiring.Component],
                         engine_of: dict[str, str], start, fault) -> None:
    """OVERLAP = 1: :func:`timing_check` per engine: the OR of the registered ``done`` of the
    engine's units against the registered last cycle of the engine's countdown
    (``control.eng_last``); any mismatch sets the sticky ``fault``. Same delay
    (TIMING_CHECK_DELAY), same clearing by an accepted start."""
    done_q = {}
    for name, unit in units.items():
        q = Signal(name=f"{name}_done_q")
        m.d.sync += q.eq(unit.done)
        done_q[name] = q
    last_q = Signal(len(spec.ENGINES), name="eng_last_q")
    m.d.sync += last_q.eq(control.eng_last)
    mismatch = Signal(name="timing_mismatch")
    m.d.comb += mismatch.eq(any_of(
        any_of(q for name, q in done_q.items() if engine_of[name] == engine) ^ last_q[k]
        for k, engine in enumerate(spec.ENGINES)))
    with m.If(start & ~control.busy):
        m.d.sync += fault.eq(0)
    with m.Elif(mismatch):
        m.d.sync += fault.eq(1)
