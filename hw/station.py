"""OVERLAP = 2: the execute stage of :class:`hw.control.Control` with the engines decoupled.

The rule is GA2.md section 7's ``sim.spec.Decoupled``; this is its hardware, cycle by cycle.

**The station.** Each engine e has a running entry R_e (the regions of the instruction it runs,
kept for the hazards on it until its last cycle) and STATION_SLOTS - 1 waiting entries
W_e[0..], a queue that shifts down by one when W_e[0] is issued (so the head is always W_e[0]:
its fields go to e's dispatch registers, and its readiness is computed, with no multiplexer).
Every waiting entry holds its instruction (opcode, fields, pc, latency, windows, regions) and
three vectors with a bit per column (f, 0) = R_f and (f, 1 + k) = W_f[k] of every other engine
f: two dependence vectors, ``full`` and ``war``: wait for that instruction's end, or (a write
after read only) for the end of its read window; and ``age``: that waiting instruction entered
before this one (an age matrix, set on entry from the queues' valid bits: instructions enter in
program order, so program order needs no pc comparison). A column moves with its instruction:
when f issues, column (f, 1) becomes (f, 0) and so on (:func:`_remap`); when R_f ends with
nothing issued, column (f, 0) clears. A bit on a waiting column never clears while it waits; a
bit on (f, 0) is satisfied when R_f ends (its countdown) or has read.

**Entering** (``q.consume``, an instruction leaves the front end's queue): the head is compared
with every entry (its written region with every region of each, each of its read regions with
each one's written region: 1 + 2 * READ_SLOTS pairs) in cycle c - 2 and registered, the pairs
reduced to the two vectors in c - 1 and registered, and the head enters in c when it was the head
in both (``settled``: ENTER_CYCLES = 3 apart at the most) and its engine has room (running plus
waiting below STATION_SLOTS). The vectors in flight follow the columns' moves. What the
entry's issue loads into the countdowns (:func:`issue_loads`) was worked out when it entered
the front end's queue.

**Dispatch**: in cycle x each engine's readiness for an issue in x + 1 (a dispatch in x + 2) is
computed from registers: W_e[0] is there, e's countdown ends by then, every dependence is met,
and the ports allow it (as at OVERLAP = 1). The earliest ready one in program order (the heads'
age bits read in x) is chosen in x and registered (``issue_eng``: the issue in x + 1), unless an
instruction is issued in x (the flags are then stale: DISPATCH_CYCLES = 2) or a stop is taken
in x; an entry written in x - 1 is issued in x + 1 at the earliest (ENTER_DISPATCH_CYCLES = 2).
The issue is a register, so the shift enables of every queue and vector, and the units'
dispatch registers, hang on a flip-flop, not on the choice's logic; so are ``release`` (a
running instruction's last cycle, which clears its column) and, of each head, which heads are
older (its age bits) and whether it waits on a waiting instruction (computed from the next
values), so that the choice is a carry chain (the write port's countdown against the head's
window) and a few LUTs from registers.

**A fence** (a GATHER, ``sim.spec.InstrSpec.fence``): nothing after it is taken into the
station before it ends (``fence_waiting``, ``fence_running`` and its countdown), so when its row
number is out of its table (the DMA's ``fault``, BAD_INDEX) only instructions before it are in
the station: they run, and the stop is taken, with BAD_INDEX and the GATHER's pc, when every
queue is empty and every engine free. A GATHER holds the write port for its window as the other
engines' writers do (it neither shares it beat by beat nor counts ``ld_beats``).

**The stop** (HALT, an error, NO_HALT) is taken when settled, every queue empty and every engine
free. **The watchdog** counts the cycles in a row in which no engine is active and nothing is
entered or issued; at WATCHDOG_CYCLES it takes a stop with STALL and the pc of the earliest
waiting instruction (the front end's head when none waits).

The engines' countdowns, the DMA's share of the write port (``dma_hold``, ``ld_beats``) and
the counters are those of OVERLAP = 1 (hw/overlap.py), per engine; ``hazard`` and ``port`` add,
each cycle, the heads that wait on a dependence, and those that then wait on the rest.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data

from sim import spec
from sim.spec import ErrorCode

from .checker import READ_SLOTS, latency_bits, overlap_info_widths
from .isa import FIELD_BITS, opcode
from .lanes import any_of, select

ENGINES = spec.ENGINES
COLUMNS = len(ENGINES) * spec.STATION_SLOTS
"""Dependence columns: (engine, slot), slot 0 the running entry, 1.. the waiting ones."""
REGION_NAMES = ("ws", "we", "ww", "wa", *(f"r{k}{x}" for k in range(READ_SLOTS) for x in "sev"))
"""The fields of an entry's regions (hw.checker's station slots)."""


def column(engine: int, slot: int) -> int:
    return engine * spec.STATION_SLOTS + slot


def issue_load_widths(params) -> dict[str, int]:
    """The bits of what an instruction's issue loads into the countdowns (:func:`issue_loads`)."""
    lbits = latency_bits(params)
    return {"left": lbits, "rdl": lbits, "beats": lbits, "wtop": lbits + 2, "wfrom1": lbits + 1, "short": 1}


def issue_loads(latency: Value, reads: Value, rd: Value, wfrom: Value) -> dict[str, Value]:
    """What an instruction's issue loads into the countdowns, worked out when the checker hands
    it to the front end's queue (hw/control.py), so that neither an adder nor the queue's head
    multiplexer sits between that queue and the station: ``left`` = latency - 1, ``rdl`` =
    reads - 1 (0 without reads), ``beats`` = latency - wfrom (an LD's beats), ``wtop`` = beats
    + LD_OVERHEAD (hw/overlap.py's window top), ``wfrom1`` = wfrom + 1, ``short`` = reads <= 2
    (its read countdown starts at 1 or less)."""
    return {"left": latency - 1, "rdl": Mux(rd, reads - 1, 0), "beats": latency - wfrom,
            "wtop": latency - wfrom + spec.LD_OVERHEAD, "wfrom1": wfrom + 1, "short": reads <= 2}


def _layouts(params, pcw: int) -> tuple[data.StructLayout, data.StructLayout]:
    """(a waiting entry's layout, a running entry's: its regions only). Besides the
    instruction, a waiting entry holds what its issue loads into the countdowns
    (:func:`issue_loads`)."""
    widths = overlap_info_widths(params)
    regions = {name: widths[name] for name in REGION_NAMES}
    waiting = data.StructLayout({
        "opcode": spec.OPCODE_BITS, "fields": FIELD_BITS, "pc": pcw, **issue_load_widths(params),
        "rd": 1, "wr": 1, **regions, "full": COLUMNS, "war": COLUMNS, "age": COLUMNS,
    })
    return waiting, data.StructLayout(regions)


def _overlaps(a_s, a_e, b_s, b_e) -> Value:
    return (a_s < b_e) & (b_s < a_e)


def _pairs(head, other, valid) -> tuple[Value, Value]:
    """(the pairs that make a full dependence, those that make a write after read) of the head
    against one entry's regions (``other``, there when ``valid``)."""
    full = [head.ww & other.ww & _overlaps(head.ws, head.we, other.ws, other.we)]
    war = []
    for k in range(READ_SLOTS):
        rs, re_, rv = (getattr(other, f"r{k}{x}") for x in "sev")
        war.append(head.ww & rv & _overlaps(head.ws, head.we, rs, re_))
        hs, he, hv = (getattr(head, f"r{k}{x}") for x in "sev")
        full.append(hv & other.ww & _overlaps(hs, he, other.ws, other.we))
    return Cat(*full) & valid.replicate(len(full)), Cat(*war) & valid.replicate(len(war))


def _remap(vec: Value, shift: list[Value], release: list[Value]) -> Value:
    """A vector of columns after this cycle's moves: engine f's columns shift down by one when f
    issues (``shift[f]``: its head becomes its running instruction), else its running column
    clears when that instruction ends (``release[f]``, its last cycle). Both are registers.
    ``vec`` has COLUMNS bits, or COLUMNS groups of len(vec) // COLUMNS bits."""
    width = len(vec) // COLUMNS
    slots = spec.STATION_SLOTS
    out = []
    for f in range(len(ENGINES)):
        for s in range(slots):
            here = vec[column(f, s) * width:(column(f, s) + 1) * width]
            above = (vec[column(f, s + 1) * width:(column(f, s + 1) + 1) * width] if s + 1 < slots
                     else Const(0, width))
            kept = Mux(release[f], 0, here) if s == 0 else here
            out.append(Mux(shift[f], above, kept))
    return Cat(*out)


def is_fence(opcode_value: Value) -> Value:
    """Whether an opcode is a fence's (``sim.spec.InstrSpec.fence``: GATHER)."""
    fenced = [ins for ins in spec.INSTRUCTIONS if ins.fence]
    assert all(ins.counter == spec.SHARED_WRITER for ins in fenced), "a fence runs on the DMA"
    return any_of(opcode_value == opcode(ins.name) for ins in fenced)


def station_execute(m: Module, ctl, busy: Value, start: Value, stop: Value,
                    q: SimpleNamespace, fault: Value) -> SimpleNamespace:
    """Build the OVERLAP = 2 execute stage of ``ctl`` (a :class:`hw.control.Control`); ``fault``
    is the register of a unit's data fault (``hw.control.data_fault``: BAD_INDEX).
    Returns stopping, stop_code and stop_pc (for the front end and the host status)."""
    p = ctl.params
    n_eng = len(ENGINES)
    waiting_slots = spec.STATION_SLOTS - 1
    lbits = len(ctl.checker.out_latency)
    pcw = len(q.head.pc)
    w_layout, r_layout = _layouts(p, pcw)
    s = SimpleNamespace(
        p=p, lbits=lbits,
        w=[[Signal(w_layout, name=f"w{e}_{k}") for k in range(waiting_slots)] for e in ENGINES],
        wv=[Signal(waiting_slots, name=f"wv_{e}") for e in ENGINES],      # a prefix of ones
        r=[Signal(r_layout, name=f"r_{e}") for e in ENGINES],
        left=[Signal(lbits, name=f"left_{e}") for e in ENGINES],
        rdl=[Signal(lbits, name=f"rdl_{e}") for e in ENGINES],            # read cycles left
        free=[Signal(init=1, name=f"free_{e}") for e in ENGINES],
        active=[Signal(name=f"active_{e}") for e in ENGINES],
        issue=Signal(n_eng, name="issue_eng"),
        stopping=Signal(name="stopping"),
        taking_stop=Signal(name="taking_stop"),   # a stop is taken this cycle (stopping rises)
        all_done_next=Signal(name="all_done_next"),
        dma_held=Signal(name="dma_held"),
        # active & free, a register of its own: the running instruction's last cycle
        release=[Signal(name=f"release_{e}") for e in ENGINES],
        head_next=[None] * n_eng,          # each queue's head in the next cycle (_queue)
        # a countdown at most 1: an instruction dispatched the cycle after next finds it ended
        # (has read); see _engines
        ends_soon=[Signal(init=1, name=f"ends_soon_{e}") for e in ENGINES],
        read_soon=[Signal(init=1, name=f"read_soon_{e}") for e in ENGINES],
        fault=fault,
    )
    s.shift = [s.issue[k] for k in range(n_eng)]
    dma = ENGINES.index(spec.SHARED_WRITER)
    s.dma_fence = is_fence(s.w[dma][0].opcode)      # the DMA's head is a fence (a GATHER)
    # every queue empty and every engine free in the next cycle (a stop's condition), from this
    # cycle's registers and issue (the free register's next value, hw/overlap.py's rule)
    free_next = [Mux(s.issue[k], 0, Mux(s.dma_held if k == dma else 0, s.free[k],
                                         Mux(s.left[k] != 0, s.left[k] == 1, 1)))
                 for k in range(n_eng)]
    empty_next = [~Mux(s.issue[k], s.wv[k][1] if waiting_slots > 1 else 0, s.wv[k][0])
                  for k in range(n_eng)]
    m.d.comb += s.all_done_next.eq(Cat(*(empty_next[k] & free_next[k] for k in range(n_eng))).all())
    s.all_done = Cat(*(~s.wv[k][0] & s.free[k] for k in range(n_eng))).all()   # in this cycle
    enter = _enter(m, s, ctl, busy, start, stop, q)
    _engines(m, s, ctl, start)
    _dispatch(m, s, ctl, busy, start)
    ex = _stop_and_watchdog(m, s, ctl, busy, start, stop, q, enter)
    _counters(m, s, ctl, busy, start)
    last = Cat(*s.release)
    m.d.comb += [ctl.eng_last.eq(last), ctl.ex_last.eq(last.any())]
    return ex


def _enter(m: Module, s, ctl, busy, start, stop, q) -> SimpleNamespace:
    """The front end's head into its engine's queue (see the module docstring). Returns the
    signals the stop needs: ready (settled, the machine running) and consume."""
    n_eng = len(ENGINES)
    head = q.head
    waiting_slots = spec.STATION_SLOTS - 1
    # stage 1: each slot of the front end's queue against every entry's regions (both slots, so
    # that no multiplexer of the head sits before the comparators)
    n_full = n_war = None
    pairs = []
    for sl, slot in enumerate(q.slots):
        pairs_now_full, pairs_now_war = [], []
        for f in range(n_eng):
            entries = [(s.r[f], s.active[f])] + [(s.w[f][k], s.wv[f][k]) for k in range(waiting_slots)]
            for other, valid in entries:
                full, war = _pairs(slot, other, valid)
                pairs_now_full.append(full)
                pairs_now_war.append(war)
        n_full, n_war = len(pairs_now_full[0]), len(pairs_now_war[0])
        pairs_full = Signal(COLUMNS * n_full, name=f"pairs_full{sl}")
        pairs_war = Signal(COLUMNS * n_war, name=f"pairs_war{sl}")
        m.d.sync += [pairs_full.eq(_remap(Cat(*pairs_now_full), s.shift, s.release)),
                     pairs_war.eq(_remap(Cat(*pairs_now_war), s.shift, s.release))]
        pairs.append((pairs_full, pairs_war))
    # stage 2: the head's pairs reduced to the two vectors, its own engine left out
    assert len(q.slots) == 2, "the head is slot rd_slot of two"
    pairs_full = Mux(q.rd_slot, pairs[1][0], pairs[0][0])
    pairs_war = Mux(q.rd_slot, pairs[1][1], pairs[0][1])
    own = Cat(*(head.cls[f].replicate(spec.STATION_SLOTS) for f in range(n_eng)))
    dep_full = Signal(COLUMNS, name="dep_full")
    dep_war = Signal(COLUMNS, name="dep_war")
    reduced_full = Cat(*(pairs_full[c * n_full:(c + 1) * n_full].any() for c in range(COLUMNS))) & ~own
    reduced_war = Cat(*(pairs_war[c * n_war:(c + 1) * n_war].any() for c in range(COLUMNS))) & ~own
    m.d.sync += [dep_full.eq(_remap(reduced_full, s.shift, s.release)),
                 dep_war.eq(_remap(reduced_war, s.shift, s.release))]

    # the decision to take the head is made a cycle ahead and registered (``take_q``, one per
    # engine, and ``stop_q`` for a stop), from what the registers will hold: the head does not
    # change unless taken (then ``settled`` falls), room only grows by this cycle's issue
    ready = Signal(name="enter_ready")
    settled = Signal(name="settled")
    settled1 = Signal()
    consume = Signal(name="enter")
    take_q = Signal(n_eng, name="take_q")
    stop_q = Signal(name="stop_q")
    # an issue shifts e's queue down: its last waiting entry is then free
    room_next = [s.issue[f] | ~s.wv[f][waiting_slots - 1] for f in range(n_eng)]
    settled_next = settled1 & ~consume
    fenced = _fence(m, s, start, consume & ~head.stop & is_fence(head.opcode))
    m.d.comb += [
        ready.eq(busy & ~s.stopping & settled),
        consume.eq(busy & ~s.stopping & (take_q.any() | stop_q)),
        q.consume.eq(consume),
    ]
    with m.If(start | stop):
        m.d.sync += [settled1.eq(0), settled.eq(0), take_q.eq(0), stop_q.eq(0)]
    with m.Else():
        m.d.sync += [settled1.eq((q.count != 0) & ~consume), settled.eq(settled_next),
                     take_q.eq(Cat(*(settled_next & ~head.stop & head.cls[f] & room_next[f] & ~fenced
                                     for f in range(n_eng)))),
                     stop_q.eq(settled_next & head.stop & s.all_done_next & ~s.fault)]

    entry = Signal(s.w[0][0].shape())
    m.d.comb += [
        entry.opcode.eq(head.opcode), entry.fields.eq(head.fields), entry.pc.eq(head.pc),
        *(getattr(entry, name).eq(getattr(head, name)) for name in issue_load_widths(s.p)),
        entry.rd.eq(head.rd), entry.wr.eq(head.wr),
        *(getattr(entry, name).eq(getattr(head, name)) for name in REGION_NAMES),
        entry.full.eq(_remap(dep_full, s.shift, s.release)),
        entry.war.eq(_remap(dep_war, s.shift, s.release)),
        # every instruction waiting in the station entered before this one
        entry.age.eq(_remap(Cat(*(Cat(Const(0, 1), s.wv[f]) for f in range(n_eng))) & ~own,
                            s.shift, s.release)),
    ]
    for f in range(n_eng):
        _queue(m, s, f, take_q[f], busy & ~s.stopping, entry, start)
    return SimpleNamespace(ready=ready, consume=consume)


def _fence(m: Module, s, start: Value, fence_enters: Value) -> Value:
    """Whether the front end's head may not be taken into the station in the cycle after next
    (a decision made in this cycle, ``take_q``): a fence (a GATHER) entered and is still
    waiting, or runs and does not end by then (its countdown is not at most 1: ``ends_soon``),
    or a unit's data fault is pending (the machine stops once what entered has run). So an
    instruction after a fence g enters at q >= end(g) (``sim.spec.Decoupled``)."""
    dma = ENGINES.index(spec.SHARED_WRITER)
    waiting = Signal(name="fence_waiting")     # a fence entered, not yet issued
    running = Signal(name="fence_running")     # the DMA's instruction is a fence
    fence_issued = s.issue[dma] & s.dma_fence
    with m.If(start):
        m.d.sync += [waiting.eq(0), running.eq(0)]
    with m.Else():
        with m.If(fence_enters):
            m.d.sync += waiting.eq(1)
        with m.Elif(fence_issued):
            m.d.sync += waiting.eq(0)
        with m.If(s.issue[dma]):
            m.d.sync += running.eq(s.dma_fence)
    return waiting | (running & ~s.ends_soon[dma]) | s.fault


def _queue(m: Module, s, f: int, take: Value, running: Value, entry: Value, start: Value) -> None:
    """Engine f's waiting entries: shifted down by one when W_f[0] issues, the entering one
    written after the last valid (one lower when they shift), every vector remapped. ``take``
    (a register) writes the entry's words; it is valid only when ``running`` too (the machine
    busy and not stopping). An entry written while it is not lands in a slot left invalid, whose
    words nothing reads, so the wide slots' enables hang on registers and the queue's valid bits
    alone, not on ``busy``'s fan-out."""
    slots = s.w[f]
    valid = s.wv[f]
    n = len(slots)
    shift = s.shift[f]
    for k in range(n):
        above = slots[k + 1] if k + 1 < n else None
        valid_above = valid[k + 1] if k + 1 < n else Const(0, 1)
        valid_below = Const(1, 1) if k == 0 else valid[k - 1]
        lands_here = take & Mux(shift, valid[k] & ~valid_above, ~valid[k] & valid_below)
        valid_here = lands_here & running
        kept = Mux(shift, above.as_value() if above is not None else Const(0, len(slots[k].as_value())),
                   slots[k].as_value())
        nxt = Signal(slots[k].shape(), name=f"w{ENGINES[f]}_{k}_next")     # the slot's next value
        m.d.comb += [
            nxt.eq(Mux(lands_here, entry.as_value(), kept)),
            nxt.full.eq(Mux(lands_here, entry.full, _remap(Value.cast(kept)[_slice(slots[k], "full")],
                                                           s.shift, s.release))),
            nxt.war.eq(Mux(lands_here, entry.war, _remap(Value.cast(kept)[_slice(slots[k], "war")],
                                                         s.shift, s.release))),
            nxt.age.eq(Mux(lands_here, entry.age, _remap(Value.cast(kept)[_slice(slots[k], "age")],
                                                         s.shift, s.release))),
        ]
        m.d.sync += slots[k].eq(nxt)
        if k == 0:
            s.head_next[f] = nxt
        with m.If(start):
            m.d.sync += valid[k].eq(0)
        with m.Else():
            m.d.sync += valid[k].eq(valid_here | Mux(shift, valid_above, valid[k]))


def _slice(view, name: str) -> slice:
    layout = view.shape()
    field = layout[name]
    return slice(field.offset, field.offset + field.width)


def _dispatch(m: Module, s, ctl, busy: Value, start: Value) -> None:
    """The issue, decided a cycle ahead and registered (``issue_eng``): in cycle x each engine's
    readiness for an issue in x + 1 is computed from registers (its head is there, its
    countdown ends by then, every dependence is met, the ports allow it), the earliest ready in
    program order (the heads' age bits) is chosen, and the choice is registered, unless an
    instruction is issued in x (then the flags are stale: DISPATCH_CYCLES = 2) or a stop is
    taken. The register drives every shift enable of the station and each unit's dispatch
    registers with no logic before the fan-out."""
    n_eng = len(ENGINES)
    dma = ENGINES.index(spec.SHARED_WRITER)
    heads = [s.w[e][0] for e in range(n_eng)]
    nexts = s.head_next
    ends_soon, read_soon = s.ends_soon, s.read_soon
    s.base_q = Signal(n_eng, name="based_q")
    s.depok_q = Signal(n_eng, name="deps_ok_q")
    older_q = [Signal(n_eng, name=f"older_q_{e}") for e in ENGINES]
    # of the heads, each a register computed from their next values (the same every cycle as
    # from the heads themselves): which heads entered first (the age bits: instructions enter in
    # program order, so no pc comparison), a dependence on a waiting instruction
    older = [Signal(n_eng, name=f"older_{e}") for e in ENGINES]
    on_waiting = [Signal(name=f"on_waiting_{e}") for e in ENGINES]
    ready = []
    for e, h in enumerate(heads):
        m.d.sync += [
            older[e].eq(Cat(*(~nexts[e].age[column(f, 1)] if f != e else Const(1, 1) for f in range(n_eng)))),
            on_waiting[e].eq(waits_on_waiting(nexts[e])),
        ]
        deps_ok = deps_met(h, e, ends_soon, read_soon, on_waiting[e])
        rd_ok = ~h.rd | s.rd_free
        # the write port's countdown against the head's window: one carry chain from registers
        # (from the next values it was 13 levels: the issued latency, the queues' moves)
        # (an LD shares the port and never waits on it; a GATHER holds it)
        wr_ok = ~h.wr | (~s.dma_fence if e == dma else 0) | (s.wr_left <= h.wfrom1)
        there = s.wv[e][0] & ends_soon[e]
        ready.append(there & deps_ok & rd_ok & wr_ok)
        m.d.sync += [s.base_q[e].eq(there & ~s.issue[e]), s.depok_q[e].eq(deps_ok), older_q[e].eq(older[e])]
    first = [Cat(*(~ready[f] | older[e][f] for f in range(n_eng))).all() for e in range(n_eng)]
    # busy and not stopping in the next cycle, and nothing issued in this one
    go = busy & ~s.stopping & ~s.taking_stop & ~s.issue.any()
    with m.If(start):
        m.d.sync += s.issue.eq(0)
    with m.Else():
        m.d.sync += s.issue.eq(Cat(*(go & ready[e] & first[e] for e in range(n_eng))))
    s.older_q = older_q
    m.d.comb += [
        ctl.issue.eq(s.issue.any()),
        ctl.issue_opcode.eq(select(list(s.issue), [h.opcode for h in heads])),
        ctl.issue_fields.eq(select(list(s.issue), [h.fields for h in heads])),
        ctl.issue_eng.eq(s.issue),
        *(ctl.eng_opcode[e].eq(heads[e].opcode) for e in range(n_eng)),
        *(ctl.eng_fields[e].eq(heads[e].fields) for e in range(n_eng)),
    ]


def waits_on_waiting(entry) -> Value:
    """Whether a waiting entry depends on an instruction that is itself still waiting."""
    waiting_columns = Cat(*(Const(int(c % spec.STATION_SLOTS != 0), 1) for c in range(COLUMNS)))
    return ((entry.full | entry.war) & waiting_columns).any()


def deps_met(head, e: int, ends_soon: list[Value], read_soon: list[Value], on_waiting: Value) -> Value:
    """Whether engine e's head (a waiting entry) may be dispatched after the next cycle as far as
    its dependences go: none on a waiting instruction (``on_waiting``, :func:`waits_on_waiting`
    of the head: it has not even started), and each on a running one met: it ends by then
    (``ends_soon``), or, a write after read, it has read (``read_soon``)."""
    on_running = [(~head.full[column(f, 0)] | ends_soon[f]) & (~head.war[column(f, 0)] | read_soon[f])
                  for f in range(len(ENGINES)) if f != e]
    return ~on_waiting & Cat(*on_running).all()


def _engines(m: Module, s, ctl, start: Value) -> None:
    """Each engine's countdown (as at OVERLAP = 1), its running entry and read countdown, the
    ports' countdowns and the DMA's share of the write port. Beside each countdown a register
    says whether it is at most 1 (``ends_soon``, ``read_soon``, ``rd_free``): an instruction
    dispatched the cycle after next finds it ended (has read, the read port free)."""
    n_eng = len(ENGINES)
    dma = ENGINES.index(spec.SHARED_WRITER)
    heads = [s.w[e][0] for e in range(n_eng)]
    lbits = s.lbits
    assert spec.SPAD_READ_LATENCY + 1 > spec.LD_OVERHEAD, \
        "dma_hold: a writer issued now must write after the LD beat read next cycle is written"
    assert min(spec.latency(ins, {f.name: f.legal_range(s.p)[0] for f in ins.fields}, s.p)
               for ins in spec.instructions(s.p) if ins.counter is not None) >= 3, \
        "ends_soon: an instruction issued now ends two cycles after its dispatch at the earliest"
    wtop = [Signal(lbits + 2, name=f"wtop_{e}") for e in ENGINES]
    ld_beats = Signal(lbits, name="ld_beats")   # beats of the LD in flight the DMA has yet to read
    dma_held = s.dma_held
    for k, h in enumerate(heads):
        with m.If(start):
            m.d.sync += [s.left[k].eq(0), s.free[k].eq(1), s.active[k].eq(0), s.ends_soon[k].eq(1),
                         s.release[k].eq(0)]
        with m.Elif(s.issue[k]):
            m.d.sync += [s.left[k].eq(h.left), s.free[k].eq(0), s.active[k].eq(1), s.ends_soon[k].eq(0),
                         s.release[k].eq(0),
                         *(getattr(s.r[k], name).eq(getattr(h, name)) for name in REGION_NAMES)]
            if k != dma:
                m.d.sync += wtop[k].eq(h.wtop)
        if k == dma:
            with m.Elif(dma_held):
                m.d.sync += s.left[k].eq(s.left[k])       # an LD beat waited: the LD ends a cycle later
        with m.Elif(s.left[k] != 0):
            m.d.sync += [s.left[k].eq(s.left[k] - 1), s.free[k].eq(s.left[k] == 1),
                         s.ends_soon[k].eq(s.left[k] <= 2), s.release[k].eq(s.active[k] & (s.left[k] == 1))]
        with m.Else():
            m.d.sync += [s.free[k].eq(1), s.active[k].eq(0), s.ends_soon[k].eq(1), s.release[k].eq(0)]
        with m.If(start):
            m.d.sync += [s.rdl[k].eq(0), s.read_soon[k].eq(1)]
        with m.Elif(s.issue[k]):
            m.d.sync += [s.rdl[k].eq(h.rdl), s.read_soon[k].eq(h.short)]
        with m.Elif(s.rdl[k] != 0):
            m.d.sync += [s.rdl[k].eq(s.rdl[k] - 1), s.read_soon[k].eq(s.rdl[k] <= 2)]

    issue = list(s.issue)
    issued = SimpleNamespace(**{name: select(issue, [getattr(h, name) for h in heads])
                                for name in ("left", "rdl", "short", "rd", "wr")})
    # an LD shares the write port: it neither holds nor waits (a GATHER holds it)
    port_wr = issued.wr & ~(s.issue[dma] & ~s.dma_fence)
    m.d.comb += dma_held.eq((ld_beats != 0) & ctl.dma_hold)
    with m.If(start):
        m.d.sync += ld_beats.eq(0)
    with m.Elif(s.issue[dma]):                # an LD's beats are its writes (an ST has none)
        m.d.sync += ld_beats.eq(Mux(heads[dma].wr & ~s.dma_fence, heads[dma].beats, 0))
    with m.Elif((ld_beats != 0) & ~ctl.dma_hold):
        m.d.sync += ld_beats.eq(ld_beats - 1)
    any_issue = s.issue.any()
    s.rd_left = Signal(lbits, name="rd_left")
    s.wr_left = Signal(lbits, name="wr_left")
    s.rd_free = Signal(init=1, name="rd_free")
    reading = any_issue & issued.rd
    with m.If(start):
        m.d.sync += [s.rd_left.eq(0), s.wr_left.eq(0), ctl.dma_hold.eq(0), s.rd_free.eq(1)]
    with m.Else():
        m.d.sync += [
            s.rd_left.eq(Mux(reading, issued.rdl, Mux(s.rd_left != 0, s.rd_left - 1, 0))),
            s.rd_free.eq(Mux(reading, issued.short, s.rd_left <= 2)),
            s.wr_left.eq(Mux(any_issue & port_wr, issued.left, Mux(s.wr_left != 0, s.wr_left - 1, 0))),
            ctl.dma_hold.eq(any_of((s.left[k] >= spec.LD_OVERHEAD + 1) & (s.left[k] <= wtop[k])
                                   for k in range(n_eng) if k != dma)),
        ]


def _stop_and_watchdog(m: Module, s, ctl, busy: Value, start: Value, stop: Value, q,
                       enter: SimpleNamespace) -> SimpleNamespace:
    """The stop (taken when settled, every queue empty and every engine free), a data fault's
    (BAD_INDEX, when every queue is empty and every engine free) and the watchdog's (STALL).
    Returns stopping, stop_code and stop_pc."""
    n_eng = len(ENGINES)
    head = q.head
    stop_left = Signal(range(spec.STOP_CYCLES + 1))
    stop_code = Signal(spec.ERROR_CODE_BITS)
    stop_pc = Signal(len(head.pc))
    quiet = Signal(name="quiet")
    watchdog = Signal(range(spec.WATCHDOG_CYCLES), name="watchdog")
    stall = Signal(name="stall")
    m.d.comb += [
        quiet.eq(busy & ~s.stopping & ~Cat(*s.active).any() & ~s.issue.any() & ~enter.consume),
        stall.eq(quiet & (watchdog == spec.WATCHDOG_CYCLES - 1)),
    ]
    with m.If(start | ~quiet):
        m.d.sync += watchdog.eq(0)
    with m.Else():
        m.d.sync += watchdog.eq(watchdog + 1)
    # the earliest waiting instruction: a head older than every other head there is
    oldest = [s.wv[e][0] & Cat(*(~s.wv[f][0] | s.older_q[e][f] for f in range(n_eng) if f != e)).all()
              for e in range(n_eng)]
    waiting_pc = select(oldest, [s.w[e][0].pc for e in range(n_eng)])
    stall_pc = Mux(Cat(*oldest).any(), waiting_pc, head.pc)
    # a data fault (BAD_INDEX, a GATHER's row number): the stop once what entered has run (nothing
    # after the GATHER entered: _fence), with the GATHER's pc
    dma = ENGINES.index(spec.SHARED_WRITER)
    fence_pc = Signal(len(head.pc), name="fence_pc")
    fault_stop = Signal(name="fault_stop")
    with m.If(s.issue[dma] & s.dma_fence):
        m.d.sync += fence_pc.eq(s.w[dma][0].pc)
    m.d.comb += [
        fault_stop.eq(busy & ~s.stopping & s.fault & s.all_done),
        s.taking_stop.eq((enter.consume & head.stop) | stall | fault_stop),
    ]
    with m.If(start):
        m.d.sync += s.stopping.eq(0)
    with m.Elif(s.taking_stop):
        m.d.sync += [s.stopping.eq(1), stop_left.eq(spec.STOP_CYCLES - 1),
                     stop_code.eq(Mux(stall, ErrorCode.STALL,
                                      Mux(fault_stop, ErrorCode.BAD_INDEX, head.code))),
                     stop_pc.eq(Mux(stall, stall_pc, Mux(fault_stop, fence_pc, head.pc)))]
    with m.Elif(stop):
        m.d.sync += s.stopping.eq(0)
    with m.If(s.stopping & (stop_left != 0)):
        m.d.sync += stop_left.eq(stop_left - 1)
    m.d.comb += stop.eq(busy & s.stopping & (stop_left == 0))
    return SimpleNamespace(stopping=s.stopping, stop_code=stop_code, stop_pc=stop_pc)


def _counters(m: Module, s, ctl, busy: Value, start: Value) -> None:
    """cycles; each engine's busy cycles; hazard and port: the heads that wait, each cycle."""
    counters = {name: getattr(ctl, f"count_{name}") for name in spec.counters(s.p)}
    n_eng = len(ENGINES)
    on_hazard = s.base_q & ~s.depok_q
    on_rest = s.base_q & s.depok_q & ~s.issue
    with m.If(start):
        m.d.sync += [counters["cycles"].eq(1)] + [c.eq(0) for n, c in counters.items() if n != "cycles"]
    with m.Elif(busy):
        m.d.sync += counters["cycles"].eq(counters["cycles"] + 1)
        for k, name in enumerate(ENGINES):
            with m.If(s.active[k]):
                m.d.sync += counters[name].eq(counters[name] + 1)
        m.d.sync += [
            counters["hazard"].eq(counters["hazard"] + sum(on_hazard[k] for k in range(n_eng))),
            counters["port"].eq(counters["port"] + sum(on_rest[k] for k in range(n_eng))),
        ]
