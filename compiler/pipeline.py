"""The pipeline as data: the passes in order, each with its contract, and ``compile_graph``.

:data:`PASSES` is the one list of passes. Each :class:`Pass` has a name, names the fields of
the shared :class:`~compiler.compilation.Compilation` it reads and writes and states what
holds before and after it; its ``check`` asserts the after-condition where that is cheap (run
with ``check_contracts=True``, :mod:`compiler.contracts`). A pass that later passes can do
without can be switched off by name (``compile_graph(..., disable={"cse", "fusion"})``, or the
passes to run listed, ``passes="limits,fusion,..."``, as xDSL's ``-p``): it then runs its
``off`` instead, which sets what it writes without its work (:func:`switched_off` refuses an
unknown name, or a pass a later one needs). Structure first, then data: the unit limits, relu fusion,
placement, lifetimes and the external layout depend on the graph alone and refuse a bad
graph before any calibration work (the PyTorch front end runs this structural prefix,
:func:`check_structure`, to refuse a model early); then the calibration data is checked and
measured, the scales planned, and the program emitted (seed chapter 11, figure 11.1).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from sim.spec import DEFAULT, Params

from . import contracts
from .allocator import AllocEvent, ScratchpadFull
from .arguments import check_arguments
from .calibrate import calibration_values, ranges_of
from .compilation import Compilation
from .cse import eliminate
from .emit import Emission, emit
from .errors import CompileError, shown
from .fusion import fuse_relus
from .ir import Graph
from .layout import ExtEntry, external_layout, with_panels
from .lifetimes import release_schedule
from .limits import check_limits
from .lowering.table import LOWERINGS
from .ops import OPS
from .placement import place
from .program import Program
from .scales import ZeroRangeWarning, plan_scales
from .schedule import reorder_emission, reordering
from .spill import spill_levels, spill_regions, spills_by_node
from .tables import TableSaturationWarning, saturation_notes


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
        off: what it does when switched off (``compile_graph(disable={name})``): sets what it
            writes without its work, so that the later passes run as before (the after-condition
            still holds). None: it cannot be switched off.
    """

    name: str
    run: Callable[[Compilation], None]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    before: str
    after: str
    check: Callable[[Compilation], None] | None = None
    off: Callable[[Compilation], None] | None = None


def _limits(c: Compilation) -> None:
    check_limits(c.graph, c.params)


def _cse(c: Compilation) -> None:
    c.source = c.graph
    checks = tuple(p for p in structural_passes() if p.name != "cse")

    def check(graph: Graph) -> None:
        run_passes(Compilation(graph=graph, params=c.params, pack=c.pack), checks)

    merged = eliminate(c.graph, check)
    c.graph, c.node_of = merged.graph, merged.node_of


def _no_cse(c: Compilation) -> None:
    """Every node kept: the graph is its own source, each node its own."""
    c.source = c.graph
    c.node_of = {n.id: n.id for n in c.graph.nodes}


def _fusion(c: Compilation) -> None:
    c.consumers = c.graph.consumers()
    c.fused = fuse_relus(c.graph, c.consumers)


def _no_fusion(c: Compilation) -> None:
    """Its refusals hold either way; nothing fused: each relu is an identity RQ of its own."""
    _fusion(c)
    c.fused = set()


def _placement(c: Compilation) -> None:
    c.placement = place(c.graph, c.consumers)


def _lifetimes(c: Compilation) -> None:
    c.schedule = release_schedule(c.graph, c.placement)


def _layout(c: Compilation) -> None:
    c.ext, c.ext_words = external_layout(c.graph, c.params, c.pack)


def _calibration(c: Compilation) -> None:
    values = calibration_values(c.graph, c.calibration)
    c.ranges = ranges_of(c.graph, values)
    c.table_inputs = {n.id: values[n.ins[0]] for n in c.graph.nodes if OPS[n.op].clips_input}


def _scales(c: Compilation) -> None:
    c.plan = plan_scales(c.graph, c.ranges, c.fixed_ranges)
    for note in c.plan.stand_ins:
        warnings.warn(note, ZeroRangeWarning, stacklevel=4)
    for note in saturation_notes(c.graph.nodes, c.plan.scales, c.table_inputs or {}):
        c.plan.notes.append(note)
        warnings.warn(note, TableSaturationWarning, stacklevel=4)


def _emission(c: Compilation) -> None:
    """Emission; when the scratchpad is full and tensors of images may live in external memory,
    again with more of them there (:func:`compiler.spill.spill_levels`), each try from a fresh
    placement."""
    c.first_event = len(c.events) if c.events is not None else 0
    base, top = c.ext, c.ext_words
    levels = list(spill_levels(c.graph, c.placement, c.params, c.fused)) if c.stream else [set()]
    for n, level in enumerate(levels):
        if n:
            _placement(c)
            _lifetimes(c)
            if c.events is not None:
                del c.events[c.first_event:]
        regions = spill_regions(c.graph, c.placement, level, top, c.params)
        c.ext = base | {entry.name: entry for entry in regions.values()}
        c.ext_words = max([top, *(entry.end for entry in regions.values())])
        try:
            c.emission = _ranked_emission(c, spills_by_node(c.graph, c.placement, regions, c.ext))
            return
        except ScratchpadFull:
            if n == len(levels) - 1:
                raise


def _ranked_emission(c: Compilation, spills: Mapping[int, ExtEntry]) -> Emission:
    """The emission; on a machine with MMRQ (OVERLAP = 2) two, the matmuls chained (MMRQ) and not
    (MM and RQ), ranked by their cycles on that machine after scheduling
    (:func:`compiler.schedule.reordering`, kept in ``c.reordering`` for the scheduling pass):
    the fewer wins, the chained one on a tie. The
    allocator's events are those of the one kept."""
    def one(chain: bool) -> Emission:
        return emit(c.graph, c.plan.scales, c.fused, c.placement, c.schedule, c.ext, params=c.params,
                    lowerings=LOWERINGS, reuse=c.reuse, events=c.events, stream=c.stream, spills=spills,
                    launches=c.launches, chain=chain)

    first = len(c.events) if c.events is not None else 0
    fresh = copy.deepcopy(c.placement)      # emission writes the buffers' addresses into it
    chained = one(True)
    if not any(ins.op == "MMRQ" for ins in chained.code):
        return chained
    kept, placed = (c.events[first:] if c.events is not None else None), c.placement
    if c.events is not None:
        del c.events[first:]
    c.placement = fresh
    try:
        plain = one(False)
    except ScratchpadFull:       # MM and RQ need an accumulator the chained form does without
        plain = None
    chained_order = reordering(chained.code, c.params)
    plain_order = reordering(plain.code, c.params) if plain is not None else None
    if plain_order is not None and plain_order.cycles < chained_order.cycles:
        c.reordering = plain_order
        return plain
    if c.events is not None:
        c.events[first:] = kept
    c.placement = placed
    c.reordering = chained_order
    return chained


def _scheduling(c: Compilation) -> None:
    if c.params.OVERLAP:
        reorder_emission(c.emission, c.params, c.events, c.first_event, known=c.reordering)


def _no_scheduling(c: Compilation) -> None:
    """The emitted order kept."""


PASSES: tuple[Pass, ...] = (
    Pass("limits", _limits, ("graph", "params"), (),
         "the graph is well formed (its builders checked every node)",
         "every node is within the limits its operation declares (K_MAX, SM_MAX_LEN)"),
    Pass("cse", _cse, ("graph", "params", "pack"), ("graph", "source", "node_of"),
         "every node is within its limits",
         "no two pure nodes of the graph compute the same tensor, unless merging them is refused "
         "by the structural passes (switched off: none merged); node_of maps every node of the "
         "argument graph into it", contracts.check_cse, off=_no_cse),
    Pass("fusion", _fusion, ("graph",), ("consumers", "fused"),
         "the graph is well formed",
         "every relu reads a matmul, add or conv2d that nothing else reads; fused holds those nodes (none "
         "when switched off: each relu is then an RQ of its own)",
         contracts.check_fusion, off=_no_fusion),
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
    Pass("scheduling", _scheduling, ("emission", "params", "events", "first_event"), ("emission",),
         "the program is emitted (each step's instructions together)",
         "OVERLAP = 1: the instructions are in an order their dependences allow that the issue rule "
         "dispatches in no more cycles (switched off: the emitted order); owners and the "
         "allocator's event pcs follow them", contracts.check_scheduling, off=_no_scheduling),
)
"""The passes of :func:`compile_graph`, in order (seed chapter 11, figure 11.1)."""

_ARGUMENTS = frozenset({"graph", "params", "pack"})
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

    A pass named in ``state.disabled`` runs its ``off`` (:func:`switched_off` has checked it has one).

    Raises:
        CompileError: a pass refuses the graph or its data.
        compiler.contracts.ContractError: with ``check``, a pass broke its contract (a
            compiler bug).
    """
    for p in PASSES if passes is None else passes:
        if check:
            contracts.check_reads(p.name, state, p.reads)
        (p.off if p.name in state.disabled else p.run)(state)
        if check and p.check is not None:
            p.check(state)


def switched_off(disable: object = (), passes: object = None) -> frozenset[str]:
    """The names of the passes to switch off, from ``compile_graph``'s ``disable`` (the passes
    not to run) or ``passes`` (the passes to run, every other one switched off). Each is a
    collection of pass names or one string of names separated by commas (``"cse,fusion"``, as
    xDSL's ``-p``).

    Raises:
        CompileError: both are given; a name is not a pass of :data:`PASSES`, or named twice;
            ``passes`` lists them out of the pipeline's order; a pass that a later one needs
            (it has no ``off``) is switched off. The message names the pass and the passes
            that can be switched off.
    """
    if passes is not None and _names(disable, "disable"):
        raise CompileError("compile_graph: both disable= and passes= are given",
                           "name the passes to switch off (disable=) or those to run (passes=), not both")
    order = [p.name for p in PASSES]
    optional = [p.name for p in PASSES if p.off is not None]
    if passes is None:
        off = _names(disable, "disable")
    else:
        chosen = _names(passes, "passes")
        if chosen != sorted(chosen, key=order.index):
            raise CompileError(f"compile_graph: passes= lists {', '.join(chosen)}, not in the "
                               "pipeline's order", f"list them as the pipeline runs them: {', '.join(order)}")
        off = [name for name in order if name not in chosen]
    for name in off:
        needer = _needed_by(name)
        if needer is not None:
            given = "passes= leaves out" if passes is not None else "disable= names"
            raise CompileError(f"compile_graph: {given} the pass '{name}', which cannot be switched off: "
                               f"{needer}", f"switch off only {', '.join(optional)}")
    return frozenset(off)


def _names(value: object, argument: str) -> list[str]:
    """The pass names an argument gives (a string of names separated by commas, or a collection
    of names), each checked to be a pass, none twice."""
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",") if n.strip()]
    elif isinstance(value, Collection) and all(isinstance(n, str) for n in value):
        names = list(value)
    else:
        raise CompileError(f"compile_graph: {argument} = {shown(value)} is not a list of pass names",
                           f'pass {argument}={{"cse", "fusion"}} or {argument}="cse,fusion"')
    known = [p.name for p in PASSES]
    for name in names:
        if name not in known:
            raise CompileError(f"compile_graph: {argument}= names {name!r}, which is not a pass of the "
                               "pipeline", f"name passes of compiler.pipeline.PASSES: {', '.join(known)}")
        if names.count(name) > 1:
            raise CompileError(f"compile_graph: {argument}= names the pass '{name}' twice", "name it once")
    return names


def _needed_by(name: str) -> str | None:
    """Why the pass ``name`` cannot be switched off (the later pass that reads what it writes),
    or None when it can."""
    at = next(k for k, p in enumerate(PASSES) if p.name == name)
    if PASSES[at].off is not None:
        return None
    for later in PASSES[at + 1:]:
        shared = [field for field in PASSES[at].writes if field in later.reads]
        if shared:
            return f"the pass '{later.name}' reads the {shared[0]} it writes"
    return "it checks the graph against the machine, and nothing else would"


def check_structure(graph: Graph, params: Params, pack: bool | None = None) -> None:
    """Run the structural passes (limits, cse, fusion, placement, lifetimes, layout) on a graph:
    what needs no calibration data, so that a graph they refuse fails before any.

    Raises:
        CompileError: the graph is refused; the message names the node at fault.
    """
    run_passes(Compilation(graph=graph, params=params, pack=pack), structural_passes())


def compile_graph(graph: Graph, calibration: Sequence[Mapping[str, object]], reuse: bool = True,
                  ranges: Mapping[str, float] | None = None, params: Params = DEFAULT,
                  events: list[AllocEvent] | None = None, check_contracts: bool = False,
                  stream: bool = True, pack: bool | None = None, cse: bool = True,
                  fuse: bool = True, reorder: bool = True, *, disable: object = (),
                  passes: object = None, launches: bool = False) -> Program:
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
            SM_MAX_LEN, IMEM_WORDS, OVERLAP); by default :data:`sim.spec.DEFAULT`, the 4 x 4
            machine of GA2.md. Every function beneath takes the machine explicitly.
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
        disable: the passes to switch off, by name (a set, or ``"cse,fusion"``): ``cse``
            keeps every node (:mod:`compiler.cse`; a graph without repeats compiles to the
            same program either way; on, ``Program.graph`` is the merged graph and
            ``Program.node_of`` maps the ids of ``graph`` into it); ``fusion`` gives each relu
            an identity RQ with relu = 1 of its own, in place, instead of the relu flag of the
            instruction that writes its operand (one more pass over the tensor, the same
            integers; the graphs refused are the same); ``scheduling`` keeps the emitted order
            on a machine whose engines overlap (on, :mod:`compiler.schedule` reorders it when
            that saves cycles; no effect on the serial machine). The others cannot be.
        passes: the passes to run, by name, in the pipeline's order (as xDSL's ``-p``); those
            left out are switched off. Give ``disable`` or ``passes``, not both.
        cse, fuse, reorder: False is the same as naming ``cse``, ``fusion`` or ``scheduling``
            in ``disable``.
        launches: a program longer than the instruction memory is run as several launches
            of at most IMEM_WORDS instructions each, one after another, the scratchpad and the
            external memory carried over (:meth:`Program.launches`; on a machine whose engines
            overlap each launch's HALT waits for every engine, so the launches mean what the
            whole program means).
            False (the default) refuses it, naming the instruction count.

    Raises:
        CompileError: the graph, the calibration data or ``ranges`` is refused, an argument
            has the wrong type, or a pass name is unknown or names a pass that cannot be
            switched off; the message names the node, input, argument or pass at fault and
            says how to fix it.
    """
    check_arguments(graph, reuse, ranges, params, events, stream, pack, cse, fuse, reorder)
    flags = {"cse": cse, "fusion": fuse, "scheduling": reorder}
    disabled = switched_off(disable, passes) | {name for name, on in flags.items() if not on}
    trace = [] if events is None else events
    first = len(trace)
    state = Compilation(graph=graph, params=params, calibration=calibration, fixed_ranges=ranges,
                        reuse=bool(reuse), events=trace, stream=bool(stream),
                        pack=None if pack is None else bool(pack), disabled=disabled, launches=bool(launches))
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
