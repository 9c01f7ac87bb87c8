"""Emission: one pass over the nodes in order, allocating buffers and writing instructions.

Contract: given the scales, the fused relus, the placement, the release schedule and the
external layout, :func:`emit` returns the program (ending in HALT), the requantizer
parameters and the scratchpad high-water mark. The order below is the seed's (chapter 11)
and fixes every address; a buffer gets its address the first time a step needs it.

* input, weight: nothing at their own step; a load (LD, or LD then UNPACK for an int4
  weight, through a temporary) just before the first step that reads them;
* slice, concat, relu: views; their operands are loaded and their buffer allocated, but no
  instruction is written and nothing is released after them;
* matmul: the output buffer, then an int32 accumulator; one MM per T x T output tile (tile
  rows outer, tile columns inner; edge tiles smaller), then one RQ into the output (with
  the relu flag when a relu was fused), then the accumulator is released;
* softmax: the output buffer, a Q16 temporary, one SM per row, one RQ to the 1/127 scale;
* add: for each operand whose scale differs from the sum's, a temporary and an RQ that
  rescales it (int8 to int8); then the output buffer and one VADD; the temporaries go;
* argmax: the output buffer, one AMAX per row;
* output: one ST to the output's external region;
* after each step that wrote instructions, with reuse on, the buffers whose last touch was
  that step are released (in first-touch order).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from sim.asm import Instruction, build
from sim.spec import DEFAULT, Params

from .allocator import Allocator, AllocEvent
from .ir import CompileError, Graph, Node
from .layout import ExtEntry
from .placement import Placement
from .requant import SM_OUTPUT_UNIT, exact_factor, product_underflows, requantizer

ADD_SAME_SCALE = 1e-9
"""An add operand whose scale is within this relative distance of the sum's is not rescaled."""

RequantKey = int | tuple[int, int]
"""A requantizer is keyed by its node id, or by (add node id, operand index) for a rescale."""


def tiles(rows: int, cols: int, t: int) -> Iterator[tuple[int, int, int, int]]:
    """The output tiles of a rows x cols product on a t x t array: (first row, first column,
    tile rows, tile columns), tile rows outer."""
    for i0 in range(0, rows, t):
        for j0 in range(0, cols, t):
            tile_rows, tile_cols = min(t, rows - i0), min(t, cols - j0)
            yield i0, j0, tile_rows, tile_cols


@dataclass
class Emission:
    """What emission produced.

    Attributes:
        code: the instructions, HALT last.
        requant: requantizer key -> (m, s).
        spad_high: scratchpad high-water mark in words.
    """

    code: list[Instruction]
    requant: dict[RequantKey, tuple[int, int]] = field(default_factory=dict)
    spad_high: int = 0


class _Emitter:
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
        self.alloc = Allocator(params.SPAD_WORDS, events)
        self.loaded: set[int] = set()
        self.out = Emission([])

    def put(self, op: str, **fields: int) -> None:
        self.out.code.append(build(op, params=self.params, **fields))

    # ------------------------------------------------------------------ addresses and loads

    def address(self, nid: int) -> int:
        """Scratchpad address of a tensor's first element, allocating its buffer if needed."""
        buf_id, row = self.placement.loc[nid]
        buf = self.placement.buffers[buf_id]
        if buf.addr is None:
            buf.addr = self.alloc.alloc(buf.words, f"the tensor of {self.nodes[buf.owner].describe()}")
            buf.home = buf.addr
        return buf.addr + row * self.nodes[nid].shape[1]

    def ensure(self, nid: int) -> int:
        """Address of an operand, loading an input or weight from external memory first."""
        node = self.nodes[nid]
        if node.op in ("input", "weight") and nid not in self.loaded:
            dst = self.address(nid)
            entry = self.ext[node.name]
            self.loaded.add(nid)
            if node.op == "weight" and node.bits == 4:
                packed = entry.words
                tmp = self.alloc.alloc(packed, f"packed int4 words of node {nid}")
                self.put("LD", dst=tmp, src=entry.addr, len=packed)
                self.put("UNPACK", dst=dst, src=tmp, len=packed)
                self.alloc.release(tmp, packed, f"packed int4 words of node {nid}")
            else:
                self.put("LD", dst=dst, src=entry.addr, len=node.shape[0] * node.shape[1])
        return self.address(nid)

    def release_dead(self, step: int) -> None:
        for buf_id in self.schedule.get(step, []):
            buf = self.placement.buffers[buf_id]
            if buf.addr is not None:
                owner = self.nodes[buf.owner].describe()
                self.alloc.release(buf.addr, buf.words, f"the tensor of {owner}")
                buf.addr = None

    # ------------------------------------------------------------------ the steps

    def run(self) -> Emission:
        for node in self.nodes:
            if node.op in ("input", "weight"):
                continue
            if node.op in ("slice", "concat", "relu"):
                for operand in node.ins:
                    self.ensure(operand)
                self.address(node.id)
                continue
            operands = [self.ensure(i) for i in node.ins]
            getattr(self, f"_{node.op}")(node, operands)
            if self.reuse:
                self.release_dead(node.id)
        self.put("HALT")
        if len(self.out.code) > self.params.IMEM_WORDS:
            raise CompileError(f"the program has {len(self.out.code)} instructions, more than the "
                               f"{self.params.IMEM_WORDS} the instruction memory holds",
                               "compile the graph in smaller parts")
        self.out.spad_high = self.alloc.high
        return self.out

    def _matmul(self, node: Node, operands: list[int]) -> None:
        a_addr, b_addr = operands
        a_id, b_id = node.ins
        m, k = self.nodes[a_id].shape
        n = node.shape[1]
        transpose = node.transpose_b
        out = self.address(node.id)
        acc = self.alloc.alloc(m * n, f"accumulator of node {node.id}")
        for i0, j0, tile_rows, tile_cols in tiles(m, n, self.params.T):
            b_tile = b_addr + (j0 * k if transpose else j0)
            self.put("MM", dst=acc + i0 * n + j0, A=a_addr + i0 * k, B=b_tile, M=tile_rows, K=k, N=tile_cols,
                     tb=int(transpose), lda=k, ldb=(k if transpose else n), ldc=n)
        factor = node.factor * self.scales[a_id] * self.scales[b_id] / self.scales[node.id]
        pieces = (node.factor, self.scales[a_id], self.scales[b_id])
        if product_underflows(*pieces) or product_underflows(factor):
            factor = exact_factor(pieces, self.scales[node.id])   # tiny or huge scales: no lost bits
        m_, s_ = requantizer(factor, f"matmul node {node.id}", node.id, self.params)
        self.out.requant[node.id] = (m_, s_)
        self.put("RQ", dst=out, src=acc, len=m * n, m=m_, s=s_, relu=int(node.id in self.fused))
        self.alloc.release(acc, m * n, f"accumulator of node {node.id}")

    def _softmax(self, node: Node, operands: list[int]) -> None:
        rows, cols = node.shape
        out = self.address(node.id)
        tmp = self.alloc.alloc(rows * cols, f"Q16 probabilities of node {node.id}")
        for r in range(rows):
            self.put("SM", dst=tmp + r * cols, src=operands[0] + r * cols, len=cols)
        factor = SM_OUTPUT_UNIT / self.scales[node.id]
        m_, s_ = requantizer(factor, f"softmax node {node.id}", node.id, self.params)
        self.out.requant[node.id] = (m_, s_)
        self.put("RQ", dst=out, src=tmp, len=rows * cols, m=m_, s=s_, relu=0)
        self.alloc.release(tmp, rows * cols, f"Q16 probabilities of node {node.id}")

    def _add(self, node: Node, operands: list[int]) -> None:
        size = node.words
        sources = []
        temps = []
        for k, (operand, addr) in enumerate(zip(node.ins, operands, strict=True)):
            ratio = self.scales[operand] / self.scales[node.id]
            if abs(ratio - 1) < ADD_SAME_SCALE:
                sources.append(addr)
                continue
            tmp = self.alloc.alloc(size, f"operand {k} of node {node.id}, rescaled")
            temps.append(tmp)
            m_, s_ = requantizer(ratio, f"add node {node.id}, operand {k}", node.id, self.params)
            self.out.requant[(node.id, k)] = (m_, s_)
            self.put("RQ", dst=tmp, src=addr, len=size, m=m_, s=s_, relu=0)
            sources.append(tmp)
        self.put("VADD", dst=self.address(node.id), src1=sources[0], src2=sources[1], len=size)
        for tmp in temps:
            self.alloc.release(tmp, size, f"rescaled operand of node {node.id}")

    def _argmax(self, node: Node, operands: list[int]) -> None:
        out = self.address(node.id)
        rows, cols = self.nodes[node.ins[0]].shape
        for r in range(rows):
            self.put("AMAX", dst=out + r, src=operands[0] + r * cols, len=cols)

    def _output(self, node: Node, operands: list[int]) -> None:
        entry = self.ext[node.name]
        self.put("ST", src=operands[0], dst=entry.addr, len=node.shape[0] * node.shape[1])


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
    computed exactly instead (:func:`compiler.requant.exact_factor`).

    Raises:
        CompileError: the scratchpad is full, a requantizer's shift is out of range or its
            factor underflows or overflows, or the program does not fit the instruction memory.
    """
    return _Emitter(graph, scales, fused, placement, schedule, ext, reuse, params, events).run()
