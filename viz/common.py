"""What every plot shares: a new figure, the units' colours, saving as PNG or SVG."""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib.figure import Figure

UNIT_COLOURS = {"dma": "#4c78a8", "mxu": "#e45756", "vpu": "#54a24b", "sfu": "#b279a2", None: "#9d9d9d"}
"""Counter name -> the colour of its instructions (None: HALT and the front end)."""
PINNED = "#f58518"
"""The colour of what the hardware fixes (a pinned scale)."""
PLAIN = "#4c78a8"
TEMPORARY = "#bab0ac"
FORMATS = (".png", ".svg")
DPI = 110


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches drawn by Agg (no pyplot, no window)."""
    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def save(fig: Figure, path: str | Path, *, description: str | None = None) -> Path:
    """Write the figure as PNG or SVG, by the path's suffix; creates the folder.

    Args:
        fig: the figure.
        path: where, ending in ``.png`` or ``.svg``.
        description: text stored in the file's metadata (PNG ``Description``, SVG
            ``dc:description``), e.g. a digest of the data drawn, for a staleness test.

    Returns:
        the path written.

    Raises:
        ValueError: the suffix is neither .png nor .svg.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"save: {str(path)!r} ends in {suffix or 'no suffix'!r}; give a path ending in .png or .svg"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Software": "GA-2 / Capra viz"} if suffix == ".png" else {"Creator": "GA-2 / Capra viz"}
    if description is not None:
        metadata["Description"] = description
    if suffix == ".svg":  # no date, so that the same data gives the same file
        metadata["Date"] = None
    fig.savefig(target, format=suffix[1:], metadata=metadata)
    return target


def figure_svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no XML declaration, no DOCTYPE), for HTML."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]
