"""Emission: one pass over the nodes in order, allocating buffers and writing instructions.

Contract: given the scales, the fused relus, the placement, the release schedule and the
external layout, :func:`emit` returns the program (ending in HALT), the requantizer
parameters and the scratchpad high-water mark. Each node is handled by its role in the
table of :mod:`compiler.ops` and lowered by the table's ``lower`` hook (the instructions
of each operation, in the seed's order, are in :mod:`compiler.lowering`); the order fixes
every address, and a buffer gets its address the first time a step needs it:

* sources (input, weight): nothing at their own step; loaded (their ``lower`` hook) just
  before the first step that reads them;
* views (slice, concat, relu): their operands are loaded and their hook allocates their
  buffer, but no instruction is written and nothing is released after them;
* compute and sink nodes: their operands are loaded, their hook writes their instructions;
  then, with reuse on, the buffers whose last touch was that step are released (in
  first-touch order, :mod:`compiler.lifetimes`);
* HALT ends the program, which must fit the instruction memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sim.asm import Instruction, build
from sim.spec import DEFAULT, Params

from .allocator import Allocator, AllocEvent
from .errors import CompileError
from .ir import Graph
from .layout import ExtEntry
from .lowering import RequantKey
from .ops import OPS, Role
from .placement import Placement


@dataclass
class Emission:
    """What emission produced.

    Attributes:
        code: the instructions, HALT last.
        requantizers: requantizer key -> (m, s) (see :data:`compiler.lowering.RequantKey`).
        spad_high: scratchpad high-water mark in words.
    """

    code: list[Instruction]
    requantizers: dict[RequantKey, tuple[int, int]] = field(default_factory=dict)
    spad_high: int = 0


class Emitter:
    """The emission under way: what the lowering hooks use (:class:`compiler.lowering.Emitter`)."""

    def __init__(self, graph: Graph, scales: Mapping[int, float], fused: set[int], placement: Placement,
                 schedule: Mapping[int, Sequence[int]], ext: Mapping[str, ExtEntry], reuse: bool,
                 params: Params, events: list[AllocEvent] | None):
        self.nodes = graph.nodes
        self.scales = scales
        self.fused = fused
        self.placement = placement
        self.schedule = schedule
        self.ext = ext
        self.reuse = reuse
        self.params = params
        self.alloc = Allocator(params.SPAD_WORDS, events, clock=lambda: len(self.out.code))
        self.loaded: set[int] = set()
        self.out = Emission([])
        self.requantizers = self.out.requantizers

    def put(self, op: str, **fields: int) -> None:
        """Append one instruction (its fields checked against the machine's legal ranges)."""
        self.out.code.append(build(op, params=self.params, **fields))

    def address(self, nid: int) -> int:
        """Scratchpad address of a tensor's first element, allocating its buffer if needed."""
        buf_id, row = self.placement.loc[nid]
        buf = self.placement.buffers[buf_id]
        if buf.addr is None:
            buf.addr = self.alloc.alloc(buf.words, f"the tensor of {self.nodes[buf.owner].describe()}")
            buf.home = buf.addr
        return buf.addr + row * self.nodes[nid].shape[1]

    def ensure(self, nid: int) -> int:
        """Address of an operand, loading a source (input, weight) from external memory first."""
        node = self.nodes[nid]
        spec = OPS[node.op]
        if spec.role is Role.SOURCE and nid not in self.loaded:
            self.loaded.add(nid)
            spec.lower(self, node, [])
        return self.address(nid)

    def release_dead(self, step: int) -> None:
        for buf_id in self.schedule.get(step, []):
            buf = self.placement.buffers[buf_id]
            if buf.addr is not None:
                owner = self.nodes[buf.owner].describe()
                self.alloc.release(buf.addr, buf.words, f"the tensor of {owner}")
                buf.addr = None

    def run(self) -> Emission:
        for node in self.nodes:
            spec = OPS[node.op]
            if spec.role is Role.SOURCE:
                continue
            operands = [self.ensure(i) for i in node.ins]
            spec.lower(self, node, operands)
            if self.reuse and spec.role is not Role.VIEW:
                self.release_dead(node.id)
        self.put("HALT")
        if len(self.out.code) > self.params.IMEM_WORDS:
            raise CompileError(f"the program has {len(self.out.code)} instructions, more than the "
                               f"{self.params.IMEM_WORDS} the instruction memory holds",
                               "compile the graph in smaller parts")
        self.out.spad_high = self.alloc.high
        return self.out


def emit(graph: Graph, scales: Mapping[int, float], fused: set[int], placement: Placement,
         schedule: Mapping[int, Sequence[int]], ext: Mapping[str, ExtEntry], reuse: bool = True,
         params: Params = DEFAULT, events: list[AllocEvent] | None = None) -> Emission:
    """Write the program.

    Args:
        graph: the graph. scales: node id -> scale (see :mod:`compiler.scales`).
        fused: matmuls carrying a relu. placement: buffers (their ``addr`` fields are
            updated). schedule: step -> buffers to release (see :mod:`compiler.lifetimes`).
        ext: the external layout. reuse: release dead buffers (False keeps every tensor's
            buffer to the end, for differential tests and for reading every tensor back).
        params: the machine. events: if given, the allocator's trace is appended to it.

    A matmul's factor is the float product ``factor * scale_a * scale_b / scale_out``; when
    that product would leave the normal floats on the way (tiny or huge scales), it is
    computed exactly instead (:func:`compiler.requant.matmul_factor`).

    Raises:
        CompileError: the scratchpad is full, a requantizer's shift is out of range or its
            factor underflows or overflows, or the program does not fit the instruction memory.
    """
    return Emitter(graph, scales, fused, placement, schedule, ext, reuse, params, events).run()
