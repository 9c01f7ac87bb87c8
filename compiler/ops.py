"""Capra's table of operations: every operation declared once, as ``sim/spec.py`` declares
the instructions.

An operation's kind is an :class:`Op`; its :class:`OpSpec` says, as data and hooks, all
that the compiler's passes need to know about it:

========== ===============================================================================
field      what it decides, and which pass reads it
========== ===============================================================================
arity      how many operands (the IR builders, the text form's parser)
builder    the :class:`compiler.ir.Graph` method that builds it (named in messages)
attrs      the node fields the operation uses, with defaults (the text form)
shape      the shape rule: operand checks and the result's (rows, cols) (:mod:`.shapes`)
role       source, compute, view or sink (:class:`Role`: lifetimes, layout, emission)
place      where its result lives (:class:`Place`: placement)
scale      which scale group it joins, what it must hold, what the hardware pins
           (:class:`ScaleRule`: scale planning)
scaled     its result is int8 levels with a scale; False: row indices (argmax)
levels     the largest level of its integer encoding (127; 7 for an int4 weight)
fuses_into the operations whose last instruction can carry it (relu fusion: RQ's or VADD's relu)
limits     the unit limits it must respect (:class:`Limit`: the limits pass)
evaluate   its float meaning (calibration, the float reference: :mod:`.semantics`)
interpret  its integer meaning (the interpreter)
real       its real-number meaning in levels, or no arithmetic (the stage-wise check)
tolerance  how many levels the stage-wise check allows
lower      its lowering to GA-2 instructions (emission: :mod:`.lowering`)
blocked    its step when its operands may not fit the scratchpad whole: places them
           itself, whole or streamed in blocks (emission: :mod:`.streaming`); None:
           its operands are loaded whole and ``lower`` runs
========== ===============================================================================

A new operation is one entry here and its own code: an :class:`Op` member, a shape rule,
its float, integer and real-number meanings, its lowering, and a one-line builder on
:class:`compiler.ir.Graph`. A table activation (an int8 -> int8 lookup: gelu, silu, tanh),
say, is an operand-shaped COMPUTE entry with a FREE scale, a float meaning from its function,
an integer meaning from its table and a lowering that writes the lookup.
``tests/compiler/test_ops.py`` fails when an entry lacks a hook or a pass meets an operation
it does not cover (the counterpart of the assert at the bottom of ``sim/machine.py``).

Sources: seed chapter 11 (the operations and their rules), chapter 13 (int4 weights),
chapter 16 (slices); GA2.md sections 3 and 4 (the instructions and the fixed-point formats
the pins come from).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sim.arith import INT8_MAX
from sim.spec import Params

from . import lowering, semantics, shapes, streaming
from .errors import plural
from .int4 import INT4_MAX, is_int4

if TYPE_CHECKING:
    from .ir import Node


class Op(enum.StrEnum):
    """The kind of a node. A str enum: ``Op.MATMUL == "matmul"``, and it prints as its value."""

    INPUT = "input"
    WEIGHT = "weight"
    MATMUL = "matmul"
    SOFTMAX = "softmax"
    ADD = "add"
    RELU = "relu"
    TABLE = "table"
    CONCAT = "concat"
    SLICE = "slice"
    ARGMAX = "argmax"
    OUTPUT = "output"


class Role(enum.Enum):
    """How an operation takes part in the program."""

    SOURCE = "its values come from external memory, loaded just before the first step that reads them"
    COMPUTE = "a step of its own that writes instructions"
    VIEW = "no instruction: its values are written in place by the nodes it reads"
    SINK = "stored to external memory; not a tensor, so no node may read it"


class Place(enum.Enum):
    """Where an operation's result lives (seed chapter 11, "allocation"; chapter 16)."""

    OWN = "a buffer of its own (placed from the last node back)"
    HOSTS_OPERAND = "a buffer of its own, which its operand is written into (a fused relu)"
    STACKS_OPERANDS = "a buffer of its own; its operands are views stacked in it, row after row"
    VIEW_OF_OPERAND = "a view into its operand's buffer, ``start`` rows on (after the others)"
    OWN_LAST = "a buffer of its own, made after every other buffer"
    NOWHERE = "no scratchpad place"


RESULT = -1
"""A :class:`Pin` on the operation's result rather than on an operand."""


@dataclass(frozen=True)
class Pin:
    """A scale the hardware fixes for the group of an operand or of the result.

    Attributes:
        operand: the operand's index, or :data:`RESULT`.
        scale: the scale (real value of one int8 level).
        why: the reason, as :attr:`compiler.scales.ScalePlan.pins` gives it.
        holds: the fixed-point format, named in the note when an operand's calibrated
            range goes beyond what the pinned scale holds.
    """

    operand: int
    scale: float
    why: str
    holds: str = ""


@dataclass(frozen=True)
class ScaleRule:
    """How an operation takes part in scale planning (:mod:`compiler.scales`).

    Attributes:
        joins: operands that share the result's scale group (same buffer, a view, a copy).
        covers: operands whose ranges the result's group must hold (an add rescales its
            operands to the sum's scale, where they must not clip).
        pins: scales the hardware fixes, in the order they are applied.
    """

    joins: tuple[int, ...] = ()
    covers: tuple[int, ...] = ()
    pins: tuple[Pin, ...] = ()


FREE = ScaleRule()
"""A scale group of its own, from its own range."""
SHARES_OPERAND = ScaleRule(joins=(0,))
"""The scale of its operand."""

SOFTMAX_IN_SCALE = 1 / 16
"""The softmax unit reads Q4.4: an int8 level is 1/16 (GA2.md section 4)."""
PROBABILITY_SCALE = 1 / INT8_MAX
"""A softmax result is stored as int8 probability levels: 127 means 1.0."""
SOFTMAX_INPUT_PIN = Pin(0, SOFTMAX_IN_SCALE, f"softmax input, Q4.4 (1/{round(1 / SOFTMAX_IN_SCALE)})", "Q4.4")
SOFTMAX_OUTPUT_PIN = Pin(RESULT, PROBABILITY_SCALE, f"softmax output, a probability (1/{INT8_MAX})")


@dataclass(frozen=True)
class Limit:
    """A bound a unit puts on an operation (GA2.md section 1).

    Attributes:
        size: the size the unit sees, from the node and the graph's nodes.
        bound: the largest size the machine takes, from its parameters.
        problem: the refusal's problem, from (node, size, bound).
        fix: the refusal's fix, from the bound.
    """

    size: Callable[[Node, Sequence[Node]], int]
    bound: Callable[[Params], int]
    problem: Callable[[Node, int, int], str]
    fix: Callable[[int], str]


def _row_length(node: Node, nodes: Sequence[Node]) -> int:
    return node.shape[1]


def _rows_too_long(node: Node, length: int, bound: int) -> str:
    return f"softmax node {node.id}: rows of {length} values exceed the softmax unit's limit of {bound}"


def _shorter_rows(bound: int) -> str:
    return f"use rows of at most {plural(bound, 'value')}"


def _sm_max_len(params: Params) -> int:
    return params.SM_MAX_LEN


SOFTMAX_ROW_LIMIT = Limit(_row_length, _sm_max_len, _rows_too_long, _shorter_rows)
"""The softmax unit takes rows of at most SM_MAX_LEN values (GA2.md section 1)."""


def int8_levels(node: Node) -> int:
    """An int8 tensor uses the levels -127..127."""
    return INT8_MAX


def weight_levels(node: Node) -> int:
    """A weight uses -127..127, or -7..7 when stored as int4 (seed chapter 13)."""
    return INT4_MAX if is_int4(node) else INT8_MAX


@dataclass(frozen=True)
class OpSpec:
    """One operation: see the module docstring for each field."""

    op: Op
    arity: int
    builder: str
    shape: Callable[[Sequence[Node], dict[str, Any]], tuple[tuple[int, int], dict[str, Any]]]
    role: Role
    place: Place
    scale: ScaleRule
    evaluate: semantics.FloatMeaning
    interpret: semantics.IntMeaning
    real: semantics.RealMeaning
    lower: Callable[[lowering.Emitter, Node, Sequence[int]], None]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    scaled: bool = True
    levels: Callable[[Node], int] = int8_levels
    fuses_into: tuple[Op, ...] = ()
    limits: tuple[Limit, ...] = ()
    tolerance: int = 1
    blocked: Callable[[Any, Node], None] | None = None

    @property
    def named(self) -> bool:
        """Whether the node carries an external name (an input, a weight, an output)."""
        return "name" in self.attrs


NAME = {"name": ""}
"""The attribute of a node known by name in external memory."""


def _table() -> dict[Op, OpSpec]:
    s, low = semantics, lowering
    entries = [
        OpSpec(Op.INPUT, arity=0, builder="input", attrs=NAME, shape=shapes.input_shape,
               role=Role.SOURCE, place=Place.OWN, scale=FREE,
               evaluate=s.float_input, interpret=s.int_input, real=s.no_arithmetic, lower=low.lower_load),
        OpSpec(Op.WEIGHT, arity=0, builder="weight", attrs={**NAME, "bits": 8},
               shape=shapes.weight_shape, role=Role.SOURCE, place=Place.OWN, scale=FREE, levels=weight_levels,
               evaluate=s.float_weight, interpret=s.int_weight, real=s.no_arithmetic, lower=low.lower_load),
        OpSpec(Op.MATMUL, arity=2, builder="matmul",
               attrs={"transpose_b": False, "factor": 1.0, "bias": None},
               shape=shapes.matmul_shape, role=Role.COMPUTE, place=Place.OWN, scale=FREE,
               evaluate=s.float_matmul, interpret=s.int_matmul, real=s.real_matmul, lower=low.lower_matmul,
               blocked=streaming.lower_matmul_step),
        OpSpec(Op.SOFTMAX, arity=1, builder="softmax", shape=shapes.same_shape,
               role=Role.COMPUTE, place=Place.OWN, limits=(SOFTMAX_ROW_LIMIT,),
               scale=ScaleRule(pins=(SOFTMAX_INPUT_PIN, SOFTMAX_OUTPUT_PIN)),
               evaluate=s.float_softmax, interpret=s.int_softmax, real=s.real_softmax,
               lower=low.lower_softmax),
        OpSpec(Op.ADD, arity=2, builder="add", shape=shapes.add_shape,
               role=Role.COMPUTE, place=Place.OWN, scale=ScaleRule(covers=(0, 1)), tolerance=2,
               evaluate=s.float_add, interpret=s.int_add, real=s.real_add, lower=low.lower_add),
        OpSpec(Op.RELU, arity=1, builder="relu", shape=shapes.same_shape,
               role=Role.VIEW, place=Place.HOSTS_OPERAND, scale=SHARES_OPERAND,
               fuses_into=(Op.MATMUL, Op.ADD),
               evaluate=s.float_relu, interpret=s.int_relu, real=s.no_arithmetic,
               lower=low.lower_relu),
        OpSpec(Op.TABLE, arity=1, builder="table", attrs={"fn": ""}, shape=shapes.table_shape,
               role=Role.COMPUTE, place=Place.OWN, scale=FREE, tolerance=2,
               evaluate=s.float_table, interpret=s.int_table, real=s.real_table, lower=low.lower_table),
        OpSpec(Op.CONCAT, arity=2, builder="concat_rows", shape=shapes.concat_shape,
               role=Role.VIEW, place=Place.STACKS_OPERANDS, scale=ScaleRule(joins=(0, 1)),
               evaluate=s.float_concat, interpret=s.int_concat, real=s.no_arithmetic, lower=low.lower_view),
        OpSpec(Op.SLICE, arity=1, builder="slice_rows", attrs={"start": None, "count": None},
               shape=shapes.slice_shape, role=Role.VIEW, place=Place.VIEW_OF_OPERAND, scale=SHARES_OPERAND,
               evaluate=s.float_slice, interpret=s.int_slice, real=s.no_arithmetic, lower=low.lower_view),
        OpSpec(Op.ARGMAX, arity=1, builder="argmax", shape=shapes.argmax_shape,
               role=Role.COMPUTE, place=Place.OWN_LAST, scale=FREE, scaled=False,
               evaluate=s.float_argmax, interpret=s.int_argmax, real=s.no_arithmetic, lower=low.lower_argmax),
        OpSpec(Op.OUTPUT, arity=1, builder="output", attrs=NAME, shape=shapes.output_shape,
               role=Role.SINK, place=Place.NOWHERE, scale=SHARES_OPERAND,
               evaluate=s.same_as_operand, interpret=s.same_as_operand, real=s.no_arithmetic,
               lower=low.lower_output),
    ]
    return {entry.op: entry for entry in entries}


OPS: dict[Op, OpSpec] = _table()
"""The table: every :class:`Op` and its :class:`OpSpec`. Passes look an entry up when they
use it (``OPS[node.op]``), never keep a copy, so a test may substitute an entry."""

assert set(OPS) == set(Op), "every operation has an entry in the table"
