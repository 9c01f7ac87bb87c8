"""The contract between emission and the lowerings: what a lowering is (:class:`Lowering`), what
it may use of the emission under way (:class:`Emitter`), and what the lowerings share: the key
of a requantizer, whether a relu rides on a node's last instruction. Emission
(:mod:`compiler.emit`) knows no lowering: the pipeline hands it the table
(:data:`compiler.lowering.table.LOWERINGS`), as an xDSL pass hands its patterns to the walker."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sim.spec import Params

    from ..allocator import Allocator
    from ..layout import ExtEntry
    from ..node import Node

RequantKey = int | tuple[int, int]
"""A requantizer is keyed by its node id, or by (add node id, operand index) for a rescale."""


class Emitter(Protocol):
    """What a lowering uses of the emitter (:class:`compiler.emit.Emitter`)."""

    nodes: Sequence[Node]
    scales: Mapping[int, float]
    fused: set[int]
    ext: Mapping[str, ExtEntry]
    params: Params
    alloc: Allocator
    requantizers: dict[RequantKey, tuple[int, int]]
    spills: Mapping[int, ExtEntry]
    chain: bool

    def put(self, op: str, **fields: int) -> None: ...

    def address(self, nid: int) -> int: ...

    def ensure(self, nid: int) -> int: ...

    def lower(self, node: Node, operands: Sequence[int]) -> None: ...


def fused_relu(em: Emitter, node: Node) -> bool:
    """Whether a matmul's RQ or an add's VADD applies the relu fused into it (:mod:`compiler.fusion`)."""
    return node.id in em.fused


@dataclass(frozen=True)
class Lowering:
    """How one operation lowers.

    Attributes:
        lower: writes a node's instructions, its operands in the scratchpad at the addresses
            given (for a source: its load, run just before the first step that reads it).
        step: a node's whole step when its operands may not fit the scratchpad whole: it
            places them itself, whole or streamed in blocks, and writes the instructions
            (:mod:`compiler.streaming`); None: emission loads the operands whole and runs
            ``lower``.
    """

    lower: Callable[[Emitter, Node, Sequence[int]], None]
    step: Callable[[Any, Node], None] | None = None
