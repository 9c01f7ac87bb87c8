"""Placement: which scratchpad buffer each tensor lives in, and at which row.

Contract: :func:`place` gives every node except outputs a location (buffer, first row).
Buffers are abstract here (a size in words); the allocator gives them addresses during
emission. Each operation's rule is its ``place`` in the table (:class:`compiler.ops.Place`);
the rules (seed chapter 11, "allocation"; slices from chapter 16):

* nodes are visited from last to first, so a consumer is placed before its operands;
* a concatenation's two parts are views of its result's buffer (the second part starts at
  the first part's row count), so the producers write straight into place and the
  concatenation costs no instruction; nested concatenations add their row offsets;
* a fused relu and its matmul share one buffer;
* every other tensor gets its own buffer of rows x cols words; an int4 weight's buffer is
  rounded up to a multiple of 8 words, because UNPACK writes 8 values per packed word;
* a slice is a view into its source's buffer, ``start`` rows further on;
* an argmax gets a buffer of one word per row.

Refused: a tensor that two concatenations want as a part (it cannot be a view of two
buffers), a slice read by a concatenation or a relu (it would need a copy), an int4 weight
as part of a concatenation (its unpacked words would spill into the next part).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from .errors import CompileError
from .int4 import INT4_PER_WORD, is_int4, packed_words
from .ir import Graph, Node
from .ops import OPS, Place


@dataclass
class Buffer:
    """A piece of scratchpad that one or more tensors live in.

    Attributes:
        id: index in ``Placement.buffers``.
        words: size in 32-bit words.
        owner: the node it was made for (a concatenation or relu holds its operands too).
        members: ids of the nodes placed in it, in node order.
        addr: its scratchpad address while allocated during emission; None before it is
            allocated and again once it is released.
        home: the address it was given (kept after release, for listings and debugging).
    """

    id: int
    words: int
    owner: int
    members: list[int] = field(default_factory=list)
    addr: int | None = None
    home: int | None = None


@dataclass
class Placement:
    """Where the tensors live.

    Attributes:
        loc: node id -> (buffer id, first row inside the buffer).
        buffers: the buffers.
    """

    loc: dict[int, tuple[int, int]]
    buffers: list[Buffer]

    def buffer_of(self, nid: int) -> Buffer:
        return self.buffers[self.loc[nid][0]]


def buffer_words(node: Node) -> int:
    """Scratchpad words a tensor's own buffer needs (an int4 weight's is rounded up to whole
    groups of eight, the values UNPACK writes per packed word)."""
    if is_int4(node):
        return packed_words(node.words) * INT4_PER_WORD
    return node.words


def stack_offsets(heights: Sequence[int]) -> list[int]:
    """The first row of each part stacked row after row: 0, then the heights summed."""
    return [0, *accumulate(heights[:-1])]


def place(graph: Graph, consumers: Mapping[int, Sequence[int]]) -> Placement:
    """Place every tensor.

    Args:
        graph: the graph (relus already checked by :mod:`compiler.fusion`).
        consumers: node id -> its readers.

    Raises:
        CompileError: see the module docstring.
    """
    placing = _Placing(graph)
    for node in reversed(graph.nodes):
        rule = OPS[node.op].place
        if rule in (Place.OWN, Place.HOSTS_OPERAND, Place.STACKS_OPERANDS):
            placing.own(node, rule)
    for node in graph.nodes:
        if OPS[node.op].place is Place.VIEW_OF_OPERAND:
            placing.view(node, consumers)
    for node in graph.nodes:
        if OPS[node.op].place is Place.OWN_LAST:
            placing.loc[node.id] = (placing.new_buffer(buffer_words(node), node.id), 0)
    for nid in sorted(placing.loc):
        placing.buffers[placing.loc[nid][0]].members.append(nid)
    return Placement(placing.loc, placing.buffers)


class _Placing:
    """The placement under way: locations, buffers, and which concatenation holds each part."""

    def __init__(self, graph: Graph):
        self.nodes = graph.nodes
        self.loc: dict[int, tuple[int, int]] = {}
        self.buffers: list[Buffer] = []
        self.part_of: dict[int, int] = {}

    def new_buffer(self, words: int, owner: int) -> int:
        self.buffers.append(Buffer(len(self.buffers), words, owner))
        return len(self.buffers) - 1

    def own(self, node: Node, rule: Place) -> None:
        """A node with a buffer of its own (unless a consumer placed it already), and the
        operands it hosts (a fused relu's matmul) or stacks (a concatenation's parts)."""
        if node.id not in self.loc:
            self.loc[node.id] = (self.new_buffer(buffer_words(node), node.id), 0)
        buf, row = self.loc[node.id]
        if rule is Place.HOSTS_OPERAND:
            source = node.ins[0]
            if source in self.loc:
                raise CompileError(f"{self.nodes[source].describe()} is read by {node.op} node {node.id} and "
                                   "by a consumer that needs it in another place",
                                   f"let only the {node.op} read the {self.nodes[source].op}", source)
            self.loc[source] = (buf, row)
        if rule is Place.STACKS_OPERANDS:
            offsets = stack_offsets([self.nodes[part].shape[0] for part in node.ins])
            for part, offset in zip(node.ins, offsets, strict=True):
                check_free(self.nodes[part], node, self.part_of, self.loc)
                check_whole_words(self.nodes[part], node)
                self.part_of[part] = node.id
                self.loc[part] = (buf, row + offset)

    def view(self, node: Node, consumers: Mapping[int, Sequence[int]]) -> None:
        """A slice: a view ``start`` rows into its source's place."""
        for reader in consumers[node.id]:
            if OPS[self.nodes[reader].op].place in (Place.HOSTS_OPERAND, Place.STACKS_OPERANDS):
                raise CompileError(f"{node.op} node {node.id} is read by {self.nodes[reader].describe()}: a "
                                   f"{node.op} is a view inside its source's buffer and would need a copy "
                                   "there",
                                   "apply the operation to the whole tensor, or pass the slice through a "
                                   "matmul first", node.id)
        buf, row = self.loc[node.ins[0]]
        self.loc[node.id] = (buf, row + node.start)


def check_free(part: Node, concat: Node, part_of: Mapping[int, int],
               loc: Mapping[int, tuple[int, int]]) -> None:
    """Refuse a part of a concatenation that already has a place (a view of another
    buffer, or a part of this concatenation twice)."""
    if part.id not in loc:
        return
    other = part_of.get(part.id)
    if other == concat.id:
        where = "twice"
    elif other is not None:
        where = f"and concatenation node {other}"
    else:
        where = "but already has a place of its own"
    raise CompileError(f"{part.describe()} feeds concatenation node {concat.id} {where}; a tensor "
                       "can be a view in only one buffer, at one place",
                       "make it a part of one concatenation only (e.g. concatenate once and slice "
                       "the result, or copy it through a matmul)", part.id)


def check_whole_words(part: Node, concat: Node) -> None:
    """Refuse an int4 weight as a part of a concatenation: its unpacked words would spill."""
    if is_int4(part):
        raise CompileError(f"{part.describe()} is an int4 weight and a part of concatenation node "
                           f"{concat.id}; UNPACK writes whole groups of {INT4_PER_WORD} values, which "
                           "would spill into the next part", "store this weight with bits=8", part.id)
