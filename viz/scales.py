"""The scales per tensor (seed chapter 11, figure 11.3): pinned ones stand out."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from compiler import Program
from compiler.explain import own_scale

from .common import PINNED, PLAIN, new_figure


def plot_scales(program: Program) -> Figure:
    """One bar per tensor with a scale (argmax results have none), on a log axis.

    A bar is the tensor's scale (real value of one int8 level); bars the hardware pins (the
    softmax's Q4.4 input, 1/16, and its probability output, 1/127; GA2.md section 4) are
    orange and hatched, labelled with the pin. A black tick marks the scale the tensor's own
    range would give (range / 127, / 7 for int4): where it sits below the bar, the tensor
    shares a larger scale with its group (a buffer, a view) or is pinned.
    """
    nodes = [n for n in program.graph.nodes if n.id in program.scales]
    fig = new_figure(max(6.0, 0.45 * len(nodes) + 2.5), 4.2)
    ax = fig.add_subplot()
    xs = range(len(nodes))
    for x, node in zip(xs, nodes, strict=True):
        pinned = node.id in program.plan.pins
        scale = program.scales[node.id]
        ax.bar(
            x,
            scale,
            color=PINNED if pinned else PLAIN,
            hatch="//" if pinned else None,
            edgecolor="black" if pinned else PLAIN,
            linewidth=1.2 if pinned else 0.5,
        )
        own = own_scale(program, node.id)
        if own > 0:
            ax.plot([x - 0.38, x + 0.38], [own, own], color="black", linewidth=2)
        if pinned:
            label = (
                "1/16"
                if abs(scale - 1 / 16) < 1e-12
                else "1/127"
                if abs(scale - 1 / 127) < 1e-12
                else f"{scale:.4g}"
            )
            ax.annotate(
                label,
                (x, scale),
                textcoords="offset points",
                xytext=(0, 4),
                ha="center",
                fontsize=8,
                fontweight="bold",
                color=PINNED,
            )
    ax.set_yscale("log")
    ax.set_xticks(
        list(xs),
        [f"%{n.id} {n.op}" + (f"\n{n.name}" if n.name else "") for n in nodes],
        rotation=60 if len(nodes) > 8 else 0,
        ha="right" if len(nodes) > 8 else "center",
        fontsize=8,
    )
    ax.set_ylabel("scale (real value of one int8 level)")
    ax.set_xlabel("tensor (node id, operation, name)")
    pinned_count = sum(n.id in program.plan.pins for n in nodes)
    ax.set_title(f"Scales per tensor: {len(nodes)} tensors, {pinned_count} pinned by the hardware")
    ax.margins(y=0.15)
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(
        handles=[
            Patch(color=PLAIN, label="scale from the group's range / 127"),
            Patch(facecolor=PINNED, edgecolor="black", hatch="//", label="pinned by the hardware"),
            ax.lines[0] if ax.lines else Patch(color="black"),
        ],
        labels=[
            "scale from the group's range / 127",
            "pinned by the hardware",
            "the tensor's own range / 127",
        ],
        fontsize=8,
        loc="best",
    )
    return fig
