"""output: a tensor stored to external memory under its name. Not a tensor itself, so nothing
may read it; its meanings are the stored tensor's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..node import Node
    from .shapes import Attrs, Shape


def output_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The stored tensor's shape, under its external name."""
    return operands[0].shape, {"name": attrs["name"]}
