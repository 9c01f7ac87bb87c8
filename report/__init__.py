"""The report page of a compiled program: one self-contained HTML file.

    python -m report seed 100 --sim both          # build/report/seed-100.html
    python -m report example-a                    # running example A
    python -m report graph my_net.py:build        # a graph of your own
    python -m report torch my_model.py:make --shape 64 --batch 8

:func:`write_report` writes the page of a :class:`Subject` (a program, its test inputs and
where it came from): the graph drawn, the pass-by-pass account of :mod:`compiler.explain`,
the plots of :mod:`viz` inline as SVG, the listing with each instruction's cycles and, when
given, the co-simulation's PASS or FAIL per simulator (:func:`report.rtl.run_rtl`). This
package sits above cosim in the layers (it may import compiler, viz and cosim).
"""

from .page import SECTION_IDS, Subject, page_html, write_report
from .rtl import RtlResult, run_rtl

__all__ = ["SECTION_IDS", "RtlResult", "Subject", "page_html", "run_rtl", "write_report"]
