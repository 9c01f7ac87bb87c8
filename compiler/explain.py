"""The pass-by-pass account of a compiled program, as tables and as text.

:func:`account` lists what each stage of Capra decided for a :class:`~compiler.Program` (seed
chapter 11, figure 11.1, and its running example A): the graph as written, the calibrated
ranges, the scales (which are pinned by the hardware and which share a group), the requantizer
pairs, the tiles of each product, the allocator's events with the pc they happened at and the
buffers that hold views, the listing with each instruction's start and end cycle
(:func:`compiler.timeline.timeline`: serial, or the engines side by side, with the lower bounds
and the longest chain of :func:`compiler.bounds.bounds` there), and, given test
inputs, the checks (machine against the integer interpreter, error against floating point, the
stage-wise real-number check). Each :class:`Section` holds a :class:`Table` of plain values, so
that the text (:func:`explain`, ``Program.explain()``) and an HTML page render the same facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.asm import disassemble

from .accuracy import relative_error
from .bounds import Bounds, bounds
from .evaluate import evaluate
from .interpret import interpret
from .lowering.matmul import tiles
from .ops import OPS, Op
from .realcheck import stagewise_problems
from .timeline import UNIT_NAMES, timeline, unit_totals

if TYPE_CHECKING:
    from .program import Program


@dataclass
class Table:
    """Rows of plain values (str, int, float) under headers; ``right`` marks numeric columns."""

    headers: tuple[str, ...]
    rows: list[tuple] = field(default_factory=list)
    right: tuple[bool, ...] = ()


@dataclass
class Section:
    """One part of the account.

    Attributes:
        key: a short identifier (``scales``), used as the HTML id of the section.
        title: the heading (``pass 2: scales``).
        lead: one or two sentences saying what the pass decides.
        table: its facts, or None.
        notes: further lines (totals, warnings, a check's verdict).
    """

    key: str
    title: str
    lead: str
    table: Table | None = None
    notes: list[str] = field(default_factory=list)


def node_detail(program: Program, nid: int) -> str:
    """What sets a node apart besides its operation and name: ``^T x0.3536 +relu``, ``int4``,
    ``rows 2-3``, ``tag='cache'``."""
    node = program.graph.nodes[nid]
    parts = []
    if node.transpose_b:
        parts.append("^T")
    if node.op == Op.MATMUL and node.factor != 1:
        parts.append(f"x{node.factor:.4f}")
    if node.op == Op.WEIGHT and node.bits != 8:
        parts.append(f"int{node.bits}")
    if node.op == Op.SLICE:
        parts.append(f"rows {node.start}-{node.start + node.count - 1}")
    if nid in program.relu_fused:
        parts.append("+relu")
    if node.tag is not None:
        parts.append(f"tag={node.tag!r}")
    return " ".join(parts)


def node_label(program: Program, nid: int) -> str:
    """``%4 matmul ^T x0.3536``, ``%0 input 'q'``: the node's id, operation, name and detail."""
    node = program.graph.nodes[nid]
    named = f" {node.name!r}" if node.name else ""
    detail = node_detail(program, nid)
    return f"%{nid} {node.op}{named}" + (f" {detail}" if detail else "")


def graph_section(program: Program) -> Section:
    table = Table(("node", "operation", "operands", "shape", "name", "detail"))
    for node in program.graph.nodes:
        table.rows.append(
            (
                f"%{node.id}",
                str(node.op),
                ", ".join(f"%{i}" for i in node.ins),
                f"{node.shape[0]} x {node.shape[1]}",
                node.name,
                node_detail(program, node.id),
            )
        )
    given = len(program.node_of or ())
    merged = (f" (the graph given had {given}: common-subexpression elimination computes each "
              "repeated pure subgraph once, compiler/cse.py)") if given > len(program.graph.nodes) else ""
    return Section(
        "graph",
        "pass 0: the graph, as written" if not merged else "pass 0: the graph, repeats merged",
        f"{len(program.graph.nodes)} nodes{merged}; tensors are 2-D (rows x cols); ^T: the product "
        "reads its second operand transposed; xF: a constant factor; +relu: a relu fused into "
        "its requantizer.",
        table,
    )


def ranges_section(program: Program, samples: int | None) -> Section:
    on = f" on {samples} samples" if samples else ""
    table = Table(("node", "operation", "range"), right=(False, False, True))
    for node in program.graph.nodes:
        table.rows.append((f"%{node.id}", str(node.op), float(program.plan.ranges[node.id])))
    return Section(
        "ranges",
        f"pass 1: calibration{on}",
        "A tensor's range is its largest |value| in floating point over the calibration samples "
        "(or the range fixed for its tag).",
        table,
    )


def scale_reason(program: Program, nid: int) -> str:
    """Why a tensor has its scale: pinned by the hardware, or shared with its group."""
    plan = program.plan
    if nid in plan.pins:
        return f"pinned: {plan.pins[nid]}"
    root = plan.group[nid]
    members = [m for m, r in plan.group.items() if r == root and m != nid and m in program.scales]
    if members:
        return "group of " + ", ".join(f"%{m}" for m in sorted([nid, *members]))
    return ""


def own_scale(program: Program, nid: int) -> float:
    """range / levels: the scale the tensor's own range would give (levels 127, 7 for int4)."""
    node = program.graph.nodes[nid]
    return float(program.plan.ranges[nid]) / OPS[node.op].levels(node)


def scales_section(program: Program) -> Section:
    table = Table(
        ("node", "operation", "scale", "own range / levels", "why"), right=(False, False, True, True)
    )
    for node in program.graph.nodes:
        if node.id in program.scales:
            table.rows.append(
                (
                    f"%{node.id}",
                    str(node.op),
                    float(program.scales[node.id]),
                    own_scale(program, node.id),
                    scale_reason(program, node.id),
                )
            )
    pinned = sorted({n for n in program.plan.pins if n in program.scales})
    return Section(
        "scales",
        "pass 2: scales",
        "scale = the group's largest range / 127 (7 for an int4 weight); tensors that share a "
        "buffer or a view share a scale; the hardware pins some.",
        table,
        [f"{len(pinned)} pinned: " + ", ".join(f"%{n}" for n in pinned)] if pinned else [],
    )


def requant_owner(program: Program, key: object) -> str:
    if isinstance(key, tuple):
        return f"%{key[0]} add, operand {key[1]} rescaled"
    return f"%{key} {program.graph.nodes[key].op}"


def requantizers_section(program: Program) -> Section:
    table = Table(("node", "requantizer of", "m", "s", "m / 2^s"), right=(False, False, True, True, True))
    for key, (m, s) in program.requantizers.items():
        label = f"node {key[0]}.{key[1]}" if isinstance(key, tuple) else f"node {key}"
        table.rows.append((label, requant_owner(program, key), m, s, m / 2**s))
    return Section(
        "requantizers",
        "pass 3: requantizer pairs (m, s)",
        "Each RQ multiplies by the real factor m / 2^s (m a 24-bit mantissa) with rounding.",
        table,
    )


@dataclass(frozen=True)
class TilePlan:
    """One product's tiles: the matmul, its shapes, and per tile (row, col, rows, cols, pc of its MM)."""

    node: int
    rows: int
    inner: int
    cols: int
    tiles: list[tuple[int, int, int, int, int | None]]


def tile_plans(program: Program) -> list[TilePlan]:
    """Every matmul's output tiles, in emission order, each with the pc of the MM that computes it.

    The MMs of the code are matched to the tiles in order (emission writes one MM per tile,
    tile rows outer); a pc is None where the MM's M and N are not the tile's.
    """
    mms = [(pc, ins) for pc, ins in enumerate(program.code) if ins.spec.counter == "mxu"]   # MM, MMRQ
    plans, k = [], 0
    for node in program.graph.nodes:
        if node.op != Op.MATMUL:
            continue
        rows, inner = program.graph.nodes[node.ins[0]].shape
        found = []
        for tile in tiles(rows, node.shape[1], program.machine.T):
            pc = None
            if k < len(mms) and (mms[k][1].fields["M"], mms[k][1].fields["N"]) == (tile.rows, tile.cols):
                pc = mms[k][0]
            k += 1
            found.append((tile.row, tile.col, tile.rows, tile.cols, pc))
        plans.append(TilePlan(node.id, rows, inner, node.shape[1], found))
    return plans


def tiles_section(program: Program) -> Section:
    t = program.machine.T
    table = Table(
        ("node", "product", "tiles", "tile (rows, cols) -> MM pc"), right=(False, False, True, False)
    )
    for plan in tile_plans(program):
        where = "; ".join(
            f"rows {r}-{r + h - 1} cols {c}-{c + w - 1}" + ("" if pc is None else f" @{pc}")
            for r, c, h, w, pc in plan.tiles
        )
        table.rows.append(
            (
                f"%{plan.node}",
                f"({plan.rows} x {plan.inner}) x ({plan.inner} x {plan.cols})",
                len(plan.tiles),
                where,
            )
        )
    return Section(
        "tiles",
        f"pass 4: tiling into {t} x {t} output tiles",
        f"Each tile is one MM instruction on the {t} x {t} array (tile rows outer); edge tiles are smaller.",
        table,
    )


def blocking_section(program: Program) -> Section:
    """How each product too large for the scratchpad whole chose its blocking: the candidates,
    the refusals by reason, the best few by exact cycles and the one written."""
    table = Table(("node", "rank", "blocking", "cycles", "footprint (words)", "fits"),
                  right=(False, True, False, True, True, False))
    notes = []
    for nid, r in sorted(program.rankings.items()):
        notes.append(f"%{nid}: {r.considered} candidates; {r.too_big} need more than the {r.free} free "
                     f"words, {r.too_long} more instructions than the {r.room} left, {r.failed} found the "
                     f"free words in pieces; written: rank {r.chosen_rank}")
        shown = list(r.best) + ([r.chosen] if r.chosen not in r.best else [])
        for b in shown:
            rank = r.best.index(b) + 1 if b in r.best else r.chosen_rank
            mark = " (written)" if b == r.chosen else ""
            table.rows.append((f"%{nid}", rank, b.describe() + mark, b.run_cycles or b.cycles, b.footprint,
                               "yes" if b.footprint <= r.free else "no"))
    return Section(
        "blocking",
        "pass 4, continued: the blockings of the products that do not fit whole, ranked by exact cycles",
        " ".join(notes) + ". Cycles: the spec's latencies of the step's instructions (compiler/blocking.py)"
        + ("; on the decoupled machine (OVERLAP = 2) those instructions alone through its issue rule, where "
           "the budget ran them." if program.machine.OVERLAP == 2 else "."),
        table,
    )


def view_lines(program: Program) -> list[str]:
    """One line per buffer that holds more than one tensor: its parts and their rows."""
    lines = []
    for buf in sorted(program.placement.buffers, key=lambda b: b.owner):
        if len(buf.members) < 2:
            continue
        parts = []
        for nid in buf.members:
            if nid == buf.owner:
                continue
            node = program.graph.nodes[nid]
            row = program.placement.loc[nid][1]
            parts.append(f"%{nid} {node.op} rows {row}-{row + node.shape[0] - 1}")
        lines.append(f"buffer of %{buf.owner} ({buf.words} words at {buf.home}) holds " + "; ".join(parts))
    return lines


def allocation_section(program: Program) -> Section:
    table = Table(
        ("event", "pc", "kind", "words", "addresses", "what"), right=(True, True, False, True, False)
    )
    for k, e in enumerate(program.events):
        table.rows.append(
            (k, "" if e.pc is None else e.pc, e.kind, e.words, f"{e.addr}-{e.addr + e.words - 1}", e.what)
        )
    notes = [
        f"high-water mark: {program.spad_high} words of {program.machine.SPAD_WORDS}"
        + ("" if program.reuse else " (compiled without reuse: no buffer is freed)")
    ]
    views = view_lines(program)
    notes += views or ["no buffer holds views"]
    return Section(
        "allocation",
        "pass 5: allocation",
        "The allocator's events in order: first fit, lowest address first; a buffer is freed after "
        "its last reader (pc: the instruction the event precedes). A concatenation's parts and a "
        "slice are views in one buffer: no copy.",
        table,
        notes,
    )


LISTING_LEADS = {
    0: "One instruction at a time: each starts when the one before it ends (the spec's latencies; "
       "the first after the front end's cycles).",
    1: "The engines side by side (OVERLAP = 1, GA2.md section 7): each instruction starts when the "
       "issue rule lets it (in order, its engine free, no hazard, its scratchpad ports free).",
    2: "The engines decoupled (OVERLAP = 2, GA2.md section 7): each engine runs its own queue in "
       "program order; an instruction starts when its engine is free, the instructions before it "
       "that it conflicts with are done, and the scratchpad's ports are free.",
}
"""The listing's lead on each machine (``Params.OVERLAP``)."""


def listing_section(program: Program) -> Section:
    """The program with each instruction's start and end cycle (its run on the reference rule).
    On a machine whose engines overlap, also the lower bounds (:func:`compiler.bounds.bounds`)
    and, in a column, the instructions of the longest chain of dependences, each with what it
    waits for on the one before it (``Bounds.path``)."""
    spans = timeline(program.code, program.machine)
    overlap = program.machine.OVERLAP
    b = bounds(program.code, program.machine) if overlap else None
    chain = {} if b is None else dict(b.path)
    headers = ("pc", "start", "end", "cycles", "unit", "instruction")
    headers += () if b is None else ("longest chain",)
    table = Table(headers, right=(True, True, True, True, False, False, False)[:len(headers)])
    for span, ins in zip(spans, program.code, strict=False):
        row = (span.pc, span.start, span.end, span.cycles, UNIT_NAMES.get(span.unit, "control"),
               disassemble(ins))
        table.rows.append(row + (() if b is None else (chain.get(span.pc, ""),)))
    totals = unit_totals(spans)
    counters = " ".join(f"{name}={value}" for name, value in totals.items())
    notes = [f"{len(program.code)} instructions; counters: {counters}"]
    if b is not None:
        notes += bounds_notes(b, totals["cycles"])
    return Section("listing", "pass 6: the program", LISTING_LEADS[overlap], table, notes)


def bounds_notes(b: Bounds, cycles: int) -> list[str]:
    """Two lines: the lower bounds against the run's ``cycles``, and what the longest chain (the
    listing's column) is made of (``Bounds.chain``)."""
    values = (f"engine {b.engine:,}, read port {b.read_port:,}, issue {b.issue:,}, dependences "
              f"{b.dependences:,}, MXU roof {b.mxu_roof:,}, DMA roof {b.dma_roof:,}")
    parts = ", ".join(f"{kind} {n:,}" for kind, n in b.chain)
    return [f"lower bounds (compiler/bounds.py): {values}; the best is {b.best:,} ({b.limit}): "
            f"the run's {cycles:,} cycles are {cycles / b.best:.2f}x it",
            f"the longest chain of dependences ({len(b.path)} instructions, the column): {b.dependences:,} "
            f"cycles, by what each link waits for (the spec's latency, or read window, of the instruction "
            f"waited for): {parts}"]


@dataclass
class Checks:
    """A program's run on test inputs, checked three ways (seed chapter 11, checks (c)-(e)).

    Attributes:
        outcome: the reference machine's run.
        same: every output's integers equal the integer interpreter's.
        error: the worst relative error of the outputs against floating point
            (:func:`compiler.accuracy.relative_error`; 0.0236 = 2.36%).
        problems: the stage-wise real-number check's findings (empty: none).
        reference: node id -> the float result (:func:`compiler.evaluate.evaluate`).
    """

    outcome: object
    same: bool
    error: float
    problems: list[str]
    reference: dict[int, np.ndarray]

    @property
    def passed(self) -> bool:
        """The machine equals the interpreter and the real-number check found nothing."""
        return self.same and not self.problems


def run_checks(program: Program, inputs: Mapping[str, object]) -> Checks:
    """Run the program on the reference machine and check the run.

    Raises:
        ValueError: bad inputs (see :meth:`Program.run`).
    """
    outcome = program.run(inputs, warn=False)
    ints = interpret(program, inputs)
    same = all(np.array_equal(v.ints, ints[program.ext[name].node]) for name, v in outcome.outputs.items())
    return Checks(
        outcome,
        same,
        relative_error(program, outcome, inputs),
        stagewise_problems(program, ints),
        evaluate(program.graph, inputs),
    )


def checks_section(program: Program, inputs: Mapping[str, object]) -> Section:
    """Runs the program on the inputs and compares it three ways (:func:`run_checks`)."""
    checks = run_checks(program, inputs)
    outcome = checks.outcome
    table = Table(("check", "result"))
    table.rows.append(("counters on the reference machine", str(outcome.counters)))
    table.rows.append(("machine == integer interpreter, every output value", str(checks.same)))
    table.rows.append(("error of the outputs against float, relative", f"{100 * checks.error:.2f}%"))
    table.rows.append(("real-number check, node by node", "; ".join(checks.problems) or "no problems"))
    clipped = {name: n for name, n in outcome.clipped.items() if n}
    if clipped:
        table.rows.append(
            ("input values clipped to -127..127", ", ".join(f"{k}: {v}" for k, v in clipped.items()))
        )
    notes = []
    for name, value in outcome.outputs.items():
        want = checks.reference[program.ext[name].node]
        notes.append(f"output {name!r} row 0 (GA-2): {[round(float(v), 3) for v in value.floats[0]]}")
        notes.append(f"output {name!r} row 0 (float): {[round(float(v), 3) for v in want[0]]}")
    return Section(
        "checks",
        "checks",
        "The program on test inputs: the reference machine against the integer "
        "interpreter (the same integers), floating point and each operation's real meaning.",
        table,
        notes,
    )


def account(
    program: Program, inputs: Mapping[str, object] | None = None, *, samples: int | None = None
) -> list[Section]:
    """The sections of the account, in pass order; ``checks`` only when ``inputs`` are given.

    Args:
        program: a compiled program.
        inputs: test inputs (input name -> 2-D float array-like) for the checks, or None.
        samples: the number of calibration samples, for the heading of the ranges.

    Raises:
        ValueError: bad test inputs (see :meth:`Program.run`).
    """
    sections = [
        graph_section(program),
        ranges_section(program, samples),
        scales_section(program),
        requantizers_section(program),
        tiles_section(program),
        *([blocking_section(program)] if program.rankings else []),
        allocation_section(program),
        listing_section(program),
    ]
    if inputs is not None:
        sections.append(checks_section(program, inputs))
    return sections


def cell_text(value: object) -> str:
    """A value as a table shows it: floats to 6 significant digits (8 below 0.001)."""
    if isinstance(value, float | np.floating):
        return f"{value:.8f}" if abs(value) < 1e-3 and value else f"{value:.6g}"
    return str(value)


def table_text(table: Table, indent: str = "  ") -> list[str]:
    """The table as aligned text lines, headers first."""
    cells = [list(table.headers)] + [[cell_text(v) for v in row] for row in table.rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(table.headers))]
    right = table.right + (False,) * (len(widths) - len(table.right))
    lines = []
    for row in cells:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)]
        lines.append((indent + "  ".join(parts)).rstrip())
    return lines


def render(sections: Sequence[Section]) -> str:
    """The sections as text: ``== title``, the lead, the table, the notes."""
    out = []
    for section in sections:
        out.append(f"== {section.title}")
        out.append(f"  {section.lead}")
        if section.table is not None:
            out += table_text(section.table)
        out += [f"  {line}" for line in section.notes]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def explain(
    program: Program, inputs: Mapping[str, object] | None = None, *, samples: int | None = None
) -> str:
    """The account of :func:`account` as text (what ``Program.explain()`` returns)."""
    return render(account(program, inputs, samples=samples))
