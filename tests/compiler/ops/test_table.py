"""compiler/ops/table.py: every operation has every hook and a lowering, and every pass
reaches every operation.

The counterpart of the assert at the bottom of sim/machine.py: a new operation without a
float or integer meaning, a lowering or a shape rule fails here, and a pass that meets an
operation it does not handle fails the end-to-end run of a graph that holds every one.
"""

import dataclasses
import math
from collections import Counter

import numpy as np
import pytest

from compiler import Graph, compile_graph
from compiler.evaluate import evaluate
from compiler.interpret import interpret
from compiler.ir import Node
from compiler.lowering.table import LOWERINGS
from compiler.ops import OPS, RESULT, Constant, Op, OpSpec, Place, Role, ScaleRule
from compiler.realcheck import stagewise_problems

HOOKS = ("shape", "evaluate", "interpret", "real", "levels")
"""The per-operation functions of an OpSpec; each pass calls one of them."""
LOWERING_HOOKS = ("lower",)
"""The per-operation function of a Lowering (compiler/lowering/table.py) every operation has."""


def every_op_graph() -> Graph:
    """One graph holding every operation (an int4 weight too), small enough to check by eye."""
    rng = np.random.default_rng(4)
    g = Graph()
    x, y = g.input("x", (4, 8)), g.input("y", (2, 8))
    hidden = g.relu(g.matmul(x, g.weight("w", rng.normal(0, 0.3, (8, 8)), bits=4)))
    stacked = g.concat_rows(hidden, y)
    logits = g.matmul(g.slice_rows(stacked, 1, 3), g.weight("v", rng.normal(0, 0.3, (8, 8))), scale=0.5)
    total = g.add(g.table(g.softmax(logits), "tanh"), g.slice_rows(stacked, 0, 3))   # issue 14: a LUT
    g.output(total, "sum")
    rows = g.embedding(g.input("ids", (3, 1)), g.weight("emb", rng.normal(0, 1.0, (6, 8))))   # issue 26
    g.output(g.layernorm(g.add(total, rows), eps=1e-3, gain=0.5, bias=rng.normal(0, 0.2, 8)), "normed")
    g.output(g.argmax(total), "tok")
    # x as one image of 2 x 2 pixels of 8 channels (issue 25): a padded convolution, a pool, a flatten
    image = g.conv2d(x, g.weight("k", rng.normal(0, 0.3, (9 * 8, 8))), (2, 2), 3, padding=1)
    g.output(g.reshape(g.maxpool2d(image, (2, 2), 2), 1), "pooled")
    return g


def test_every_op_has_an_entry_and_every_hook():
    assert set(OPS) == set(Op)
    for op, spec in OPS.items():
        assert isinstance(spec, OpSpec) and spec.op is op
        for hook in HOOKS:
            assert callable(getattr(spec, hook)), f"{op}: {hook}"
        assert isinstance(spec.role, Role) and isinstance(spec.place, Place)
        assert isinstance(spec.scale, ScaleRule)
        node_fields = {f.name for f in dataclasses.fields(Node)}
        assert set(spec.attrs) <= node_fields, op
        assert callable(getattr(Graph, spec.builder)), op
        assert all(isinstance(c, Constant) for c in spec.constants), op
        assert callable(LOWERINGS[op].lower), op


@pytest.mark.parametrize("op", list(Op))
def test_each_entry_is_consistent(op):
    spec = OPS[op]
    operands = range(spec.arity)
    assert all(k in operands for k in spec.scale.joins + spec.scale.covers)
    assert all(pin.operand == RESULT or pin.operand in operands for pin in spec.scale.pins)
    assert all(pin.scale > 0 and pin.why for pin in spec.scale.pins)
    assert (spec.role is Role.SOURCE) == (spec.arity == 0)
    assert (spec.role is Role.SINK) == (spec.place is Place.NOWHERE)
    views = (Place.HOSTS_OPERAND, Place.STACKS_OPERANDS, Place.VIEW_OF_OPERAND)
    assert (spec.role is Role.VIEW) == (spec.place in views)
    assert all(host in OPS for host in spec.fuses_into)
    assert spec.tolerance >= 1


def test_the_every_op_graph_holds_every_op():
    assert {node.op for node in every_op_graph().nodes} == set(Op)


@pytest.fixture
def recorded(monkeypatch):
    """Every hook of every entry, and every lowering, wrapped to count its calls by (op, hook)."""
    calls: Counter = Counter()

    def counting(op, hook, function):
        def wrapper(*args, **kwargs):
            calls[op, hook] += 1
            return function(*args, **kwargs)
        return wrapper

    for op, spec in list(OPS.items()):
        wrapped = {hook: counting(op, hook, getattr(spec, hook)) for hook in HOOKS}
        monkeypatch.setitem(OPS, op, dataclasses.replace(spec, **wrapped))
    for op, lowering in list(LOWERINGS.items()):
        wrapped = {hook: counting(op, hook, getattr(lowering, hook)) for hook in LOWERING_HOOKS}
        monkeypatch.setitem(LOWERINGS, op, dataclasses.replace(lowering, **wrapped))
    return calls


def test_every_pass_reaches_every_operation_through_the_table(recorded):
    g = every_op_graph()
    rng = np.random.default_rng(5)
    calibration = [{"x": rng.normal(size=(4, 8)), "y": rng.normal(size=(2, 8)),
                    "ids": rng.integers(0, 6, (3, 1))} for _ in range(8)]
    test = {"x": rng.normal(size=(4, 8)), "y": rng.normal(size=(2, 8)), "ids": [[5], [0], [2]]}
    for reuse in (True, False):
        program = compile_graph(g, calibration, reuse=reuse, check_contracts=True)
        outcome = program.run(test, warn=False)
        ints = interpret(program, test)
        for name, value in outcome.outputs.items():
            assert np.array_equal(value.ints, ints[program.ext[name].node]), name
        assert stagewise_problems(program, ints) == []
    evaluate(g, test)
    weights = {name: g.nodes[g.names[name]].array for name in ("w", "v", "k", "emb")}
    assert Graph.parse(g.text(), weights).text() == g.text()
    missing = [(op, hook) for op in Op for hook in HOOKS + LOWERING_HOOKS if recorded[op, hook] == 0]
    assert missing == []


def test_int4_levels_and_pins_come_from_the_entries():
    g = every_op_graph()
    weight = g.nodes[g.names["w"]]
    assert OPS[Op.WEIGHT].levels(weight) == 7 and OPS[Op.WEIGHT].levels(g.nodes[g.names["v"]]) == 127
    (into, out) = OPS[Op.SOFTMAX].scale.pins
    assert (into.operand, into.scale, out.operand, out.scale) == (0, 1 / 16, RESULT, 1 / 127)
    assert into.why == "softmax input, Q4.4 (1/16)" and out.why == "softmax output, a probability (1/127)"
    assert math.isclose(into.scale * 127, 7.9375)
