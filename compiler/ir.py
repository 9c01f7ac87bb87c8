"""Capra's graph IR: a list of nodes, each an operation on 2-D tensors.

Contract: a :class:`Graph` only ever holds well-formed nodes. Every builder method checks
its operands (ids that exist, shapes that fit, names not used twice) when it is called and
raises :class:`CompileError` at once, so a bad graph fails where it is written, not deep in
the compiler. Node ids are list positions; nodes are in a topological order by construction
(an operand must exist before the node that reads it).

Operations (seed chapter 11; int4 weights from chapter 13, slices from chapter 16; the
table of :mod:`compiler.ops` declares each, with its shape rule):

=========== ======================= ==================================================
op          operands                 result shape
=========== ======================= ==================================================
input       (name)                   the declared (rows, cols)
weight      (name, float array)      the array's shape; bits 8 (int8) or 4 (packed int4)
matmul      a (m, k), b (k, n)       (m, n); ``transpose_b``: b is (n, k) and used as b^T;
                                     ``factor`` multiplies the product (> 0)
softmax     a                        a's shape; softmax of each row
add         a, b (same shape)        the shape
relu        a                        a's shape
concat      a (r1, c), b (r2, c)     (r1 + r2, c): b's rows below a's
slice       a, start, count          (count, c): rows start .. start+count-1, a view
argmax      a (r, c)                 (r, 1): index of the first maximum of each row
conv2d      x (B*H*W, C), w          (B*H_o*W_o, C_out): images stored HWC, ``window``
                                     their geometry; w (k_h*k_w*C, C_out), depthwise
                                     (k_h*k_w, C); ``factor``, ``bias`` as a matmul's
maxpool     x (B*H*W, C)             (B*H_o*W_o, C): the maximum of each window
reshape     a (r, c), count          (count, r*c / count): the same words, a view
output      a, name                  a's shape; stored to external memory under ``name``
=========== ======================= ==================================================

An argmax result holds row indices, not scaled int8 values, so only an output may read it;
an output node is not a tensor, so nothing may read it.

A graph has a text form, one node a line (``%3 = relu %2 -> (5, 10)``): ``str(graph)`` or
:meth:`Graph.text`, read back by :meth:`Graph.parse` (see :mod:`compiler.text`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .errors import CompileError, first_non_finite, float_array, plural, shown
from .node import Node, Shape
from .ops import OPS, Op, Role
from .ops.weight import VALID_WEIGHT_BITS
from .ops.window import Window, pair
from .text import graph_text, read_graph

__all__ = ["VALID_WEIGHT_BITS", "CompileError", "Graph", "Node", "NodeId", "Op", "Shape", "first_non_finite",
           "float_array", "plural", "shown"]

_GRAPH_NUMBERS = itertools.count(1)
"""Each Graph made in this process takes the next number (:attr:`Graph.number`)."""


class NodeId(int):
    """A node's id as a builder method returns it: the int position in ``Graph.nodes``, which
    also remembers the number of the graph that made it, so that another graph refuses it
    instead of reading its own node of the same position. Plain ints are still taken (a
    graph written by hand, or read from text)."""

    graph: int

    def __new__(cls, value: int, graph: int) -> NodeId:
        made = super().__new__(cls, value)
        made.graph = graph
        return made

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __reduce__(self) -> tuple:
        return (int, (int(self),))            # a pickled id is a plain int (the graph stays here)


@dataclass
class Graph:
    """A graph of tensor operations, built node by node.

    Every builder method returns the id of the new node (``tag`` returns its argument); each
    is :meth:`add_node` with the operation's attributes, checked by the operation's shape
    rule in the table (:mod:`compiler.ops`).

    Raises:
        CompileError: an operand id that does not exist or may not be read, shapes that do
            not fit, a name used twice, or a bad argument; the message names the operands
            and says how to fix the call.
    """

    nodes: list[Node] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict, repr=False)
    """external name -> node id (inputs, weights and outputs share one namespace)."""
    number: int = field(default_factory=lambda: next(_GRAPH_NUMBERS), repr=False, compare=False)
    """This graph's number among the graphs of the process: the :class:`NodeId` s it returns
    carry it, and its builder methods refuse the ids of another number."""

    # ------------------------------------------------------------------ the one way in

    def add_node(self, op: Op | str, ins: tuple[int, ...] = (), **attrs: Any) -> int:
        """Add a node of any operation: check its operands and name, run its shape rule.

        Args:
            op: the operation (an :class:`~compiler.ops.Op` or its name).
            ins: the operands' ids.
            attrs: the attributes the operation's shape rule takes (``name``, ``shape``,
                ``array``, ``bits``, ``transpose_b``, ``factor``, ``start``, ``count``).

        Raises:
            CompileError: an unknown operation, the wrong number of operands, or what the
                operation's checks refuse.
        """
        if op not in OPS:
            raise CompileError(f"unknown operation {op!r}", f"use one of {', '.join(OPS)}")
        spec = OPS[Op(op)]
        if len(ins) != spec.arity:
            raise CompileError(f"{spec.op} takes {plural(spec.arity, 'operand')}, not {len(ins)}",
                               f"give it {plural(spec.arity, 'operand')}")
        operands = [self._operand(i, spec.builder, indices=spec.role is Role.SINK) for i in ins]
        if spec.named:
            self._check_name(attrs.get("name"), spec.op)
        shape, fields = spec.shape(operands, attrs)
        node = Node(len(self.nodes), spec.op, tuple(n.id for n in operands), shape, **fields)
        self.nodes.append(node)
        if node.name:
            self.names[node.name] = node.id
        return NodeId(node.id, self.number)

    def _operand(self, nid: int, user: str, indices: bool = False) -> Node:
        """The node ``nid``, if ``user`` may read it (``indices``: it may read row indices)."""
        if isinstance(nid, NodeId) and nid.graph != self.number:
            raise CompileError(f"{user}: operand {nid!r} is a node of another graph (graph #{nid.graph}), "
                               f"not of this one (graph #{self.number})",
                               "build every node of a computation with the methods of the one graph")
        if (isinstance(nid, bool | np.bool_) or not isinstance(nid, int | np.integer)
                or not 0 <= nid < len(self.nodes)):
            raise CompileError(f"{user}: operand {nid!r} is not a node of this graph "
                               f"(it has {plural(len(self.nodes), 'node')})",
                               "pass the id a Graph method returned")
        node = self.nodes[int(nid)]
        spec = OPS[node.op]
        if spec.role is Role.SINK:
            raise CompileError(f"{user}: operand {node.describe()} is an {node.op}, not a tensor",
                               f"read the tensor it stores, node {node.ins[0]}", node.id)
        if not spec.scaled and not indices:
            raise CompileError(f"{user}: operand {node.describe()} holds row indices, which have "
                               "no int8 scale; only an output may read it",
                               "apply the operation to the argmax's input instead", node.id)
        return node

    def _check_name(self, name: str, kind: str) -> None:
        if not isinstance(name, str) or not name:
            raise CompileError(f"{kind}: the name must be a non-empty string, got {name!r}",
                               "give every input, weight and output a name")
        if name in self.names:
            other = self.nodes[self.names[name]]
            raise CompileError(f"{kind} '{name}': the name is already used by {other.describe()}; "
                               "external memory is laid out by name",
                               "choose a name no other input, weight or output has", other.id)

    # ------------------------------------------------------------------ the operations

    def input(self, name: str, shape: Shape) -> int:
        """A tensor the host supplies at run time, (rows, cols) float values."""
        return self.add_node(Op.INPUT, name=name, shape=shape)

    def weight(self, name: str, array: Any, bits: int = 8) -> int:
        """A constant matrix (a 2-D array-like of finite floats).

        bits=8 stores one int8 per word; bits=4 (seed chapter 13) stores signed 4-bit values
        packed eight to a word in external memory, expanded by UNPACK after the load.
        """
        return self.add_node(Op.WEIGHT, name=name, array=array, bits=bits)

    def matmul(self, a: int, b: int, transpose_b: bool = False, scale: float = 1.0, bias: Any = None) -> int:
        """scale * (a @ b), or scale * (a @ b^T) with ``transpose_b``; plus ``bias`` (finite
        floats, one per column of the result) on every row when given. The bias is added to
        the int32 accumulator before requantization (MM acc = 1 onto the bias, GA2.md
        section 3), so a relu after it still fuses into the requantizer."""
        extra = {} if bias is None else {"bias": bias}
        return self.add_node(Op.MATMUL, (a, b), transpose_b=transpose_b, factor=scale, **extra)

    def table(self, a: int, fn: str) -> int:
        """A function applied elementwise through a 256-entry table (one LUT instruction): ``fn``
        is one of compiler.tables' (gelu, gelu_tanh, silu, sigmoid, tanh, hardswish, relu,
        leaky_relu:<slope>, elu:<alpha>). The compiler builds the table from the input's and the
        output's scales."""
        return self.add_node(Op.TABLE, (a,), fn=fn)

    def softmax(self, a: int, causal: bool = False) -> int:
        """Softmax of each row; ``causal``: row i of the last ``rows`` positions takes only its
        first i + 1 + cols - rows values (attention's causal mask), the others are 0."""
        return self.add_node(Op.SOFTMAX, (a,), causal=causal)

    def add(self, a: int, b: int) -> int:
        """Elementwise a + b."""
        return self.add_node(Op.ADD, (a, b))

    def relu(self, a: int) -> int:
        """max(0, a). It must directly follow a matmul or an add that has no other reader (it
        becomes the relu flag of the matmul's RQ or of the add's VADD); the compiler checks that."""
        return self.add_node(Op.RELU, (a,))

    def concat_rows(self, a: int, b: int) -> int:
        """The rows of a, then the rows of b."""
        return self.add_node(Op.CONCAT, (a, b))

    def slice_rows(self, a: int, start: int, count: int) -> int:
        """Rows start .. start+count-1 of a, as a view (no instruction, no copy)."""
        return self.add_node(Op.SLICE, (a,), start=start, count=count)

    def argmax(self, a: int) -> int:
        """Index of the first maximum of each row, shape (rows, 1)."""
        return self.add_node(Op.ARGMAX, (a,))

    def conv2d(self, x: int, w: int, image: tuple[int, int], kernel: Any, stride: Any = 1, padding: Any = 0,
               depthwise: bool = False, scale: float = 1.0, bias: Any = None,
               per_channel: bool = False, shared: bool = False) -> int:
        """scale * (x convolved with w) + bias, over images stored rows = pixels, columns =
        channels (docs/guide/conv.md): x (B*H*W, C) holds B images of ``image`` = (H, W); w is
        (k_h*k_w*C, C_out) with row (ky*k_w + kx)*C + c, or (depthwise, groups = C) (k_h*k_w, C);
        ``kernel``, ``stride`` and ``padding`` (zeros, each side) an int or a pair, as
        ``nn.Conv2d`` takes them; ``per_channel``: a weight scale and a requantizer per output
        channel (:mod:`compiler.channels`); ``shared`` (depthwise): w is (k_h*k_w, 1), one
        weight per tap for every channel (an average pool; the lowering reads the taps as one
        row instead of diagonal blocks). Result (B*H_o*W_o, C_out)."""
        where = "conv2d"
        window = Window(*pair(image, "image", where), self._cols(x, where), *pair(kernel, "kernel", where),
                        *pair(stride, "stride", where), *pair(padding, "padding", where),
                        bool(depthwise or shared), bool(shared))
        extra = {} if bias is None else {"bias": bias}
        if per_channel:
            extra["per_channel"] = per_channel
        return self.add_node(Op.CONV2D, (x, w), window=window.text(), factor=scale, **extra)

    def maxpool2d(self, x: int, image: tuple[int, int], kernel: Any, stride: Any = None) -> int:
        """The maximum of each ``kernel`` window (stride: the kernel's, as ``nn.MaxPool2d``), channel
        by channel, over x (B*H*W, C) holding B images of ``image`` = (H, W)."""
        where = "maxpool2d"
        k = pair(kernel, "kernel", where)
        s = k if stride is None else pair(stride, "stride", where)
        window = Window(*pair(image, "image", where), self._cols(x, where), *k, *s)
        return self.add_node(Op.MAXPOOL, (x,), window=window.text())

    def reshape(self, a: int, rows: int) -> int:
        """The same words as ``rows`` rows (a view): flattening B images of H x W x C is
        reshape(a, B)."""
        return self.add_node(Op.RESHAPE, (a,), count=rows)

    def _cols(self, nid: int, user: str) -> int:
        return self._operand(nid, user).shape[1]
    def layernorm(self, a: int, eps: float = 1e-5, gain: float = 1.0, bias: Any = None) -> int:
        """The LayerNorm of each row, gain * (a - mean) / sqrt(var + eps) + bias (the biased
        variance, as nn.LayerNorm): one LN per row, exactly in integers, and one RQ (issue 26).
        ``gain`` is one positive number, ``bias`` None or one number per column."""
        return self.add_node(Op.LAYERNORM, (a,), eps=eps, gain=gain, bias=bias)

    def embedding(self, ids: int, table: int) -> int:
        """Row ``ids[t, 0]`` of the int8 weight ``table`` for each token t: ids is an input of
        shape (tokens, 1) holding token ids 0..127 (its scale is pinned to 1), the result
        (tokens, table's columns). One GATHER per token; the table stays in external memory."""
        return self.add_node(Op.EMBEDDING, (ids, table))

    def output(self, a: int, name: str) -> int:
        """Store tensor a to external memory under ``name``."""
        return self.add_node(Op.OUTPUT, (a,), name=name)

    def tag(self, a: int, name: str) -> int:
        """Give tensor a a name by which ``compile_graph(ranges={name: r})`` fixes its range."""
        na = self._operand(a, "tag")
        if not isinstance(name, str) or not name:
            raise CompileError(f"tag of {na.describe()}: the tag must be a non-empty string, got "
                               f"{shown(name)}",
                               "name the tensor as compile_graph(ranges={name: ...}) will, e.g. 'cache'")
        na.tag = name
        return NodeId(na.id, self.number)

    def snapshot(self) -> Graph:
        """A copy whose nodes and names later builder calls on this graph do not change (a
        weight's values are shared: they are read-only). ``compile_graph`` keeps one in
        ``Program.graph``, so a program stays what it was compiled from."""
        return Graph([replace(node) for node in self.nodes], dict(self.names))

    # ------------------------------------------------------------------ text form

    def text(self) -> str:
        """The graph as text, one node a line: ``%2 = matmul %0, %1 factor=0.5 -> (4, 8)``
        (see :mod:`compiler.text`; a weight's values are not part of it)."""
        return graph_text(self)

    def __str__(self) -> str:
        return self.text()

    @classmethod
    def parse(cls, text: str, weights: dict[str, Any] | None = None) -> Graph:
        """The graph a text form describes (see :mod:`compiler.text`).

        Args:
            text: one node a line, as :meth:`text` writes it; blank lines and ``#`` comments
                are skipped.
            weights: weight name -> values (a 2-D array-like of the declared shape). Without
                it the weights have no values: the structural passes take such a graph,
                compilation refuses it.

        Raises:
            CompileError: a line that does not parse, or a node the builders refuse; the
                message names the line.
        """
        graph = cls()
        read_graph(graph, text, weights)
        return graph

    # ------------------------------------------------------------------ queries

    def consumers(self) -> dict[int, list[int]]:
        """node id -> ids of the nodes that read it, in node order (one entry per read)."""
        readers: dict[int, list[int]] = {node.id: [] for node in self.nodes}
        for node in self.nodes:
            for operand in node.ins:
                readers[operand].append(node.id)
        return readers

    def inputs(self) -> list[Node]:
        """The input nodes, in node order."""
        return [node for node in self.nodes if node.op is Op.INPUT]

    def outputs(self) -> list[Node]:
        """The output nodes, in node order."""
        return [node for node in self.nodes if node.op is Op.OUTPUT]
