"""Lower bounds on the cycles of a GA-2 program on the machine whose engines overlap.

No order of a program's instructions that the issue rule allows (docs/GA2.md section 7,
``sim.spec.Issue``) runs in fewer cycles than any of these, each counted from the spec alone:

* **engine**: the busiest engine, the sum of the latencies of its instructions (one at a time);
* **read port**: the sum of the cycles each instruction holds the scratchpad's reads
  (``sim.spec.reads``: one reading instruction at a time);
* **issue**: OVERLAP_FRONTEND_CYCLES, then OVERLAP_ISSUE_CYCLES between dispatches, then the
  last instruction's latency at least;
* **dependences**: the longest chain of instructions each of which conflicts with the one
  before it (``sim.spec.conflict``: a read after write, a write after read or a write after
  write on the scratchpad; an instruction waits for the end of the one it conflicts with), the
  sum of their latencies, after the front end; the DMA's external regions chain the same way;
* **roofline**: the multiply-adds over T x T, the words the DMA moves over LANES (Williams,
  Waterman and Patterson, "Roofline", CACM 52(4), 2009; viz/roofline.py draws it).

Every bound ends with the stop (STOP_CYCLES). The program's own cycles against the largest of
them says how much of the gap a better schedule could close and how much needs another machine.

With the engines decoupled (OVERLAP = 2, ``sim.spec.Decoupled``) instruction i enters its
engine's queue at OVERLAP_FRONTEND_CYCLES + ENTER_CYCLES * i at the earliest and is dispatched
ENTER_DISPATCH_CYCLES later at the earliest, whatever waits before it; so there:

* **engine**: an engine's instructions one after another, each from its earliest dispatch;
* **read port**: the read windows, summed, from the earliest dispatch of the first that reads;
* **issue** (the front end's pace): the stop comes ENTER_CYCLES after the last instruction
  entered at the earliest, and after every instruction's end, its earliest dispatch plus its
  latency;
* **dependences**: the chains as above, but each instruction from its earliest dispatch, after
  the one before it on its engine (its queue's order), and a write after read only after the
  reader's read window (``sim.spec.war_only``); external regions are the DMA's, in order.

On both machines the longest chain is given instruction by instruction (``Bounds.path``) and
split by what each of its links waits for (``Bounds.chain``), which says what a faster machine
would have to change: its first instruction's earliest dispatch ("front end"); an instruction's
latency that the next one on the same engine waits for ("engine", OVERLAP = 2: the queue's
order, one instruction at a time); a latency that a conflicting instruction waits for
("hazard": a read after write or a write after write, whole regions); the read window a write
after read waits for ("read window", OVERLAP = 2); and the last instruction's latency with the
stop ("last").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim import spec
from sim.asm import Instruction
from sim.spec import Params

from .schedule import ext_accesses

CHAIN_LINKS = ("front end", "engine", "hazard", "read window", "last")
"""The kinds of link of the longest chain (the module docstring)."""


@dataclass(frozen=True)
class Bounds:
    """A program's lower bounds, in cycles (see the module docstring).

    Attributes:
        engine: the busiest engine's latencies, summed.
        read_port: the cycles instructions hold the scratchpad reads, summed.
        issue: the front end, the issue gaps and the last latency.
        dependences: the longest chain of conflicting instructions.
        mxu_roof: multiply-adds / (T x T), rounded up.
        dma_roof: DMA words / LANES, rounded up.
        chain: the cycles of the longest chain (``dependences``) by the kind of each link, in
            :data:`CHAIN_LINKS` order, the kinds with no cycles left out; their sum is
            ``dependences``. Empty for a program without instructions.
        path: the longest chain's instructions in program order, each as (its pc in ``code``,
            the kind of link by which it waits for the one before it: "front end" for the
            first). Empty for a program without instructions.
    """

    engine: int
    read_port: int
    issue: int
    dependences: int
    mxu_roof: int
    dma_roof: int
    chain: tuple[tuple[str, int], ...] = ()
    path: tuple[tuple[int, str], ...] = ()

    @property
    def best(self) -> int:
        """The largest bound: no schedule of these instructions is faster."""
        return max(self.engine, self.read_port, self.issue, self.dependences, self.mxu_roof, self.dma_roof)

    @property
    def limit(self) -> str:
        """The name of the largest bound (the first of equals, in the order of the fields)."""
        values = {"engine": self.engine, "read port": self.read_port, "issue": self.issue,
                  "dependences": self.dependences, "MXU roof": self.mxu_roof, "DMA roof": self.dma_roof}
        return max(values, key=values.__getitem__)


def bounds(code: Sequence[Instruction], params: Params) -> Bounds:
    """The lower bounds of a legal program (HALT and anything after it left out).

    Args:
        code: the instructions (``compiler.Program.code``).
        params: the machine: at OVERLAP = 2 the bounds of the decoupled machine's rule, else
            those of the overlapping machine (OVERLAP = 1). On the serial machine (OVERLAP =
            0) only the roofs are bounds: its cycles are exactly FRONTEND_CYCLES, the latencies
            and the stop, which can be fewer than OVERLAP = 1's bounds (its front end is shorter).

    Raises:
        ValueError: an instruction before the first HALT fails the spec's checks (names its pc).
    """
    halt = next((pc for pc, ins in enumerate(code) if ins.op == "HALT"), len(code))
    units = code[:halt]                      # an instruction's index is its pc
    stop = spec.STOP_CYCLES
    if not units:
        return Bounds(0, 0, spec.OVERLAP_FRONTEND_CYCLES + stop, 0, 0, 0)
    engines: dict[str, int] = {}
    lat, spad, ext = [], [], []
    read_port = macs = words = 0
    for k, ins in enumerate(units):          # k is the pc: nothing before the first HALT is left out
        if spec.check(ins.spec, ins.fields, params)[0] is not spec.ErrorCode.NONE:
            raise ValueError(f"bounds: instruction {k} ({ins.op}) is not legal on this machine")
        n = spec.latency(ins.spec, ins.fields, params)
        lat.append(n)
        engines[ins.spec.counter] = engines.get(ins.spec.counter, 0) + n
        read_port += spec.reads(ins.spec, ins.fields, params)
        spad.append(spec.spad_accesses(ins.spec, ins.fields))
        ext.append(ext_accesses(ins))
        if ins.spec.counter == "mxu":          # MM and MMRQ
            macs += ins.fields["M"] * ins.fields["K"] * ins.fields["N"]
        if ins.op in ("LD", "ST"):
            words += ins.fields["len"]
    front = spec.OVERLAP_FRONTEND_CYCLES
    roofs = {"mxu_roof": -(-macs // (params.T * params.T)), "dma_roof": -(-words // params.LANES)}
    if params.OVERLAP == 2:
        return _decoupled(units, lat, spad, params, roofs)
    start: list[int] = []
    link: list[tuple[str, int]] = []
    for k in range(len(units)):
        t, why = front, ("front end", -1)
        for j in range(k):
            if (spec.conflict(spad[k], spad[j]) or spec.conflict(ext[k], ext[j])) and start[j] + lat[j] > t:
                t, why = start[j] + lat[j], ("hazard", j)
        start.append(t)
        link.append(why)
    ends = max(start[k] + lat[k] for k in range(len(units)))
    issue = front + spec.OVERLAP_ISSUE_CYCLES * (len(units) - 1) + lat[-1]
    return Bounds(engine=max(engines.values()) + front + stop, read_port=read_port + front + stop,
                  issue=issue + stop, dependences=ends + stop, **roofs,
                  **_chain(start, lat, link, ends + stop))


def _decoupled(units: Sequence[Instruction], lat: list[int], spad: list, params: Params,
               roofs: dict[str, int]) -> Bounds:
    """The bounds at OVERLAP = 2 (the module docstring) of legal instructions ``units`` (no
    HALT: the program up to its first) with latencies ``lat`` and scratchpad regions ``spad``;
    ``roofs`` as computed."""
    stop = spec.STOP_CYCLES
    earliest = [spec.OVERLAP_FRONTEND_CYCLES + spec.ENTER_CYCLES * i + spec.ENTER_DISPATCH_CYCLES
                for i in range(len(units))]
    reads = [spec.reads(ins.spec, ins.fields, params) for ins in units]
    engine: dict[str, int] = {}
    for i, ins in enumerate(units):
        engine[ins.spec.counter] = max(engine.get(ins.spec.counter, 0), earliest[i]) + lat[i]
    readers = [i for i in range(len(units)) if reads[i]]
    read_port = earliest[readers[0]] + sum(reads) if readers else 0
    entered = spec.OVERLAP_FRONTEND_CYCLES + spec.ENTER_CYCLES * len(units)
    issue = max(entered, max(earliest[i] + lat[i] for i in range(len(units))))
    start: list[int] = []
    link: list[tuple[str, int]] = []           # what each start waited for: (kind, on which)
    last_on: dict[str, tuple[int, int]] = {}
    for k, ins in enumerate(units):
        t, why = earliest[k], ("front end", -1)
        before = last_on.get(ins.spec.counter)
        if before is not None and before[0] > t:          # (its end, which)
            t, why = before[0], ("engine", before[1])
        for j in range(k):
            if spec.conflict(spad[k], spad[j]):
                war = spec.war_only(spad[k], spad[j])
                ready = start[j] + (reads[j] if war else lat[j])
                if ready > t:
                    t, why = ready, ("read window" if war else "hazard", j)
        start.append(t)
        link.append(why)
        last_on[ins.spec.counter] = (t + lat[k], k)
    ends = max(start[k] + lat[k] for k in range(len(units)))
    return Bounds(engine=max(engine.values()) + stop, read_port=read_port + stop, issue=issue + stop,
                  dependences=ends + stop, **roofs, **_chain(start, lat, link, ends + stop))


def _chain(start: list[int], lat: list[int], link: list[tuple[str, int]], total: int
           ) -> dict[str, tuple]:
    """:attr:`Bounds.chain` and :attr:`Bounds.path`: walk back from the instruction that ends
    last (the first of equals) along the links (``link[k]``: the kind, and the index of the
    instruction k waits for); each instruction's cycles up to the next one's start go to that
    link's kind."""
    k = max(range(len(start)), key=lambda i: start[i] + lat[i])
    cycles = dict.fromkeys(CHAIN_LINKS, 0)
    cycles["last"] = total - start[k]
    path = []
    while link[k][0] != "front end":
        kind, j = link[k]
        cycles[kind] += start[k] - start[j]
        path.append((k, kind))
        k = j
    cycles["front end"] = start[k]
    path.append((k, "front end"))
    return {"chain": tuple((kind, n) for kind, n in cycles.items() if n), "path": tuple(reversed(path))}
