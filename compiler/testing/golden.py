"""Golden-text cases: what scale planning, placement and emission decide for a few small
graphs, refusals included, as text files that tests compare word for word (the xDSL
filecheck style; ``tests/compiler/test_golden.py``).

A case is a graph and its calibration data. :func:`render` writes, in sections: the graph
(its text form, :mod:`compiler.text`), the scales (per node its range, scale, group and pin),
the placement (per buffer its size, owner, members and the address emission gave it), the
external layout, the blockings (when a matmul is blocked: :mod:`compiler.streaming`), the
requantizers, the notes and the listing; or, for a graph the compiler refuses, the pass
that refused it and the message. A case compiles for the default machine unless it names
another (a small scratchpad, to block a small graph). A change in any of them shows as a diff
of a few lines.

Regenerate after a deliberate change, and read the diff before committing it:
``python -m compiler.testing.golden --update`` (``--check`` compares, as the test does).
"""

from __future__ import annotations

import argparse
import difflib
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sim.spec import DEFAULT, Params

from ..compilation import Compilation
from ..errors import CompileError
from ..ir import Graph
from ..pipeline import PASSES, compile_graph
from ..program import Program
from ..workloads.seedtable import attention_step_graph, attention_step_sample

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "tests" / "compiler" / "golden"
"""Where the golden files live (one ``<case>.txt`` each)."""

Sample = dict[str, list[list[float]]]


@dataclass(frozen=True)
class Case:
    """A graph and its calibration samples (built afresh each time), and the machine."""

    name: str
    what: str
    build: Callable[[], tuple[Graph, list[Sample]]]
    params: Params


def _table(draw: random.Random, rows: int, cols: int, sd: float = 1.0) -> list[list[float]]:
    return [[round(draw.gauss(0, sd), 3) for _ in range(cols)] for _ in range(rows)]


def _samples(graph: Graph, draw: random.Random, count: int = 8) -> list[Sample]:
    return [{n.name: _table(draw, *n.shape) for n in graph.inputs()} for _ in range(count)]


def _attention_step() -> tuple[Graph, list[Sample]]:
    # running example A's shape at other sizes (dim 12, a cache of 6 rows) and another draw:
    # the seed's own listing is held by the seed-table tests, not repeated here
    draw = random.Random(12)
    calibration = [attention_step_sample(draw, dim=12, cache=6) for _ in range(20)]
    return attention_step_graph(dim=12, cache=6), calibration


def _concat_slice() -> tuple[Graph, list[Sample]]:
    draw = random.Random(21)
    g = Graph()
    rows = g.concat_rows(g.input("x", (3, 4)), g.input("y", (2, 4)))
    hidden = g.relu(g.matmul(g.slice_rows(rows, 1, 3), g.weight("w", _table(draw, 4, 3, 0.5))))
    g.output(hidden, "h")
    scores = g.matmul(g.slice_rows(rows, 0, 2), rows, transpose_b=True, scale=0.5)
    probs = g.softmax(scores)
    g.output(probs, "p")
    g.output(g.argmax(probs), "tok")
    return g, _samples(g, draw)


def _int4() -> tuple[Graph, list[Sample]]:
    draw = random.Random(4)
    g = Graph()
    first = g.weight("w1", _table(draw, 8, 6, 0.4), bits=4)
    second = g.weight("w2", _table(draw, 6, 3, 0.4), bits=4)
    hidden = g.relu(g.matmul(g.input("x", (2, 8)), first))
    g.output(g.matmul(hidden, second), "y")
    return g, _samples(g, draw)


def _split_k_with_bias() -> tuple[Graph, list[Sample]]:
    draw = random.Random(65)
    g = Graph()
    bias = [draw.uniform(-0.5, 0.5) for _ in range(3)]
    product = g.matmul(g.input("x", (2, 65)), g.weight("w", _table(draw, 65, 3, 0.1)), bias=bias)
    g.output(g.relu(product), "y")
    return g, _samples(g, draw, 4)


def _softmax_row_too_long() -> tuple[Graph, list[Sample]]:
    draw = random.Random(66)
    g = Graph()
    g.output(g.softmax(g.input("x", (1, 65))), "y")
    return g, _samples(g, draw, 1)


def _relu_beside_its_matmul() -> tuple[Graph, list[Sample]]:
    draw = random.Random(2)
    g = Graph()
    product = g.matmul(g.input("x", (2, 4)), g.weight("w", _table(draw, 4, 4, 0.3)))
    g.output(g.add(g.relu(product), product), "y")
    return g, _samples(g, draw, 1)


def _one_tensor_two_concats() -> tuple[Graph, list[Sample]]:
    g = Graph()
    top, bottom = g.input("x", (1, 3)), g.input("y", (1, 3))
    g.output(g.add(g.concat_rows(top, bottom), g.concat_rows(bottom, top)), "o")
    return g, _samples(g, random.Random(3), 1)


def _repeated_subgraph() -> tuple[Graph, list[Sample]]:
    draw = random.Random(21)
    g = Graph()
    x = g.input("x", (3, 5))
    w = g.weight("w", _table(draw, 5, 4))

    def branch() -> int:
        return g.relu(g.matmul(x, w, scale=0.5))

    g.output(g.add(branch(), branch()), "o")
    return g, _samples(g, draw)


def _streamed() -> tuple[Graph, list[Sample]]:
    draw = random.Random(14)
    g = Graph()
    x = g.input("x", (12, 16))
    hidden = g.relu(g.matmul(x, g.weight("w1", _table(draw, 16, 8, 0.25))))
    g.output(g.matmul(hidden, g.weight("w2", _table(draw, 7, 8, 0.35)), transpose_b=True), "y")
    return g, _samples(g, draw)


def _result_too_big() -> tuple[Graph, list[Sample]]:
    draw = random.Random(64)
    g = Graph()
    weight = g.weight("w", _table(draw, 16, 64, 0.2))
    g.output(g.matmul(g.input("x", (64, 16)), weight), "y")
    return g, _samples(g, draw, 1)


def _int4_under_a_pin() -> tuple[Graph, list[Sample]]:
    draw = random.Random(5)
    g = Graph()
    g.output(g.softmax(g.weight("w", _table(draw, 2, 4), bits=4)), "p")
    return g, _samples(g, draw, 1)


CASES = (
    Case("attention_step", "one attention decode step, running example A's graph at dim 12 and a "
         "cache of 6", _attention_step, DEFAULT),
    Case("concat_slice", "a concatenation and slices of it: views, nested offsets, softmax and argmax",
         _concat_slice, DEFAULT),
    Case("int4", "int4 weights: packed words, UNPACK, buffers rounded up to 8, scales range / 7", _int4,
         DEFAULT),
    Case("streamed", "a 256-word scratchpad: the input streams in row blocks, a weight in column panels "
         "loaded again for each row block; a transposed weight in runs of rows", _streamed,
         Params(SPAD_WORDS=256)),
    Case("split_k_bias", "a matmul deeper than K_MAX with a bias and a relu: LD of the bias into each "
         "accumulator row, MMs of K 64 and 1 adding onto it (acc=1), one RQ with relu", _split_k_with_bias,
         DEFAULT),
    Case("cse", "one matmul-and-relu written twice and added: computed once (compiler/cse.py)",
         _repeated_subgraph, DEFAULT),
    Case("refused_softmax_row", "refused: a softmax row longer than SM_MAX_LEN", _softmax_row_too_long,
         DEFAULT),
    Case("refused_relu", "refused: a relu whose matmul has another reader", _relu_beside_its_matmul, DEFAULT),
    Case("refused_concat", "refused: one tensor in two concatenations", _one_tensor_two_concats, DEFAULT),
    Case("refused_int4_pin", "refused: an int4 weight in a group the softmax pins", _int4_under_a_pin,
         DEFAULT),
    Case("refused_spad", "refused: a result that leaves no room for any blocking", _result_too_big, DEFAULT),
)


# --------------------------------------------------------------------------- rendering


def _scales(program: Program) -> list[str]:
    plan = program.plan
    lines = []
    for node in program.graph.nodes:
        scale = program.scales.get(node.id)
        shown = "none (row indices)" if scale is None else f"{scale:.6g}"
        pin = f"  pinned: {plan.pins[node.id]}" if node.id in plan.pins else ""
        lines.append(f"%{node.id} {node.op}: range {plan.ranges[node.id]:.6g} scale {shown} "
                     f"group %{plan.group[node.id]}{pin}")
    return lines


def _placement(program: Program) -> list[str]:
    lines = []
    for buf in program.placement.buffers:
        members = ", ".join(f"%{m} row {program.placement.loc[m][1]}" for m in buf.members)
        where = "never placed (it streams)" if buf.home is None else f"at {buf.home}"
        lines.append(f"buffer {buf.id}: {buf.words} words {where}, owner %{buf.owner}: {members}")
    lines += [f"external {e.kind} '{e.name}': words {e.addr}..{e.end - 1}"
              + (f", in panels of {e.panel} columns" if e.panel else "") for e in program.ext.values()]
    lines.append(f"scratchpad high-water mark {program.spad_high} words; external {program.ext_words} words")
    return lines


def _blockings(program: Program) -> list[str]:
    """Each matmul's blocking, or nothing when every one ran whole."""
    if all(b.whole for b in program.blockings.values()):
        return []
    lines = [f"%{nid} matmul: {b.describe()}: {b.cycles} cycles, footprint {b.footprint} words "
             f"(workspace {b.workspace}), {b.moved} words loaded" for nid, b in program.blockings.items()]
    return ["", "## blockings", *lines]


def _refusal(graph: Graph, calibration: list[Sample], params: Params) -> list[str] | None:
    """The pass that refuses the graph and its message, or None when every pass accepts it."""
    state = Compilation(graph=graph, params=params, calibration=calibration)
    for p in PASSES:
        try:
            p.run(state)
        except CompileError as e:
            node = "" if e.node is None else f" (node {e.node})"
            return [f"refused by pass {p.name}{node}:", e.problem, f"Fix: {e.fix}"]
    return None


def render(case: Case) -> str:
    """The golden text of a case."""
    graph, calibration = case.build()
    lines = [f"# {case.name}: {case.what}", "", "## graph", graph.text()]
    if case.params != DEFAULT:
        lines[1:1] = ["", f"machine: {case.params}"]
    refusal = _refusal(graph, calibration, case.params)
    if refusal is not None:
        return "\n".join([*lines, "", "## refusal", *refusal]) + "\n"
    program = compile_graph(graph, calibration, params=case.params)
    if len(program.graph.nodes) != len(graph.nodes):
        lines += ["", "## after common-subexpression elimination", program.graph.text()]
    requantizers = [f"{key}: m={m} s={s} (x{m / 2 ** s:.8g})" for key, (m, s) in program.requantizers.items()]
    lines += ["", "## scales", *_scales(program), "", "## placement", *_placement(program),
              *_blockings(program), "", "## requantizers", *requantizers,
              "", "## notes", *(program.notes or ["none"]), "", "## listing", program.listing()]
    return "\n".join(lines) + "\n"


def graph_section(text: str) -> str:
    """The graph section of a golden file (what :meth:`compiler.ir.Graph.parse` reads back)."""
    after = text.split("## graph\n", 1)[1]
    return after.split("\n\n", 1)[0]


def difference(case: Case, directory: Path = GOLDEN_DIR) -> str:
    """A unified diff from the golden file to what the compiler gives now ('' when equal)."""
    path = directory / f"{case.name}.txt"
    want = path.read_text() if path.exists() else ""
    got = render(case)
    return "".join(difflib.unified_diff(want.splitlines(keepends=True), got.splitlines(keepends=True),
                                        str(path), "now"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.testing.golden",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the golden files from the compiler")
    parser.add_argument("--dir", type=Path, default=GOLDEN_DIR, help=f"where they are (default {GOLDEN_DIR})")
    args = parser.parse_args(argv)
    changed = 0
    for case in CASES:
        diff = difference(case, args.dir)
        if not diff:
            print(f"{case.name}: same")
            continue
        changed += 1
        print(diff)
        if args.update:
            args.dir.mkdir(parents=True, exist_ok=True)
            (args.dir / f"{case.name}.txt").write_text(render(case))
            print(f"{case.name}: rewritten")
    if changed and not args.update:
        print(f"{changed} of {len(CASES)} golden files differ; rerun with --update to accept the change")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
