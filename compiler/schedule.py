"""Instruction scheduling for the machine whose engines run side by side (``OVERLAP = 1``).

GA-2 with OVERLAP = 1 issues in program order, but an instruction may start while earlier ones
on other engines are still running, unless one of them is a hazard to it (GA2.md section 7,
:class:`sim.spec.Issue`). So the order the compiler emits decides how much the engines
overlap: emission writes each step's instructions together (load the weights, multiply,
requantize, store), and the DMA waits for the MXU and the MXU for the DMA.

:func:`schedule` reorders a program by list scheduling: it keeps the instructions that no
earlier unscheduled instruction conflicts with (read after write, write after read, write
after write, on the spec's scratchpad and external regions: the machine's own hazard rule)
as candidates, places each candidate on a copy of the issue rule, and takes the one that would
be dispatched first; of several that tie, the one whose greedy continuation (HORIZON more
steps) ends soonest, then the earlier in program order. Any order the dependences allow
means what the program means on the serial machine, and the machine checks the hazards again,
so the schedule changes cycles only. An instruction moves ahead of at most ``window`` earlier
ones (the dependences are computed inside the window: O(n * window)). The result is kept only
when the issue rule's ``cycles`` for it are fewer than for the order given.

Before the emitted program is ordered, every LD longer than :data:`LOAD_PIECE` words is cut
into LDs of that many (:func:`split_loads`: the same words, moved by the same beats): an
instruction that reads part of a long LD's words waits for the whole LD (the hazard rule
counts regions), so pieces let each MM wait for the piece it reads only
(:func:`reorder_emission`). The LDs' beats share the scratchpad's write port with the other
engines' writes cycle by cycle (GA2.md section 7), so a piece runs beside the MMs whatever
their write windows; a weight larger than a piece streams in T-wide panels, each in a place
of its own, so that an MM reads one panel (compiler/streaming.py): decode's loads then run
ahead beside its MMs.

Seed 004 (overlapping the DMA and the compute engines, double buffering); the list scheduling
of a basic block (Muchnick, *Advanced Compiler Design and Implementation*, section 17.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sim import spec
from sim.asm import Instruction, build
from sim.spec import INT8_PER_WORD, Mem, Params

if TYPE_CHECKING:
    from .allocator import AllocEvent
    from .emit import Emission

WINDOW = 48
"""How many earlier instructions one may move ahead of (the scheduler's lookahead)."""
HORIZON = 8
"""Candidates that would be dispatched in the same cycle are compared by the cycle in which
everything would end after this many more greedy steps."""

LOAD_PIECE = 256
"""The longest LD the scheduler leaves whole, in scratchpad words (64 beats at LANES = 4); a
weight larger than this streams in panels at OVERLAP = 1 (compiler/streaming.py). With the
DMA sharing the write port beat by beat, pieces of 64, 128, 256, 512, 1,024 words (2026-12-05,
OVERLAP = 1): decode (docs/studies.md study 2, 1 token) 9,864, 9,704, 9,236, 9,237, 9,303
cycles; 8 tokens 20,649, 20,709, 19,791, 19,916, 20,157; the digits MLP at batch 8 1,901,
1,901, 1,816, 1,881, 1,881; seeds 100-111 4,474, 4,457, 4,464, 4,464, 4,464; the attention +
FFN block 2,663, 2,608, 2,789, 2,990, 2,990. (Before, with an LD holding the port: the digits
MLP at batch 1, 24,972 cycles with the loads whole; pieces of 64, 128, 256: 25,614, 22,164,
17,112.)"""

Access = tuple[int, int, bool, bool]


@dataclass(frozen=True)
class Scheduled:
    """A program after :func:`schedule`.

    Attributes:
        code: the instructions in their new order, HALT last.
        order: ``code[k]`` is instruction ``order[k]`` of the program given.
        cycles: the ``cycles`` counter of the new order (the issue rule's).
        cycles_before: that of the order given.
    """

    code: list[Instruction]
    order: list[int]
    cycles: int
    cycles_before: int


def split_loads(code: Sequence[Instruction], params: Params,
                piece: int = LOAD_PIECE) -> tuple[list[Instruction], list[int]]:
    """Every LD longer than ``piece`` words cut into LDs of ``piece`` words (the last one
    shorter), in order; a packed LD (fmt = 1) reads a quarter of the words (``piece`` is a
    multiple of four). Returns the instructions and, for each, the index of the one it came from."""
    assert piece % INT8_PER_WORD == 0
    out, parent = [], []
    for k, ins in enumerate(code):
        if ins.op != "LD" or ins.len <= piece:
            out.append(ins)
            parent.append(k)
            continue
        fmt = ins.spec.complete(ins.fields)["fmt"]
        for at in range(0, ins.len, piece):
            src = ins.src + (at // INT8_PER_WORD if fmt else at)
            out.append(build("LD", params=params, dst=ins.dst + at, src=src, len=min(piece, ins.len - at),
                             fmt=fmt))
            parent.append(k)
    return out, parent


def dependencies(code: Sequence[Instruction]) -> list[set[int]]:
    """For each instruction, the earlier ones it must stay after (:func:`depends`; every pair:
    O(n^2), for tests and small programs)."""
    accesses = [(spec.spad_accesses(i.spec, i.fields), ext_accesses(i)) for i in code]
    return [{j for j in range(i) if depends(accesses[i], accesses[j])} for i in range(len(code))]


def ext_accesses(ins: Instruction) -> list[Access]:
    """The external-memory regions of an instruction (its spec's region formulas)."""
    f = ins.spec.complete(ins.fields)
    return [(f[r.start], f[r.start] + r.extent(f), not r.writes, r.writes)
            for r in ins.spec.regions if r.mem is Mem.EXT]


def depends(later: tuple[list[Access], list[Access]], earlier: tuple[list[Access], list[Access]]) -> bool:
    """Whether an instruction must stay after an earlier one: their scratchpad regions, or their
    external-memory regions, conflict (:func:`sim.spec.conflict`: read after write, write after
    read, write after write). Each argument is (scratchpad accesses, external accesses)."""
    return spec.conflict(earlier[0], later[0]) or spec.conflict(earlier[1], later[1])


def better(after: int, before: int) -> bool:
    """Whether the scheduled order (``after`` cycles) replaces the order given (``before``)."""
    return after < before


def cycles_of(code: Sequence[Instruction], params: Params) -> int:
    """The ``cycles`` counter of a legal program ending in HALT, by the machine's issue rule
    alone (``sim.spec.issue_rule``; at OVERLAP = 2 the list scheduler below still orders by the
    rule of OVERLAP = 1, today's, and keeps an order only when this says it saves cycles)."""
    issue = spec.issue_rule(params)
    for pc, ins in enumerate(code):
        if ins.spec.counter is None:
            return issue.stop() + spec.STOP_CYCLES
        issue.place(pc, ins.spec, ins.fields)
    raise ValueError("the program has no HALT")


def schedule(code: Sequence[Instruction], params: Params, window: int = WINDOW) -> Scheduled:
    """Reorder ``code`` (legal, HALT last, as compile_graph emits it) for the machine ``params``.

    On the serial machine (OVERLAP = 0) the order is kept: every order costs the same there.

    Raises:
        ValueError: the program does not end in its only HALT, or ``window`` < 1.
    """
    if window < 1:
        raise ValueError(f"schedule: window = {window} must be at least 1")
    body = list(code[:-1])
    if not code or code[-1].spec.counter is not None or any(i.spec.counter is None for i in body):
        raise ValueError("schedule: the program must end in its only HALT")
    before = cycles_of(code, params)
    if not params.OVERLAP or len(body) < 2:
        return Scheduled(list(code), list(range(len(code))), before, before)
    accesses = [(spec.spad_accesses(i.spec, i.fields), ext_accesses(i)) for i in body]
    specs, fields = [i.spec for i in body], [i.fields for i in body]
    engines = [i.spec.counter for i in body]
    known = [spec.costs(i.spec, i.fields, params) for i in body]     # placed many times each
    # j is in the window only while floor > j - window, and everything below floor is done:
    # the earlier instructions j can wait on are those of the window's width before it
    waits_on = [[i for i in range(max(0, j - window + 1), j) if depends(accesses[j], accesses[i])]
                for j in range(len(body))]
    dependents: list[list[int]] = [[] for _ in body]
    for j, earlier in enumerate(waits_on):
        for i in earlier:
            dependents[i].append(j)
    pending = [len(earlier) for earlier in waits_on]     # of waits_on[j], those not done
    done = [False] * len(body)
    floor = 0
    issue = spec.Issue(params)
    order: list[int] = []

    def mark(j: int, value: bool) -> None:
        done[j] = value
        for k in dependents[j]:
            pending[k] += -1 if value else 1

    def ready() -> list[int]:
        return [j for j in range(floor, min(floor + window, len(body))) if not done[j] and not pending[j]]

    def start(state: spec.Issue, j: int) -> int:
        return state.peek(specs[j], fields[j], known[j])

    def placed(state: spec.Issue, j: int) -> spec.Issue:
        twin = state.copy()
        twin.place(len(order), specs[j], fields[j], known[j])
        return twin

    def first_to_start(state: spec.Issue, options: list[int]) -> int:
        """The option dispatched first on ``state`` (ties: the first in program order); one
        whose floor (spec.Issue.floor) is no earlier than the best start so far is not peeked."""
        best, best_start = -1, None
        floors = {e: state.floor(e) for e in spec.ENGINES}
        for k in options:                       # in program order
            if best_start is not None and floors[engines[k]] >= best_start:
                continue
            s = start(state, k)
            if best_start is None or s < best_start:
                best, best_start = k, s
        return best

    def rollout(state: spec.Issue, j: int) -> int:
        """After j, HORIZON more greedy steps (earliest dispatch first): when all would end."""
        marked = [j]
        mark(j, True)
        for _ in range(HORIZON):
            options = ready()
            if not options:
                break
            k = first_to_start(state, options)
            state = placed(state, k)
            mark(k, True)
            marked.append(k)
        for k in marked:
            mark(k, False)
        return state.stop()

    while floor < len(body):
        candidates = ready()
        first = start(issue, first_to_start(issue, candidates))
        tied = [j for j in candidates if issue.floor(engines[j]) <= first and start(issue, j) == first]
        if len(tied) > 1:        # the one whose greedy continuation ends soonest
            tied.sort(key=lambda j: (rollout(placed(issue, j), j), j))
        j = tied[0]
        issue.place(len(order), specs[j], fields[j], known[j])
        order.append(j)
        mark(j, True)
        while floor < len(body) and done[floor]:
            floor += 1
    order.append(len(body))
    new = [code[k] for k in order]
    cycles = cycles_of(new, params)
    if not better(cycles, before):
        return Scheduled(list(code), list(range(len(code))), before, before)
    return Scheduled(new, order, cycles, before)


def _scheduled(code: Sequence[Instruction], params: Params) -> tuple[list[Instruction], list[int], Scheduled]:
    """(the pieces of ``code``'s long loads, each piece's instruction in ``code``, their schedule)."""
    pieces, parent = split_loads(code[:-1], params)
    if len(pieces) + 1 > params.IMEM_WORDS:
        pieces, parent = list(code[:-1]), list(range(len(code) - 1))
    pieces.append(code[-1])
    parent.append(len(code) - 1)
    return pieces, parent, schedule(pieces, params)


@dataclass(frozen=True)
class Reordering:
    """What :func:`reorder_emission` would do to ``code``, worked out once (a compilation that
    ranks emissions by their scheduled cycles keeps the winner's, so it is not scheduled twice).

    Attributes:
        code: the program it was worked out for (legal, HALT last).
        before: the ``cycles`` counter of ``code`` in its own order.
        parent: each piece's instruction in ``code`` (its long loads cut), None on a serial machine.
        result: the pieces' schedule (:func:`schedule`), None on a serial machine.
    """

    code: tuple[Instruction, ...]
    before: int
    parent: list[int] | None
    result: Scheduled | None

    @property
    def cycles(self) -> int:
        """The cycles of the order :func:`reorder_emission` leaves: the scheduled one's when that
        is :func:`better`, else the order given's."""
        r = self.result
        return r.cycles if r is not None and better(r.cycles, self.before) else self.before


def reordering(code: Sequence[Instruction], params: Params) -> Reordering:
    """:class:`Reordering` of ``code`` on the machine ``params`` (scheduled only when OVERLAP)."""
    before = cycles_of(code, params)
    if not params.OVERLAP:
        return Reordering(tuple(code), before, None, None)
    _pieces, parent, result = _scheduled(code, params)
    return Reordering(tuple(code), before, parent, result)


def scheduled_cycles(code: Sequence[Instruction], params: Params) -> int:
    """The cycles of ``code`` (legal, HALT last) in the order :func:`reorder_emission` leaves it:
    the scheduled order's when that is :func:`better`, else the order given's."""
    return reordering(code, params).cycles


def reorder_emission(emission: Emission, params: Params, events: list[AllocEvent] | None,
                     first: int = 0, known: Reordering | None = None) -> None:
    """Cut an emission's long loads (:func:`split_loads`, unless that overfills the instruction
    memory) and schedule it (:func:`schedule`), in place, when that takes fewer cycles than the
    emitted order. Its owners follow, and so do the allocator's events (``events[first:]`` are
    this emission's): a buffer allocated before emitted instruction p is allocated before the
    first instruction that comes of p, p+1, ... in the new order, and one freed after emitted
    instruction p-1 is freed after the last that comes of 0..p-1 (lifetimes can only grow).
    ``known``: a :class:`Reordering` already worked out, used when it is of this very code."""
    code = emission.code
    plan = known if known is not None and known.result is not None and known.code == tuple(code) \
        else reordering(code, params)
    parent, result = plan.parent, plan.result
    if result is None or not better(result.cycles, plan.before):
        return
    n, m = len(code), len(result.order)
    first_new = [m] * (n + 1)          # min new position of an instruction coming of emitted >= p
    last_new = [0] * (n + 1)           # 1 + max new position of one coming of emitted < p
    for new, piece in enumerate(result.order):
        old = parent[piece]
        first_new[old] = min(first_new[old], new)
        last_new[old + 1] = max(last_new[old + 1], new + 1)
    for p in range(n - 1, -1, -1):
        first_new[p] = min(first_new[p], first_new[p + 1])
    for p in range(1, n + 1):
        last_new[p] = max(last_new[p], last_new[p - 1])
    emission.code = result.code
    emission.owners = [emission.owners[parent[piece]] for piece in result.order]
    for k in range(first, len(events or ())):
        e = events[k]
        if e.pc is not None and e.pc <= n:
            events[k] = replace(e, pc=first_new[e.pc] if e.kind == "alloc" else last_new[e.pc])
