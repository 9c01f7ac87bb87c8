"""The proof both netlist rewrites' tests run (flows/synth/dsp_regs.py, flows/synth/carries.py):
Yosys proves a rewritten netlist equivalent to the one it mapped, and refuses one rewritten
wrongly, which shows that the proof sees what the rewrite changed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from flows.synth.dsp_regs import MODEL, equivalence_script, for_equivalence


def prove_and_refuse(yosys: list[str], folder: Path, gold: dict, gate: dict, wrong: dict,
                     apart: tuple[str, ...] = ()) -> None:
    """Assert that ``gate`` is proven equivalent to ``gold`` and ``wrong`` is not (``apart``:
    :func:`for_equivalence`'s cell types named apart by side)."""
    for name, net, side in (("gold", gold, "gold"), ("gate", gate, "gate"), ("wrong", wrong, "gate")):
        (folder / f"{name}.json").write_text(json.dumps(for_equivalence(net, side, apart=apart)))
    (folder / "model.v").write_text(MODEL)

    def prove(gate_file: str) -> subprocess.CompletedProcess:
        return subprocess.run([*yosys, "-q", "-p", equivalence_script("gold.json", gate_file, "model.v")],
                              cwd=folder, capture_output=True, text=True, timeout=300)

    proof = prove("gate.json")
    assert proof.returncode == 0, proof.stdout[-2000:] + proof.stderr[-2000:]
    refused = prove("wrong.json")
    assert refused.returncode != 0 and "unproven" in (refused.stdout + refused.stderr)
