"""Capra's graph IR: a list of nodes, each an operation on 2-D tensors.

Contract: a :class:`Graph` only ever holds well-formed nodes. Every builder method checks
its operands (ids that exist, shapes that fit, names not used twice) when it is called and
raises :class:`CompileError` at once, so a bad graph fails where it is written, not deep in
the compiler. Node ids are list positions; nodes are in a topological order by construction
(an operand must exist before the node that reads it).

Operations (seed chapter 11; int4 weights from chapter 13, slices from chapter 16):

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
output      a, name                  a's shape; stored to external memory under ``name``
=========== ======================= ==================================================

An argmax result holds row indices, not scaled int8 values, so only an output may read it;
an output node is not a tensor, so nothing may read it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Shape = tuple[int, int]

VALID_WEIGHT_BITS = (4, 8)
"""int8 weights, one per word, or int4 weights packed eight to a word (GA2.md section 2)."""


def plural(count: int, noun: str) -> str:
    """``1 piece``, ``2 pieces``, ``0 pieces``: a count with its noun, for messages."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def shown(value: object) -> str:
    """A bad argument for a message: its repr, cut short, and its type (``'x' (a str)``)."""
    text = repr(value)
    return f"{text if len(text) <= 60 else text[:57] + '...'} (a {type(value).__name__})"


def float_array(raw: Any) -> tuple[np.ndarray | None, str]:
    """``raw`` (an array-like of real numbers) as a float64 array, or None and why not.

    Refused, where ``np.asarray(raw, dtype=float)`` would quietly turn them into numbers or
    NaN: text (``"1"``), complex numbers (the imaginary part would be dropped), and elements
    that are not numbers (None, objects). The reason is a phrase such as ``it holds text``
    or ``element [0, 1] is None, not a number``; non-finite values are left to the caller.
    """
    try:
        plain = np.asarray(raw)
    except (TypeError, ValueError, RuntimeError) as e:   # ragged rows; a tensor that needs grad
        if "inhomogeneous" in str(e):
            return None, "its rows have different lengths"
        return None, _first_line(e)
    kind = plain.dtype.kind
    if kind in "USa":
        return None, "it holds text, not numbers"
    if kind == "c":
        return None, "it holds complex numbers"
    if kind == "O":
        for index, item in np.ndenumerate(plain):
            if not isinstance(item, numbers.Real):
                return None, f"element {list(index)} is {item!r}, not a number"
    elif kind not in "biuf":
        return None, f"it holds {plain.dtype} values, not numbers"
    try:
        return plain.astype(np.float64), ""
    except (TypeError, ValueError, OverflowError) as e:
        return None, _first_line(e)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0].rstrip(".") if text else type(error).__name__


def first_non_finite(values: np.ndarray) -> str:
    """``element [0, 1] is nan``: where the first NaN or infinity of ``values`` is ('' if none)."""
    bad = np.argwhere(~np.isfinite(values))
    if len(bad) == 0:
        return ""
    index = tuple(int(i) for i in bad[0])
    return f"element {list(index)} is {float(values[index])}"


class CompileError(Exception):
    """Capra refuses a graph, its calibration data or its inputs.

    Attributes:
        problem: what is wrong, naming the node (``node 4 (matmul)``) or the input.
        fix: what the user can change so that the graph compiles.
        node: the id of the node at fault, when there is one.

    ``str(error)`` is the problem followed by the fix.
    """

    def __init__(self, problem: str, fix: str = "", node: int | None = None):
        self.problem = problem
        self.fix = fix
        self.node = node
        super().__init__(f"{problem}. Fix: {fix}" if fix else problem)


@dataclass
class Node:
    """One operation of the graph.

    Attributes:
        id: position in ``Graph.nodes``.
        op: the operation (see the module table).
        ins: ids of the operands, in order.
        shape: (rows, cols) of the result.
        name: external name (input, weight, output), else "".
        array: the weight's float64 values, shape ``shape`` (weights only).
        bits: 8 or 4 (weights only).
        transpose_b: the matmul reads its second operand transposed.
        factor: the matmul's constant factor (the ``scale=`` argument of :meth:`Graph.matmul`).
        start, count: the rows a slice takes.
        tag: a user's name for the tensor, used by ``compile_graph(ranges=...)``.
    """

    id: int
    op: str
    ins: tuple[int, ...]
    shape: Shape
    name: str = ""
    array: np.ndarray | None = None
    bits: int = 8
    transpose_b: bool = False
    factor: float = 1.0
    start: int = 0
    count: int = 0
    tag: str | None = None

    def describe(self) -> str:
        """``node 4 (matmul)`` or ``node 0 (input 'x')``, for messages."""
        named = f" '{self.name}'" if self.name else ""
        return f"node {self.id} ({self.op}{named})"

    @property
    def words(self) -> int:
        """Number of elements, i.e. of scratchpad words the tensor occupies as int8."""
        return self.shape[0] * self.shape[1]


@dataclass
class Graph:
    """A graph of tensor operations, built node by node.

    Every method returns the id of the new node (``tag`` returns its argument).

    Raises:
        CompileError: an operand id that does not exist or may not be read, shapes that do
            not fit, a name used twice, or a bad argument; the message names the operands
            and says how to fix the call.
    """

    nodes: list[Node] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict, repr=False)
    """external name -> node id (inputs, weights and outputs share one namespace)."""

    # ------------------------------------------------------------------ helpers

    def _new(self, op: str, ins: tuple[int, ...], shape: Shape, **attrs: Any) -> int:
        node = Node(len(self.nodes), op, ins, shape, **attrs)
        self.nodes.append(node)
        if node.name:
            self.names[node.name] = node.id
        return node.id

    def _operand(self, nid: int, user: str) -> Node:
        if (isinstance(nid, bool | np.bool_) or not isinstance(nid, int | np.integer)
                or not 0 <= nid < len(self.nodes)):
            raise CompileError(f"{user}: operand {nid!r} is not a node of this graph "
                               f"(it has {plural(len(self.nodes), 'node')})",
                               "pass the id a Graph method returned")
        node = self.nodes[int(nid)]
        if node.op == "output":
            raise CompileError(f"{user}: operand {node.describe()} is an output, not a tensor",
                               f"read the tensor it stores, node {node.ins[0]}", node.id)
        if node.op == "argmax" and user != "output":
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

    @staticmethod
    def _check_shape(shape: Any, kind: str) -> Shape:
        ok = (isinstance(shape, tuple | list) and len(shape) == 2
              and all(isinstance(d, int | np.integer) and not isinstance(d, bool | np.bool_) and d >= 1
                      for d in shape))
        if not ok:
            raise CompileError(f"{kind}: shape {shape!r} is not (rows, cols) with both at least 1",
                               "tensors are 2-D; write a vector as (1, n)")
        return int(shape[0]), int(shape[1])

    # ------------------------------------------------------------------ the operations

    def input(self, name: str, shape: Shape) -> int:
        """A tensor the host supplies at run time, (rows, cols) float values."""
        self._check_name(name, "input")
        return self._new("input", (), self._check_shape(shape, f"input '{name}'"), name=name)

    def weight(self, name: str, array: Any, bits: int = 8) -> int:
        """A constant matrix (a 2-D array-like of finite floats).

        bits=8 stores one int8 per word; bits=4 (seed chapter 13) stores signed 4-bit values
        packed eight to a word in external memory, expanded by UNPACK after the load.
        """
        self._check_name(name, "weight")
        whole = isinstance(bits, int | np.integer) and not isinstance(bits, bool | np.bool_)
        if not whole or bits not in VALID_WEIGHT_BITS:
            raise CompileError(f"weight '{name}': bits={bits!r} is not supported",
                               "use bits=8 (int8) or bits=4 (packed int4)")
        converted, why = float_array(array)
        if converted is None:
            raise CompileError(f"weight '{name}': the values are not a numeric 2-D array ({why})",
                               "pass a list of equal-length rows of numbers or a 2-D numpy array")
        values = np.array(converted, dtype=np.float64)   # a private copy
        if values.ndim != 2 or values.size == 0:
            raise CompileError(f"weight '{name}': expected a non-empty 2-D array, got shape {values.shape}",
                               "write a vector as a single row, [[...]]")
        if not np.isfinite(values).all():
            raise CompileError(f"weight '{name}': contains NaN or infinity ({first_non_finite(values)})",
                               "replace the non-finite values")
        values.setflags(write=False)
        shape = (int(values.shape[0]), int(values.shape[1]))
        return self._new("weight", (), shape, name=name, array=values, bits=int(bits))

    def matmul(self, a: int, b: int, transpose_b: bool = False, scale: float = 1.0) -> int:
        """scale * (a @ b), or scale * (a @ b^T) with ``transpose_b``."""
        na, nb = self._operand(a, "matmul"), self._operand(b, "matmul")
        (m, k) = na.shape
        (k2, n) = nb.shape[::-1] if transpose_b else nb.shape
        if k != k2:
            used = f"{nb.shape}^T" if transpose_b else f"{nb.shape}"
            raise CompileError(
                f"matmul of {na.describe()} {na.shape} by {nb.describe()} {used}: "
                f"inner dimensions {k} and {k2} differ",
                "make the columns of the first operand match the rows of the second, or pass "
                "transpose_b=True to use the second operand's transpose")
        if not isinstance(transpose_b, bool | np.bool_):
            raise CompileError(f"matmul of {na.describe()} by {nb.describe()}: transpose_b = "
                               f"{shown(transpose_b)} is not True or False",
                               "pass transpose_b=True to use the second operand's transpose, or leave it "
                               "out")
        try:
            factor = float("nan") if isinstance(scale, str | bytes | bool | np.bool_) else float(scale)
        except (TypeError, ValueError):
            factor = float("nan")
        if not (np.isfinite(factor) and factor > 0):
            raise CompileError(f"matmul of {na.describe()} by {nb.describe()}: the constant factor "
                               f"{scale!r} must be a positive finite number (the requantizer multiplier "
                               "is unsigned)", "fold a sign into one of the operands")
        return self._new("matmul", (na.id, nb.id), (m, n), transpose_b=bool(transpose_b), factor=factor)

    def softmax(self, a: int) -> int:
        """Softmax of each row."""
        na = self._operand(a, "softmax")
        return self._new("softmax", (na.id,), na.shape)

    def add(self, a: int, b: int) -> int:
        """Elementwise a + b."""
        na, nb = self._operand(a, "add"), self._operand(b, "add")
        if na.shape != nb.shape:
            raise CompileError(f"add of {na.describe()} {na.shape} and {nb.describe()} {nb.shape}: "
                               "the shapes differ", "add tensors of the same shape")
        return self._new("add", (na.id, nb.id), na.shape)

    def relu(self, a: int) -> int:
        """max(0, a). It must directly follow a matmul that has no other reader (it becomes
        the matmul's requantizer flag); the compiler checks that."""
        na = self._operand(a, "relu")
        return self._new("relu", (na.id,), na.shape)

    def concat_rows(self, a: int, b: int) -> int:
        """The rows of a, then the rows of b."""
        na, nb = self._operand(a, "concat_rows"), self._operand(b, "concat_rows")
        if na.shape[1] != nb.shape[1]:
            raise CompileError(f"concat_rows of {na.describe()} {na.shape} and {nb.describe()} {nb.shape}: "
                               "the widths differ", "concatenate tensors with the same number of columns")
        return self._new("concat", (na.id, nb.id), (na.shape[0] + nb.shape[0], na.shape[1]))

    def slice_rows(self, a: int, start: int, count: int) -> int:
        """Rows start .. start+count-1 of a, as a view (no instruction, no copy)."""
        na = self._operand(a, "slice_rows")
        rows = na.shape[0]
        ints = isinstance(start, int | np.integer) and isinstance(count, int | np.integer)
        if not ints or count < 1 or start < 0 or start + count > rows:
            raise CompileError(f"slice_rows of {na.describe()}: rows {start}..{start + count - 1} (start="
                               f"{start!r}, count={count!r}) do not lie inside its {plural(rows, 'row')}",
                               f"take 0 <= start and start + count <= {rows}, with count >= 1")
        return self._new("slice", (na.id,), (int(count), na.shape[1]), start=int(start), count=int(count))

    def argmax(self, a: int) -> int:
        """Index of the first maximum of each row, shape (rows, 1)."""
        na = self._operand(a, "argmax")
        return self._new("argmax", (na.id,), (na.shape[0], 1))

    def output(self, a: int, name: str) -> int:
        """Store tensor a to external memory under ``name``."""
        na = self._operand(a, "output")
        self._check_name(name, "output")
        return self._new("output", (na.id,), na.shape, name=name)

    def tag(self, a: int, name: str) -> int:
        """Give tensor a a name by which ``compile_graph(ranges={name: r})`` fixes its range."""
        na = self._operand(a, "tag")
        if not isinstance(name, str) or not name:
            raise CompileError(f"tag of {na.describe()}: the tag must be a non-empty string, got "
                               f"{shown(name)}",
                               "name the tensor as compile_graph(ranges={name: ...}) will, e.g. 'cache'")
        na.tag = name
        return na.id

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
        return [node for node in self.nodes if node.op == "input"]

    def outputs(self) -> list[Node]:
        """The output nodes, in node order."""
        return [node for node in self.nodes if node.op == "output"]
