"""``compile_graph``: the passes in order, from a float graph to a :class:`Program`.

Structure first, then data: the unit limits, relu fusion, placement and the external
layout depend on the graph alone and refuse a bad graph before any calibration work; then
the calibration data is checked and measured, the scales planned, and the program emitted
(seed chapter 11, figure 11.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sim.spec import DEFAULT, Params

from .allocator import AllocEvent
from .calibrate import calibration_ranges
from .emit import emit
from .fusion import fuse_relus
from .ir import CompileError, Graph, shown
from .layout import external_layout
from .lifetimes import release_schedule
from .limits import check_limits
from .placement import place
from .program import Program
from .scales import plan_scales


def compile_graph(graph: Graph, calibration: Sequence[Mapping[str, object]], reuse: bool = True,
                  ranges: Mapping[str, float] | None = None, params: Params = DEFAULT,
                  events: list[AllocEvent] | None = None) -> Program:
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
        events: if a list is given, the allocator's alloc and free events are appended.

    Raises:
        CompileError: the graph, the calibration data or ``ranges`` is refused, or an
            argument has the wrong type; the message names the node, input or argument at
            fault and says how to fix it.
    """
    check_arguments(graph, reuse, ranges, params, events)
    reuse = bool(reuse)
    check_limits(graph, params)
    consumers = graph.consumers()
    fused = fuse_relus(graph, consumers)
    placement = place(graph, consumers)
    schedule = release_schedule(graph, placement)
    ext, ext_words = external_layout(graph, params)
    plan = plan_scales(graph, calibration_ranges(graph, calibration), ranges)
    emission = emit(graph, plan.scales, fused, placement, schedule, ext, reuse, params, events)
    return Program(graph=graph, code=emission.code, scales=plan.scales, params=emission.requant,
                   relu_fused=fused, plan=plan, placement=placement, ext=ext, ext_words=ext_words,
                   spad_high=emission.spad_high, notes=plan.notes, reuse=reuse, machine=params)


def check_arguments(graph: object, reuse: object, ranges: object, params: object, events: object) -> None:
    """Refuse arguments of compile_graph of the wrong type, naming the argument and its value
    (the calibration data is checked by :mod:`compiler.calibrate`).

    Raises:
        CompileError: the argument at fault, its value and what it should be.
    """
    if not isinstance(graph, Graph):
        raise CompileError(f"compile_graph: graph = {shown(graph)} is not a compiler.Graph",
                           "build the graph with compiler.Graph() and its methods and pass it first")
    if not isinstance(reuse, bool | np.bool_):
        raise CompileError(f"compile_graph: reuse = {shown(reuse)} is not True or False",
                           "pass reuse=True (release dead buffers) or reuse=False (keep every tensor)")
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
