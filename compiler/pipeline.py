"""The pipeline as data: the passes in order, each with its contract, and ``compile_graph``.

:data:`PASSES` is the one list of passes. Each :class:`Pass` names the fields of the shared
:class:`Compilation` it reads and writes and states what holds before and after it; its
``check`` asserts the after-condition where that is cheap (run with ``check_contracts=True``,
:mod:`compiler.contracts`). Structure first, then data: the unit limits, relu fusion,
placement, lifetimes and the external layout depend on the graph alone and refuse a bad
graph before any calibration work (the PyTorch front end runs this structural prefix,
:func:`check_structure`, to refuse a model early); then the calibration data is checked and
measured, the scales planned, and the program emitted (seed chapter 11, figure 11.1).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.spec import DEFAULT, Params

from . import contracts
from .allocator import AllocEvent
from .calibrate import calibration_values, ranges_of
from .cse import eliminate
from .emit import Emission, emit
from .errors import CompileError, plural, shown
from .fusion import fuse_relus
from .ir import Graph
from .layout import ExtEntry, external_layout, with_panels
from .lifetimes import release_schedule
from .limits import check_limits
from .ops import Op
from .placement import Placement, place
from .program import Program
from .scales import ScalePlan, ZeroRangeWarning, plan_scales
from .schedule import reorder_emission
from .tables import TableSaturationWarning, saturation_notes


@dataclass
class Compilation:
    """What the passes share: the arguments of :func:`compile_graph`, then what each pass adds.

    Attributes (arguments): graph, params (the machine), calibration (samples), fixed_ranges
    (``ranges=``), reuse, events (the allocator's trace, or None), stream (block matmuls
    whose operands do not fit the scratchpad whole), pack (int8 weights four to an external
    word: True, False, or None for only when needed; :mod:`compiler.packing`), cse (merge
    repeated pure subgraphs: :mod:`compiler.cse`), fuse (a relu is the relu flag of the
    instruction that writes its operand, else an RQ of its own: :mod:`compiler.fusion`).
    reorder (OVERLAP = 1: list-schedule the emitted code, :mod:`compiler.schedule`).
    Attributes (results, None until their pass ran): source (the argument graph: the cse pass
    replaces ``graph`` by the merged graph), node_of (source's node id -> the id of the node
    computing it in ``graph``), consumers (node id -> readers), fused
    (matmuls carrying a relu), placement, schedule (step -> buffers released there), ext and
    ext_words (the external layout), ranges (calibrated, node id -> largest |value|),
    table_inputs (table node id -> its input's calibration values), plan
    (the scale plan), emission (code, requantizers, high-water mark).
    """

    graph: Graph
    params: Params = DEFAULT
    calibration: Sequence[Mapping[str, object]] | None = None
    fixed_ranges: Mapping[str, float] | None = None
    reuse: bool = True
    events: list[AllocEvent] | None = None
    stream: bool = True
    pack: bool | None = None
    cse: bool = True
    fuse: bool = True
    reorder: bool = True
    first_event: int = 0
    source: Graph | None = field(default=None, repr=False)
    node_of: dict[int, int] | None = None
    consumers: dict[int, list[int]] | None = None
    fused: set[int] | None = None
    placement: Placement | None = None
    schedule: dict[int, list[int]] | None = None
    ext: dict[str, ExtEntry] | None = field(default=None, repr=False)
    ext_words: int | None = None
    ranges: dict[int, float] | None = None
    table_inputs: dict[int, np.ndarray] | None = field(default=None, repr=False)
    plan: ScalePlan | None = None
    emission: Emission | None = None


@dataclass(frozen=True)
class Pass:
    """One pass of the pipeline.

    Attributes:
        name: a short name (``placement``).
        run: the pass, on the shared :class:`Compilation`.
        reads: the fields it needs (they must be set before it runs).
        writes: the fields it sets.
        before: what must hold before it runs, in words.
        after: what holds after it, in words.
        check: asserts the after-condition (raises :class:`compiler.contracts.ContractError`),
            or None where the pass itself is the check.
    """

    name: str
    run: Callable[[Compilation], None]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    before: str
    after: str
    check: Callable[[Compilation], None] | None = None


def _limits(c: Compilation) -> None:
    check_limits(c.graph, c.params)


def _cse(c: Compilation) -> None:
    c.source = c.graph
    if not c.cse:
        c.node_of = {n.id: n.id for n in c.graph.nodes}
        return
    checks = tuple(p for p in structural_passes() if p.name != "cse")

    def check(graph: Graph) -> None:
        run_passes(Compilation(graph, c.params, pack=c.pack), checks)

    merged = eliminate(c.graph, check)
    c.graph, c.node_of = merged.graph, merged.node_of


def _fusion(c: Compilation) -> None:
    c.consumers = c.graph.consumers()
    fused = fuse_relus(c.graph, c.consumers)       # its refusals hold either way
    c.fused = fused if c.fuse else set()


def _placement(c: Compilation) -> None:
    c.placement = place(c.graph, c.consumers)


def _lifetimes(c: Compilation) -> None:
    c.schedule = release_schedule(c.graph, c.placement)


def _layout(c: Compilation) -> None:
    c.ext, c.ext_words = external_layout(c.graph, c.params, c.pack)


def _calibration(c: Compilation) -> None:
    values = calibration_values(c.graph, c.calibration)
    c.ranges = ranges_of(c.graph, values)
    c.table_inputs = {n.id: values[n.ins[0]] for n in c.graph.nodes if n.op == Op.TABLE}


def _scales(c: Compilation) -> None:
    c.plan = plan_scales(c.graph, c.ranges, c.fixed_ranges)
    for note in c.plan.stand_ins:
        warnings.warn(note, ZeroRangeWarning, stacklevel=4)
    for note in saturation_notes(c.graph, c.plan.scales, c.table_inputs or {}):
        c.plan.notes.append(note)
        warnings.warn(note, TableSaturationWarning, stacklevel=4)


def _emission(c: Compilation) -> None:
    c.first_event = len(c.events) if c.events is not None else 0
    c.emission = emit(c.graph, c.plan.scales, c.fused, c.placement, c.schedule, c.ext, c.reuse, c.params,
                      c.events, c.stream)


def _scheduling(c: Compilation) -> None:
    if c.reorder and c.params.OVERLAP:
        reorder_emission(c.emission, c.params, c.events, c.first_event)


PASSES: tuple[Pass, ...] = (
    Pass("limits", _limits, ("graph", "params"), (),
         "the graph is well formed (its builders checked every node)",
         "every node is within the limits its operation declares (K_MAX, SM_MAX_LEN)"),
    Pass("cse", _cse, ("graph", "params", "pack", "cse"), ("graph", "source", "node_of"),
         "every node is within its limits",
         "no two pure nodes of the graph compute the same tensor, unless merging them is refused "
         "by the structural passes; node_of maps every node of the argument graph into it",
         contracts.check_cse),
    Pass("fusion", _fusion, ("graph", "fuse"), ("consumers", "fused"),
         "the graph is well formed",
         "every relu reads a matmul or add that nothing else reads; fused holds those nodes (none "
         "with fuse off: each relu is then an RQ of its own)",
         contracts.check_fusion),
    Pass("placement", _placement, ("graph", "consumers"), ("placement",),
         "relus are fused (a relu's matmul has no other reader)",
         "every node but an output has a place (buffer, row) that lies inside its buffer; views "
         "and stacked parts share their buffer with the node they belong to",
         contracts.check_placement),
    Pass("lifetimes", _lifetimes, ("graph", "placement"), ("schedule",),
         "every tensor is placed",
         "every buffer a step touches is released once, at its last touch, in first-touch order",
         contracts.check_lifetimes),
    Pass("layout", _layout, ("graph", "params", "pack"), ("ext", "ext_words"),
         "the graph is well formed",
         "inputs and weights, then outputs, have consecutive disjoint regions from word 0 that fit "
         "EXT_WORDS", contracts.check_layout),
    Pass("calibration", _calibration, ("graph", "calibration"), ("ranges", "table_inputs"),
         "the structure is accepted (the passes above ran)",
         "every node has a finite calibrated range >= 0; the samples are checked",
         contracts.check_calibration),
    Pass("scales", _scales, ("graph", "ranges", "fixed_ranges", "table_inputs"), ("plan",),
         "every node has a range",
         "every node but an argmax has a positive normal scale; a scale group shares one scale; "
         "pinned groups have the hardware's scale; a table whose input was clipped on the "
         "calibration samples is noted by name (and warned of)", contracts.check_scales),
    Pass("emission", _emission,
         ("graph", "plan", "fused", "placement", "schedule", "ext", "reuse", "params", "events", "stream"),
         ("emission", "first_event"),
         "every tensor is placed and scaled; the layout and the release schedule are known",
         "the program ends in HALT and fits the instruction memory; its high-water mark fits the "
         "scratchpad; every requantizer's shift is legal; every matmul has its blocking, and only "
         "a source that streams in column blocks is stored in panels", contracts.check_emission),
    Pass("scheduling", _scheduling, ("emission", "params", "reorder", "events", "first_event"), ("emission",),
         "the program is emitted (each step's instructions together)",
         "OVERLAP = 1: the instructions are in an order their dependences allow that the issue rule "
         "dispatches in no more cycles; owners and the allocator's event pcs follow them",
         contracts.check_scheduling),
)
"""The passes of :func:`compile_graph`, in order (seed chapter 11, figure 11.1)."""

_ARGUMENTS = frozenset({"graph", "params", "pack", "cse", "fuse", "reorder"})
"""What the structural passes may read besides what earlier structural passes wrote."""


def structural_passes(passes: Sequence[Pass] | None = None) -> tuple[Pass, ...]:
    """The longest prefix of the passes that reads only the graph and the machine (and what
    earlier passes of the prefix wrote): the checks that need no calibration data."""
    known = set(_ARGUMENTS)
    prefix = []
    for p in PASSES if passes is None else passes:
        if not set(p.reads) <= known:
            break
        prefix.append(p)
        known |= set(p.writes)
    return tuple(prefix)


def run_passes(state: Compilation, passes: Sequence[Pass] | None = None, check: bool = False) -> None:
    """Run passes (by default :data:`PASSES`) over ``state``, in order.

    Args:
        check: also assert each pass's inputs are there and, where it has one, its
            after-condition (:mod:`compiler.contracts`); slower, for debugging the compiler.

    Raises:
        CompileError: a pass refuses the graph or its data.
        compiler.contracts.ContractError: with ``check``, a pass broke its contract (a
            compiler bug).
    """
    for p in PASSES if passes is None else passes:
        if check:
            contracts.check_reads(p.name, state, p.reads)
        p.run(state)
        if check and p.check is not None:
            p.check(state)


def check_structure(graph: Graph, params: Params = DEFAULT, pack: bool | None = None) -> None:
    """Run the structural passes (limits, cse, fusion, placement, lifetimes, layout) on a graph:
    what needs no calibration data, so that a graph they refuse fails before any.

    Raises:
        CompileError: the graph is refused; the message names the node at fault.
    """
    run_passes(Compilation(graph, params, pack=pack), structural_passes())


def compile_graph(graph: Graph, calibration: Sequence[Mapping[str, object]], reuse: bool = True,
                  ranges: Mapping[str, float] | None = None, params: Params = DEFAULT,
                  events: list[AllocEvent] | None = None, check_contracts: bool = False,
                  stream: bool = True, pack: bool | None = None, cse: bool = True,
                  fuse: bool = True, reorder: bool = True) -> Program:
    """Compile a graph to a GA-2 program.

    Args:
        graph: the graph.
        calibration: sample inputs, a list of dicts from input name to a 2-D array-like;
            each tensor's scale comes from the largest |value| it takes on them.
        reuse: release a buffer after its last reader (False keeps every buffer alive: a
            larger footprint, but every tensor can be read back after a run).
        ranges: tag -> range (a positive number), replacing the calibrated range of the
            tensors tagged with ``Graph.tag``. A tensor shares its scale with the other
            members of its group (see :mod:`compiler.scales`: concatenation parts, a relu,
            slices, and the outputs that store it), and a group's scale holds its largest
            range, the members' calibrated ranges included. So a fixed range can widen a
            scale but never narrow it below another member's range; in particular
            ``g.output(t, ...)`` of a tagged tensor ``t`` keeps t's calibrated range (the tag
            is on t, not on the output), and ``ranges`` can only raise t's scale. Whenever the
            scale does not hold the fixed range, ``Program.notes`` says so, naming the tag,
            the range the scale holds and the member that set it.
        params: the machine to compile for (tile size T, K_MAX, SPAD_WORDS, EXT_WORDS,
            SM_MAX_LEN, IMEM_WORDS).
        events: if a list is given, the allocator's alloc and free events are appended (as
            they happen, so a refused allocation leaves the events before it); the program
            keeps its own copy in ``Program.events`` either way.
        check_contracts: assert every pass's after-condition as it runs (for debugging the
            compiler; see :data:`PASSES`).
        stream: when a matmul's operands do not fit the scratchpad whole, stream inputs and
            weights from external memory in blocks (:mod:`compiler.streaming`; a graph that
            fits whole compiles to the same program either way). False refuses such a graph,
            as the seed's compiler does.
        pack: store int8 weights in external memory four to a word and load them with
            ``LD fmt=1`` (:mod:`compiler.packing`; the same cycles, a quarter of the external
            words): True always, False never, None (the default) only when the graph's
            regions one value a word do not fit EXT_WORDS (so a graph that fits compiles as
            it always has). ``Program.ext`` marks the packed regions (``fmt`` = 1).
        cse: compute a pure subgraph the graph repeats once (:mod:`compiler.cse`; a graph
            without repeats compiles to the same program either way). ``Program.graph`` is
            then the merged graph and ``Program.node_of`` maps the ids of ``graph`` into it.
        fuse: a relu rides on the instruction that writes its operand (the RQ of a matmul, the
            VADD of an add; seed chapter 11). False gives each relu an identity RQ with relu = 1
            of its own, in place: one more pass over the tensor (for the studies of what
            fusion is worth); the same integers either way. The graphs refused are the same.
        reorder: on a machine whose engines overlap (``params.OVERLAP = 1``), reorder the
            emitted instructions so that independent work overlaps (:mod:`compiler.schedule`:
            list scheduling by the issue rule, kept only when it saves cycles). No effect on
            the serial machine.

    Raises:
        CompileError: the graph, the calibration data or ``ranges`` is refused, or an
            argument has the wrong type; the message names the node, input or argument at
            fault and says how to fix it.
    """
    check_arguments(graph, reuse, ranges, params, events, stream, pack, cse, fuse, reorder)
    trace = [] if events is None else events
    first = len(trace)
    state = Compilation(graph, params, calibration, ranges, bool(reuse), trace, bool(stream),
                        None if pack is None else bool(pack), bool(cse), bool(fuse), bool(reorder))
    run_passes(state, check=check_contracts)
    emission = state.emission
    compiled = state.graph.snapshot()
    source = compiled if state.graph is graph else graph.snapshot()
    return Program(graph=compiled, code=emission.code, scales=state.plan.scales,
                   requantizers=emission.requantizers, relu_fused=state.fused, plan=state.plan,
                   placement=state.placement, ext=with_panels(state.ext, emission.panels),
                   ext_words=state.ext_words, spad_high=emission.spad_high, notes=state.plan.notes,
                   reuse=bool(reuse), machine=params, blockings=emission.blockings,
                   events=trace[first:], node_of=state.node_of, source=source, owners=emission.owners,
                   rankings=emission.rankings)


def check_arguments(graph: object, reuse: object, ranges: object, params: object, events: object,
                    stream: object = True, pack: object = None, cse: object = True,
                    fuse: object = True, reorder: object = True) -> None:
    """Refuse arguments of compile_graph of the wrong type, naming the argument and its value
    (the calibration data is checked by :mod:`compiler.calibrate`).

    Raises:
        CompileError: the argument at fault, its value and what it should be.
    """
    if not isinstance(graph, Graph):
        raise CompileError(f"compile_graph: graph = {shown(graph)} is not a compiler.Graph",
                           "build the graph with compiler.Graph() and its methods and pass it first")
    if not graph.outputs():
        raise CompileError(f"compile_graph: the graph (graph #{graph.number}, "
                           f"{plural(len(graph.nodes), 'node')}) has no output, so its program would store "
                           "nothing a host can read",
                           "mark each result with graph.output(node, 'name')")
    if not isinstance(reuse, bool | np.bool_):
        raise CompileError(f"compile_graph: reuse = {shown(reuse)} is not True or False",
                           "pass reuse=True (release dead buffers) or reuse=False (keep every tensor)")
    if not isinstance(stream, bool | np.bool_):
        raise CompileError(f"compile_graph: stream = {shown(stream)} is not True or False",
                           "pass stream=True (block a matmul that does not fit whole) or stream=False")
    for name, value, meaning in (("cse", cse, "compute a repeated subgraph once"),
                                 ("fuse", fuse, "a relu rides on the instruction before it"),
                                 ("reorder", reorder, "overlap independent work")):
        if not isinstance(value, bool | np.bool_):
            raise CompileError(f"compile_graph: {name} = {shown(value)} is not True or False",
                               f"pass {name}=True ({meaning}) or {name}=False")
    if pack is not None and not isinstance(pack, bool | np.bool_):
        raise CompileError(f"compile_graph: pack = {shown(pack)} is not True, False or None",
                           "pass pack=True (int8 weights four to an external word), pack=False (one a "
                           "word) or leave it out (packed only when they do not fit otherwise)")
    if ranges is not None:
        if not isinstance(ranges, Mapping):
            raise CompileError(f"compile_graph: ranges = {shown(ranges)} is not a dict",
                               "pass a dict from tag to range, e.g. ranges={'cache': 4.0}")
        for tag in ranges:
            if not isinstance(tag, str):
                raise CompileError(f"compile_graph: ranges has the key {shown(tag)}, not a tag name",
                                   "key ranges= by the names given with Graph.tag(node, name)")
    if not isinstance(params, Params):
        raise CompileError(f"compile_graph: params = {shown(params)} is not a sim.spec.Params",
                           "pass sim.spec.Params(T=..., ...) or leave params out for the default machine")
    if events is not None and not isinstance(events, list):
        raise CompileError(f"compile_graph: events = {shown(events)} is not a list",
                           "pass an empty list to collect the allocator's events, or leave events out")
    missing = [node for node in graph.nodes if node.op is Op.WEIGHT and node.array is None]
    if missing:
        raise CompileError(f"{missing[0].describe()} has no values (the graph was parsed from text without "
                           "them)", "pass Graph.parse(text, weights={name: values, ...})", missing[0].id)
