"""Export GA-2 to Verilog: the core, the simulation top, and a JSON description for cosim.

Usage::

    python -m flows.export                        # build/ga2.v, build/ga2_simtop.v, build/ga2_ports.json
    python -m flows.export --param t8              # build/machines/T8-LANES8/...: another machine
    python -m flows.export --out DIR --param SPAD_WORDS=1024

``ga2.v`` holds module ``ga2`` (:class:`hw.top.GA2`, the core: host interface, the external
bus and the ``timing_fault`` self-check as ports); ``ga2_simtop.v`` holds module ``ga2_simtop``
(:class:`hw.simtop.SimTop`: the core and an external memory; the same ports but the bus). Both
have a clock ``clk`` and a synchronous, active-high reset ``rst``.
``ga2_ports.json`` lists, for each top, its ports (name, direction, width) and where its
memories are (:mod:`flows.memmap`), plus the parameters and the timing constants used.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib import wiring

from hw.simtop import SimTop
from hw.top import GA2
from sim import machines, spec
from sim.spec import Params

from . import memmap
from .memmap import CORE, PORTS_JSON, SIMTOP

TOPS = {CORE: ("core", GA2), SIMTOP: ("simtop", SimTop)}
"""Verilog module name -> (memory-map top, component class)."""

CLOCK, RESET = "clk", "rst"


def ports(component: wiring.Component) -> list[dict]:
    """The Verilog ports of a component: name (members joined with ``__``, as Amaranth names
    them), direction as seen from outside the module, width; clock and reset first."""
    out = [{"name": CLOCK, "dir": "input", "width": 1}, {"name": RESET, "dir": "input", "width": 1}]
    for path, member, _value in component.signature.flatten(component):
        out.append({
            "name": "__".join(str(p) for p in path),
            "dir": "input" if member.flow == wiring.In else "output",
            "width": Shape.cast(member.shape).width,
        })
    return out


def write_tops(folder: Path, tops: dict[str, wiring.Component], description: dict, json_name: str,
               more: Callable[[str], dict] = lambda name: {}) -> dict[str, Path]:
    """Write each top's Verilog (``<name>.v``, module ``name``) into ``folder``, and the JSON
    description ``json_name``: ``description`` with, under ``"tops"``, each top's file, its
    :func:`ports` and what ``more(name)`` adds. Returns name -> path written (``"json"``: the
    description).

    Raises:
        OSError: the folder cannot be made or written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    description = {**description, "tops": {}}
    for name, top in tops.items():
        path = folder / f"{name}.v"
        path.write_text(verilog.convert(top, name=name))
        written[name] = path
        description["tops"][name] = {"file": path.name, "ports": ports(top), **more(name)}
    path = folder / json_name
    path.write_text(json.dumps(description, indent=2) + "\n")
    written["json"] = path
    return written


def export(params: Params, out_dir: Path) -> dict[str, Path]:
    """Write the Verilog of both tops and the JSON description; return name -> path written."""
    description = {
        "params": dataclasses.asdict(params),
        "timing": dict(spec.TIMING_CONSTANTS),
        "clock": CLOCK,
        "reset": f"{RESET} (synchronous, active high)",
    }
    tops = {name: cls(params) for name, (_map_top, cls) in TOPS.items()}
    return write_tops(out_dir, tops, description, PORTS_JSON,
                      lambda name: {"memories": memmap.describe(params, top=TOPS[name][0])})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: build for the default machine, build/machines/<tag> "
                             "for another: sim.machines.machine_dir)")
    machines.add_argument(parser)
    args = parser.parse_args(argv)
    try:
        params = machines.from_args(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    args.out = args.out or machines.machine_dir("build", params)
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file, not a folder: give the folder to write the Verilog in")
    try:
        written = export(params, args.out)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:          # a read-only folder, a parent that is a file, a full disk
        print(f"error: cannot write the Verilog in --out {args.out}: {e.strerror or e}"
              f"{f' ({e.filename})' if e.filename else ''}; give a folder you can write", file=sys.stderr)
        return 1
    for path in written.values():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
