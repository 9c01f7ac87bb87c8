"""Export GA-2's system top to Verilog: ``ga2_axi`` (for an SoC) and ``ga2_axi_simtop`` (with the
protocol checkers, for co-simulation).

Usage::

    python -m flows.axi                    # build/axi/ga2_axi.v, build/axi/ga2_axi_simtop.v
    python -m flows.axi --param t8         # build/machines/T8-LANES8/axi/...
    python -m flows.axi --out DIR

Both modules have a clock ``clk`` and a synchronous, active-high reset ``rst``; the buses are
flat ports named as AXI names them (``s_axil_awaddr``, ``m_axi_rdata``: hw/axi.py). A file
``ga2_axi.json`` beside them records the machine, the ports and the register map's size.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from hw.axi import BOUNDARY
from hw.axi_simtop import AxiSimTop
from hw.axi_top import GA2Axi
from sim import machines, regmap
from sim.spec import Params

from .export import write_tops

TOPS = {"ga2_axi": GA2Axi, "ga2_axi_simtop": AxiSimTop}
"""Verilog module name -> component class."""
DESCRIPTION = "ga2_axi.json"


def out_dir(params: Params, root: Path | str = "build") -> Path:
    """Where the system tops of a machine go: ``build/axi`` or ``build/machines/<tag>/axi``."""
    return machines.machine_dir(root, params) / "axi"


def export(params: Params, folder: Path, names: tuple[str, ...] = tuple(TOPS), *,
           burst_bytes: int = BOUNDARY) -> dict[str, Path]:
    """Write the Verilog of the named tops and the description; return name -> path written.
    ``burst_bytes``: where the master's bursts end (:class:`hw.axi_top.GA2Axi`)."""
    description = {"params": dataclasses.asdict(params), "regmap_bytes": 1 << regmap.address_bits(params),
                   "burst_bytes": burst_bytes}
    return write_tops(folder, {name: TOPS[name](params, burst_bytes) for name in names}, description,
                      DESCRIPTION)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.axi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="output folder (default build/axi, or "
                        "build/machines/<tag>/axi for another machine)")
    parser.add_argument("--top", choices=tuple(TOPS), action="append",
                        help="only this top (repeatable; default both)")
    machines.add_argument(parser)
    args = parser.parse_args(argv)
    params = machines.from_args(args, parser)
    try:
        written = export(params, args.out or out_dir(params), tuple(args.top or TOPS))
    except OSError as e:
        print(f"error: cannot write the Verilog: {e.strerror or e} ({e.filename})", file=sys.stderr)
        return 1
    for path in written.values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
