"""``make bench``, fourth part: MLPerf Tiny's ResNet-8 and DS-CNN per image (issue 25).

Each model (compiler/workloads/mlperf_tiny.py, seed 0) is lowered from PyTorch and compiled for
the machine (``--param``; by default the default machine and T = 8, both of the default sizes),
one image runs on the reference machine (whose counters the RTL matches), and the row gives the
cycles per image, the launches, the MXU utilisation (useful multiply-adds over T x T x cycles),
the depthwise layers' utilisation, and the time per image at the machine's Fmax on the
ECP5-85F (docs/sweep.json) beside the Cortex-M4's 222 ms for ResNet-8 (MLPerf Tiny v1.1).
Without PyTorch (the optional ``torch`` extra) it says so and prints nothing else.

Usage: python -m compiler.testing.cnnbench [--param t8]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sim.machines import PRESETS, add_argument, from_args
from sim.spec import Params

SWEEP = Path(__file__).resolve().parents[2] / "docs" / "sweep.json"
"""The machine sweep's record: each preset machine's synthesis, Fmax included (examples/sweep.py)."""


def fmax_mhz(params: Params) -> float | None:
    """A serial machine's Fmax on the ECP5-85F, in MHz, from the sweep's record; None when the
    sweep did not place and route that machine."""
    if params.OVERLAP or not SWEEP.exists():
        return None
    for row in json.loads(SWEEP.read_text())["figures"]:
        synth = row.get("synth") or {}
        if all(getattr(params, k) == v for k, v in row["params"].items()) and synth.get("Fmax"):
            return float(synth["Fmax"])
    return None


def rows(params: Params, models: tuple[str, ...] | None = None) -> list[dict]:
    """One row per model (``models``, by default every one of :data:`MODELS`) on one machine."""
    from ..workloads.mlperf_tiny import CORTEX_M4_RESNET8_MS, MODELS, measure

    found = []
    for name in models or tuple(MODELS):
        m = measure(name, params)
        fmax = fmax_mhz(params)
        depthwise = [r for r in m.rows if r.name.endswith(" dw")]
        found.append({
            "model": name, "T": params.T, "LANES": params.LANES, "OVERLAP": params.OVERLAP,
            "cycles": m.cycles,
            "launches": m.launches,
            "instructions": len(m.program.code), "macs": m.macs,
            "utilisation %": round(100 * m.utilisation, 1),
            "depthwise utilisation %": round(100 * sum(r.macs for r in depthwise)
                                             / (params.T ** 2 * sum(r.cycles for r in depthwise)), 1)
            if depthwise else None,
            "Fmax MHz": fmax, "ms per image": round(m.cycles / fmax / 1e3, 2) if fmax else None,
            "Cortex-M4 ms": CORTEX_M4_RESNET8_MS if name == "resnet8" else None,
            "equal to the interpreter": m.equal, "within 10% of PyTorch": m.error < 0.1,
            **launch_bounds(m.program, params), "MXU busy": m.mxu,
            "layers": [{"node": r.node, "layer": r.name, "macs": r.macs, "instructions": r.instructions,
                        "cycles": r.cycles, "utilisation %": round(100 * r.utilisation, 1)} for r in m.rows]})
    return found


def launch_bounds(program: object, params: Params) -> dict:
    """On a machine whose engines overlap, the lower bounds of the program's launches
    (compiler/bounds.py), each launch's largest summed ("best bound"), and the names of those
    largest bounds with their counts ("limits"); None on the serial machine (its cycles are the
    sum of the latencies)."""
    if not params.OVERLAP:
        return {"best bound": None, "limits": None}
    from ..bounds import bounds

    found = [bounds(code, params) for code in program.launches()]
    names = [b.limit for b in found]
    return {"best bound": sum(b.best for b in found),
            "limits": ", ".join(f"{k} {names.count(k)}" for k in dict.fromkeys(names))}


def report(found: list[dict]) -> list[str]:
    lines = ["MLPerf Tiny per image (one image, seed 0, per-channel weight scales; reference machine cycles)",
             f"  {'model':8s} {'T':>2} {'OV':>2} {'cycles':>10} {'launches':>8} {'MXU util':>8} "
             f"{'dw util':>7} {'ms at Fmax':>16}  Cortex-M4"]
    for r in found:
        at = f"{r['ms per image']:.2f} @ {r['Fmax MHz']:.1f} MHz" if r["Fmax MHz"] else "Fmax unmeasured"
        dw = f"{r['depthwise utilisation %']:.1f}%" if r["depthwise utilisation %"] is not None else "-"
        m4 = f"{r['Cortex-M4 ms']:.0f} ms" if r["Cortex-M4 ms"] else "-"
        lines.append(f"  {r['model']:8s} {r['T']:>2} {r['OVERLAP']:>2} {r['cycles']:>10,} {r['launches']:>8} "
                     f"{r['utilisation %']:>7.1f}% {dw:>7} {at:>16}  {m4}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.testing.cnnbench",
                                     description="ResNet-8 and DS-CNN per image on GA-2.")
    add_argument(parser)
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("MLPerf Tiny: skipped (PyTorch is not installed: pip install -e .[torch])")
        return 0
    given = from_args(args, parser)
    machines = [given] if args.param else [PRESETS["t4"], PRESETS["t8"]]
    print("\n".join(report([r for params in machines for r in rows(params)])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
