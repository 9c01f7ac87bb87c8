"""The roofline point of a program: the MXU and DMA bounds against the cycles it takes.

The roofline model (Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009): a
program that does W multiply-adds and moves Q words through the DMA cannot run faster than
min(P, B x I) multiply-adds per cycle, with P = T x T (the array's peak, one multiply-add
per cell per cycle), B = LANES words per cycle (the DMA's width, GA2.md section 6) and
I = W / Q its arithmetic intensity. In cycles: at least W / P (the MXU bound) and at least
Q / B (the DMA bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from compiler import Program
from compiler.timeline import timeline

from .common import UNIT_COLOURS, new_figure


@dataclass(frozen=True)
class RooflinePoint:
    """A program's place under the roofs.

    Attributes:
        macs: multiply-adds its MM instructions do (M x K x N each).
        words: words its LD and ST instructions move.
        cycles: the cycles it takes (the ``cycles`` counter).
        peak: multiply-adds per cycle the T x T array can do.
        bandwidth: words per cycle the DMA moves (LANES).
    """

    macs: int
    words: int
    cycles: int
    peak: int
    bandwidth: int

    @property
    def intensity(self) -> float:
        """Multiply-adds per DMA word."""
        return self.macs / self.words if self.words else float("inf")

    @property
    def achieved(self) -> float:
        """Multiply-adds per cycle."""
        return self.macs / self.cycles

    @property
    def mxu_bound(self) -> float:
        """The fewest cycles the multiply-adds need: macs / (T x T)."""
        return self.macs / self.peak

    @property
    def dma_bound(self) -> float:
        """The fewest cycles the transfers need: words / LANES."""
        return self.words / self.bandwidth


def roofline_point(program: Program) -> RooflinePoint:
    """The program's multiply-adds, DMA words and cycles (from its code and the spec's latencies)."""
    macs = sum(i.fields["M"] * i.fields["K"] * i.fields["N"] for i in program.code if i.spec.counter == "mxu")
    words = sum(i.fields["len"] for i in program.code if i.op in ("LD", "ST"))
    cycles = timeline(program.code, program.machine)[-1].end
    t = program.machine.T
    return RooflinePoint(macs, words, cycles, t * t, program.machine.LANES)


def plot_roofline(program: Program) -> Figure:
    """The roofline (log-log: multiply-adds per cycle against multiply-adds per DMA word) with
    the program's point, and a box giving the two bounds and the achieved cycles."""
    point = roofline_point(program)
    fig = new_figure(7.5, 4.6)
    ax = fig.add_subplot()
    ridge = point.peak / point.bandwidth
    low = min(point.intensity, ridge) / 20 if point.macs else ridge / 20
    high = max(point.intensity if np.isfinite(point.intensity) else ridge, ridge) * 20
    xs = np.geomspace(low, high, 200)
    ax.plot(xs, np.minimum(point.peak, point.bandwidth * xs), color="black", linewidth=2, label="roof")
    ax.plot(
        xs,
        point.bandwidth * xs,
        color=UNIT_COLOURS["dma"],
        linestyle=":",
        linewidth=1,
        label=f"DMA: {point.bandwidth} words/cycle x intensity",
    )
    ax.axhline(
        point.peak,
        color=UNIT_COLOURS["mxu"],
        linestyle=":",
        linewidth=1,
        label=f"MXU peak: {point.peak} multiply-adds/cycle",
    )
    if point.macs and point.words:
        ax.plot(
            [point.intensity],
            [point.achieved],
            "o",
            color="#f58518",
            markersize=9,
            markeredgecolor="black",
            label="this program",
        )
        ax.annotate(
            f"{point.achieved:.2f} MAC/cycle",
            (point.intensity, point.achieved),
            textcoords="offset points",
            xytext=(8, -12),
            fontsize=8,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (multiply-adds per DMA word)")
    ax.set_ylabel("multiply-adds per cycle")
    ax.set_title("Roofline: the program against the MXU and DMA bounds")
    text = (
        f"multiply-adds {point.macs}, DMA words {point.words}\n"
        f"MXU bound  {point.mxu_bound:8.1f} cycles\nDMA bound  {point.dma_bound:8.1f} cycles\n"
        f"achieved   {point.cycles:8d} cycles"
    )
    ax.text(
        0.98,
        0.04,
        text,
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=8,
        family="monospace",
        bbox={"facecolor": "white", "edgecolor": "#999999"},
    )
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(which="both", alpha=0.25)
    return fig
