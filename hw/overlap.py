"""OVERLAP = 1: the execute stage of :class:`hw.control.Control` with the engines side by side.

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
unit's ``unit_fault`` (BAD_INDEX) makes the stage issue nothing more and take a stop, with the
GATHER's pc (``last_pc``), in the first cycle every engine is free. A GATHER holds the write port
for its window like the other engines' writers (it neither shares it beat by beat nor counts
``ld_beats``).

A stop (HALT, an error, NO_HALT) is taken when settled and every engine is free, then takes
STOP_CYCLES as on the serial machine. The counters: ``cycles`` as before, each engine's its
instruction's cycles, ``hazard`` the cycles the head (not a stop) waits with its engine free
on ``haz_q``, ``port`` those it then waits on a port.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data

from sim import spec

from .checker import SPAD_SLOTS, overlap_info_widths
from .isa import opcode
from .lanes import any_of


def _slots_layout(params) -> data.StructLayout:
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


def overlap_execute(m: Module, ctl, busy: Value, start: Value, stop: Value,
                    q: SimpleNamespace, fault: Value) -> SimpleNamespace:
    """Build the OVERLAP = 1 execute stage of ``ctl`` (a :class:`hw.control.Control`): the
    issue, the engines' countdowns, the stop, ``ex_last``/``eng_last`` and the counters.
    ``fault`` is the register of a data fault seen (``hw.control.data_fault``). Returns
    stopping, stop_code and stop_pc (for the front end and the host status)."""
    p = ctl.params
    head = q.head
    engines = spec.ENGINES
    lbits = len(ctl.checker.out_latency)
    layout = _slots_layout(p)

    stopping = Signal()
    stop_left = Signal(range(spec.STOP_CYCLES + 1))
    stop_code = Signal(spec.ERROR_CODE_BITS)
    stop_pc = Signal(len(head.pc))
    settled = Signal()
    left = [Signal(lbits, name=f"left_{e}") for e in engines]
    free = [Signal(init=1, name=f"free_{e}") for e in engines]
    active = [Signal(name=f"active_{e}") for e in engines]
    cur = [Signal(layout, name=f"regions_{e}") for e in engines]
    rd_left = Signal(lbits)
    wr_left = Signal(lbits)
    dma = engines.index(spec.SHARED_WRITER)
    assert spec.SPAD_READ_LATENCY + 1 > spec.LD_OVERHEAD, \
        "dma_hold: a writer issued now must write after the LD beat read next cycle is written"
    # per engine (the DMA's unused): writes + LD_OVERHEAD, its window seen LD_OVERHEAD + 1
    # cycles ahead (dma_hold)
    wtop = [Signal(lbits + 2, name=f"wtop_{e}") for e in engines]
    ld_beats = Signal(lbits, name="ld_beats")   # beats of the LD in flight the DMA has yet to read
    dma_held = Signal(name="dma_held")          # one waits this cycle (the DMA reads none)
    haz_q = Signal()
    rd_ok_q = Signal()
    wr_ok_q = Signal()

    cls = head.cls
    eng_free = any_of(cls[k] & free[k] for k in range(len(engines)))
    all_free = Cat(*free).all()
    ready = Signal()
    consume = Signal()
    issue = Signal()
    # the fence: a GATHER runs on the DMA (nothing is issued before its end)
    fenced = [s for s in spec.INSTRUCTIONS if s.fence]
    assert all(s.counter == spec.SHARED_WRITER for s in fenced), "a fence runs on the DMA"
    head_fence = any_of(head.opcode == opcode(s.name) for s in fenced)
    gathering = Signal()                 # the DMA's instruction is a fence
    fault_stop = Signal()
    last_pc = Signal(len(head.pc))       # the pc of the last instruction issued
    m.d.comb += [
        fault_stop.eq(busy & ~stopping & fault & all_free),
        ready.eq(busy & ~stopping & (q.count != 0) & settled & ~fault & ~(gathering & ~free[dma])),
        consume.eq(ready & Mux(head.stop, all_free, eng_free & ~haz_q & rd_ok_q & wr_ok_q)),
        issue.eq(consume & ~head.stop),
        q.consume.eq(consume),
        ctl.issue.eq(issue),
        ctl.issue_opcode.eq(head.opcode),
        ctl.issue_fields.eq(head.fields),
    ]
    with m.If(start):
        m.d.sync += gathering.eq(0)
    with m.Elif(issue & cls[dma]):
        m.d.sync += gathering.eq(head_fence)
    with m.If(issue):
        m.d.sync += last_pc.eq(head.pc)

    # settled: the head has been the head, and no instruction was issued, in the two cycles
    # before this one (the flags' two register stages saw this head and these engines)
    settled1 = Signal()
    with m.If(start | stop):
        m.d.sync += [settled1.eq(0), settled.eq(0)]
    with m.Else():
        m.d.sync += [settled1.eq((q.count != 0) & ~consume), settled.eq(settled1 & ~consume)]

    slots = Signal(layout)
    m.d.comb += [getattr(slots, name).eq(getattr(head, name)) for name in layout.members]
    for k in range(len(engines)):
        take = issue & cls[k]
        with m.If(start):
            m.d.sync += [left[k].eq(0), free[k].eq(1), active[k].eq(0)]
        with m.Elif(take):
            m.d.sync += [left[k].eq(head.latency - 1), free[k].eq(0), active[k].eq(1), cur[k].eq(slots)]
            if k != dma:
                m.d.sync += wtop[k].eq(head.latency - head.wfrom + spec.LD_OVERHEAD)
        if k == dma:
            with m.Elif(dma_held):
                m.d.sync += left[k].eq(left[k])       # an LD beat waited: the LD ends a cycle later
        with m.Elif(left[k] != 0):
            m.d.sync += [left[k].eq(left[k] - 1), free[k].eq(left[k] == 1)]
        with m.Else():
            m.d.sync += [free[k].eq(1), active[k].eq(0)]

    shares = cls[dma] & ~head_fence          # an LD shares the write port: it neither holds nor waits
    port_wr = head.wr & ~shares
    m.d.comb += dma_held.eq((ld_beats != 0) & ctl.dma_hold)
    with m.If(start):
        m.d.sync += ld_beats.eq(0)
    with m.Elif(issue & cls[dma]):           # an LD's beats are its writes (an ST has none)
        m.d.sync += ld_beats.eq(Mux(head.wr & shares, head.latency - head.wfrom, 0))
    with m.Elif((ld_beats != 0) & ~ctl.dma_hold):
        m.d.sync += ld_beats.eq(ld_beats - 1)
    with m.If(start):
        m.d.sync += [rd_left.eq(0), wr_left.eq(0), ctl.dma_hold.eq(0)]
    with m.Else():
        m.d.sync += [
            rd_left.eq(Mux(issue & head.rd, head.reads - 1, Mux(rd_left != 0, rd_left - 1, 0))),
            wr_left.eq(Mux(issue & port_wr, head.latency - 1, Mux(wr_left != 0, wr_left - 1, 0))),
            ctl.dma_hold.eq(any_of((left[k] >= spec.LD_OVERHEAD + 1) & (left[k] <= wtop[k])
                                   for k in range(len(engines)) if k != dma)),
        ]
    # the flags, in two register stages: 1, the head's region comparisons with each engine's
    # (and its port needs); 2, their reduction against the countdowns of the cycle, for the
    # next. Valid in a cycle when nothing was issued in the two before (settled)
    # (stage 1 compares both queue slots, registers both, with every engine's regions: the head
    # is picked in stage 2, so the comparators start at registers, not behind the head's mux)
    pairs = [[Signal(SPAD_SLOTS * SPAD_SLOTS, name=f"conflict{s}_{e}") for e in engines]
             for s in range(len(q.slots))]
    p1_rd, p1_wr = Signal(), Signal()
    p1_wfrom = Signal(lbits + 1)
    m.d.sync += [pairs[s][k].eq(Cat(*conflict_pairs(slot, cur[k])))
                 for s, slot in enumerate(q.slots) for k in range(len(engines))]
    m.d.sync += [p1_rd.eq(head.rd), p1_wr.eq(port_wr), p1_wfrom.eq(head.wfrom + 1)]
    assert len(q.slots) == 2, "the head is slot rd_slot of two"
    head_pairs = [Mux(q.rd_slot, pairs[1][k], pairs[0][k]) for k in range(len(engines))]
    m.d.sync += [
        haz_q.eq(any_of(head_pairs[k].any() & (left[k] > 1) for k in range(len(engines)))),
        rd_ok_q.eq(~p1_rd | (rd_left <= 1)),
        wr_ok_q.eq(~p1_wr | (wr_left <= p1_wfrom)),
    ]

    # the stop
    with m.If(start):
        m.d.sync += stopping.eq(0)
    with m.Elif(consume & head.stop):
        m.d.sync += [stopping.eq(1), stop_left.eq(spec.STOP_CYCLES - 1),
                     stop_code.eq(head.code), stop_pc.eq(head.pc)]
    with m.Elif(fault_stop):
        m.d.sync += [stopping.eq(1), stop_left.eq(spec.STOP_CYCLES - 1),
                     stop_code.eq(spec.ErrorCode.BAD_INDEX), stop_pc.eq(last_pc)]
    with m.Elif(stop):
        m.d.sync += stopping.eq(0)
    with m.If(stopping & (stop_left != 0)):
        m.d.sync += stop_left.eq(stop_left - 1)
    m.d.comb += stop.eq(busy & stopping & (stop_left == 0))

    last = Cat(*(active[k] & free[k] for k in range(len(engines))))
    m.d.comb += [ctl.eng_last.eq(last), ctl.ex_last.eq(last.any())]

    # the counters
    counters = {name: getattr(ctl, f"count_{name}") for name in spec.counters(p)}
    waiting = ready & ~head.stop & eng_free
    with m.If(start):
        m.d.sync += [counters["cycles"].eq(1)] + [c.eq(0) for n, c in counters.items() if n != "cycles"]
    with m.Elif(busy):
        m.d.sync += counters["cycles"].eq(counters["cycles"] + 1)
        for k, name in enumerate(engines):
            with m.If(active[k]):
                m.d.sync += counters[name].eq(counters[name] + 1)
        with m.If(waiting & haz_q):
            m.d.sync += counters["hazard"].eq(counters["hazard"] + 1)
        with m.If(waiting & ~haz_q & ~(rd_ok_q & wr_ok_q)):
            m.d.sync += counters["port"].eq(counters["port"] + 1)
    return SimpleNamespace(stopping=stopping, stop_code=stop_code, stop_pc=stop_pc)
