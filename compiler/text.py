"""The text form of a graph: one node a line, and a parser that reads it back.

A line is ``%<id> = <op> [operands] ["name"] [attribute=value ...] -> (<rows>, <cols>)``::

    %0 = input "q" -> (1, 8)
    %1 = weight "w" bits=4 -> (8, 6)
    %2 = matmul %0, %1 factor=0.5 -> (1, 6)
    %3 = relu %2 -> (1, 6)
    %4 = slice %3 start=0 count=1 tag="h" -> (1, 6)
    %5 = output %4 "y" -> (1, 6)

The attributes are the operation's, from the table of :mod:`compiler.ops`, written when they
differ from their default (``start`` and ``count`` have none), then ``tag`` when the node has
one; names and tags are JSON strings, numbers as Python writes them (``repr``, so a factor
reads back to the same float). A weight's values are not part of the text: give them to
:meth:`compiler.ir.Graph.parse` by name, or leave them out for a graph that only the structural passes
need (placement, layout, the limits).

Contract: for every graph ``g``, ``Graph.parse(graph_text(g), weights)`` equals ``g``, where
``weights`` maps every weight's name to its values (or is None when ``g``'s weights have none).
The parser (:func:`read_graph`) builds every node through :meth:`compiler.ir.Graph.add_node`
of the graph it is given, so a parsed graph is checked exactly as a built one, and the shape
after ``->`` must be the one the rule gives. This module lies below the IR: it reads and writes
nodes through the graph's own methods, and :class:`compiler.ir.Graph` offers it as
``str(graph)``, :meth:`~compiler.ir.Graph.text` and :meth:`~compiler.ir.Graph.parse`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .errors import CompileError
from .ops import OPS, Op, Role

if TYPE_CHECKING:
    from .node import Node

_LINE = re.compile(r"%(?P<id>\d+)\s*=\s*(?P<op>[a-z_][a-z0-9_]*)(?P<body>.*?)\s*->\s*\(\s*(?P<rows>\d+)"
                   r"\s*,\s*"
                   r"(?P<cols>\d+)\s*\)\s*$")
_TOKEN = re.compile(r'\s*(?:(?P<operand>%\d+)\s*,?|(?P<string>"(?:[^"\\]|\\.)*")'
                    r'|(?P<key>[a-z_]+)=(?P<value>"(?:[^"\\]|\\.)*"|[^\s"]+))')


class Graph(Protocol):
    """What the text form reads and builds through: a graph's nodes and its one way in
    (:class:`compiler.ir.Graph` is one; this module lies below it)."""

    nodes: Sequence[Node]

    def add_node(self, op: Op | str, ins: tuple[int, ...] = (), **attrs: Any) -> int: ...

    def tag(self, a: int, name: str) -> int: ...


def node_text(node: Node) -> str:
    """One node as a line of the text form."""
    spec = OPS[node.op]
    parts = [f"%{node.id} = {node.op}"]
    if node.ins:
        parts.append(", ".join(f"%{i}" for i in node.ins))
    if spec.named:
        parts.append(json.dumps(node.name))
    for key, default in spec.attrs.items():
        value = getattr(node, key)
        if key == "bias":   # a matmul's bias: a JSON list of its floats (exact: repr round-trips)
            if value is not None:
                parts.append("bias=" + json.dumps([float(v) for v in value], separators=(",", ":")))
            continue
        if key != "name" and (default is None or value != default):
            parts.append(f"{key}={json.dumps(value) if isinstance(value, str) else repr(value)}")
    if node.tag is not None:
        parts.append(f"tag={json.dumps(node.tag)}")
    return " ".join(parts) + f" -> {node.shape}"


def graph_text(graph: Graph) -> str:
    """The graph, one node a line (no trailing newline; empty for an empty graph)."""
    return "\n".join(node_text(node) for node in graph.nodes)


def _value(text: str, where: str) -> Any:
    """An attribute's value: a JSON string, True or False, an int, a float or a JSON list of
    numbers (a matmul's bias)."""
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            raise CompileError(f"{where}: the list {text!r} is not a JSON list of numbers",
                               "write bias=[0.5,-1.25] (no spaces)") from None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise CompileError(f"{where}: the value {text!r} is not a string, True, False or a number",
                       'write "text", True, False, 3 or 0.5')


def _parse_body(body: str, where: str) -> tuple[list[int], str | None, dict[str, Any]]:
    """Operands, name and attributes of a line's middle part."""
    operands: list[int] = []
    name = None
    attrs: dict[str, Any] = {}
    position = 0
    body = body.rstrip()
    while position < len(body):
        match = _TOKEN.match(body, position)
        if match is None or match.end() == position:
            raise CompileError(f"{where}: cannot read {body[position:].strip()!r}",
                               'write %<id> operands, then "name", then attribute=value pairs')
        if match["operand"]:
            operands.append(int(match["operand"][1:]))
        elif match["string"]:
            name = json.loads(match["string"])
        else:
            attrs[match["key"]] = _value(match["value"], where)
        position = match.end()
    return operands, name, attrs


def _add_line(graph: Graph, line: str, where: str, weights: Mapping[str, Any] | None) -> None:
    match = _LINE.match(line.strip())
    if match is None:
        raise CompileError(f"{where}: {line.strip()!r} is not a node",
                           'write %<id> = <op> [operands] ["name"] [attribute=value ...] -> (<rows>, <cols>)')
    if int(match["id"]) != len(graph.nodes):
        raise CompileError(f"{where}: the node is numbered %{match['id']}, but it is node {len(graph.nodes)}",
                           "number the nodes %0, %1, ... in order")
    if match["op"] not in OPS:
        raise CompileError(f"{where}: unknown operation {match['op']!r}", f"use one of {', '.join(OPS)}")
    op = Op(match["op"])
    operands, name, attrs = _parse_body(match["body"], where)
    tag = attrs.pop("tag", None)
    unknown = sorted(set(attrs) - set(OPS[op].attrs))
    if unknown:
        raise CompileError(f"{where}: {op} has no attribute {unknown[0]!r}",
                           f"{op} takes {', '.join(OPS[op].attrs) or 'no attributes'}")
    if name is not None:
        if not OPS[op].named:
            raise CompileError(f"{where}: {op} has no name, but the line gives {json.dumps(name)}",
                               "only inputs, weights and outputs are named")
        attrs["name"] = name
    shape = (int(match["rows"]), int(match["cols"]))
    if OPS[op].role is Role.SOURCE:   # a source declares its shape
        attrs["shape"] = shape
    if op is Op.WEIGHT and weights is not None:
        if name not in weights:
            raise CompileError(f"{where}: weights= has no values for '{name}'", "give every weight's values")
        attrs["array"] = weights[name]
    try:
        nid = graph.add_node(op, tuple(operands), **attrs)
    except CompileError as e:
        raise CompileError(f"{where}: {e.problem}", e.fix, e.node) from None
    node = graph.nodes[nid]
    if node.shape != shape:
        raise CompileError(f"{where}: {node.describe()} has the shape {node.shape}, not {shape}",
                           "write the shape the operation gives")
    if tag is not None:
        graph.tag(nid, tag)


def read_graph(graph: Graph, text: str, weights: Mapping[str, Any] | None = None) -> None:
    """Add the nodes a text form describes (see the module docstring) to ``graph``, an empty
    :class:`~compiler.ir.Graph` (:meth:`compiler.ir.Graph.parse` gives it).

    Raises:
        CompileError: a line that does not parse, a node the builders refuse, a shape that
            is not the one the operation gives, a weight without values in ``weights``; the
            message starts with ``line <n>``.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            _add_line(graph, line, f"line {number}", weights)
