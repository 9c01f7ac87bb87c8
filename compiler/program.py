"""A compiled program and what it takes to run it.

Contract: a :class:`Program` holds the instructions and everything the compiler decided:
the scale of every tensor, the requantizer parameters, where each tensor lives and where
the host puts inputs and finds outputs. :meth:`Program.ext_image` quantizes inputs and
weights into an external-memory image (values beyond a scale's range saturate at -127 or
127); :meth:`Program.run` runs the reference machine on it, counts the clipped input values
(a :class:`SaturationWarning` names them) and reads the outputs back;
:meth:`Program.read_tensor` reads any tensor still in place in the scratchpad after a run;
:meth:`Program.whose` names what a memory word holds (for co-simulation's reports).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from sim.arith import INT8_MAX, quantize_array
from sim.asm import Instruction, listing
from sim.machine import Counters, Machine, RunResult, s8, s32, to_words
from sim.spec import Params

from .allocator import AllocEvent
from .blocking import Blocking, Ranking
from .calibrate import check_sample
from .channels import per_channel_weights, quantize_columns
from .errors import CompileError, plural, shown
from .explain import explain
from .int4 import is_int4, pack_int4
from .ir import Graph, Node
from .layout import ExtEntry, constant_of, panel_major
from .lowering.emitter import RequantKey
from .ops import OPS, Role
from .packing import pack_int8
from .placement import Placement
from .scales import ScalePlan
from .symbols import ext_symbol, spad_symbol

__all__ = ["OutputValue", "Program", "RunOutcome", "SaturationWarning"]


@dataclass
class OutputValue:
    """One output after a run.

    Attributes:
        ints: the stored integers, int64 (rows, cols): int8 levels, or row indices for
            the output of an argmax.
        floats: float64 (rows, cols): ints times the output's scale (indices unscaled).
    """

    ints: np.ndarray
    floats: np.ndarray


class SaturationWarning(UserWarning):
    """:meth:`Program.run` clipped input values that lie beyond the range their scale holds
    to the int8 levels -127..127 (the run goes on with the clipped values).

    Silence it with ``warnings.simplefilter("ignore", SaturationWarning)``; the counts are in
    :attr:`RunOutcome.clipped` either way.
    """


@dataclass
class RunOutcome:
    """The result of :meth:`Program.run`.

    Attributes:
        outputs: output name -> :class:`OutputValue`.
        counters: the machine's five cycle counters.
        state: the machine's final memories (for :meth:`Program.read_tensor`).
        clipped: input name -> how many of its values were clipped to -127 or 127 because
            they lie beyond the range the input's scale holds (0 for most runs; see
            :meth:`Program.clipped_inputs`).
        inputs: the inputs the run was given, as given (a front end's feed may say which
            rows are real: :class:`compiler.frontend.batch.Feed`).
    """

    outputs: dict[str, OutputValue]
    counters: Counters
    state: RunResult
    clipped: dict[str, int] = field(default_factory=dict)
    inputs: Mapping[str, object] | None = None


@dataclass
class Program:
    """A GA-2 program compiled from a graph.

    Attributes:
        graph: the source graph as it was compiled (``Graph.snapshot``: nodes added to the
            graph later, or a node changed, are not the program's), with each repeated pure
            subgraph once when the ``cse`` pass merged any (see ``node_of``).
        code: the instructions, ending in HALT.
        scales: node id -> scale (real value of one int8 level); argmax nodes have none.
        requantizers: the requantizers' (multiplier, shift) pairs: node id -> (m, s) for a
            matmul or softmax, (add node id, operand index) -> (m, s) for an add's rescale.
        relu_fused: ids of the matmuls whose requantizer applies a relu.
        plan: the scale plan (ranges, groups, pins).
        placement: buffers and tensor locations (``addr`` is None for released buffers).
        ext: name -> external region (inputs and weights, then outputs); a source that
            streams in column blocks has its panel width in ``panel``.
        ext_words: external words used.
        spad_high: scratchpad high-water mark in words.
        notes: warnings from scale planning.
        reuse: whether dead buffers were reused.
        machine: the machine parameters (:class:`sim.spec.Params`) compiled for.
        blockings: matmul node id -> how its step ran (:class:`compiler.blocking.Blocking`:
            ``whole``, or the blocks and streams it used, with cycles, footprint and words
            moved).
        events: the allocator's alloc and free events in order, each with the pc it happened
            at (:class:`compiler.allocator.AllocEvent`): the scratchpad's memory map over time.
        node_of: the node ids of the graph given to ``compile_graph`` -> the id of the node
            of ``graph`` that computes each (the identity unless common-subexpression
            elimination merged repeated nodes, :mod:`compiler.cse`; None: the identity).
        rankings: matmul node id -> how its blocking was chosen, for the products that did not
            fit the scratchpad whole (:class:`compiler.blocking.Ranking`: candidates, refusals
            by reason, the best few, the one written).
        owners: for each instruction, the id (in ``graph``) of the node whose step wrote it: a
            load of a source counts for the step that first reads it; HALT has -1.
        source: the graph as given to ``compile_graph`` (a snapshot; the same object as
            ``graph`` when nothing was merged; None: ``graph``). The float reference is its
            meaning, so a wrong merge cannot hide behind a reference made from it.
    """

    graph: Graph
    code: list[Instruction]
    scales: dict[int, float]
    requantizers: dict[RequantKey, tuple[int, int]]
    relu_fused: set[int]
    plan: ScalePlan
    placement: Placement
    ext: dict[str, ExtEntry]
    ext_words: int
    spad_high: int
    notes: list[str]
    reuse: bool
    machine: Params
    blockings: dict[int, Blocking] = field(default_factory=dict)
    events: list[AllocEvent] = field(default_factory=list)
    node_of: dict[int, int] | None = None
    source: Graph | None = field(default=None, repr=False)
    owners: list[int] = field(default_factory=list)
    rankings: dict[int, Ranking] = field(default_factory=dict)

    def listing(self) -> str:
        """The numbered disassembly."""
        return listing(self.code)

    def explain(self, inputs: Mapping[str, object] | None = None, *, samples: int | None = None) -> str:
        """The pass-by-pass account of this program as text: graph, ranges, scales (pins and
        groups), requantizer pairs, tiles, allocator events, the listing with each
        instruction's start and end cycle and, given test ``inputs``, the checks
        (:func:`compiler.explain.explain`; ``samples``: how many calibrated the ranges)."""
        return explain(self, inputs, samples=samples)

    def quantized_inputs(self, inputs: Mapping[str, object]) -> dict[int, np.ndarray]:
        """input node id -> int8 levels (int64 arrays) of the given values, quantized with the
        planned scales.

        Raises:
            ValueError: an input is missing, has the wrong shape, or is not finite.
        """
        try:
            checked = check_sample(self.graph, inputs, "the run's inputs")
        except CompileError as e:
            raise ValueError(str(e)) from None
        return {node.id: quantize_array(checked[node.name], self.scales[node.id])
                for node in self.graph.inputs()}

    def clipped_inputs(self, inputs: Mapping[str, object]) -> dict[str, int]:
        """input name -> how many of the given values quantize beyond -127..127 and are
        clipped (saturated) there: those beyond the input's range, 127 times its scale.

        Raises:
            ValueError: bad inputs (see :meth:`quantized_inputs`).
        """
        try:
            checked = check_sample(self.graph, inputs, "the run's inputs")
        except CompileError as e:
            raise ValueError(str(e)) from None
        counts = {}
        for node in self.graph.inputs():
            with np.errstate(over="ignore"):
                levels = np.abs(checked[node.name]) / self.scales[node.id]
            counts[node.name] = int(np.count_nonzero(np.floor(levels + 0.5) > INT8_MAX))
        return counts

    def _clipping_message(self, inputs: Mapping[str, object], clipped: Mapping[str, int]) -> str:
        parts = []
        for node in self.graph.inputs():
            if clipped[node.name]:
                largest = float(np.max(np.abs(np.asarray(inputs[node.name], dtype=np.float64))))
                holds = self.scales[node.id] * INT8_MAX
                parts.append(f"input '{node.name}': {clipped[node.name]} of {plural(node.words, 'value')} "
                             f"lie beyond the range {holds:.4g} that its scale holds (largest |value| "
                             f"{largest:.4g})")
        return ("Program.run clipped input values to the int8 levels -127..127: " + "; ".join(parts)
                + ". Calibrate with samples that cover such inputs, or fix the input's range with "
                "Graph.tag and compile_graph(ranges=...)")

    def quantized_weight(self, nid: int) -> np.ndarray:
        """A weight's levels (int64 array), int8 or int4 by its bits."""
        node = self.graph.nodes[nid]
        if nid in per_channel_weights(self.graph.nodes):   # a scale per column (compiler/channels.py)
            return quantize_columns(node, self.scales[nid])
        return quantize_array(node.array, self.scales[nid])

    def ext_image(self, inputs: Mapping[str, object]) -> np.ndarray:
        """The external memory the host loads: EXT_WORDS uint32 words with every input and
        weight quantized at its place (int4 weights packed, and int8 weights whose region has
        ``fmt`` = 1) and every constant region's words (a matmul's bias, a table's entries:
        :class:`compiler.ops.Constant`); outputs' regions are zero."""
        image = np.zeros(self.machine.EXT_WORDS, dtype=np.int64)
        levels = self.quantized_inputs(inputs)
        for entry in self.ext.values():
            node = self.graph.nodes[entry.node]
            constant = constant_of(entry, self.graph.nodes, self.machine)
            if constant is not None:   # a matmul's bias (int32), a table's entries
                extra = (self.machine,) if constant.machine else ()
                image[entry.addr:entry.end] = constant.values(node, self.graph.nodes, self.scales, *extra)
                continue
            if OPS[entry.kind].role is not Role.SOURCE:
                continue
            if node.id in levels:
                values = levels[node.id]
            else:
                values = self.quantized_weight(node.id)
                if is_int4(node):
                    values = pack_int4(values)
            if entry.panel:
                values = panel_major(values, entry.panel)
            if entry.fmt:   # int8 four to a word, in the order above (compiler/packing.py)
                values = pack_int8(values)
            image[entry.addr:entry.addr + entry.words] = np.ravel(values)
        return to_words(image)

    def run(self, inputs: Mapping[str, object], *, warn: bool = True) -> RunOutcome:
        """Run on the reference machine and read every output back.

        Input values beyond the range an input's scale holds are clipped to -127 or 127, as
        in any int8 quantization; the outcome's ``clipped`` counts them per input, and a
        :class:`SaturationWarning` (``warnings`` module) names the inputs when any were,
        unless ``warn`` is False (test harnesses that run held-out data on purpose).

        Raises:
            ValueError: bad inputs (see :meth:`quantized_inputs`).
            sim.machine.MachineError: the program is illegal (a compiler bug).
        """
        clipped = self.clipped_inputs(inputs)
        if warn and any(clipped.values()):
            warnings.warn(self._clipping_message(inputs, clipped), SaturationWarning, stacklevel=2)
        state = self.run_launches(self.ext_image(inputs))
        outputs = {}
        for entry in self.ext.values():
            if OPS[entry.kind].role is not Role.SINK:
                continue
            words = state.ext[entry.addr:entry.addr + entry.words]
            source = self.graph.nodes[self.graph.nodes[entry.node].ins[0]]
            if not OPS[source.op].scaled:   # row indices
                ints = s32(words).reshape(entry.shape)
                floats = ints.astype(np.float64)
            else:
                ints = s8(words).reshape(entry.shape)
                floats = ints * self.scales[entry.node]
            outputs[entry.name] = OutputValue(ints, floats)
        return RunOutcome(outputs, state.counters, state, clipped, inputs)

    def launches(self) -> list[list[Instruction]]:
        """The program as the machine runs it: one launch when it fits the instruction memory;
        else (``compile_graph(..., launches=True)``) pieces of IMEM_WORDS - 1 instructions
        and a HALT each, the last ending in the program's HALT. Run one after another, each
        starting from the scratchpad and the external memory the one before left (GA2.md
        section 2: reset keeps the scratchpad), they do what the whole program does; each
        launch costs its own front end and HALT."""
        size = self.machine.IMEM_WORDS
        if len(self.code) <= size:
            return [list(self.code)]
        body, halt = list(self.code[:-1]), self.code[-1]
        pieces = [body[at:at + size - 1] for at in range(0, len(body), size - 1)]
        return [[*piece, halt] for piece in pieces]

    def run_launches(self, ext: np.ndarray) -> RunResult:
        """Run :meth:`launches` on the reference machine from the external image ``ext``; the
        final state, its counters the sums over the launches."""
        total = Counters()
        state = None
        for code in self.launches():
            state = Machine(self.machine).run(code, ext if state is None else state.ext,
                                              spad=None if state is None else state.spad)
            for name in vars(total):
                setattr(total, name, getattr(total, name) + getattr(state.counters, name))
        state.counters = total
        return state

    def whose(self, memory: str, address: int, pc: int | None = None) -> str | None:
        """What a memory word holds, in the program's terms (:mod:`compiler.symbols`).

        Args:
            memory: ``"ext"`` (external memory) or ``"spad"`` (scratchpad).
            address: the word's address.
            pc: for the scratchpad, the instruction at whose time to look (its buffers come
                and go); default: the last one (the HALT).

        Returns:
            ``output 'probs' row 1 col 2, from node 9 (softmax)``, ``weight 'w1' row 0 col 3
            (node 2)``, ``node 4 (matmul 'h') row 1 col 0``, ``accumulator of node 4
            (matmul 'h'), word 6 of 16``, ``free scratchpad``; None for an external word outside
            every region.

        Raises:
            ValueError: an unknown memory.
        """
        if memory == "ext":
            return ext_symbol(self, int(address))
        if memory == "spad":
            return spad_symbol(self, int(address), len(self.code) - 1 if pc is None else int(pc))
        raise ValueError(f"memory={memory!r}: expected 'ext' or 'spad'")

    def tensor_address(self, nid: int) -> int | None:
        """Scratchpad address of a tensor at the end of the program, None once released.

        Raises:
            ValueError: ``nid`` is not a node of the graph, or the node has no scratchpad
                place (an output).
        """
        self._tensor_node(nid)
        buf_id, row = self.placement.loc[int(nid)]
        base = self.placement.buffers[buf_id].addr
        if base is None:
            return None
        return base + row * self.graph.nodes[int(nid)].shape[1]

    def read_tensor(self, outcome: RunOutcome | RunResult, nid: int) -> np.ndarray:
        """A tensor's integers from the scratchpad after a run, int64 (rows, cols).

        Every tensor is still in place only when compiled with ``reuse=False``.

        Raises:
            ValueError: ``outcome`` is not what :meth:`run` returned, ``nid`` is not a node of
                the graph, the tensor's buffer was released (another may have overwritten it)
                or never placed (an input or weight that streamed), or the node is an output
                (it has no scratchpad place).
        """
        if not isinstance(outcome, RunOutcome | RunResult):
            raise ValueError(f"read_tensor: outcome = {shown(outcome)} is not what Program.run returned. "
                             "Fix: pass outcome = program.run(inputs)")
        node = self._tensor_node(nid)
        readers = [r for r in self.graph.nodes if nid in r.ins and OPS[r.op].fuses_into]
        if readers and int(nid) not in self.relu_fused:
            raise ValueError(f"{node.describe()} was overwritten in place by its relu, "
                             f"{readers[0].describe()} (compiled with the fusion pass switched off). "
                             "Fix: read the relu")
        addr = self.tensor_address(nid)
        if addr is None:
            if self.placement.buffer_of(node.id).home is None:
                raise ValueError(f"{node.describe()} was never placed in the scratchpad: it streamed from "
                                 "external memory in blocks")
            raise ValueError(f"the buffer of {node.describe()} was released before the end of the program")
        spad = outcome.state.spad if isinstance(outcome, RunOutcome) else outcome.spad
        words = spad[addr:addr + node.words]
        return (s8(words) if OPS[node.op].scaled else s32(words)).reshape(node.shape)

    def _tensor_node(self, nid: object) -> Node:
        """The node ``nid`` names, if it has a scratchpad place; else a ValueError that says why."""
        count = len(self.graph.nodes)
        if isinstance(nid, bool | np.bool_) or not isinstance(nid, int | np.integer) or not 0 <= nid < count:
            ids = f", ids 0..{count - 1}" if count else ""
            raise ValueError(f"node id {shown(nid)} is not a node of this graph (it has "
                             f"{plural(count, 'node')}{ids}). Fix: pass an id a Graph method returned")
        node = self.graph.nodes[int(nid)]
        if OPS[node.op].role is Role.SINK:
            raise ValueError(f"{node.describe()} is an output and has no scratchpad place. Fix: read "
                             f"outcome.outputs['{node.name}'], or the tensor it stores, node {node.ins[0]}")
        if int(nid) not in self.placement.loc:
            raise ValueError(f"{node.describe()} has no scratchpad place")
        return node
