"""The form of an entry of the table of operations: :class:`OpSpec` and the traits it is made of.

An entry says what an operation *is*, as data and hooks that the passes ask (never its name):
its operands and attributes, its shape rule, its meanings in floating point, in integers and
as a real-number check, and its traits: its :class:`Role` in the program (source, compute,
view or sink), where its result lives (:class:`Place`), its scale rule (:class:`ScaleRule`,
with the scales the hardware pins, :class:`Pin`), the unit limits it must respect
(:class:`Limit`), the operations it fuses into, the regions of external memory it needs
besides its operands (:class:`Constant`). How an operation lowers to instructions is not
here: the back end registers its lowerings against the operations
(:mod:`compiler.lowering.table`), as xDSL keeps op definitions free of their lowerings.

Sources: seed chapter 11 (the operations and their rules); GA2.md sections 3 and 4 (the
instructions and the fixed-point formats the pins come from).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.arith import INT8_MAX

from .semantics import FloatMeaning, IntMeaning, RealMeaning
from .shapes import ShapeRule

if TYPE_CHECKING:
    from sim.spec import Params

    from ..node import Node
    from .names import Op


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


@dataclass(frozen=True)
class Constant:
    """A region of external memory that an operation's lowering reads besides its operands,
    whose words the compiler computes from the planned scales (a matmul's int32 bias, a table
    activation's 256 entries). The external layout places the regions after the sources,
    kind by kind in the order of the table, node by node (:mod:`compiler.layout`); the host
    writes them (:meth:`compiler.Program.ext_image`).

    Attributes:
        needed: whether a node of the operation has the region (a matmul without a bias has none).
        region: the region's name, from the node (``bias of node 4``): no input, weight or
            output name can be mistaken for it.
        words: its length in words, from the node.
        values: its words (int64, (words,)), from the node, the graph's nodes and the scales.
            Raises :class:`~compiler.errors.CompileError` naming the node when no words can
            stand for it (a bias beyond the accumulator, a function not finite on the input).
    """

    needed: Callable[[Node], bool]
    region: Callable[[Node], str]
    words: Callable[[Node], int]
    values: Callable[..., np.ndarray]
    machine: bool = False
    """``values`` takes the machine (:class:`sim.spec.Params`) as a fourth argument (a table of
    requantizer pairs, whose shift range is the machine's)."""
    machine_words: bool = False
    """``words`` takes the machine as a second argument (a depthwise convolution's diagonal
    blocks, T x T)."""
    machine_needed: bool = False
    """``needed`` takes the machine as a second argument (a matmul's requantizer entry, loaded only
    where the chained MMRQ exists: OVERLAP = 2)."""

    def wanted(self, node: Node, params: Params) -> bool:
        """Whether ``node`` has the region on the machine ``params`` (:attr:`needed`)."""
        return self.needed(node, params) if self.machine_needed else self.needed(node)


def int8_levels(node: Node) -> int:
    """An int8 tensor uses the levels -127..127."""
    return INT8_MAX


@dataclass(frozen=True)
class OpSpec:
    """One operation of the table.

    Attributes:
        op: the operation (:class:`compiler.ops.Op`).
        arity: how many operands (the IR builders, the text form's parser).
        builder: the :class:`compiler.ir.Graph` method that builds it (named in messages).
        shape: the shape rule: operand checks and the result's (rows, cols) (:mod:`.shapes`).
        role: source, compute, view or sink (lifetimes, layout, emission).
        place: where its result lives (placement).
        scale: which scale group it joins, what it must hold, what the hardware pins (scale
            planning).
        evaluate: its float meaning (calibration, the float reference: :mod:`.semantics`).
        interpret: its integer meaning (the interpreter).
        real: its real-number meaning in levels, or no arithmetic (the stage-wise check).
        attrs: the node fields the operation uses, with defaults (the text form).
        scaled: its result is int8 levels with a scale; False: row indices (argmax).
        levels: the largest level of its integer encoding (127; 7 for an int4 weight).
        fuses_into: the operations whose last instruction can carry it (relu fusion: RQ's or
            VADD's relu flag).
        limits: the unit limits it must respect (the limits pass).
        tolerance: how many levels the stage-wise check allows.
        constants: the regions of external memory it reads besides its operands (layout, the
            host's image, the contracts).
        clips_input: its meaning sees its operand clipped to the operand's int8 range, which
            calibration notes by name when the samples reach beyond it (a table activation).
        external: the operands it reads where they lie in external memory, never loaded into
            the scratchpad (an embedding's table, read a row at a time by GATHER); emission
            gives its lowering -1 as their address.
    """

    op: Op
    arity: int
    builder: str
    shape: ShapeRule
    role: Role
    place: Place
    scale: ScaleRule
    evaluate: FloatMeaning
    interpret: IntMeaning
    real: RealMeaning
    attrs: Mapping[str, Any] = field(default_factory=dict)
    scaled: bool = True
    levels: Callable[[Node], int] = int8_levels
    fuses_into: tuple[Op, ...] = ()
    limits: tuple[Limit, ...] = ()
    tolerance: int = 1
    constants: tuple[Constant, ...] = ()
    clips_input: bool = False
    external: tuple[int, ...] = ()

    @property
    def named(self) -> bool:
        """Whether the node carries an external name (an input, a weight, an output)."""
        return "name" in self.attrs

    @property
    def pure(self) -> bool:
        """Whether its node is a function of its operands and attributes alone (a compute or
        view node; a source is its own region of memory, a sink a store under its own name)."""
        return self.role in (Role.COMPUTE, Role.VIEW)


NAME = {"name": ""}
"""The attribute of a node known by name in external memory."""
