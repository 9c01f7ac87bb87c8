"""The tiling of each product (seed chapter 11, figure 11.4): one MM per outlined tile."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from compiler import Program
from compiler.explain import TilePlan, tile_plans

from .common import UNIT_COLOURS, new_figure

SHOWN = 6
"""Products drawn at most (the first ones; the title says how many there are)."""


def _draw(ax, plan: TilePlan, t: int) -> None:
    """One product's output (rows x cols cells) with its tiles outlined and labelled."""
    ax.add_patch(Rectangle((0, 0), plan.cols, plan.rows, facecolor="#f4f4f4", edgecolor="none"))
    for r in range(plan.rows + 1):
        ax.plot([0, plan.cols], [r, r], color="#d0d0d0", linewidth=0.4)
    for c in range(plan.cols + 1):
        ax.plot([c, c], [0, plan.rows], color="#d0d0d0", linewidth=0.4)
    for k, (row, col, rows, cols, pc) in enumerate(plan.tiles):
        edge = rows < t or cols < t
        ax.add_patch(
            Rectangle(
                (col + 0.06, row + 0.06),
                cols - 0.12,
                rows - 0.12,
                fill=True,
                facecolor=UNIT_COLOURS["mxu"],
                alpha=0.12 if k % 2 else 0.22,
                edgecolor=UNIT_COLOURS["mxu"],
                linewidth=2,
                linestyle="--" if edge else "-",
            )
        )
        where = f"MM @{pc}" if pc is not None else "MM"
        size = 8 if min(rows, cols) >= 2 else 6.5
        ax.text(
            col + cols / 2,
            row + rows / 2,
            f"{where}\n{rows}x{cols}" if rows >= 2 else f"{where} {rows}x{cols}",
            ha="center",
            va="center",
            fontsize=size,
        )
    ax.set_xlim(0, plan.cols)
    ax.set_ylim(plan.rows, 0)
    ax.set_aspect("equal")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("output column")
    ax.set_ylabel("output row")
    ax.set_title(
        f"%{plan.node}: ({plan.rows} x {plan.inner}) x ({plan.inner} x {plan.cols}), "
        f"{len(plan.tiles)} tile{'s' if len(plan.tiles) != 1 else ''}",
        fontsize=9,
    )


def plot_tiling(program: Program) -> Figure:
    """Each matmul's output cut into T x T tiles, one MM instruction each (tile rows outer).

    Every cell is one output element; each outlined tile is labelled with the pc of the MM
    that computes it and its M x N; edge tiles (smaller than T x T) are dashed. At most
    :data:`SHOWN` products are drawn, the first in program order.
    """
    plans = tile_plans(program)
    t = program.machine.T
    shown = plans[:SHOWN]
    widest = max((p.cols for p in shown), default=1)
    heights = [max(p.rows, 1) for p in shown] or [1]
    width = min(12.0, max(6.0, 0.32 * widest + 1.5))
    height = min(14.0, 1.3 * len(shown) + 0.3 * sum(heights) * width / (0.32 * widest + 1.5))
    fig = new_figure(width, max(2.6, height))
    if not shown:
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, "no matmul: nothing is tiled", ha="center", va="center")
        ax.set_axis_off()
        return fig
    axes = fig.subplots(len(shown), 1, squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, plan in zip(axes[:, 0], shown, strict=True):
        _draw(ax, plan, t)
    more = f" (the first {SHOWN} of {len(plans)})" if len(plans) > SHOWN else ""
    fig.suptitle(
        f"Tiling: each product on the {t} x {t} array{more}; one outlined tile = one MM (dashed: edge tile)",
        fontsize=10,
    )
    return fig
