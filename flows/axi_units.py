"""What GA-2's system top adds to the core, unit by unit: Yosys's ``synth_ecp5`` (the classic ABC
LUT mapping of ``make synth``) of each AXI unit on its own, the table of docs/guide/soc.md.

Usage::

    python -m flows.axi_units                          # the table (build/axi/units/<unit>/: Yosys's files)
    python -m flows.axi_units --record docs/soc.json   # and the record's section "units"
    python -m flows.axi_units --check docs/soc.json    # exit 1 when the record's cells are not today's

The units are those :class:`hw.axi_top.GA2Axi` adds around the core, on the default machine:
:class:`~hw.axi_read.AxiReader`, :class:`~hw.axi_write.AxiWriter` (its queues included) and
:class:`~hw.axi_regs.AxiLiteRegs`. Each is its own top (no registers added on its ports), so its
figures are its own logic, before placement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from amaranth.back import verilog

from hw.axi_read import AxiReader
from hw.axi_regs import AxiLiteRegs
from hw.axi_write import AxiWriter
from sim.spec import DEFAULT, Params

from . import record
from .synth import TOP_NAME, SynthError, run_yosys, versions

UNITS = {"AxiReader": AxiReader, "AxiWriter": AxiWriter, "AxiLiteRegs": AxiLiteRegs}
"""The units measured, by class name."""
CELLS = ("LUT4", "PFUMX", "L6MUX21", "CCU2C", "TRELLIS_FF")
"""The cells of the table: LUTs, the 5- and 6-input multiplexers, carry cells, flip-flops."""
SECTION = "units"


def measure(params: Params, out: Path, quiet: bool = True) -> dict[str, dict[str, int]]:
    """Each unit's cells by Yosys: ``{unit: {cell: count}}`` (0 for a cell it does not use).

    Raises:
        SynthError: Yosys is missing or failed.
        OSError: ``out`` cannot be written.
    """
    cells = {}
    for name, cls in UNITS.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{TOP_NAME}.v").write_text(verilog.convert(cls(params), name=TOP_NAME))
        found = run_yosys(folder / f"{TOP_NAME}.v", folder, "abc", quiet).cells
        cells[name] = {cell: found.get(cell, 0) for cell in CELLS}
    return cells


def table(cells: dict[str, dict[str, int]]) -> str:
    """The Markdown table of the cells."""
    lines = ["| unit | " + " | ".join(CELLS) + " |", "|---|" + "---:|" * len(CELLS)]
    for name, row in cells.items():
        lines.append(f"| `{name}` | " + " | ".join(f"{row[c]:,}" for c in CELLS) + " |")
    return "\n".join(lines)


def stale(cells: dict[str, dict[str, int]], path: Path) -> list[str]:
    """Where the record's section "units" differs from ``cells``: one line a cell, naming the
    unit, the cell, the recorded and the measured count (empty when it is current).

    Raises:
        OSError: the record cannot be read.
        ValueError: it is not JSON, or has no section "units".
    """
    recorded = json.loads(path.read_text()).get(SECTION, {}).get("cells")
    if recorded is None:
        raise ValueError(f"{path} has no section '{SECTION}' (python -m flows.axi_units --record {path})")
    return [f"{unit} {cell}: recorded {recorded.get(unit, {}).get(cell)}, measured {count}"
            for unit, row in cells.items() for cell, count in row.items()
            if recorded.get(unit, {}).get(cell) != count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.axi_units", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("build/axi/units"), help="Yosys's folders")
    parser.add_argument("--record", type=Path, default=None,
                        help="also write the cells, date and tool versions to this record's section "
                             "'units' (docs/soc.json is the record docs/guide/soc.md quotes)")
    parser.add_argument("--check", type=Path, default=None,
                        help="exit 1 when this record's section 'units' is not what Yosys maps today")
    args = parser.parse_args(argv)
    try:
        cells = measure(DEFAULT, args.out)
        if args.record:
            record.update(args.record, SECTION, {"cells": cells}, "python -m flows.axi_units", versions())
        differ = stale(cells, args.check) if args.check else []
    except (SynthError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(table(cells))
    if differ:
        print(f"{args.check} is stale (python -m flows.axi_units --record {args.check}, then the table "
              "of docs/guide/soc.md):", *differ, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
