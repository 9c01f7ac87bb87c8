"""Footprint, cycles and error against a swept width (seed chapter 11, figures 11.7 and 11.8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

from .common import PINNED, PLAIN, UNIT_COLOURS, new_figure


@dataclass(frozen=True)
class SweepPoint:
    """One width of a sweep; the figures are None where the program did not compile.

    Attributes:
        width: the swept width (e.g. a hidden layer's).
        spad: scratchpad high-water mark with buffer reuse, words.
        spad_no_reuse: the same without reuse (None: it does not fit).
        cycles: cycles of one run.
        error: relative error of the outputs against floating point (0.02 = 2%).
        refusal: the compiler's message when the width was refused.
    """

    width: int
    spad: int | None = None
    spad_no_reuse: int | None = None
    cycles: int | None = None
    error: float | None = None
    refusal: str = ""


def plot_sweep(points: Sequence[SweepPoint], spad_words: int, what: str = "hidden width") -> Figure:
    """Three panels against the width: scratchpad footprint with and without reuse (the
    scratchpad's size drawn as a line; a width that does not fit marked on it), cycles, and
    the error against floating point in percent. Refused widths are marked with an x.

    Args:
        points: the sweep, in any order.
        spad_words: the scratchpad's size in words (``params.SPAD_WORDS``).
        what: what the width is, for the x axis.

    Raises:
        ValueError: no points.
    """
    if not points:
        raise ValueError("plot_sweep: no points to draw")
    points = sorted(points, key=lambda p: p.width)
    ok = [p for p in points if p.refusal == ""]
    refused = [p for p in points if p.refusal]
    fig = new_figure(11.0, 3.8)
    foot, cyc, err = fig.subplots(1, 3)
    widths = [p.width for p in ok]
    foot.plot(widths, [p.spad for p in ok], "o-", color=PLAIN, label="with reuse")
    fits = [p for p in ok if p.spad_no_reuse is not None]
    foot.plot(
        [p.width for p in fits], [p.spad_no_reuse for p in fits], "s--", color=PINNED, label="without reuse"
    )
    over = [p for p in ok if p.spad_no_reuse is None]
    foot.plot(
        [p.width for p in over],
        [spad_words] * len(over),
        "^",
        color=PINNED,
        markersize=9,
        label="without reuse: does not fit",
    )
    foot.axhline(spad_words, color="black", linestyle=":", linewidth=1)
    foot.text(
        points[-1].width, spad_words, f"scratchpad: {spad_words} words ", va="bottom", ha="right", fontsize=8
    )
    for panel in (foot, cyc, err):
        for p in refused:
            panel.axvline(p.width, color="#e45756", linestyle="--", linewidth=1)
        panel.set_xlabel(what)
        panel.grid(alpha=0.3)
        panel.set_xticks([p.width for p in points])
    if refused:
        foot.plot([], [], color="#e45756", linestyle="--", label="refused by the compiler")
    foot.set_ylabel("scratchpad high-water mark (words)")
    foot.set_ylim(0, spad_words * 1.15)
    foot.set_title("Footprint")
    foot.legend(fontsize=7, loc="center left")
    cyc.plot(widths, [p.cycles for p in ok], "o-", color=UNIT_COLOURS["mxu"])
    cyc.set_ylabel("cycles per run")
    cyc.set_ylim(bottom=0)
    cyc.set_title("Cycles")
    err.plot(widths, [100 * p.error for p in ok], "o-", color=UNIT_COLOURS["vpu"])
    err.set_ylabel("relative error against float (%)")
    err.set_ylim(bottom=0)
    err.set_title("Error")
    fig.suptitle(
        f"Sweep of the {what}: {len(ok)} compiled" + (f", {len(refused)} refused" if refused else ""),
        fontsize=10,
    )
    return fig
