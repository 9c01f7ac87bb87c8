"""External memory layout: where the host puts inputs and weights and finds outputs.

Contract: the sources (inputs and weights) take consecutive regions from word 0, in node
order (an int4 weight takes ceil(elements / 8) packed words, a packed int8 weight ceil(elements
/ 4), :mod:`compiler.packing`); then the constant regions the operations declare
(:class:`compiler.ops.Constant`), kind by kind in the order of the table of operations, node by
node: the bias of each biased matmul, one int32 word per column (``bias of node <id>``,
:mod:`compiler.bias`), then the 256 entries of each table activation (``table of node <id>``,
:mod:`compiler.tables`); the outputs follow, in node order, one word per element (seed chapter
11). The whole must fit the machine's EXT_WORDS.

Inside its region a tensor is stored row by row, except a source that emission streams in
column blocks (:mod:`compiler.streaming`): it is stored in column panels
(:func:`panel_major`), and its entry's ``panel`` gives the panel width. The regions do not
move either way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sim.spec import Params

from .errors import CompileError, plural
from .int4 import is_int4, packed_words
from .ir import Graph, Node
from .ops import OPS, Constant, Op, Role
from .packing import int8_words


@dataclass(frozen=True)
class ExtEntry:
    """One named region of external memory.

    Attributes:
        name: the input's, weight's or output's name.
        addr: first word.
        words: length in words.
        shape: the tensor's (rows, cols).
        node: the node id.
        kind: the node's operation: input, weight or output.
        panel: 0 when stored row by row; else the width of the column panels it is stored
            in (:func:`panel_major`).
        fmt: 1 when its int8 values are packed four to a word (LD fmt = 1,
            :mod:`compiler.packing`); else 0.
    """

    name: str
    addr: int
    words: int
    shape: tuple[int, int]
    node: int
    kind: Op
    panel: int = 0
    fmt: int = 0

    @property
    def elements(self) -> int:
        """Values the region holds: rows x cols (fewer than its words only when packed)."""
        return self.shape[0] * self.shape[1]

    @property
    def end(self) -> int:
        """One past the region's last word: where the next region starts."""
        return self.addr + self.words


def external_words(node: Node, packed: bool = False) -> int:
    """Words a node's values take in external memory (``packed``: four int8 to a word)."""
    if is_int4(node):
        return packed_words(node.words)
    if packed:
        return int8_words(node.words)
    return node.words


def packable(node: Node) -> bool:
    """Whether a node may be stored packed four to a word (:mod:`compiler.packing`): an int8 weight."""
    return node.op == Op.WEIGHT and not is_int4(node)


def external_layout(graph: Graph, params: Params,
                    pack: bool | None = None) -> tuple[dict[str, ExtEntry], int]:
    """The layout and the number of words it uses.

    Args:
        pack: store the int8 weights packed four to a word (:mod:`compiler.packing`): True
            always, False never, None (the default) only when the layout one value a word
            does not fit EXT_WORDS.

    Raises:
        CompileError: the regions do not fit EXT_WORDS; the message names the first node
            that does not fit.
    """
    if pack is None:
        entries, top = regions(graph, False, params)
        if top <= params.EXT_WORDS:
            return entries, top
        pack = True
    entries, top = regions(graph, bool(pack), params)
    if top > params.EXT_WORDS:
        over = next(e for e in entries.values() if e.end > params.EXT_WORDS)
        node, end = graph.nodes[over.node], over.end
        hint = ("int4 weights take an eighth of the space" if pack else
                "int4 weights take an eighth of the space; compile_graph(..., pack=True) stores int8 "
                "weights four to a word")
        raise CompileError(f"external memory is full: {node.describe()} would end at word {end}, "
                           f"past the {plural(params.EXT_WORDS, 'word')} the machine has",
                           f"use fewer or smaller inputs, weights and outputs ({hint})", node.id)
    return entries, top


def regions(graph: Graph, pack: bool, params: Params) -> tuple[dict[str, ExtEntry], int]:
    """The regions one after another from word 0 (int8 weights packed when ``pack``), and
    where they end; not checked against EXT_WORDS."""
    entries: dict[str, ExtEntry] = {}
    top = 0

    def add(entry: ExtEntry) -> None:
        nonlocal top
        entries[entry.name] = entry
        top = entry.end

    for node in graph.nodes:
        if OPS[node.op].role is Role.SOURCE:
            packed = pack and packable(node)
            add(ExtEntry(node.name, top, external_words(node, packed), node.shape, node.id, node.op,
                         fmt=int(packed)))
    for node, constant in constant_regions(graph, params):
        words = constant.words(node, params) if constant.machine_words else constant.words(node)
        add(ExtEntry(constant.region(node), top, words, (1, words), node.id, node.op))
    for node in graph.nodes:
        if OPS[node.op].role is Role.SINK:
            add(ExtEntry(node.name, top, external_words(node), node.shape, node.id, node.op))
    return entries, top


def constant_regions(graph: Graph, params: Params) -> list[tuple[Node, Constant]]:
    """The constant regions the graph's nodes need on the machine ``params``, in the order of the
    layout: kind by kind in the order of the table of operations (a matmul's bias before a table's
    entries), node by node."""
    return [(node, constant) for spec in OPS.values() for constant in spec.constants
            for node in graph.nodes if node.op is spec.op and constant.wanted(node, params)]


def constant_of(entry: ExtEntry, nodes: list[Node], params: Params) -> Constant | None:
    """The constant a region holds (a bias, a table's entries), None for an input's, a weight's or
    an output's region."""
    node = nodes[entry.node]
    held = (c for c in OPS[node.op].constants if c.wanted(node, params) and c.region(node) == entry.name)
    return next(held, None)


def panel_major(values: np.ndarray, width: int) -> np.ndarray:
    """A (rows, cols) tensor's values in the order of column panels ``width`` wide, flat:
    columns 0..width-1 of every row, row by row, then the next panel (the last may be
    narrower). One panel is then one contiguous block of external memory, which one LD
    brings in as a rows x width matrix (:mod:`compiler.blocking`)."""
    cols = values.shape[1]
    return np.concatenate([values[:, j:j + width].ravel() for j in range(0, cols, width)])


def with_panels(entries: dict[str, ExtEntry], panels: dict[str, int]) -> dict[str, ExtEntry]:
    """The layout with the panel widths emission chose (name -> width) set on their entries."""
    return {name: replace(entry, panel=panels.get(name, 0)) for name, entry in entries.items()}
