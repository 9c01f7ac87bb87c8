"""OVERLAP = 1: the execute stage of :class:`hw.control.Control` with the engines side by side,
a component of its own (:class:`OverlapExecute`).

The issue rule is GA2.md section 7's (``sim.spec.Issue``); this is its hardware, cycle by cycle.
The queue's head is issued in cycle c (dispatched in c + 1, the unit's dispatch registers as in
the serial machine) when

* ``settled``: the head was in the queue in cycles c - 2 and c - 1 and nothing was issued
  then, so the flags below, computed in two register stages in those cycles, are the head's
  (this is why a dispatch follows the previous one by OVERLAP_ISSUE_CYCLES = 3 at least, and
  the first comes two cycles later than on the serial machine, OVERLAP_FRONTEND_CYCLES; with
  one stage, the comparisons and their reduction made the core's longest path, 76.8 MHz);
* its engine is free (``free_<engine>``: a register, high in the engine's last cycle and while
  it is idle; the engine counts its instruction's latency down in ``left_<engine>``);
* ``haz_q`` is low: no engine still running after cycle c holds an instruction whose
  scratchpad regions conflict with the head's (RAW, WAR, WAW). Each engine keeps the region
  slots of its instruction (start, end, read, written: the checker's stage C computed them from
  the spec's region formulas); the comparisons are made in cycle c - 2 against both slots of
  the queue and registered, the head's reduced in c - 1 and registered, so the issue decision
  itself is a few gates on registers;
* ``rd_ok_q`` and ``wr_ok_q``: the scratchpad's ports. ``rd_left`` counts down to the end of
  the last read window, ``wr_left`` to the end of the last writer other than an LD; a reader
  needs rd_left = 0, a writer other than an LD wr_left <= latency - writes (its own write
  window starts after the last writer's). An LD never waits for the write port.

The DMA shares the write port beat by beat (GA2.md section 7): every engine but the DMA writes
only in its window, the last ``writes`` cycles of its latency, i.e. while its countdown
``left_<engine>`` is below ``writes``; ``dma_hold``, registered, is high in cycle c when some
engine's countdown in c - 1 says it writes in c + LD_OVERHEAD (LD_OVERHEAD < left <=
writes + LD_OVERHEAD, ``wtop_<engine>``: an
instruction issued in c - 1 or later writes SPAD_READ_LATENCY + 1 cycles after its dispatch
at the earliest, after c + LD_OVERHEAD). The DMA then does not read an LD beat in c
(hw/dma.py). The execute stage counts the beats the DMA has yet to read itself (``ld_beats``,
the LD's ``writes`` from its dispatch, one less per beat read), so it knows without a signal
from the DMA when a beat waits (``dma_held``: ld_beats != 0 and dma_hold), and ``left_dma``
holds for that cycle: the LD's end, its busy cycles, the hazards on it and ``eng_last``
follow its real end (the DMA's ``done`` against ``eng_last``, ``timing_fault``, checks the two
counts agree).

A GATHER (``sim.spec.InstrSpec.fence``) is a fence: nothing is issued while one runs
(``gathering`` and its engine not yet free), because its row number may stop the machine: a
unit's data fault (``fault``: BAD_INDEX) makes the stage issue nothing more and take a stop, with
the GATHER's pc (``last_pc``), in the first cycle every engine is free. A GATHER holds the write
port for its window like the other engines' writers (it neither shares it beat by beat nor counts
``ld_beats``).

A stop (HALT, an error, NO_HALT) is taken when settled and every engine is free, then takes
STOP_CYCLES as on the serial machine. The counters: ``cycles`` as before, each engine's its
instruction's cycles, ``hazard`` the cycles the head (not a stop) waits with its engine free
on ``haz_q``, ``port`` those it then waits on a port.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import Params

from .checker import SPAD_SLOTS, overlap_info_widths, pc_bits
from .component import Checked, check_params
from .isa import FIELD_BITS, opcode
from .lanes import any_of
from .queue import QUEUE_SLOTS, queue_entry


def _slots_layout(params: Params) -> data.StructLayout:
    widths = overlap_info_widths(params)
    return data.StructLayout({name: widths[name] for k in range(SPAD_SLOTS)
                              for name in (f"s{k}", f"e{k}", f"r{k}", f"w{k}")})


def conflict_pairs(a, b) -> list[Value]:
    """Per pair of region slots of ``a`` (the head's) and ``b`` (an engine's): 1 when the two
    overlap with one of the two writing (``sim.spec.conflict`` is their OR)."""
    hits = []
    for i in range(SPAD_SLOTS):
        for j in range(SPAD_SLOTS):
            a_s, a_e, a_r, a_w = (getattr(a, f"{x}{i}") for x in "serw")
            b_s, b_e, b_r, b_w = (getattr(b, f"{x}{j}") for x in "serw")
            kind = (a_w & (b_r | b_w)) | (a_r & b_w)
            hits.append(kind & (a_s < b_e) & (b_s < a_e))
    return hits


@dataclass(frozen=True)
class _Engines:
    """The engines' state, one entry per engine of ``sim.spec.ENGINES`` (the DMA's is ``dma``):
    the countdown of its instruction's latency (``left``), whether it is free (a register: high
    in its last cycle and while idle) and executing (``active``), its instruction's region
    slots (``regions``) and the top of its write window seen from the DMA (``wtop``)."""

    left: list[Signal]
    free: list[Signal]
    active: list[Signal]
    regions: list[Signal]
    wtop: list[Signal]
    dma: int


@dataclass(frozen=True)
class _Flags:
    """The issue rule's registered flags for the head (``haz_q``, ``rd_ok_q``, ``wr_ok_q``),
    whether they are the head's (``settled``), the head's engine being free (``eng_free``), the
    head ready to be looked at (``ready``: settled, no fence running, no data fault), the head
    being a fence (``head_fence``: a GATHER), a data fault's stop now (``fault_stop``) and the pc
    of the last instruction issued (``last_pc``)."""

    settled: Signal
    haz_q: Signal
    rd_ok_q: Signal
    wr_ok_q: Signal
    eng_free: Value
    ready: Signal
    head_fence: Value
    fault_stop: Signal
    last_pc: Signal


class OverlapExecute(Checked):
    """The execute stage of the machine whose engines run side by side (OVERLAP = 1): the issue
    rule, the engines' countdowns, the stop, the last cycles and the counters (see the module
    docstring, and GA2.md section 7 for the rule).

    Parameters:
        params: the machine's :class:`sim.spec.Params` (OVERLAP = 1).

    Members (from the control, :class:`hw.control.Control`):
        start In(1): an accepted start: every engine free, the flags and the counters reset.
        busy In(1): the machine runs (from the cycle after start until it stops).
        count In(range(QUEUE_SLOTS + 1)), rd_slot In(1), slots In(queue_entry).array(QUEUE_SLOTS):
            the queue (:mod:`hw.queue`): how many instructions it holds, which slot is the head.
        fault In(1): the register of a unit's data fault (``hw.control.data_fault``: BAD_INDEX).

    Members (to the control):
        consume Out(1): the head leaves the queue in this cycle (issued, or a stop taken).
        issue Out(1), issue_opcode Out(4), issue_fields Out(FIELD_BITS): the issue of the head,
            to the units' dispatch registers (:func:`hw.control.dispatch_registers`).
        stopping Out(1): a stop is under way (the front end stops fetching); stop Out(1): its
            last cycle; stop_code Out(4), stop_pc Out(pc_bits): its error code and pc.
        eng_last Out(len(ENGINES)): per engine, the last cycle of its instruction (when its
            unit raises ``done``); ex_last Out(1): their OR.
        dma_hold Out(1): a register, to the DMA's ``hold``: another engine writes the
            scratchpad LD_OVERHEAD cycles later, so an LD beat read now would find the port taken.
        count_<name> Out(32), for each counter of ``sim.spec.counters``: the counters (GA2.md
            sections 5 and 7), reset by start, counting while busy.

    Latency: the first issue OVERLAP_FRONTEND_CYCLES after start, an issue OVERLAP_ISSUE_CYCLES
    after the previous one at the earliest (``sim.spec.Issue``); a stop STOP_CYCLES.

    Errors: none of its own (the checker's verdicts arrive in the queue as stops; a data fault,
    ``fault``, stops the machine with BAD_INDEX at the last issued instruction's pc).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: params.OVERLAP is 0 (the serial machine's execute stage is the control's
            countdown).
    """

    @classmethod
    def check(cls, params: Params) -> None:
        """The Raises above, before the component exists."""
        check_params(cls.__name__, params)
        if not params.OVERLAP:
            raise ValueError("OverlapExecute: params.OVERLAP = 0; the serial machine's execute stage is "
                             "hw.control.Control's countdown")

    def __init__(self, params: Params):
        self.params = params
        entry = queue_entry(params)
        members = {
            "start": In(1), "busy": In(1), "fault": In(1), "count": In(range(QUEUE_SLOTS + 1)),
            "rd_slot": In(1),
            "slots": In(entry).array(QUEUE_SLOTS),
            "consume": Out(1), "issue": Out(1), "issue_opcode": Out(spec.OPCODE_BITS),
            "issue_fields": Out(FIELD_BITS),
            "stopping": Out(1), "stop": Out(1), "stop_code": Out(spec.ERROR_CODE_BITS),
            "stop_pc": Out(pc_bits(params)),
            "eng_last": Out(len(spec.ENGINES)), "ex_last": Out(1), "dma_hold": Out(1),
        } | {f"count_{name}": Out(spec.COUNTER_BITS) for name in spec.counters(params)}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        assert QUEUE_SLOTS == 2, "the head is slot rd_slot of two"
        head = Signal.like(self.slots[0])
        m.d.comb += head.eq(Mux(self.rd_slot, self.slots[1].as_value(), self.slots[0].as_value()))
        engines = self._engines(head)
        flags = self._issue(m, head, engines)
        self._countdowns(m, head, engines, flags)
        self._ports_and_flags(m, head, engines, flags)
        self._stop(m, head, flags)
        last = Cat(*(engines.active[k] & engines.free[k] for k in range(len(spec.ENGINES))))
        m.d.comb += [self.eng_last.eq(last), self.ex_last.eq(last.any())]
        self._counters(m, head, engines, flags)
        return m

    def _engines(self, head) -> _Engines:
        lbits = len(head.latency)
        layout = _slots_layout(self.params)
        engines = spec.ENGINES
        return _Engines(left=[Signal(lbits, name=f"left_{e}") for e in engines],
                        free=[Signal(init=1, name=f"free_{e}") for e in engines],
                        active=[Signal(name=f"active_{e}") for e in engines],
                        regions=[Signal(layout, name=f"regions_{e}") for e in engines],
                        wtop=[Signal(lbits + 2, name=f"wtop_{e}") for e in engines],
                        dma=engines.index(spec.SHARED_WRITER))

    def _issue(self, m: Module, head, engines: _Engines) -> _Flags:
        """The issue of the head when it is settled, its engine free and no flag holds it back
        (a stop: when every engine is free), and ``settled``: the head has been the head, and no
        instruction was issued, in the two cycles before this one (the flags' two register
        stages saw this head and these engines)."""
        cls = head.cls
        fenced = [s for s in spec.INSTRUCTIONS if s.fence]
        assert all(s.counter == spec.SHARED_WRITER for s in fenced), "a fence runs on the DMA"
        flags = _Flags(settled=Signal(name="settled"), haz_q=Signal(name="haz_q"),
                       rd_ok_q=Signal(name="rd_ok_q"), wr_ok_q=Signal(name="wr_ok_q"),
                       eng_free=any_of(cls[k] & engines.free[k] for k in range(len(spec.ENGINES))),
                       ready=Signal(name="ready"),
                       head_fence=any_of(head.opcode == opcode(s.name) for s in fenced),
                       fault_stop=Signal(name="fault_stop"), last_pc=Signal(len(head.pc), name="last_pc"))
        all_free = Cat(*engines.free).all()
        ready = flags.ready
        gathering = Signal(name="gathering")    # the DMA's instruction is a fence
        m.d.comb += [
            flags.fault_stop.eq(self.busy & ~self.stopping & self.fault & all_free),
            ready.eq(self.busy & ~self.stopping & (self.count != 0) & flags.settled & ~self.fault
                     & ~(gathering & ~engines.free[engines.dma])),
            self.consume.eq(ready & Mux(head.stop, all_free,
                                        flags.eng_free & ~flags.haz_q & flags.rd_ok_q & flags.wr_ok_q)),
            self.issue.eq(self.consume & ~head.stop),
            self.issue_opcode.eq(head.opcode),
            self.issue_fields.eq(head.fields),
        ]
        with m.If(self.start):
            m.d.sync += gathering.eq(0)
        with m.Elif(self.issue & cls[engines.dma]):
            m.d.sync += gathering.eq(flags.head_fence)
        with m.If(self.issue):
            m.d.sync += flags.last_pc.eq(head.pc)
        settled1 = Signal(name="settled1")
        with m.If(self.start | self.stop):
            m.d.sync += [settled1.eq(0), flags.settled.eq(0)]
        with m.Else():
            m.d.sync += [settled1.eq((self.count != 0) & ~self.consume),
                         flags.settled.eq(settled1 & ~self.consume)]
        return flags

    def _countdowns(self, m: Module, head, engines: _Engines, flags: _Flags) -> None:
        """Each engine counts its instruction's latency down; the DMA's holds for a cycle in
        which an LD beat waits (``dma_held``: the execute stage counts the LD's beats itself)."""
        layout = _slots_layout(self.params)
        slots = Signal(layout, name="slots")
        m.d.comb += [getattr(slots, name).eq(getattr(head, name)) for name in layout.members]
        ld_beats = Signal(len(head.latency), name="ld_beats")   # beats of the LD in flight yet to read
        dma_held = Signal(name="dma_held")                      # one waits this cycle (the DMA reads none)
        dma = engines.dma
        for k in range(len(spec.ENGINES)):
            left, free, active = engines.left[k], engines.free[k], engines.active[k]
            take = self.issue & head.cls[k]
            with m.If(self.start):
                m.d.sync += [left.eq(0), free.eq(1), active.eq(0)]
            with m.Elif(take):
                m.d.sync += [left.eq(head.latency - 1), free.eq(0), active.eq(1),
                             engines.regions[k].eq(slots)]
                if k != dma:
                    m.d.sync += engines.wtop[k].eq(head.latency - head.wfrom + spec.LD_OVERHEAD)
            if k == dma:
                with m.Elif(dma_held):
                    m.d.sync += left.eq(left)       # an LD beat waited: the LD ends a cycle later
            with m.Elif(left != 0):
                m.d.sync += [left.eq(left - 1), free.eq(left == 1)]
            with m.Else():
                m.d.sync += [free.eq(1), active.eq(0)]
        m.d.comb += dma_held.eq((ld_beats != 0) & self.dma_hold)
        with m.If(self.start):
            m.d.sync += ld_beats.eq(0)
        with m.Elif(self.issue & head.cls[dma]):        # an LD's beats are its writes (an ST has none)
            m.d.sync += ld_beats.eq(Mux(head.wr & ~flags.head_fence, head.latency - head.wfrom, 0))
        with m.Elif((ld_beats != 0) & ~self.dma_hold):
            m.d.sync += ld_beats.eq(ld_beats - 1)

    def _ports_and_flags(self, m: Module, head, engines: _Engines, flags: _Flags) -> None:
        """The scratchpad's ports (the countdowns to the end of the last read window and of the
        last writer other than an LD; ``dma_hold``), then the flags in two register stages: 1,
        the region comparisons of both queue slots with each engine's (registered: the head is
        picked in stage 2, so the comparators start at registers) and the head's port needs;
        2, their reduction against the countdowns of the cycle, for the next."""
        assert spec.SPAD_READ_LATENCY + 1 > spec.LD_OVERHEAD, \
            "dma_hold: a writer issued now must write after the LD beat read next cycle is written"
        lbits = len(head.latency)
        rd_left = Signal(lbits, name="rd_left")
        wr_left = Signal(lbits, name="wr_left")
        dma, count = engines.dma, len(spec.ENGINES)
        shares = head.cls[dma] & ~flags.head_fence   # an LD shares the write port: it neither holds nor waits
        port_wr = head.wr & ~shares
        with m.If(self.start):
            m.d.sync += [rd_left.eq(0), wr_left.eq(0), self.dma_hold.eq(0)]
        with m.Else():
            m.d.sync += [
                rd_left.eq(Mux(self.issue & head.rd, head.reads - 1, Mux(rd_left != 0, rd_left - 1, 0))),
                wr_left.eq(Mux(self.issue & port_wr, head.latency - 1, Mux(wr_left != 0, wr_left - 1, 0))),
                self.dma_hold.eq(any_of((engines.left[k] >= spec.LD_OVERHEAD + 1)
                                        & (engines.left[k] <= engines.wtop[k])
                                        for k in range(count) if k != dma)),
            ]
        pairs = [[Signal(SPAD_SLOTS * SPAD_SLOTS, name=f"conflict{s}_{e}") for e in spec.ENGINES]
                 for s in range(QUEUE_SLOTS)]
        p1_rd, p1_wr = Signal(name="p1_rd"), Signal(name="p1_wr")
        p1_wfrom = Signal(lbits + 1, name="p1_wfrom")
        m.d.sync += [pairs[s][k].eq(Cat(*conflict_pairs(slot, engines.regions[k])))
                     for s, slot in enumerate(self.slots) for k in range(count)]
        m.d.sync += [p1_rd.eq(head.rd), p1_wr.eq(port_wr), p1_wfrom.eq(head.wfrom + 1)]
        head_pairs = [Mux(self.rd_slot, pairs[1][k], pairs[0][k]) for k in range(count)]
        m.d.sync += [
            flags.haz_q.eq(any_of(head_pairs[k].any() & (engines.left[k] > 1) for k in range(count))),
            flags.rd_ok_q.eq(~p1_rd | (rd_left <= 1)),
            flags.wr_ok_q.eq(~p1_wr | (wr_left <= p1_wfrom)),
        ]

    def _stop(self, m: Module, head, flags: _Flags) -> None:
        """A stop (HALT, an error, NO_HALT), taken when settled and every engine is free, then
        STOP_CYCLES as on the serial machine; a data fault's (BAD_INDEX at ``last_pc``) when
        every engine is free."""
        stop_left = Signal(range(spec.STOP_CYCLES + 1), name="stop_left")
        with m.If(self.start):
            m.d.sync += self.stopping.eq(0)
        with m.Elif(self.consume & head.stop):
            m.d.sync += [self.stopping.eq(1), stop_left.eq(spec.STOP_CYCLES - 1),
                         self.stop_code.eq(head.code), self.stop_pc.eq(head.pc)]
        with m.Elif(flags.fault_stop):
            m.d.sync += [self.stopping.eq(1), stop_left.eq(spec.STOP_CYCLES - 1),
                         self.stop_code.eq(spec.ErrorCode.BAD_INDEX), self.stop_pc.eq(flags.last_pc)]
        with m.Elif(self.stop):
            m.d.sync += self.stopping.eq(0)
        with m.If(self.stopping & (stop_left != 0)):
            m.d.sync += stop_left.eq(stop_left - 1)
        m.d.comb += self.stop.eq(self.busy & self.stopping & (stop_left == 0))

    def _counters(self, m: Module, head, engines: _Engines, flags: _Flags) -> None:
        """``cycles`` as on the serial machine, each engine's its instruction's cycles,
        ``hazard`` the cycles the head (not a stop) waits with its engine free on ``haz_q``,
        ``port`` those it then waits on a port."""
        counters = {name: getattr(self, f"count_{name}") for name in spec.counters(self.params)}
        waiting = flags.ready & ~head.stop & flags.eng_free
        with m.If(self.start):
            m.d.sync += [counters["cycles"].eq(1)] + [c.eq(0) for n, c in counters.items() if n != "cycles"]
        with m.Elif(self.busy):
            m.d.sync += counters["cycles"].eq(counters["cycles"] + 1)
            for k, name in enumerate(spec.ENGINES):
                with m.If(engines.active[k]):
                    m.d.sync += counters[name].eq(counters[name] + 1)
            with m.If(waiting & flags.haz_q):
                m.d.sync += counters["hazard"].eq(counters["hazard"] + 1)
            with m.If(waiting & ~flags.haz_q & ~(flags.rd_ok_q & flags.wr_ok_q)):
                m.d.sync += counters["port"].eq(counters["port"] + 1)
