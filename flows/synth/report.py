"""The synthesis report: utilisation against the part, Fmax, the critical path, memories, cells
by block, run times and tool versions, as a dataclass (report.json) and as Markdown (report.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .wrapper import TOP_NAME

PART_TOTALS = {"LUT4": 83_640, "TRELLIS_FF": 83_640, "MULT18X18D": 156, "DP16KD": 208}
"""The LFE5U-85F's resources (Lattice's ECP5 family data sheet; nextpnr reports the same)."""

BLOCK_RAMS = ("DP16KD", "PDPW16KD")
"""The ECP5's 18-kbit block RAM as Yosys maps memories onto it: true dual port, or pseudo dual
port 36 bits wide (Lattice's ECP5 memory usage guide, TN1264)."""


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
    dsp: str = ""
    overfull: str = ""
    dsp_registers: dict = field(default_factory=dict)
    router: str = "router1"
    carries: bool = False
    """Whether the flow rewrote the carry chains before place and route (flows/synth/carries.py;
    reports written before it existed have False)."""
    carry_chains: dict = field(default_factory=dict)

    def met(self) -> bool | None:
        return None if self.fmax is None else self.fmax >= self.freq_target


def utilisation(cells: dict[str, int], placed: dict[str, dict[str, int]] | None) -> dict[str, dict]:
    """Used against the part's totals. LUT4 counts what nextpnr packs into logic cells
    (TRELLIS_COMB: LUT4s, and the two LUT halves of every CCU2C carry cell) when it ran
    (``placed``: nextpnr's utilisation), else Yosys's LUT4 + 2 * CCU2C. A block RAM is a DP16KD
    site whichever of :data:`BLOCK_RAMS` Yosys mapped it to (nextpnr places both on DP16KD)."""
    if placed is not None:
        used = {"LUT4": placed.get("TRELLIS_COMB", {}).get("used", 0),
                "TRELLIS_FF": placed.get("TRELLIS_FF", {}).get("used", 0),
                "MULT18X18D": placed.get("MULT18X18D", {}).get("used", 0),
                "DP16KD": placed.get("DP16KD", {}).get("used", 0)}
    else:
        used = {"LUT4": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0),
                "TRELLIS_FF": cells.get("TRELLIS_FF", 0),
                "MULT18X18D": cells.get("MULT18X18D", 0),
                "DP16KD": sum(cells.get(kind, 0) for kind in BLOCK_RAMS)}
    return {k: {"used": v, "available": PART_TOTALS[k], "percent": round(100 * v / PART_TOTALS[k], 1)}
            for k, v in used.items()}


def over_the_part(used: dict[str, dict]) -> str:
    """The resources used beyond the part's totals, in words (empty when the design fits)."""
    return "; ".join(f"{LABELS[k]} {u['used']:,} of {u['available']:,}" for k, u in used.items()
                     if u["used"] > u["available"])


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
                  f"nextpnr seed {r.seed}{'' if r.router == 'router1' else ', ' + r.router}).", ""]
    elif r.overfull:
        lines += [f"**Does not fit the {r.device['part']}**: {r.overfull}; no Fmax.", ""]
    else:
        lines += ["Place and route not run (--yosys-only): no Fmax.", ""]
    if r.dsp:
        lines += [f"DSP budget: {r.dsp}", ""]
    if r.dsp_registers:
        folded = r.dsp_registers
        kept = "".join(f"; `{name}` kept its own: {why}" for name, why in sorted(folded["kept"].items()))
        lines += [f"DSP output registers (flows/synth/dsp_regs.py): {folded['blocks']} of "
                  f"{folded['blocks'] + len(folded['kept'])} blocks took their product register, "
                  f"{folded['flip_flops']:,} flip-flops moved into them before place and route{kept}.", ""]
    if r.carry_chains:
        c = r.carry_chains
        lines += [f"Carry chains (flows/synth/carries.py): {c['chains']:,} of {c['chains'] + c['left']:,} "
                  f"take their carry-in and carry-out in their own halves; nextpnr adds "
                  f"{sum(c['packer_after']):,} feed-in and feed-out cells rather than "
                  f"{sum(c['packer_before']):,}: {_saved(c):,} logic cells fewer.", ""]
    elif r.fmax is not None or "nextpnr" in r.overfull:
        lines += ["Carry chains placed as Yosys mapped them (`--keep-carries`).", ""]
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


def _saved(chains: dict) -> int:
    """Logic cells nextpnr packs fewer after flows/synth/carries.py (its Rewritten, as a dict):
    two per CCU2C, feed-ins and feed-outs included."""
    def cells(when: str) -> int:
        return chains[f"cells_{when}"] + sum(chains[f"packer_{when}"])
    return 2 * (cells("before") - cells("after"))
