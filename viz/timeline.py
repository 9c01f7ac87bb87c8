"""The engine timeline: a Gantt chart of the units, one bar per instruction."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from compiler import Program
from compiler.timeline import UNIT_NAMES, timeline, unit_totals
from sim import spec

from .common import UNIT_COLOURS, new_figure

ROWS = ("dma", "mxu", "vpu", "sfu", None)
"""The rows from top to bottom: the four unit counters, then control (front end and HALT)."""


def plot_timeline(program: Program) -> Figure:
    """When each unit works: a bar per instruction from its start to its end cycle.

    Rows: DMA (LD, ST), MXU (MM), vector (RQ, VADD, AMAX, UNPACK), softmax (SM), and
    control (the front end's cycles before the first dispatch, and HALT). The spans come from
    :func:`compiler.timeline.timeline` (the spec's latencies and issue rule), whose totals are
    the run's counters: on the serial machine no two bars overlap; with OVERLAP = 1 the engines'
    bars run side by side. Wide bars carry their mnemonic and pc;
    the legend gives each unit's busy cycles and share of the run.
    """
    spans = timeline(program.code, program.machine)
    totals = unit_totals(spans)
    total = totals["cycles"]
    fig = new_figure(11.0, 3.6)
    ax = fig.add_subplot()
    lanes = {unit: k for k, unit in enumerate(ROWS)}
    ax.broken_barh(
        [(0, spans[0].start if spans else spec.FRONTEND_CYCLES)],
        (lanes[None] - 0.4, 0.8),
        facecolors=UNIT_COLOURS[None],
        edgecolor="white",
        linewidth=0.5,
    )
    for unit in ROWS:
        mine = [s for s in spans if s.unit == unit]
        ax.broken_barh(
            [(s.start, s.cycles) for s in mine],
            (lanes[unit] - 0.4, 0.8),
            facecolors=UNIT_COLOURS[unit],
            edgecolor="white",
            linewidth=0.5,
        )
        for s in mine:
            if s.cycles >= total / 40:
                ax.text(
                    s.start + s.cycles / 2,
                    lanes[unit],
                    f"{s.op}\n@{s.pc}",
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    color="white",
                    clip_on=True,
                )
    ax.set_yticks(range(len(ROWS)), [UNIT_NAMES.get(u, "control") for u in ROWS])
    ax.set_ylim(len(ROWS) - 0.5, -0.5)
    ax.set_xlim(0, total)
    ax.set_xlabel("cycle")
    ax.set_title(
        f"Engine timeline: {len(spans)} instructions, {total} cycles (one instruction at a time, so "
        "no overlap and no hazard waits)"
    )
    handles = [
        Patch(
            color=UNIT_COLOURS[u],
            label=f"{UNIT_NAMES[u]}: {totals[u]} cycles ({100 * totals[u] / total:.0f}%)",
        )
        for u in ROWS
        if u is not None
    ]
    handles.append(Patch(color=UNIT_COLOURS[None], label="front end, HALT"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="x", alpha=0.3)
    return fig
