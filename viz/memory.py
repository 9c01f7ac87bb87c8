"""The scratchpad's memory map over time (seed chapter 11, figures 11.5 and 11.6).

The allocator's events (``Program.events``, each with the pc it happened before) pair up
into lifetimes: a buffer lives at [addr, addr + words) from the pc of its alloc to the pc of
its free (the program's end when it is never freed). A buffer that holds a concatenation's
parts or slices (a placement buffer with several members) shows each part's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from compiler import Program
from compiler.allocator import AllocEvent
from compiler.timeline import timeline

from .common import PLAIN, TEMPORARY, new_figure

AXES = ("pc", "cycle")
LABEL_BOX = {"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1}


@dataclass(frozen=True)
class Lifetime:
    """One buffer between its alloc and its free.

    Attributes:
        addr, words: where it lives in the scratchpad.
        start, end: the pcs of its alloc and its free (``end`` = the program's length when
            it is never freed).
        what: what the allocator was told it holds.
        buffer: the placement buffer's index when it holds a tensor of the graph, else None
            (a temporary: an accumulator, a softmax's Q16 row, a rescaled operand).
    """

    addr: int
    words: int
    start: int
    end: int
    what: str
    buffer: int | None


def lifetimes(program: Program) -> list[Lifetime]:
    """The buffers' lifetimes from the program's allocator events, in alloc order.

    Raises:
        ValueError: the program carries no events with pcs (compiled by an older compiler),
            or a free has no matching alloc.
    """
    events = program.events
    if any(e.pc is None for e in events) or (not events and program.spad_high):
        raise ValueError("the program has no allocator events with pcs; compile it with compile_graph")
    owners = {
        f"the tensor of {program.graph.nodes[b.owner].describe()}": b.id for b in program.placement.buffers
    }
    open_: dict[tuple[int, int], list[tuple[int, AllocEvent]]] = {}
    found: list[tuple[int, Lifetime]] = []
    for k, e in enumerate(events):
        if e.kind == "alloc":
            open_.setdefault((e.addr, e.words), []).append((k, e))
            continue
        started = open_.get((e.addr, e.words))
        if not started:
            raise ValueError(f"allocator event {k} frees {e.words} words at {e.addr}, which no alloc gave")
        index, alloc = started.pop()
        found.append((index, Lifetime(e.addr, e.words, alloc.pc, e.pc, alloc.what, owners.get(alloc.what))))
    for pending in open_.values():
        for index, alloc in pending:
            found.append(
                (
                    index,
                    Lifetime(
                        alloc.addr,
                        alloc.words,
                        alloc.pc,
                        len(program.code),
                        alloc.what,
                        owners.get(alloc.what),
                    ),
                )
            )
    return [life for _, life in sorted(found, key=lambda item: item[0])]


def _short(program: Program, life: Lifetime) -> str:
    if life.buffer is not None:
        owner = program.graph.nodes[program.placement.buffers[life.buffer].owner]
        return f"%{owner.id} {owner.op}" + (f" {owner.name}" if owner.name else "")
    return life.what.replace(" of node ", " %").replace("probabilities", "probs")


def _parts(program: Program, life: Lifetime) -> list[tuple[int, int, str]]:
    """(first word, words, label) of each tensor placed in a buffer holding more than one."""
    if life.buffer is None:
        return []
    buffer = program.placement.buffers[life.buffer]
    if len(buffer.members) < 2:
        return []
    out = []
    for nid in buffer.members:
        node = program.graph.nodes[nid]
        if nid == buffer.owner or node.words == buffer.words:  # the whole buffer: a fused relu's matmul
            continue
        first = program.placement.loc[nid][1] * node.shape[1]
        out.append((first, node.words, f"%{nid} {node.op}" + (f" {node.name}" if node.name else "")))
    return out


def plot_memory_map(program: Program, axis: str = "pc") -> Figure:
    """Every buffer as a rectangle: scratchpad address (words) against time.

    Args:
        program: a compiled program.
        axis: ``pc`` (time in instructions: a buffer spans the instructions it is allocated
            over) or ``cycle`` (the same in cycles, from :func:`compiler.timeline.timeline`).

    Tensors of the graph are blue, temporaries (accumulators, Q16 rows, rescaled operands)
    grey (a label is left out where it would not fit); a buffer that holds views (a
    concatenation's parts, slices) shows each part's words as a hatched band with its name.
    The dashed line is the high-water mark.

    Raises:
        ValueError: ``axis`` is neither pc nor cycle; the program has no events with pcs.
    """
    if axis not in AXES:
        raise ValueError(f"plot_memory_map: axis = {axis!r}; give 'pc' or 'cycle'")
    lives = lifetimes(program)
    at = _clock(program, axis)
    fig = new_figure(10.0, 5.2)
    ax = fig.add_subplot()
    end = at(len(program.code))
    top = max(program.spad_high, 1) * 1.12
    for life in lives:
        x0, x1 = at(life.start), at(life.end)
        x1 = max(x1, x0 + (0.6 if axis == "pc" else end / 200))
        _draw_lifetime(ax, program, life, (x0, x1), top, end)
    _frame(ax, program, len(lives), axis, end, top)
    return fig


def _clock(program: Program, axis: str) -> Callable[[int], float]:
    """pc -> where it stands on the time axis: the pc itself, or its start cycle (the end of
    the last instruction for the pc one past it)."""
    if axis == "cycle":
        spans = timeline(program.code, program.machine)
        return ([s.start for s in spans] + [spans[-1].end]).__getitem__

    def at(pc: int) -> int:
        return pc

    return at


def _draw_lifetime(ax: Axes, program: Program, life: Lifetime, x: tuple[float, float], top: float,
                   end: float) -> None:
    """One buffer: its rectangle, the hatched bands of the views it holds, and its label where
    it fits (``x``: its first and last time on the axis)."""
    x0, x1 = x
    colour = PLAIN if life.buffer is not None else TEMPORARY
    ax.add_patch(Rectangle((x0, life.addr), x1 - x0, life.words, facecolor=colour, alpha=0.55,
                           edgecolor="black", linewidth=0.8))
    parts = _parts(program, life)
    for k, (first, words, label) in enumerate(parts):
        ax.add_patch(Rectangle((x0, life.addr + first), x1 - x0, words, fill=False,
                               hatch="xx" if k % 2 else "..", edgecolor="#1f3d66", linewidth=0.6))
        ax.text(x0 + (x1 - x0) * 0.03, life.addr + first + words / 2, label, fontsize=7, va="center",
                color="#1f3d66", clip_on=True, bbox=LABEL_BOX)
    parted = bool(parts)
    if life.words < 0.035 * top or (x1 - x0) < 0.05 * end:  # too small to hold a label
        return
    middle = life.addr + (life.words * 0.97 if parted else life.words / 2)
    ax.text((x0 + x1) / 2, middle, _short(program, life), ha="center", va="top" if parted else "center",
            fontsize=7, clip_on=True, bbox=LABEL_BOX if parted else None)


def _frame(ax: Axes, program: Program, buffers: int, axis: str, end: float, top: float) -> None:
    """The high-water mark, the axes, the title and the legend."""
    high = program.spad_high
    ax.axhline(high, color="#e45756", linestyle="--", linewidth=1)
    ax.text(end, high, f" high-water mark {high} words", color="#e45756", fontsize=8, va="bottom", ha="right")
    ax.set_xlim(0, end * 1.01 + 1)
    ax.set_ylim(0, top)
    if axis == "pc":
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("instruction (pc)" if axis == "pc" else "cycle")
    ax.set_ylabel("scratchpad address (words)")
    ax.set_title(
        f"Scratchpad over time: {buffers} buffers, high-water mark {high} of "
        f"{program.machine.SPAD_WORDS} words" + ("" if program.reuse else " (no reuse)")
    )
    handles = [Patch(facecolor=PLAIN, alpha=0.55, edgecolor="black", label="tensor of the graph"),
               Patch(facecolor=TEMPORARY, alpha=0.55, edgecolor="black",
                     label="temporary (accumulator, Q16 row, rescaled operand)"),
               Patch(fill=False, hatch="..", edgecolor="#1f3d66", label="view: a part inside its buffer")]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
