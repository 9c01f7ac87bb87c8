"""Emission: one pass over the nodes in order, allocating buffers and writing instructions.

Contract: given the scales, the fused relus, the placement, the release schedule and the
external layout, :func:`emit` returns the program (ending in HALT), the requantizer
parameters and the scratchpad high-water mark. Each node is handled by its role in the
table of :mod:`compiler.ops` and lowered by the lowering registered against its operation in
the table it is given (:data:`compiler.lowering.table.LOWERINGS`: the instructions of each
operation, in the seed's order); the order fixes every address, and a buffer gets its address
the first time a step needs it:

* sources (input, weight): nothing at their own step; loaded (their lowering) just
  before the first step that reads them, unless that step reads them where they lie in external
  memory (the entry's ``external``: an embedding's table);
* views (slice, concat, relu): their operands are loaded and their lowering allocates their
  buffer, but no instruction is written and nothing is released after them;
* compute and sink nodes: their operands are loaded, their lowering writes their instructions;
  then, with reuse on, the buffers whose last touch was that step are released (in
  first-touch order, :mod:`compiler.lifetimes`);
* an operation whose lowering has a ``step`` (a matmul) places its operands itself:
  whole as above when that fits, else a blocking that streams them (:mod:`compiler.streaming`);
  it tries, and a try that runs out of scratchpad is undone (:meth:`Emitter.checkpoint`,
  :meth:`Emitter.rollback`) before the next;
* HALT ends the program, which must fit the instruction memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sim.asm import Instruction, build
from sim.spec import Params

from .allocator import Allocator, AllocEvent, AllocState
from .blocking import Blocking, Ranking
from .errors import CompileError
from .ir import Graph, Node
from .layout import ExtEntry
from .lowering.emitter import Lowering, RequantKey
from .ops import OPS, Op, Role
from .placement import Buffer, Placement
from .residual import residual_adds


@dataclass
class Emission:
    """What emission produced.

    Attributes:
        code: the instructions, HALT last.
        requantizers: requantizer key -> (m, s) (see :data:`compiler.lowering.emitter.RequantKey`).
        spad_high: scratchpad high-water mark in words.
        blockings: matmul node id -> how its step ran (:class:`compiler.blocking.Blocking`;
            ``whole`` when its operands fitted the scratchpad whole).
        panels: name of a source stored in column panels -> the panel width
            (:func:`compiler.layout.panel_major`).
        rankings: matmul node id -> how its blocking was chosen, for the steps that did not
            fit whole (:class:`compiler.blocking.Ranking`).
        owners: for each instruction, the id of the node whose step wrote it (a load of a
            source counts for the step that first reads it; HALT: -1).
    """

    code: list[Instruction]
    requantizers: dict[RequantKey, tuple[int, int]] = field(default_factory=dict)
    spad_high: int = 0
    blockings: dict[int, Blocking] = field(default_factory=dict)
    panels: dict[str, int] = field(default_factory=dict)
    owners: list[int] = field(default_factory=list)
    rankings: dict[int, Ranking] = field(default_factory=dict)


@dataclass(frozen=True)
class Checkpoint:
    """Where emission stood (:meth:`Emitter.checkpoint`): the allocator, and how many
    instructions, placed buffers, loaded sources and requantizers there were."""

    alloc: AllocState
    code: int
    placed: int
    loaded: int
    requantizers: int


class Emitter:
    """The emission under way: what the lowerings use (:class:`compiler.lowering.emitter.Emitter`)."""

    def __init__(self, graph: Graph, scales: Mapping[int, float], fused: set[int], placement: Placement,
                 schedule: Mapping[int, Sequence[int]], ext: Mapping[str, ExtEntry], reuse: bool,
                 params: Params, events: list[AllocEvent] | None, stream: bool,
                 lowerings: Mapping[Op, Lowering], spills: Mapping[int, ExtEntry] | None = None,
                 launches: bool = False, chain: bool = True):
        self.graph = graph
        self.chain = chain
        self.lowerings = lowerings
        self.nodes = graph.nodes
        self.scales = scales
        self.fused = fused
        self.placement = placement
        self.schedule = schedule
        self.ext = ext
        self.reuse = reuse
        self.stream = stream
        self.params = params
        self.alloc = Allocator(params.SPAD_WORDS, events, clock=lambda: len(self.out.code))
        self.loaded: set[int] = set()
        self.load_order: list[int] = []
        self.placed: list[tuple[Buffer, int | None]] = []
        self.consumers: dict[int, list[int]] | None = None
        self.out = Emission([])
        self.requantizers = self.out.requantizers
        self.step = -1
        self.spills: Mapping[int, ExtEntry] = spills or {}
        self.launches = launches
        self.residual = residual_adds(graph, self.spills)
        """Convolution id -> the add its bands finish (:mod:`compiler.residual`)."""
        self.finished: set[int] = set()
        """The adds a convolution's bands have finished: their own step writes nothing."""

    def put(self, op: str, **fields: int) -> None:
        """Append one instruction (its fields checked against the machine's legal ranges)."""
        self.out.code.append(build(op, params=self.params, **fields))
        self.out.owners.append(self.step)

    def address(self, nid: int) -> int:
        """Scratchpad address of a tensor's first element, allocating its buffer if needed."""
        buf_id, row = self.placement.loc[nid]
        buf = self.placement.buffers[buf_id]
        if buf.addr is None:
            home = buf.home
            buf.addr = self.alloc.alloc(buf.words, f"the tensor of {self.nodes[buf.owner].describe()}")
            buf.home = buf.addr
            self.placed.append((buf, home))
        return buf.addr + row * self.nodes[nid].shape[1]

    def ensure(self, nid: int) -> int:
        """Address of an operand, loading a source (input, weight) from external memory first."""
        node = self.nodes[nid]
        spec = OPS[node.op]
        assert nid not in self.spills, f"{node.describe()} lives in external memory: its readers read " \
            "it in bands"
        if spec.role is Role.SOURCE and nid not in self.loaded:
            self.loaded.add(nid)
            self.load_order.append(nid)
            self.lowerings[node.op].lower(self, node, [])
        return self.address(nid)

    def unloaded_source(self, nid: int) -> bool:
        """Whether a node is a source (input, weight) not loaded into the scratchpad yet."""
        return OPS[self.nodes[nid].op].role is Role.SOURCE and nid not in self.loaded

    def lower(self, node: Node, operands: Sequence[int]) -> None:
        """Write a node's instructions by its operation's lowering, its operands at ``operands``."""
        self.lowerings[node.op].lower(self, node, operands)

    def readers(self, nid: int) -> list[int]:
        """The nodes that read node ``nid``."""
        if self.consumers is None:
            self.consumers = self.graph.consumers()
        return self.consumers[nid]

    def checkpoint(self) -> Checkpoint:
        """Where emission stands, for :meth:`rollback`."""
        return Checkpoint(self.alloc.save(), len(self.out.code), len(self.placed), len(self.load_order),
                          len(self.requantizers))

    def rollback(self, mark: Checkpoint) -> None:
        """Undo everything since ``mark``: instructions, buffers placed, sources loaded and
        the allocator's state (a try that did not fit the scratchpad; it sets no requantizer)."""
        assert len(self.requantizers) == mark.requantizers, "a try set a requantizer before it failed"
        del self.out.code[mark.code:]
        del self.out.owners[mark.code:]
        for buf, home in reversed(self.placed[mark.placed:]):
            buf.addr, buf.home = None, home
        del self.placed[mark.placed:]
        for nid in self.load_order[mark.loaded:]:
            self.loaded.discard(nid)
        del self.load_order[mark.loaded:]
        self.alloc.restore(mark.alloc)

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
            self.step = node.id
            if spec.role is Role.VIEW and node.id in self.spills:
                continue   # a relu fused into a spilled producer: nothing to write
            step = self.lowerings[node.op].step
            if step is not None:
                step(self, node)
            else:
                self.lower(node, [-1 if k in spec.external else self.ensure(i)
                                  for k, i in enumerate(node.ins)])
            if self.reuse and spec.role is not Role.VIEW:
                self.release_dead(node.id)
        self.step = -1
        self.put("HALT")
        if len(self.out.code) > self.params.IMEM_WORDS and not self.launches:
            raise CompileError(f"the program has {len(self.out.code)} instructions, more than the "
                               f"{self.params.IMEM_WORDS} the instruction memory holds",
                               "compile the graph in smaller parts")
        self.out.spad_high = self.alloc.high
        return self.out


def emit(graph: Graph, scales: Mapping[int, float], fused: set[int], placement: Placement,
         schedule: Mapping[int, Sequence[int]], ext: Mapping[str, ExtEntry], *, params: Params,
         lowerings: Mapping[Op, Lowering], reuse: bool = True, events: list[AllocEvent] | None = None,
         stream: bool = True, spills: Mapping[int, ExtEntry] | None = None,
         launches: bool = False, chain: bool = True) -> Emission:
    """Write the program.

    Args:
        graph: the graph. scales: node id -> scale (see :mod:`compiler.scales`).
        fused: matmuls carrying a relu. placement: buffers (their ``addr`` fields are
            updated). schedule: step -> buffers to release (see :mod:`compiler.lifetimes`).
        ext: the external layout. reuse: release dead buffers (False keeps every tensor's
            buffer to the end, for differential tests and for reading every tensor back).
        params: the machine. lowerings: each operation's lowering
            (:data:`compiler.lowering.table.LOWERINGS`). events: if given, the allocator's trace
            is appended to it.
        stream: block a matmul whose operands do not fit the scratchpad whole
            (:mod:`compiler.streaming`), and run a convolution in bands
            (:mod:`compiler.convstep`); False refuses them as the seed's compiler does.
        spills: node id -> the external region of a node that lives in external memory
            (:mod:`compiler.spill`); its producer and readers move it in bands.
        launches: allow a program longer than the instruction memory (run in launches,
            :meth:`compiler.program.Program.launches`).
        chain: on a machine with MMRQ (OVERLAP = 2), a matmul whose operands fit whole lowers
            to MMRQs (:func:`compiler.lowering.matmul.lower_chained`); False keeps MM and RQ (the
            pipeline emits both and keeps the faster, :func:`compiler.pipeline.compile_graph`).

    A matmul's factor is the float product ``factor * scale_a * scale_b / scale_out``; when
    that product would leave the normal floats on the way (tiny or huge scales), it is
    computed exactly instead (:func:`compiler.requant.matmul_factor`).

    Raises:
        CompileError: the scratchpad is full, a requantizer's shift is out of range or its
            factor underflows or overflows, or the program does not fit the instruction memory.
    """
    return Emitter(graph, scales, fused, placement, schedule, ext, reuse, params, events, stream,
                   lowerings, spills, launches, chain).run()
