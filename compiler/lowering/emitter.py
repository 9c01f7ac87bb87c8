"""What a lowering may use of the emission under way (:class:`Emitter`), and what the lowerings
share: the key of a requantizer, whether a relu rides on a node's last instruction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sim.spec import Params

    from ..allocator import Allocator
    from ..ir import Node
    from ..layout import ExtEntry

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

    def put(self, op: str, **fields: int) -> None: ...

    def address(self, nid: int) -> int: ...


def fused_relu(em: Emitter, node: Node) -> bool:
    """Whether a matmul's RQ or an add's VADD applies the relu fused into it (:mod:`compiler.fusion`)."""
    return node.id in em.fused
