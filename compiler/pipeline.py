"""``compile_graph``: the passes in order, from a float graph to a :class:`Program`.

Structure first, then data: the unit limits, relu fusion, placement and the external
layout depend on the graph alone and refuse a bad graph before any calibration work; then
the calibration data is checked and measured, the scales planned, and the program emitted
(seed chapter 11, figure 11.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sim.spec import DEFAULT, Params

from .allocator import AllocEvent
from .calibrate import calibration_ranges
from .emit import emit
from .fusion import fuse_relus
from .ir import Graph
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
        ranges: tag -> range, fixing the range of tensors tagged with ``Graph.tag``.
        params: the machine to compile for (tile size T, K_MAX, SPAD_WORDS, EXT_WORDS,
            SM_MAX_LEN, IMEM_WORDS).
        events: if a list is given, the allocator's alloc and free events are appended.

    Raises:
        CompileError: the graph, the calibration data or ``ranges`` is refused; the message
            names the node or input at fault and says how to fix it.
    """
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
