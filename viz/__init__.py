"""Pictures of a compiled Capra program (matplotlib, no display needed).

Each ``plot_*`` function takes what it draws (a :class:`compiler.Program`, or the points of
a sweep) and returns a :class:`matplotlib.figure.Figure`, built without pyplot (so no
window, no global state: the Agg renderer draws it); :func:`save` writes it as PNG or SVG.

    from viz import plot_memory_map, save
    save(plot_memory_map(program), "build/plots/memory.png")

* :func:`plot_scales`: the int8 scale of every tensor, the hardware's pinned ones marked;
* :func:`plot_tiling`: each matmul's output cut into T x T tiles, one MM each;
* :func:`plot_memory_map`: the scratchpad over time, every buffer a rectangle (address
  against instruction or cycle), a concatenation's parts drawn inside their buffer;
* :func:`plot_timeline`: the engine timeline, a Gantt chart of DMA, MXU, vector and
  softmax per instruction;
* :func:`plot_roofline`: the program's point under the MXU and DMA roofs;
* :func:`plot_sweep`: footprint, cycles and error against a swept width;
* :func:`graph_svg`: the graph drawn as SVG, layer by layer;
* :func:`save_program_plots`: every plot of a program into a folder.

This package imports only the compiler and sim of the project (the layer rule: the HTML
report that adds co-simulation results is :mod:`report`).
"""

from .bundle import PROGRAM_PLOTS, save_program_plots
from .common import figure_svg, save
from .graph import graph_svg
from .memory import plot_memory_map
from .roofline import plot_roofline, roofline_point
from .scales import plot_scales
from .sweep import SweepPoint, plot_sweep
from .tiling import plot_tiling
from .timeline import plot_timeline

__all__ = [
    "PROGRAM_PLOTS",
    "SweepPoint",
    "figure_svg",
    "graph_svg",
    "plot_memory_map",
    "plot_roofline",
    "plot_scales",
    "plot_sweep",
    "plot_tiling",
    "plot_timeline",
    "roofline_point",
    "save",
    "save_program_plots",
]
