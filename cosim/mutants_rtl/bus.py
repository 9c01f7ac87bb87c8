"""The bus logic's mutants: GA-2's AXI system top mutated by Yosys, graded through AXI.

The core's mutants are drawn from ``build/ga2_simtop.v`` and graded by ``python -m cosim``; the
system top's bus logic (issue 29: the AXI4 read and write sides, their queues, the register
slave, the top's stall, counters and interrupt) is not in that Verilog. Its mutants are drawn
the same way (Yosys's ``mutate -list``, an equal share from every unit) from
``build/axi/ga2_axi_simtop.v``, over the modules :data:`SCOPE` selects: not the core (drawn
above) and not the protocol checkers (the test bench's). Each is graded by ``python -m
cosim.axi`` on its Verilog: the seeds' graphs with every AXI channel paused at random, then the
stress programs, then the long transfer (an ST of the whole scratchpad, the DMA counter past
2**14: cosim/axi_probes.py), the memory-stall rule demanded of every run (docs/GA2.md section 8)
and the protocol checkers at 0; every launch also probes the register slave's decode with the
offsets the register map does not name.
"""

from __future__ import annotations

from pathlib import Path

from sim.spec import DEFAULT

from .grade import Step

TOP = "ga2_axi_simtop"
PARTS = ("", ".reader", ".writer", ".writer.wq", ".writer.awq", ".regs")
SCOPE = " ".join(f"{TOP}.top{part}" for part in PARTS)
"""The modules mutated (Yosys selections, joined: their union)."""
UNITS = {
    "hw/axi_read.py": "AXI read side", "hw/axi_write.py": "AXI write side",
    "hw/axi_fifo.py": "AXI queues", "hw/axi_regs.py": "AXI register slave",
    "hw/axi_top.py": "AXI top (stall, counters, irq)", "hw/axi.py": "AXI bursts",
}
"""The strata of the bus mutants, for the table."""
MODULE_HOME = {
    f"{TOP}.top": "hw/axi_top.py", f"{TOP}.top.reader": "hw/axi_read.py",
    f"{TOP}.top.writer": "hw/axi_write.py", f"{TOP}.top.writer.wq": "hw/axi_fifo.py",
    f"{TOP}.top.writer.awq": "hw/axi_fifo.py", f"{TOP}.top.regs": "hw/axi_regs.py",
}
"""The file of each mutated module, for a cell without a Python ``src``."""
PAUSE = "0.3"


def verilog(say=print) -> Path:
    """The system top's simulation Verilog (exported again when stale: cosim/axi.py)."""
    from ..axi import verilog as fresh
    return fresh(DEFAULT, say)


def plan(seeds: str, stress_n: int, stress_seed: int) -> list[Step]:
    """The grading steps of a bus mutant: the seeds through AXI, stress through AXI, then the long
    transfer."""
    steps = [Step(f"axi seeds {seeds}", ("seeds", seeds, "--pause", PAUSE), "cosim.axi")] if seeds else []
    if stress_n:
        steps.append(Step(f"axi stress {stress_seed}..{stress_seed + stress_n - 1}",
                          ("stress", "--seed", str(stress_seed), "--n", str(stress_n), "--pause", PAUSE),
                          "cosim.axi"))
    steps.append(Step("axi long", ("long", "--pause", PAUSE), "cosim.axi"))
    return steps
