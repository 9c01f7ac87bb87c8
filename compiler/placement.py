"""Placement: which scratchpad buffer each tensor lives in, and at which row.

Contract: :func:`place` gives every node except outputs a location (buffer, first row).
Buffers are abstract here (a size in words); the allocator gives them addresses during
emission. The rules (seed chapter 11, "allocation"; slices from chapter 16):

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

from .ir import CompileError, Graph, Node

UNPACK_GROUP = 8
"""Values per packed int4 word (GA2.md section 2)."""


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
    """Scratchpad words a tensor's own buffer needs (an int4 weight's is rounded up to 8)."""
    if node.op == "weight" and node.bits == 4:
        return -(-node.words // UNPACK_GROUP) * UNPACK_GROUP
    return node.words


def place(graph: Graph, consumers: Mapping[int, Sequence[int]]) -> Placement:
    """Place every tensor.

    Args:
        graph: the graph (relus already checked by :mod:`compiler.fusion`).
        consumers: node id -> its readers.

    Raises:
        CompileError: see the module docstring.
    """
    loc: dict[int, tuple[int, int]] = {}
    buffers: list[Buffer] = []
    part_of: dict[int, int] = {}

    def new_buffer(words: int, owner: int) -> int:
        buffers.append(Buffer(len(buffers), words, owner))
        return len(buffers) - 1

    nodes = graph.nodes
    for node in reversed(nodes):
        if node.op in ("output", "argmax", "slice"):
            continue
        if node.id not in loc:
            loc[node.id] = (new_buffer(buffer_words(node), node.id), 0)
        if node.op == "relu":
            source = node.ins[0]
            if source in loc:
                raise CompileError(f"{nodes[source].describe()} is read by relu node {node.id} and by a "
                                   "consumer that needs it in another place",
                                   "let only the relu read the matmul", source)
            loc[source] = loc[node.id]
        if node.op == "concat":
            buf, row = loc[node.id]
            for k, part in enumerate(node.ins):
                _check_part(nodes[part], node, part_of, loc)
                part_of[part] = node.id
                loc[part] = (buf, row + (0 if k == 0 else nodes[node.ins[0]].shape[0]))

    for node in nodes:
        if node.op != "slice":
            continue
        for reader in consumers[node.id]:
            if nodes[reader].op in ("concat", "relu"):
                raise CompileError(f"slice node {node.id} is read by {nodes[reader].describe()}: a slice is "
                                   "a view inside its source's buffer and would need a copy there",
                                   "apply the operation to the whole tensor, or pass the slice through a "
                                   "matmul first", node.id)
        buf, row = loc[node.ins[0]]
        loc[node.id] = (buf, row + node.start)

    for node in nodes:
        if node.op == "argmax":
            loc[node.id] = (new_buffer(node.shape[0], node.id), 0)

    for nid in sorted(loc):
        buffers[loc[nid][0]].members.append(nid)
    return Placement(loc, buffers)


def _check_part(part: Node, concat: Node, part_of: Mapping[int, int],
                loc: Mapping[int, tuple[int, int]]) -> None:
    if part.id in loc:
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
    if part.op == "weight" and part.bits == 4:
        raise CompileError(f"{part.describe()} is an int4 weight and a part of concatenation node "
                           f"{concat.id}; UNPACK writes whole groups of {UNPACK_GROUP} values, which would "
                           "spill into the next part", "store this weight with bits=8", part.id)
