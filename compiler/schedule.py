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

Before it orders them, it cuts every LD longer than :data:`LOAD_PIECE` words into LDs of that
many (:func:`split_loads`: the same words, moved by the same beats): the scratchpad has one write
port, and a long LD holds it for its whole length, so an MM (which writes at its end) could not
finish while it runs; shorter loads let the MMs' writes in between them.

On the serial machine (``OVERLAP = 0``) the order changes nothing but the risk, so
:func:`schedule` returns the program as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim import spec
from sim.asm import Instruction, build
from sim.spec import INT8_PER_WORD, Mem, Params

LOAD_PIECE = 256
"""The longest LD the scheduler leaves whole, in scratchpad words (64 beats at LANES = 4). On
the digits MLP at batch 1 (OVERLAP = 1): 24,972 cycles with the loads whole; pieces of 64, 128,
256 words: 25,614, 22,164, 17,112; the seeds 100-111, whose loads are shorter: 4,588 either way."""


def split_loads(code: Sequence[Instruction], piece: int = LOAD_PIECE) -> list[Instruction]:
    """Every LD longer than ``piece`` words cut into LDs of ``piece`` words (the last one
    shorter), in order; a packed LD (fmt = 1) reads a quarter of the words (``piece`` is a
    multiple of four)."""
    assert piece % INT8_PER_WORD == 0
    out = []
    for ins in code:
        if ins.op != "LD" or ins.len <= piece:
            out.append(ins)
            continue
        fmt = ins.spec.complete(ins.fields)["fmt"]
        for at in range(0, ins.len, piece):
            src = ins.src + (at // INT8_PER_WORD if fmt else at)
            out.append(build("LD", dst=ins.dst + at, src=src, len=min(piece, ins.len - at), fmt=fmt))
    return out


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
    body = split_loads(code[:halt])
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
