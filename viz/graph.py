"""The graph drawn as SVG: nodes in layers by depth, edges from operand to reader.

A layered drawing in the manner of Sugiyama et al. (1981), kept small: a node's layer is one
below its deepest operand (a source, an input or weight, sits one above its first reader),
the order within a layer is improved by a few barycentre sweeps (each node moves towards the
mean position of its neighbours in the layer above, then below), and edges are cubic
curves from the bottom of the operand to the top of the reader. No graphviz needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from compiler import Graph, Program
from compiler.explain import node_detail
from compiler.ops import OPS, Op, Role

FILL = {
    Op.INPUT: "#dbe9f6",
    Op.WEIGHT: "#ececec",
    Op.MATMUL: "#fde2c8",
    Op.SOFTMAX: "#ead7ef",
    Op.ADD: "#d8efd3",
    Op.ARGMAX: "#fff3bf",
    Op.OUTPUT: "#c9e6c9",
}
"""Each operation's fill; views (relu, concat, slice) are white with a dashed border."""
CHAR = 6.6
"""Width of a character of the 11 px monospace font, px."""
BOX_H, GAP_X, GAP_Y, PAD = 38, 22, 46, 12
SWEEPS = 4


def layers(graph: Graph) -> list[list[int]]:
    """Node ids by layer, top first: a computed node one below its deepest operand, a source
    one above its first reader."""
    depth: dict[int, int] = {}
    for node in graph.nodes:
        if OPS[node.op].role is not Role.SOURCE:
            depth[node.id] = 1 + max((depth.get(i, 0) for i in node.ins), default=0)
    readers = graph.consumers()
    for node in graph.nodes:
        if OPS[node.op].role is Role.SOURCE:
            depth[node.id] = min((depth[r] for r in readers[node.id]), default=1) - 1
    for node in graph.nodes:  # a reader sits below every operand, sources included
        if node.ins:
            depth[node.id] = max(depth[node.id], 1 + max(depth[i] for i in node.ins))
    rows: dict[int, list[int]] = {}
    for nid in sorted(depth):
        rows.setdefault(depth[nid], []).append(nid)
    return [rows[d] for d in sorted(rows)]


def _order(rows: list[list[int]], graph: Graph) -> list[list[int]]:
    """Barycentre sweeps: sort each layer by the mean index of its neighbours in the layer before."""
    readers = graph.consumers()
    ups = {n.id: list(n.ins) for n in graph.nodes}
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        sequence = range(1, len(rows)) if down else range(len(rows) - 2, -1, -1)
        for k in sequence:
            ref = rows[k - 1] if down else rows[k + 1]
            where = {nid: i for i, nid in enumerate(ref)}
            here = {nid: i for i, nid in enumerate(rows[k])}

            def centre(
                nid: int, where: dict[int, int] = where, here: dict[int, int] = here, down: bool = down
            ) -> float:
                near = [where[m] for m in (ups[nid] if down else readers[nid]) if m in where]
                return sum(near) / len(near) if near else float(here[nid])

            rows[k] = sorted(rows[k], key=centre)
    return rows


def _lines(program: Program | None, graph: Graph, nid: int) -> tuple[str, str]:
    node = graph.nodes[nid]
    detail = node_detail(program, nid) if program is not None else ""
    first = f"%{nid} {node.op}" + (f" {detail}" if detail else "")
    second = f"{node.shape[0]}x{node.shape[1]}" + (f" {node.name!r}" if node.name else "")
    return first, second


def graph_svg(source: Program | Graph, title: str = "") -> str:
    """The graph as an ``<svg>`` element (a string), drawn layer by layer.

    Args:
        source: a compiled program (its fused relus are marked) or a graph.
        title: the SVG's accessible title (default: the node count).
    """
    program = source if isinstance(source, Program) else None
    graph = source.graph if isinstance(source, Program) else source
    rows = _order(layers(graph), graph)
    text = {n.id: _lines(program, graph, n.id) for n in graph.nodes}
    width = {nid: PAD + CHAR * max(len(a), len(b)) for nid, (a, b) in text.items()}
    row_widths = [sum(width[n] for n in row) + GAP_X * (len(row) - 1) for row in rows]
    total_w = max(row_widths, default=0) + 2 * PAD
    pos: dict[int, tuple[float, float]] = {}
    for k, row in enumerate(rows):
        x = (total_w - row_widths[k]) / 2
        for nid in row:
            pos[nid] = (x, PAD + k * (BOX_H + GAP_Y))
            x += width[nid] + GAP_X
    total_h = PAD * 2 + len(rows) * BOX_H + (len(rows) - 1) * GAP_Y
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {total_w:.0f} {total_h:.0f}" '
        f'width="{total_w:.0f}" height="{total_h:.0f}" role="img" font-family="monospace" font-size="11">',
        f"<title>{escape(title or f'the graph: {len(graph.nodes)} nodes')}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    out += _edges(graph, pos, width)
    for node in graph.nodes:
        out += _box(node.id, graph, pos[node.id], width[node.id], text[node.id])
    out.append("</svg>")
    return "\n".join(out)


def _edges(graph: Graph, pos: dict[int, tuple[float, float]], width: dict[int, float]) -> list[str]:
    out = []
    for node in graph.nodes:
        for k, src in enumerate(node.ins):
            x0 = pos[src][0] + width[src] / 2
            y0 = pos[src][1] + BOX_H
            share = (k + 1) / (len(node.ins) + 1)
            x1 = pos[node.id][0] + width[node.id] * share
            y1 = pos[node.id][1]
            bend = (y1 - y0) / 2
            out.append(
                f'<path d="M{x0:.1f},{y0:.1f} C{x0:.1f},{y0 + bend:.1f} {x1:.1f},{y1 - bend:.1f} '
                f'{x1:.1f},{y1 - 1:.1f}" fill="none" stroke="#555" stroke-width="1.2" '
                'marker-end="url(#arrow)"/>'
            )
    return out


def _box(nid: int, graph: Graph, at: tuple[float, float], w: float, lines: Sequence[str]) -> list[str]:
    node = graph.nodes[nid]
    x, y = at
    view = OPS[node.op].role is Role.VIEW
    fill = "#ffffff" if view else FILL.get(node.op, "#ffffff")
    dash = ' stroke-dasharray="4 3"' if view else ""
    return [
        f'<g class="node" id="node-{nid}">',
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{BOX_H}" rx="6" fill="{fill}" '
        f'stroke="#333" stroke-width="1"{dash}/>',
        f'<text x="{x + w / 2:.1f}" y="{y + 15:.1f}" text-anchor="middle">{escape(lines[0])}</text>',
        f'<text x="{x + w / 2:.1f}" y="{y + 30:.1f}" text-anchor="middle" fill="#555">'
        f"{escape(lines[1])}</text>",
        "</g>",
    ]
