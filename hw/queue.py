"""The queue between the checker and the execute stage: QUEUE_SLOTS checked instructions, each
an entry of :func:`queue_entry` (hw/README.md, "The front end and the counters"). The control
fills it (:class:`hw.control.Control`); its execute stage, serial or the engines side by side
(:class:`hw.overlap.OverlapExecute`), takes its head."""

from __future__ import annotations

from amaranth.lib import data

from sim import spec
from sim.spec import Params

from .checker import latency_bits, overlap_info_widths, pc_bits
from .isa import FIELD_BITS
from .station import issue_load_widths

QUEUE_SLOTS = 2
"""Checked instructions waiting between the checker and the execute stage (hw/README.md)."""


def queue_entry(params: Params) -> data.StructLayout:
    """One checked instruction in the queue: its opcode, fields and pc, the checker's verdict
    (``code``, and ``stop``: an error or HALT, which dispatches nothing), its class (one bit per
    unit counter, ``sim.spec.COUNTERS`` after ``cycles``), its latency in cycles and, at
    OVERLAP = 1, what the issue rule needs of it (:func:`hw.checker.overlap_info_widths`: its
    port windows and scratchpad regions), and at OVERLAP = 2 what its issue loads into the
    countdowns (:func:`hw.station.issue_loads`)."""
    return data.StructLayout({
        "opcode": spec.OPCODE_BITS, "fields": FIELD_BITS, "pc": pc_bits(params),
        "code": spec.ERROR_CODE_BITS, "stop": 1, "cls": len(spec.COUNTERS) - 1,
        "latency": latency_bits(params),
    } | (overlap_info_widths(params) if params.OVERLAP else {})
      | (issue_load_widths(params) if params.OVERLAP == 2 else {}))
