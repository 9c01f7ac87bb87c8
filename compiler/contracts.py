"""The after-conditions of the passes, as checks (``compile_graph(..., check_contracts=True)``).

Each function asserts what its pass in :data:`compiler.pipeline.PASSES` promises, from the
pass's results alone, and raises :class:`ContractError` naming the pass and what is broken.
A broken contract is a compiler bug, never the user's graph: these checks are for testing
the compiler (``tests/compiler/test_pipeline.py`` runs them on the battery's graphs) and
for debugging a new pass or operation; they are off by default.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .layout import constant_regions
from .ops import OPS, RESULT, Op, Role
from .requant import shift_range

if TYPE_CHECKING:
    from .compilation import Compilation


class ContractError(AssertionError):
    """A pass did not deliver what its contract says (a bug in the compiler)."""


def _require(ok: bool, pass_name: str, what: str) -> None:
    if not ok:
        raise ContractError(f"pass {pass_name}: {what}")


def check_reads(pass_name: str, state: Compilation, reads: Iterable[str]) -> None:
    """Every field the pass reads is set (a pass run before the ones it needs fails here)."""
    for name in reads:
        optional = name in ("events", "fixed_ranges", "pack")
        _require(optional or getattr(state, name) is not None, pass_name,
                 f"needs '{name}', which no earlier pass set")


def check_cse(state: Compilation) -> None:
    nodes, source = state.graph.nodes, state.source.nodes
    _require(sorted(state.node_of) == list(range(len(source))), "cse",
             "node_of does not map every node of the argument graph")
    for node in source:
        into = nodes[state.node_of[node.id]]
        _require(into.op == node.op and into.shape == node.shape, "cse",
                 f"{node.describe()} is mapped to {into.describe()}, another operation or shape")
        _require(into.ins == tuple(state.node_of[i] for i in node.ins), "cse",
                 f"{node.describe()} is mapped to {into.describe()}, which reads other operands")
    _require(set(state.node_of.values()) == set(range(len(nodes))), "cse",
             "a node of the merged graph computes no node of the argument graph")


def check_fusion(state: Compilation) -> None:
    nodes = state.graph.nodes
    for nid in state.fused:
        readers = state.consumers[nid]
        _require(len(readers) == 1 and nodes[nid].op in OPS[nodes[readers[0]].op].fuses_into, "fusion",
                 f"node {nid} is fused but not read by exactly one operation that fuses into it")


def check_placement(state: Compilation) -> None:
    placement = state.placement
    for node in state.graph.nodes:
        placed = node.id in placement.loc
        _require(placed == (OPS[node.op].role is not Role.SINK), "placement",
                 f"{node.describe()} {'has' if placed else 'lacks'} a place")
        if placed:
            buf, row = placement.loc[node.id]
            end = row * node.shape[1] + node.words
            _require(end <= placement.buffers[buf].words, "placement",
                     f"{node.describe()} ends at word {end} of buffer {buf}, which has "
                     f"{placement.buffers[buf].words}")
            _require(node.id in placement.buffers[buf].members, "placement",
                     f"{node.describe()} is not listed as a member of buffer {buf}")


def check_lifetimes(state: Compilation) -> None:
    released = [buf for step in state.schedule.values() for buf in step]
    _require(len(released) == len(set(released)), "lifetimes", "a buffer is released twice")
    touched = {state.placement.loc[n.id][0] for n in state.graph.nodes
               if OPS[n.op].role is not Role.SOURCE and n.id in state.placement.loc}
    never = sorted(touched - set(released))
    _require(not never, "lifetimes", f"buffers {never} are never released")


def check_layout(state: Compilation) -> None:
    top = 0
    for entry in state.ext.values():
        _require(entry.addr == top and entry.words >= 1, "layout",
                 f"region '{entry.name}' does not follow the one before it (at {entry.addr}, expected {top})")
        top = entry.addr + entry.words
    _require(top == state.ext_words <= state.params.EXT_WORDS, "layout",
             f"the regions end at {top}, ext_words is {state.ext_words}")
    named = {n.name for n in state.graph.nodes if OPS[n.op].role in (Role.SOURCE, Role.SINK)}
    named |= {constant.region(n) for n, constant in constant_regions(state.graph, state.params)}
    _require(named == set(state.ext), "layout",
             "the regions are not one per input, weight, constant (a bias, a table) and output")


def check_calibration(state: Compilation) -> None:
    for node in state.graph.nodes:
        value = state.ranges.get(node.id)
        _require(value is not None and math.isfinite(value) and value >= 0, "calibration",
                 f"{node.describe()} has the range {value!r}")


def check_scales(state: Compilation) -> None:
    plan = state.plan
    by_group: dict[int, float] = {}
    for node in state.graph.nodes:
        scale = plan.scales.get(node.id)
        if not OPS[node.op].scaled:
            _require(scale is None, "scales", f"{node.describe()} holds indices but has a scale")
            continue
        _require(scale is not None and scale > 0 and math.isfinite(scale), "scales",
                 f"{node.describe()} has the scale {scale!r}")
        root = plan.group[node.id]
        _require(by_group.setdefault(root, scale) == scale, "scales",
                 f"{node.describe()} does not share its group's scale")
        for pin in OPS[node.op].scale.pins:
            target = node.id if pin.operand == RESULT else node.ins[pin.operand]
            _require(target in plan.pins, "scales", f"node {target} should be pinned by {node.describe()}")


def check_scheduling(state: Compilation) -> None:
    code, owners = state.emission.code, state.emission.owners
    _require(bool(code) and code[-1].op == "HALT" and all(i.op != "HALT" for i in code[:-1]), "scheduling",
             "the program does not end in its only HALT")
    _require(len(owners) == len(code), "scheduling", "owners do not follow the instructions")


def check_emission(state: Compilation) -> None:
    emission, params = state.emission, state.params
    code = emission.code
    _require(bool(code) and code[-1].op == "HALT", "emission", "the program does not end in HALT")
    _require(len(code) <= params.IMEM_WORDS, "emission", f"{len(code)} instructions exceed IMEM_WORDS")
    _require(emission.spad_high <= params.SPAD_WORDS, "emission", "the high-water mark exceeds SPAD_WORDS")
    low, high = shift_range(params)
    for key, (_, shift) in emission.requantizers.items():
        _require(low <= shift <= high, "emission", f"requantizer {key} has the shift {shift}")
    matmuls = {n.id for n in state.graph.nodes if n.op is Op.MATMUL}
    _require(set(emission.blockings) == matmuls, "emission", "not every matmul has its blocking recorded")
    for name, width in emission.panels.items():
        node = state.graph.nodes[state.graph.names[name]]
        streamed = [b for nid, b in emission.blockings.items() if state.graph.nodes[nid].ins[1] == node.id]
        _require(len(streamed) == 1 and streamed[0].stream_b and streamed[0].cols == width < node.shape[1],
                 "emission", f"'{name}' is stored in panels {width} wide; no matmul streams it so")
