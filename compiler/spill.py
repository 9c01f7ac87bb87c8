"""Activations in external memory (issue 25): which tensors of images live in external memory
instead of the scratchpad, and where.

A convolutional network's activations outgrow the scratchpad long before its weights do
(ResNet-8's first layer writes 32 x 32 x 16 = 16,384 values; the default machine's scratchpad
holds 4,096 words). Such a tensor is *spilled*: its producer (a conv2d or an add) writes it to
a region of external memory band by band (ST), and its readers (conv2d, add) read it back band
by band (LD), as weights already stream (:mod:`compiler.convstep`, :mod:`compiler.addstep`).

Contract: :func:`spillable` lists the buffers that may spill: owned by a conv2d or an add,
holding nothing but it and a relu fused into it, and read only by conv2d and add nodes (which
know how to read a spilled operand). :func:`spill_regions` gives each spilled buffer a region
``activations of node <producer>`` after the layout's regions, one word per value (HWC, as in the
scratchpad), by lifetimes: a region is free again after the step of its last reader, and an
add or a stride-1 convolution of the same shape writes in place into the region of an operand
whose last reader it is (an add reads each chunk before it writes it; a convolution reads each
input row into its ring of rows before it writes the output row of the same index,
:mod:`compiler.convstep`). The pipeline spills only when the program does not fit the
scratchpad otherwise (:func:`spill_levels`), so a graph that fits compiles as it always has.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping

from sim.spec import Params

from .errors import CompileError, plural
from .ir import Graph, Node
from .layout import ExtEntry
from .ops import Op
from .ops.window import read_window
from .placement import Buffer, Placement

PRODUCERS = (Op.CONV2D, Op.ADD)
"""The operations whose steps can write their result to external memory, and read a spilled operand."""


def region_name(owner: int) -> str:
    """The external region of the activations of a spilled buffer's owner."""
    return f"activations of node {owner}"


def producer(graph: Graph, buf: Buffer) -> Node:
    """The node that writes a buffer: its first member (a relu fused into it owns the buffer)."""
    return graph.nodes[min(buf.members)]


def spillable(graph: Graph, placement: Placement, fused: Collection[int]) -> list[Buffer]:
    """The buffers that may spill (see the module docstring), in node order of their producers;
    ``fused``: the producers that carry their relu (:func:`compiler.fusion.fuse_relus`). A relu
    that is not fused (the fusion pass switched off) is an instruction of its own on the buffer
    in the scratchpad, so its buffer stays there."""
    readers = graph.consumers()
    found = []
    for buf in placement.buffers:
        members = [graph.nodes[m] for m in buf.members]
        if (producer(graph, buf).op not in PRODUCERS or sum(m.op in PRODUCERS for m in members) != 1
                or any(m.op not in (*PRODUCERS, Op.RELU) for m in members)
                or any(m.op is Op.RELU and m.ins[0] not in fused for m in members)):
            continue
        outside = {r for m in buf.members for r in readers[m]} - set(buf.members)
        if outside and all(graph.nodes[r].op in PRODUCERS for r in outside):
            found.append(buf)
    return sorted(found, key=lambda b: min(b.members))


def spill_levels(graph: Graph, placement: Placement, params: Params,
                 fused: Collection[int]) -> Iterator[set[int]]:
    """The sets of buffer ids to spill, tried in turn until the program fits: none, then the
    spillable buffers larger than SPAD_WORDS / 2, / 4, / 8, then every spillable buffer
    (``fused``: :func:`spillable`'s)."""
    candidates = spillable(graph, placement, fused)
    yield set()
    seen: set[frozenset[int]] = {frozenset()}
    for divisor in (2, 4, 8, 0):
        limit = params.SPAD_WORDS // divisor if divisor else -1
        level = frozenset(b.id for b in candidates if b.words > limit)
        if level not in seen:
            seen.add(level)
            yield set(level)


def _last_reads(graph: Graph, placement: Placement) -> dict[int, int]:
    """buffer id -> the last step (node id) that reads a node living in it."""
    last: dict[int, int] = {}
    for node in graph.nodes:
        for operand in node.ins:
            if operand in placement.loc:
                last[placement.loc[operand][0]] = node.id
    return last


def writes_over_input(conv: Node) -> bool:
    """Whether a convolution may write its output over its input's region, row by row: stride 1,
    the same image size, at most one row of padding (each output row written after the input
    rows of its index are in the ring, and no later band needs an input row above it)."""
    w = read_window(conv.window, conv.describe())
    return (w.sh, w.sw) == (1, 1) and (w.Ho, w.Wo) == (w.H, w.W) and w.ph <= 1


def _in_place(graph: Graph, node: Node, placement: Placement, spilled: set[int], last: dict[int, int],
              words: int) -> int | None:
    """The buffer of an operand whose region the node may write in place, if any."""
    if node.op is Op.CONV2D:
        if not writes_over_input(node):
            return None
        operands = node.ins[:1]
    else:
        operands = node.ins
    for operand in operands:
        buf = placement.loc[operand][0]
        if buf in spilled and last.get(buf) == node.id and placement.buffers[buf].words == words:
            return buf
    return None


def spill_regions(graph: Graph, placement: Placement, spilled: set[int], top: int,
                  params: Params) -> dict[int, ExtEntry]:
    """Each spilled buffer's region (buffer id -> entry), from word ``top`` on, by lifetimes.

    Raises:
        CompileError: the regions do not fit EXT_WORDS (naming the node whose region does not).
    """
    last = _last_reads(graph, placement)
    entries: dict[int, ExtEntry] = {}
    live: list[tuple[int, int, int]] = []   # (addr, words, last reader) of the regions in use
    for buf in sorted((placement.buffers[b] for b in spilled), key=lambda b: min(b.members)):
        node = producer(graph, buf)
        live = [r for r in live if r[2] >= node.id]
        host = _in_place(graph, node, placement, spilled, last, buf.words)
        if host is not None:
            addr = entries[host].addr
            live = [r for r in live if r[0] != addr]
        else:
            addr = _first_fit(live, buf.words, top)
        if addr + buf.words > params.EXT_WORDS:
            raise CompileError(f"external memory is full: the activations of {node.describe()} "
                               f"({plural(buf.words, 'word')}) would end at word {addr + buf.words}, past "
                               f"the {plural(params.EXT_WORDS, 'word')} the machine has",
                               "use a smaller batch, or pack the weights (compile_graph(..., pack=True))",
                               node.id)
        live.append((addr, buf.words, last.get(buf.id, node.id)))
        entries[buf.id] = ExtEntry(region_name(node.id), addr, buf.words, node.shape, node.id, node.op)
    return entries


def _first_fit(live: list[tuple[int, int, int]], words: int, top: int) -> int:
    """The lowest address from ``top`` on where ``words`` words overlap no live region."""
    addr = top
    for start, size, _ in sorted(live):
        if addr + words <= start:
            break
        addr = max(addr, start + size)
    return addr


def spills_by_node(graph: Graph, placement: Placement, entries: Mapping[int, ExtEntry],
                   ext: Mapping[str, ExtEntry]) -> dict[int, ExtEntry]:
    """node id -> its region, for every node living in a spilled buffer (a fused relu too) and,
    when any does, for every input that only conv2d and add nodes read: they read it in bands
    from its own region instead of loading it whole."""
    found = {nid: entries[buf] for nid, (buf, _) in placement.loc.items() if buf in entries}
    if found:
        readers = graph.consumers()
        for node in graph.inputs():
            if readers[node.id] and all(graph.nodes[r].op in PRODUCERS for r in readers[node.id]):
                found[node.id] = ext[node.name]
    return found
