"""Scale planning: one int8 scale (real value per int8 step) for every tensor.

Contract: given each node's calibrated range, :func:`plan_scales` returns a positive scale
for every node except argmax (whose result is an index), such that (seed chapter 11; each
operation's part is its ``scale`` rule in the table of :mod:`compiler.ops`):

* tensors that must share a scale do: the parts of a concatenation and its result (one
  buffer), a relu's input and result, a slice and its source (views), an output and the
  tensor it stores (the rule's ``joins``). These groups are found with a union-find;
* a group's scale is its largest range / 127; the group of an add's result also covers the
  ranges of the add's two operands (``covers``), which are rescaled to the sum's scale and
  must not clip there, even when they cancel;
* pinned by the hardware (``pins``): a softmax's input group gets 1/16, since the softmax
  unit reads Q4.4 (GA2.md section 4), and its output group 1/127 (probability 1.0 is
  level 127);
* an int4 weight's group uses the range -7..7, so its scale is range / 7 (seed chapter 13;
  the table's ``levels``);
* ``fixed_ranges`` (the ``ranges=`` of compile_graph) replaces the calibrated range of
  tagged tensors (a KV cache, say, whose scale must not change between decode steps); the
  group still takes its members' largest range, so a fixed range widens a group's scale but
  cannot narrow it below an untagged member's calibrated range (an output of the tensor is
  such a member), and a pinned group keeps its pin: a note says so, naming the tag;
* a note is written wherever a pinned scale cannot hold a calibrated range (those values
  will saturate); a group with a range of 0 gets the stand-in scale 1/127, with a note when
  its values come from the run's inputs (calibration never saw them other than 0);
* a scale below the smallest normal float (about 2.2e-308, a range under about 2.8e-306)
  has lost precision: it is refused.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from sim.arith import INT8_MAX

from .errors import CompileError, shown
from .ir import Graph
from .ops import OPS, RESULT, Role


class UnionFind:
    """Groups of node ids; :meth:`find` gives a group's representative."""

    def __init__(self, size: int):
        self.parent = list(range(size))

    def find(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


@dataclass
class ScalePlan:
    """The result of scale planning.

    Attributes:
        scales: node id -> scale (float > 0); argmax nodes are absent.
        ranges: node id -> the range used (calibrated, or fixed by ``ranges=``).
        group: node id -> representative of its scale-sharing group.
        group_range: representative -> the range the group's scale must hold.
        pins: node id -> why its scale is fixed by hardware, for the members of pinned groups.
        notes: warnings, one sentence each (values that will saturate).
        stand_ins: the notes of groups whose calibrated range is 0 (also in ``notes``):
            ``compile_graph`` also warns them (:class:`ZeroRangeWarning`).
    """

    scales: dict[int, float]
    ranges: dict[int, float]
    group: dict[int, int]
    group_range: dict[int, float]
    pins: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    stand_ins: list[str] = field(default_factory=list)


class ZeroRangeWarning(UserWarning):
    """Every calibration value of a tensor computed from the inputs was 0, so its scale is a
    stand-in that calibration never tested: larger values saturate at run time
    (the same sentence is in ``Program.notes``)."""


def _apply_fixed_ranges(graph: Graph, ranges: dict[int, float],
                        fixed_ranges: Mapping[str, float] | None) -> None:
    if not fixed_ranges:
        return
    tags = {node.tag for node in graph.nodes if node.tag is not None}
    for tag, value in fixed_ranges.items():
        if tag not in tags:
            raise CompileError(f"ranges= names '{tag}', but no tensor carries that tag "
                               f"(tags: {', '.join(sorted(tags)) or 'none'})",
                               "tag the tensor with Graph.tag(node, name) or fix the name")
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise CompileError(f"ranges['{tag}'] = {shown(value)} is not a number",
                               "give the largest |value| the tensor may take, e.g. 4.0")
        if not np.isfinite(float(value)):
            raise CompileError(f"ranges['{tag}'] = {value!r} is not finite",
                               "give the largest |value| the tensor may take, a finite number")
        if not value > 0:
            raise CompileError(f"ranges['{tag}'] = {value!r} is not positive",
                               "give the largest |value| the tensor may take, a number above 0")
    for node in graph.nodes:
        if node.tag is not None and node.tag in fixed_ranges:
            ranges[node.id] = float(fixed_ranges[node.tag])


def _join_groups(graph: Graph) -> UnionFind:
    groups = UnionFind(len(graph.nodes))
    for node in graph.nodes:
        for k in OPS[node.op].scale.joins:
            groups.union(node.ins[k], node.id)
    return groups


def _group_ranges(graph: Graph, ranges: Mapping[int, float], group: Mapping[int, int]) -> dict[int, float]:
    """Each group's range: the largest of its scaled members' and of the operands they cover."""
    group_range: dict[int, float] = {}
    for node in graph.nodes:
        spec = OPS[node.op]
        root = group[node.id]
        if spec.scaled:
            group_range[root] = max(group_range.get(root, 0.0), ranges[node.id])
        for k in spec.scale.covers:
            group_range[root] = max(group_range.get(root, 0.0), ranges[node.ins[k]])
    return group_range


def _pin_groups(graph: Graph, plan: ScalePlan) -> tuple[dict[int, float], dict[int, str]]:
    """Group representative -> the scale the hardware pins it to, and why (the last pin
    applied wins); a note for each pinned operand group whose range that scale cannot hold."""
    pinned: dict[int, float] = {}
    why: dict[int, str] = {}
    for node in graph.nodes:
        for pin in OPS[node.op].scale.pins:
            target = node.id if pin.operand == RESULT else node.ins[pin.operand]
            root = plan.group[target]
            pinned[root] = pin.scale
            why[root] = pin.why
            limit = pin.scale * INT8_MAX
            if pin.operand != RESULT and plan.group_range[root] > limit:
                reach = plan.group_range[root]
                plan.notes.append(f"node {target}: the {node.op} input reaches {reach:.2f}, beyond the "
                                  f"{limit:.2f} that {pin.holds} holds; larger values will saturate")
    return pinned, why


def plan_scales(graph: Graph, calibrated: Mapping[int, float],
                fixed_ranges: Mapping[str, float] | None = None) -> ScalePlan:
    """Choose every tensor's scale.

    Args:
        graph: the graph.
        calibrated: node id -> calibrated range (see :mod:`compiler.calibrate`).
        fixed_ranges: tag -> range, overriding the calibrated range of tagged tensors.

    Returns:
        The :class:`ScalePlan`.

    Raises:
        CompileError: ``fixed_ranges`` names an unknown tag or a bad value; an int4 weight
            would have to share a pinned scale; a scale would be below the normal floats.
    """
    ranges = dict(calibrated)
    _apply_fixed_ranges(graph, ranges, fixed_ranges)
    groups = _join_groups(graph)
    group = {node.id: groups.find(node.id) for node in graph.nodes}
    plan = ScalePlan({}, ranges, group, _group_ranges(graph, ranges, group))
    pinned, why = _pin_groups(graph, plan)
    for node in graph.nodes:
        if not OPS[node.op].scaled:
            continue
        root = group[node.id]
        if root in pinned:
            plan.scales[node.id] = pinned[root]
            plan.pins[node.id] = why[root]
        else:
            plan.scales[node.id] = (plan.group_range[root] if plan.group_range[root] > 0 else 1.0) / INT8_MAX

    _narrow_scales(graph, plan, pinned)
    _saturation_notes(graph, plan, pinned)
    _fixed_range_notes(graph, plan, pinned, fixed_ranges)
    _zero_range_notes(graph, plan, pinned)
    _check_precision(graph, plan, fixed_ranges)
    return plan


def _largest_member(graph: Graph, plan: ScalePlan, root: int) -> tuple[int, str]:
    """The node whose range is its group's range, and how it enters the group (for notes)."""
    top = plan.group_range[root]
    for node in graph.nodes:
        if plan.group[node.id] == root and OPS[node.op].scaled and plan.ranges[node.id] == top:
            return node.id, ""
    for node in graph.nodes:
        if plan.group[node.id] == root:
            for k in OPS[node.op].scale.covers:
                if plan.ranges[node.ins[k]] == top:
                    return node.ins[k], f", as an operand of {node.describe()}"
    return root, ""


def _fixed_range_notes(graph: Graph, plan: ScalePlan, pinned: Mapping[int, float],
                       fixed_ranges: Mapping[str, float] | None) -> None:
    """A note for each tagged tensor whose scale does not hold the range ``ranges=`` gave it:
    its group's largest range is another member's (an output of the tensor keeps its
    calibrated range), or the group's scale is pinned by the hardware."""
    if not fixed_ranges:
        return
    for node in graph.nodes:
        if node.tag is None or node.tag not in fixed_ranges:
            continue
        fixed = plan.ranges[node.id]
        root = plan.group[node.id]
        start = f"ranges['{node.tag}'] = {fixed:.4g} does not set the scale of {node.describe()}:"
        if root in pinned:
            holds = pinned[root] * INT8_MAX
            if fixed < holds / 1.001:   # a larger fixed range already has a saturation note
                plan.notes.append(f"{start} the hardware pins it ({plan.pins[node.id]}), so it holds "
                                  f"{holds:.4g}")
            continue
        holds = plan.group_range[root]
        if holds <= fixed * 1.001:
            continue
        setter, how = _largest_member(graph, plan, root)
        member = graph.nodes[setter]
        fixed_too = member.tag is not None and member.tag in fixed_ranges
        source = (f"range {holds:.4g} (ranges['{member.tag}'])" if fixed_too
                  else f"calibrated range {holds:.4g}")
        note = (f"{start} it shares its scale with {member.describe()}{how}, whose {source} is larger, "
                f"and a shared scale holds its members' largest range; the scale is "
                f"{plan.scales[node.id]:.4g} and holds {holds:.4g}")
        if OPS[member.op].role is Role.SINK and member.ins[0] == node.id:
            note += (" (an output keeps the calibrated range of the tensor it stores, so ranges= can widen "
                     "this tensor's scale but not narrow it)")
        plan.notes.append(note)


def _zero_range_notes(graph: Graph, plan: ScalePlan, pinned: Mapping[int, float]) -> None:
    """A note for each group whose range is 0 although its values come from the run's inputs:
    its scale is a stand-in that calibration never tested. (A group computed from weights
    alone is 0 at run time too, so its stand-in scale is harmless and not noted.)"""
    from_inputs = {node.id for node in graph.inputs()}
    for node in graph.nodes:
        if any(i in from_inputs for i in node.ins):
            from_inputs.add(node.id)
    noted: set[int] = set()
    for node in graph.nodes:
        root = plan.group[node.id]
        if (root in noted or root in pinned or not OPS[node.op].scaled or node.id not in from_inputs
                or plan.group_range[root] > 0):
            continue
        noted.add(root)
        members = [m for m in graph.nodes if plan.group[m.id] == root and OPS[m.op].scaled]
        names = ", ".join(m.describe() for m in members[:3]) + (", ..." if len(members) > 3 else "")
        holds = plan.scales[node.id] * OPS[node.op].levels(node)
        note = (f"{names}: every calibration value is 0, so the range is 0 and the scale "
                f"{plan.scales[node.id]:.4g} is a stand-in (it holds {holds:.4g}); at run time "
                f"larger values will saturate. Calibrate with samples where it is not 0, or give "
                "its range with Graph.tag and ranges=")
        plan.notes.append(note)
        plan.stand_ins.append(note)


SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)
"""Below this (about 2.2e-308) a float64 is subnormal: it keeps fewer than 53 significant bits."""


def _check_precision(graph: Graph, plan: ScalePlan, fixed_ranges: Mapping[str, float] | None) -> None:
    """Refuse a scale too small to be a normal float: it would have lost precision (a weight
    of 1e-320, say, would be quantized tens of percent off)."""
    for node in graph.nodes:
        scale = plan.scales.get(node.id)
        if scale is None or scale >= SMALLEST_NORMAL:
            continue
        fixed = node.tag is not None and fixed_ranges is not None and node.tag in fixed_ranges
        where = (f"ranges['{node.tag}']" if fixed else "its values" if node.array is not None
                 else "calibration")
        raise CompileError(f"{node.describe()}: its range {plan.group_range[plan.group[node.id]]:.3g} (from "
                           f"{where}) gives the scale {scale:.3g}, below the smallest normal float "
                           f"({SMALLEST_NORMAL:.3g}); such a scale has lost precision and the quantized "
                           "values would be wrong",
                           "scale the values up by a power of two (weights times 2**k, say, with scale=2**-k "
                           "on the matmul that reads them; or larger inputs), or give a larger range",
                           node.id)


def _narrow_scales(graph: Graph, plan: ScalePlan, pinned: Mapping[int, float]) -> None:
    """The groups of nodes whose integers have fewer levels than int8 (int4 weights: -7..7)
    take range / levels as their scale; such a node may not be in a pinned group."""
    narrow_roots = {}
    for node in graph.nodes:
        levels = OPS[node.op].levels(node)
        if levels == INT8_MAX:
            continue
        root = plan.group[node.id]
        if root in pinned:
            raise CompileError(f"{node.describe()} is an int4 weight, but its group's scale is pinned "
                               f"({plan.pins[node.id]}), which int4's -{levels}..{levels} cannot follow",
                               "store this weight with bits=8", node.id)
        narrow_roots[root] = (plan.group_range[root] if plan.group_range[root] > 0 else 1.0) / levels
    if not narrow_roots:
        return
    for member, root in plan.group.items():
        if root in narrow_roots and member in plan.scales:
            plan.scales[member] = narrow_roots[root]


def _saturation_notes(graph: Graph, plan: ScalePlan, pinned: Mapping[int, float]) -> None:
    pinned_operands = {node.ins[pin.operand] for node in graph.nodes for pin in OPS[node.op].scale.pins
                       if pin.operand != RESULT}   # noted already, by _pin_groups
    for node in graph.nodes:
        spec = OPS[node.op]
        root = plan.group[node.id]
        if root not in pinned or node.id in pinned_operands or not spec.scaled or spec.role is Role.SINK:
            continue
        holds = pinned[root] * INT8_MAX
        if plan.ranges[node.id] > holds * 1.001:
            plan.notes.append(f"{node.describe()} reaches {plan.ranges[node.id]:.3f}, but it shares a "
                              f"pinned scale that holds only {holds:.3f}: it will saturate")
