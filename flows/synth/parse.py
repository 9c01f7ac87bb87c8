"""Reading what Yosys and nextpnr-ecp5 write: why Yosys stopped, the cells and memories it
mapped, cells by block, block RAMs per memory, nextpnr's Fmax and critical path, and what
nextpnr packed when it could not place.

Pure functions of the tools' text and JSON: the tests feed them made-up logs and paths.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from .report import BLOCK_RAMS
from .wrapper import TOP_NAME

ABC9_PASSES = ("ABC9", "ABC9_EXE", "ABC9_OPS", "ABC_OPS_REINTEGRATE")
"""The passes in which the PyPI builds of Yosys fail on GA-2 (see flows/synth/__init__.py)."""


def abc9_bug(log_text: str) -> str | None:
    """Why Yosys stopped, if it stopped inside ABC9's mapping (the last pass it started is one
    of ABC9_PASSES): its ERROR line, or a note that the ABC9 child ended without one. None if
    the log shows Yosys finishing, or failing anywhere else."""
    passes = re.findall(r"^\S+ Executing (\w+) pass", log_text, re.M)
    if not passes or passes[-1] not in ABC9_PASSES or "End of script." in log_text:
        return None
    error = re.search(r"^ERROR.*$", log_text, re.M)
    return error.group(0) if error else f"Yosys ended in its {passes[-1]} pass with no message"


def yosys_cells(stat_json: str) -> dict[str, int]:
    """Cells by type from ``stat -json``'s output."""
    return dict(json.loads(stat_json)["design"]["num_cells_by_type"])


def mapped_memories(log_text: str) -> dict[str, str]:
    """Memory -> the cell Yosys mapped it to, from its log (``mapping memory X via $__DP16KD_``)."""
    return {m.group(1): m.group(2).strip("$_")
            for m in re.finditer(r"^mapping memory (\S+) via (\S+)", log_text, re.M)}


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
    """Block RAMs (:data:`flows.synth.report.BLOCK_RAMS`) per memory of the core (Yosys names
    each after its memory: ``core.spad.bank0.<row>.<column>``)."""
    design = json.loads(netlist.read_text())
    counts: Counter = Counter()
    for name, cell in design["modules"][top]["cells"].items():
        if cell["type"] in BLOCK_RAMS:
            parts = name.split(".")
            counts[".".join(parts[1:3]) if parts[0] == "core" else name] += 1
    return dict(sorted(counts.items()))


def nextpnr_figures(report_json: str, clock: str) -> tuple[float, float, dict[str, dict], list[dict]]:
    """From nextpnr's ``--report`` JSON: (achieved MHz, target MHz, the resources used, the
    critical path's steps) for ``clock`` (or the first clock reported)."""
    report = json.loads(report_json)
    figures = report["fmax"].get(clock) or next(iter(report["fmax"].values()))
    paths = report.get("critical_paths", [])
    path = paths[0]["path"] if paths else []
    used = {k: v for k, v in report["utilization"].items() if v["used"]}
    return figures["achieved"], figures["constraint"], used, path


def packed_utilisation(log_text: str) -> dict[str, dict[str, int]]:
    """nextpnr-ecp5's "Device utilisation" after packing, from its log (the first such table: it
    prints it before placement, so a run that could not place has it too): cell kind -> {"used",
    "available"}, in the form of its ``--report`` JSON's "utilization" (kinds used only)."""
    table = log_text.split("Device utilisation:", 1)
    if len(table) < 2:
        return {}
    used = {}
    for line in table[1].splitlines()[1:]:
        row = re.match(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%\s*$", line)
        if row is None:
            break
        if int(row.group(2)):
            used[row.group(1)] = {"used": int(row.group(2)), "available": int(row.group(3))}
    return used


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
