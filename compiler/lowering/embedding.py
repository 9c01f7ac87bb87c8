"""An embedding: the ids loaded like any input, one GATHER per token from the table, which
stays in external memory (GA2.md section 3; the operation: :mod:`compiler.ops.embedding`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import CompileError

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def gather_fields(token: int, dst: int, table: int, cols: int, fmt: int, ids: int,
                  rows: int) -> dict[str, int]:
    """The GATHER of the row named by token ``token``'s id (at ``ids + token``) of a table of
    ``rows`` rows of ``cols`` values at external address ``table`` into row ``token`` at ``dst``."""
    return {"dst": dst + token * cols, "src": table, "len": cols, "fmt": fmt, "idx": ids + token,
            "rows": rows}


def lower_embedding(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The output buffer and one GATHER per token, the ids at ``operands[0]`` (the table is read
    where it lies in external memory: the entry's ``external``, so emission never loads it).

    Raises:
        CompileError: the table is stored in column panels, or packed with rows that do not
            start on a word (its columns not a multiple of 4), naming the node.
    """
    table_node = em.nodes[node.ins[1]]
    out = em.address(node.id)
    entry = em.ext[table_node.name]
    rows, cols = table_node.shape
    if table_node.name in em.out.panels:
        raise CompileError(f"embedding node {node.id}: its table '{table_node.name}' is stored in column "
                           "panels for a streamed matmul, so its rows are not contiguous",
                           "give the embedding a table of its own")
    if entry.fmt and cols % 4:
        raise CompileError(f"embedding node {node.id}: its table '{table_node.name}' is packed four "
                           f"to a word with rows of {cols} values, which do not start on a word",
                           "use rows of a multiple of 4 values, or compile with pack=False")
    for t in range(node.shape[0]):
        em.put("GATHER", **gather_fields(t, out, entry.addr, cols, entry.fmt, operands[0], rows))

