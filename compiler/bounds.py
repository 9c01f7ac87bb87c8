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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim import spec
from sim.asm import Instruction
from sim.spec import Params

from .schedule import ext_accesses


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
    """

    engine: int
    read_port: int
    issue: int
    dependences: int
    mxu_roof: int
    dma_roof: int

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
        params: the machine (its OVERLAP is not read: the bounds are those of the overlapping
            machine; on the serial machine the cycles are the sum of the latencies).

    Raises:
        ValueError: an instruction fails the spec's checks (names its index).
    """
    units = [ins for ins in code if ins.op != "HALT"]
    stop = spec.STOP_CYCLES
    if not units:
        return Bounds(0, 0, spec.OVERLAP_FRONTEND_CYCLES + stop, 0, 0, 0)
    engines: dict[str, int] = {}
    lat, spad, ext = [], [], []
    read_port = macs = words = 0
    for k, ins in enumerate(units):
        if spec.check(ins.spec, ins.fields, params)[0] is not spec.ErrorCode.NONE:
            raise ValueError(f"bounds: instruction {k} ({ins.op}) is not legal on this machine")
        n = spec.latency(ins.spec, ins.fields, params)
        lat.append(n)
        engines[ins.spec.counter] = engines.get(ins.spec.counter, 0) + n
        read_port += spec.reads(ins.spec, ins.fields, params)
        spad.append(spec.spad_accesses(ins.spec, ins.fields))
        ext.append(ext_accesses(ins))
        if ins.op == "MM":
            macs += ins.fields["M"] * ins.fields["K"] * ins.fields["N"]
        if ins.op in ("LD", "ST"):
            words += ins.fields["len"]
    front = spec.OVERLAP_FRONTEND_CYCLES
    ends: list[int] = []
    for k in range(len(units)):
        ready = max((ends[j] for j in range(k)
                     if spec.conflict(spad[k], spad[j]) or spec.conflict(ext[k], ext[j])), default=front)
        ends.append(ready + lat[k])
    issue = front + spec.OVERLAP_ISSUE_CYCLES * (len(units) - 1) + lat[-1]
    return Bounds(engine=max(engines.values()) + front + stop, read_port=read_port + front + stop,
                  issue=issue + stop, dependences=max(ends) + stop,
                  mxu_roof=-(-macs // (params.T * params.T)), dma_roof=-(-words // params.LANES))
