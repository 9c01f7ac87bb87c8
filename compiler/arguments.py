"""The arguments of :func:`compiler.pipeline.compile_graph`, checked before any pass runs: each
of the wrong type is refused, naming the argument and its value (the calibration data is
checked by :mod:`compiler.calibrate`, the names of passes by
:func:`compiler.pipeline.switched_off`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sim.spec import Params

from .errors import CompileError, plural, shown
from .ir import Graph
from .ops import Op


def check_arguments(graph: object, reuse: object, ranges: object, params: object, events: object,
                    stream: object = True, pack: object = None, cse: object = True,
                    fuse: object = True, reorder: object = True) -> None:
    """Refuse arguments of compile_graph of the wrong type, naming the argument and its value
    (the calibration data is checked by :mod:`compiler.calibrate`).

    Raises:
        CompileError: the argument at fault, its value and what it should be.
    """
    if not isinstance(graph, Graph):
        raise CompileError(f"compile_graph: graph = {shown(graph)} is not a compiler.Graph",
                           "build the graph with compiler.Graph() and its methods and pass it first")
    if not graph.outputs():
        raise CompileError(f"compile_graph: the graph (graph #{graph.number}, "
                           f"{plural(len(graph.nodes), 'node')}) has no output, so its program would store "
                           "nothing a host can read",
                           "mark each result with graph.output(node, 'name')")
    if not isinstance(reuse, bool | np.bool_):
        raise CompileError(f"compile_graph: reuse = {shown(reuse)} is not True or False",
                           "pass reuse=True (release dead buffers) or reuse=False (keep every tensor)")
    if not isinstance(stream, bool | np.bool_):
        raise CompileError(f"compile_graph: stream = {shown(stream)} is not True or False",
                           "pass stream=True (block a matmul that does not fit whole) or stream=False")
    for name, value, meaning in (("cse", cse, "compute a repeated subgraph once"),
                                 ("fuse", fuse, "a relu rides on the instruction before it"),
                                 ("reorder", reorder, "overlap independent work")):
        if not isinstance(value, bool | np.bool_):
            raise CompileError(f"compile_graph: {name} = {shown(value)} is not True or False",
                               f"pass {name}=True ({meaning}) or {name}=False")
    if pack is not None and not isinstance(pack, bool | np.bool_):
        raise CompileError(f"compile_graph: pack = {shown(pack)} is not True, False or None",
                           "pass pack=True (int8 weights four to an external word), pack=False (one a "
                           "word) or leave it out (packed only when they do not fit otherwise)")
    if ranges is not None:
        if not isinstance(ranges, Mapping):
            raise CompileError(f"compile_graph: ranges = {shown(ranges)} is not a dict",
                               "pass a dict from tag to range, e.g. ranges={'cache': 4.0}")
        for tag in ranges:
            if not isinstance(tag, str):
                raise CompileError(f"compile_graph: ranges has the key {shown(tag)}, not a tag name",
                                   "key ranges= by the names given with Graph.tag(node, name)")
    if not isinstance(params, Params):
        raise CompileError(f"compile_graph: params = {shown(params)} is not a sim.spec.Params",
                           "pass sim.spec.Params(T=..., ...) or leave params out for the default machine")
    if events is not None and not isinstance(events, list):
        raise CompileError(f"compile_graph: events = {shown(events)} is not a list",
                           "pass an empty list to collect the allocator's events, or leave events out")
    missing = [node for node in graph.nodes if node.op is Op.WEIGHT and node.array is None]
    if missing:
        raise CompileError(f"{missing[0].describe()} has no values (the graph was parsed from text without "
                           "them)", "pass Graph.parse(text, weights={name: values, ...})", missing[0].id)
