"""Every plot of one program at once, saved into a folder."""

from __future__ import annotations

from pathlib import Path

from compiler import Program

from .common import save
from .memory import plot_memory_map
from .roofline import plot_roofline
from .scales import plot_scales
from .tiling import plot_tiling
from .timeline import plot_timeline

PROGRAM_PLOTS = {
    "scales": plot_scales,
    "tiling": plot_tiling,
    "memory": plot_memory_map,
    "timeline": plot_timeline,
    "roofline": plot_roofline,
}
"""File stem -> the plot of a program it holds."""


def save_program_plots(program: Program, folder: str | Path, suffix: str = ".png") -> list[Path]:
    """Write every plot of :data:`PROGRAM_PLOTS` as ``folder/<stem><suffix>``; returns the paths.

    Raises:
        ValueError: ``suffix`` is neither .png nor .svg.
    """
    return [save(plot(program), Path(folder) / f"{stem}{suffix}") for stem, plot in PROGRAM_PLOTS.items()]
