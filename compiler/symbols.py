"""What a compiled program keeps at a memory word: the symbol map behind :meth:`Program.whose`.

Contract: an external-memory word belongs to at most one region of the external layout
(:mod:`compiler.layout`: inputs and weights, then outputs); its element is found by undoing
the region's order (row by row, in column panels, eight int4 values or four int8 values to a
packed word). A
scratchpad word belongs, at a given pc, to the allocation live then: the allocator's events
(``Program.events``, each with the pc of the next instruction) are replayed up to that pc. An
allocation that is a placement buffer (:mod:`compiler.placement`) names the tensors placed in
it that cover the word, with their row and column; any other (an accumulator, a workspace, a
temporary) is named by the allocator's own words for it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sim.spec import INT8_PER_WORD

from .allocator import AllocEvent
from .int4 import INT4_PER_WORD, is_int4
from .layout import ExtEntry
from .ops import OPS, Role

if TYPE_CHECKING:
    from .program import Program


def panel_element(entry: ExtEntry, offset: int) -> tuple[int, int]:
    """(row, col) of the word ``offset`` words into a region stored in column panels
    ``entry.panel`` wide (the inverse of :func:`compiler.layout.panel_major`)."""
    rows, cols = entry.shape
    first = 0
    for start in range(0, cols, entry.panel):
        width = min(entry.panel, cols - start)
        if offset < first + rows * width:
            k = offset - first
            return k // width, start + k % width
        first += rows * width
    raise ValueError(f"word {offset} is past the {entry.words}-word region of '{entry.name}'")


def ext_symbol(program: Program, address: int) -> str | None:
    """``output 'probs' row 1 col 2, from node 9 (softmax)``: the external word's region and
    element; None for a word outside every region."""
    entry = next((e for e in program.ext.values() if e.addr <= address < e.end), None)
    if entry is None:
        return None
    node = program.graph.nodes[entry.node]
    offset = address - entry.addr
    if is_int4(node):
        first = offset * INT4_PER_WORD
        where = f"packed word {offset} (elements {first}..{first + INT4_PER_WORD - 1} row by row)"
    elif entry.fmt:
        first = offset * INT8_PER_WORD
        row, col = panel_element(entry, first) if entry.panel else divmod(first, entry.shape[1])
        count = min(INT8_PER_WORD, entry.elements - first)
        where = f"packed word {offset} (int8 elements {first}..{first + count - 1}, from row {row} col {col})"
    else:
        row, col = panel_element(entry, offset) if entry.panel else divmod(offset, entry.shape[1])
        where = f"row {row} col {col}"
    if OPS[node.op].role is Role.SINK:
        return f"{entry.kind} '{entry.name}' {where}, from {program.graph.nodes[node.ins[0]].describe()}"
    return f"{entry.kind} '{entry.name}' {where} (node {node.id})"


def live_at(events: list[AllocEvent], pc: int) -> list[AllocEvent]:
    """The allocations live while instruction ``pc`` runs: every event up to that pc replayed
    (an event's pc is the index of the instruction after it)."""
    live: dict[tuple[int, int], AllocEvent] = {}
    for e in events:
        if e.pc is None or e.pc > pc:
            break
        if e.kind == "alloc":
            live[(e.addr, e.words)] = e
        else:
            live.pop((e.addr, e.words), None)
    return list(live.values())


def _named(program: Program, text: str) -> str:
    """The allocator's words with every ``node N`` described (``node 4 (matmul 'h1')``)."""
    nodes = program.graph.nodes
    return re.sub(r"node (\d+)(?! \()", lambda m: nodes[int(m[1])].describe()
                  if int(m[1]) < len(nodes) else m[0], text)


def _in_buffer(program: Program, event: AllocEvent, address: int) -> str | None:
    """The tensors of the placement buffer this allocation is (None: not a buffer's) that cover
    the word, smallest first: ``node 4 (matmul 'h') row 1 col 3, also node 7 (concat) ...``."""
    nodes = program.graph.nodes
    buffer = next((b for b in program.placement.buffers if b.home == event.addr and b.words == event.words
                   and nodes[b.owner].describe() in event.what), None)
    if buffer is None:
        return None
    covering = []
    for nid in buffer.members:
        node = nodes[nid]
        start = event.addr + program.placement.loc[nid][1] * node.shape[1]
        if start <= address < start + node.words:
            row, col = divmod(address - start, node.shape[1])
            covering.append((node.words, nid, f"{node.describe()} row {row} col {col}"))
    if not covering:
        return f"{event.what}, padding word {address - event.addr} of {event.words}"
    return ", also ".join(text for _, _, text in sorted(covering))


def spad_symbol(program: Program, address: int, pc: int) -> str:
    """What the scratchpad word holds while instruction ``pc`` runs: a tensor's element, a
    temporary's word, or free space."""
    for event in live_at(program.events, pc):
        if event.addr <= address < event.addr + event.words:
            found = _in_buffer(program, event, address)
            if found is not None:
                return found
            return f"{_named(program, event.what)}, word {address - event.addr} of {event.words}"
    return "free scratchpad"
