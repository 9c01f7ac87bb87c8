"""The transfers between external memory and the scratchpad: a source's LD (and UNPACK for an
int4 weight), an output's ST."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..int4 import is_int4

if TYPE_CHECKING:
    from ..layout import ExtEntry
    from ..node import Node
    from .emitter import Emitter


def ld_fields(entry: ExtEntry, dst: int) -> dict[str, int]:
    """The LD of an external region (all its words; all its elements when packed, LD fmt = 1,
    :mod:`compiler.packing`) to scratchpad address ``dst``."""
    if entry.fmt:
        return {"dst": dst, "src": entry.addr, "len": entry.elements, "fmt": entry.fmt}
    return {"dst": dst, "src": entry.addr, "len": entry.words}


def st_fields(entry: ExtEntry, src: int) -> dict[str, int]:
    """The ST of a tensor at scratchpad address ``src`` to its external region (all its words)."""
    return {"src": src, "dst": entry.addr, "len": entry.words}


def lower_load(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """An input or weight: LD into its buffer (int4: LD packed words into a temporary, UNPACK)."""
    dst = em.address(node.id)
    entry = em.ext[node.name]
    if not is_int4(node):
        em.put("LD", **ld_fields(entry, dst))
        return
    what = f"packed int4 words of node {node.id}"
    tmp = em.alloc.alloc(entry.words, what)
    em.put("LD", **ld_fields(entry, tmp))
    em.put("UNPACK", dst=dst, src=tmp, len=entry.words)
    em.alloc.release(tmp, entry.words, what)


def lower_output(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """An output: one ST of the tensor it stores to its external region."""
    em.put("ST", **st_fields(em.ext[node.name], operands[0]))
