"""The cocotb test bench of GA-2 on AXI: cocotbext-axi on both buses, the Python host driver.

This module runs inside the simulator (cosim/axi.py launches it) on ``ga2_axi_simtop``
(:class:`hw.axi_simtop.AxiSimTop`). cocotbext-axi's ``AxiLiteMaster`` is the host on the register
slave, driven by :class:`sim.host.Host` (the same register map as the firmware's); its
``AxiRam`` is the external memory on GA-2's master, with a pause generator on every channel (AW,
W and AR stall their READY, B and R their VALID, each at random with the pattern's probability):
back-pressure and variable latency on both directions.

For each job of ``$AXI_JOBS`` (cosim.jobs' batch file): the external image goes into the RAM at
EXT_BASE, the driver writes the program through the instruction window, starts it with the
interrupt enabled, waits for ``irq`` (at most the job's cycle limit times the pattern's slowdown),
polls DONE, and reads the registers; the RAM's window is read back. After the last job (when
every job stopped), the decode probes of the setting (cosim/axi_probes.py: offsets the register
map does not name, each read and written) are sent and their responses kept, the read-write
registers read before and after them; after the jobs, so that the pause patterns the programs
meet stay as they were without the probes.
``$AXI_RESULTS`` gets the memories, the registers, the probes' answers and the protocol
checkers' verdicts.
"""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from sim import regmap, spec
from sim.host import Host, HostError

from .axi_probes import WRITE_VALUE
from .jobs import read_jobs

PERIOD_NS = 10
CHANNELS = ("aw", "w", "b", "ar", "r")


def pauses(rng: random.Random, probability: float):
    """An endless pause pattern: each cycle paused with the probability, independently."""
    while True:
        yield rng.random() < probability


def set_pauses(ram: AxiRam, probability: float, seed: int) -> None:
    """A pause generator on every channel of the RAM (none at probability 0)."""
    if probability <= 0:
        return
    ports = {"aw": ram.write_if.aw_channel, "w": ram.write_if.w_channel, "b": ram.write_if.b_channel,
             "ar": ram.read_if.ar_channel, "r": ram.read_if.r_channel}
    for k, name in enumerate(CHANNELS):
        ports[name].set_pause_generator(pauses(random.Random(seed * 8 + k), probability))


def faults(dut: HierarchyObject) -> dict[str, int]:
    """The checkers' and self-checks' outputs (-1 for an unresolved value)."""
    out = {}
    for name in ("axi_fault", "axi_code", "axil_fault", "axil_code", "timing_fault", "bridge_fault"):
        text = str(getattr(dut, name).value)
        out[name] = int(text, 2) if set(text) <= {"0", "1"} else -1
    return out


@cocotb.test()
async def run_jobs(dut: HierarchyObject) -> None:
    """Run every job of ``$AXI_JOBS`` through the bus; write ``$AXI_RESULTS``."""
    batch = read_jobs(Path(os.environ["AXI_JOBS"]))
    setting = json.loads(os.environ["AXI_SETTING"])
    params, base = batch.params, setting["ext_base"]
    window = params.EXT_WORDS * regmap.REG_BYTES
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    dut.rst.value = 1
    master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=base + window)
    set_pauses(ram, setting["pause"], setting["seed"])
    for bus in ("s_axil", "m_axi"):               # cocotbext-axi logs every transfer at INFO
        logging.getLogger(f"{dut._log.name}.{bus}").setLevel(logging.WARNING)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    host = Host(master, 0, params=params)
    await host.check()
    slowdown = setting["slowdown"]
    n = len(batch.names)
    results = {"ext": np.zeros((n, params.EXT_WORDS), np.uint32), "finished": np.zeros(n, bool),
               "registers": [], "faults": [], "decode": None}
    _save(results)          # the bench is up: a failure from here on is the design's (cosim/axi.py)
    for k, name in enumerate(batch.names):
        ram.write(base, np.asarray(batch.ext[k], "<u4").tobytes())
        limit = int(batch.limit[k] * slowdown) + 1000

        async def interrupt(limit: int = limit) -> None:
            if not dut.irq.value:
                await First(RisingEdge(dut.irq), Timer(limit * PERIOD_NS, unit="ns"))

        await host.load(batch.words[k])
        await host.start(base)
        await interrupt()
        finished, early = bool(dut.irq.value), False
        if finished:
            try:
                await host.wait(polls=10)
            except HostError:         # the interrupt rose, DONE did not follow: a difference
                finished, early = False, True
        results["finished"][k] = finished
        if finished:
            got = await host.result()
            results["registers"].append({
                "counters": [getattr(got.counters, c) for c in spec.ALL_COUNTERS],
                "wall": got.wall_cycles, "mem_stall": got.mem_stall, "error_code": int(got.error_code),
                "error_pc": got.error_pc, "bus_error": got.bus_error})
        else:
            results["registers"].append(None)
        results["ext"][k] = np.frombuffer(ram.read(base, window), "<u4")
        results["faults"].append(faults(dut) | {"irq_without_done": int(early)})
        dut._log.info("program %d, %s: %s", k + 1, name, results["registers"][-1] or "NO STOP")
        _save(results)
        if not finished:
            break
    else:
        results["decode"] = await probe(master, setting["probes"], setting["rw"])
        _save(results)


async def probe(master: AxiLiteMaster, probes: list, rw: list[int]) -> dict:
    """Each (kind, offset, _) of ``probes`` read or written (WRITE_VALUE, all byte lanes); the
    responses, and what the read-write registers at ``rw`` read before and after them."""
    before = [await master.read_dword(offset) for offset in rw]
    answers = []
    for kind, offset, _ in probes:
        if kind == "r":
            answers.append(int((await master.read(offset, 4)).resp))
        else:
            answers.append(int((await master.write(offset, WRITE_VALUE.to_bytes(4, "little"))).resp))
    return {"answers": answers, "before": before, "after": [await master.read_dword(offset) for offset in rw]}


def _save(results: dict) -> None:
    """Write ``$AXI_RESULTS`` (after each program: a run the design breaks keeps those before)."""
    np.savez(os.environ["AXI_RESULTS"], ext=results["ext"], finished=results["finished"],
             json=np.array(json.dumps({k: results[k] for k in ("registers", "faults", "decode")})))
