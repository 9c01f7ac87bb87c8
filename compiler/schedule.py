"""Instruction scheduling for a machine whose engines run side by side (``OVERLAP = 1``).

GA2.md section 7: the machine issues in program order, and an instruction waits while its
engine is busy, while an instruction in flight conflicts with it (its scratchpad regions), or
for a scratchpad port. The order the back end emits is the order of the graph, so a load of the
next layer's weights waits behind the current layer's work even when it touches none of it.
:func:`schedule` reorders a program's instructions, list scheduling on the machine's own issue
rule (``sim.spec.Issue``): it keeps every dependency (two instructions whose scratchpad regions
conflict, read after write, write after read or write after write, or whose external-memory
regions do, stay in their order, so the program computes exactly what it did) and, among the
instructions whose predecessors are all placed, issues next the one that would start first
(the earliest in the program on a tie). The HALT stays last.

On the serial machine (``OVERLAP = 0``) the order changes nothing but the risk, so
:func:`schedule` returns the program as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim import spec
from sim.asm import Instruction
from sim.spec import Mem, Params


def _ext_accesses(ins: Instruction) -> list[spec.Access]:
    f = ins.spec.complete(ins.fields)
    return [(f[r.start], f[r.start] + r.extent(f), not r.writes, r.writes)
            for r in ins.spec.regions if r.mem is Mem.EXT]


def dependencies(code: Sequence[Instruction]) -> list[set[int]]:
    """For each instruction, the earlier ones it must stay after: a conflict on the scratchpad
    or on external memory (:func:`sim.spec.conflict`)."""
    spad = [spec.spad_accesses(ins.spec, ins.fields) for ins in code]
    ext = [_ext_accesses(ins) for ins in code]
    return [{j for j in range(i) if spec.conflict(spad[i], spad[j]) or spec.conflict(ext[i], ext[j])}
            for i in range(len(code))]


def schedule(code: Sequence[Instruction], params: Params) -> list[Instruction]:
    """The program reordered for the engines side by side (the module's docstring); the
    program itself on a serial machine, or when it has no HALT (nothing is moved past the
    first HALT)."""
    code = list(code)
    halt = next((k for k, ins in enumerate(code) if ins.op == "HALT"), None)
    if not params.OVERLAP or halt is None:
        return code
    body = code[:halt]
    deps = dependencies(body)
    issue = spec.Issue(params)
    placed: set[int] = set()
    order: list[int] = []
    waiting = list(range(len(body)))
    while waiting:
        ready = [i for i in waiting if deps[i] <= placed]
        best = min(ready, key=lambda i: (issue.peek(body[i].spec, body[i].fields), i))
        issue.place(len(order), body[best].spec, body[best].fields)
        placed.add(best)
        order.append(best)
        waiting.remove(best)
    return [body[i] for i in order] + code[halt:]
