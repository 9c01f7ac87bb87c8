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
meet stay as they were without the probes. Then the counter probe (:func:`counter_probe`, where
the simulator shows the counters' registers): values put in them, read back through the slave.
The host's check of ID and PARAMS and every register access are under a time limit
(:func:`within`): a slave that answers wrong or never ends the bench in its program.
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
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer, with_timeout
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from sim import regmap, spec
from sim.host import Host, HostError

from .axi_probes import WRITE_VALUE
from .jobs import read_jobs

PERIOD_NS = 10
CHANNELS = ("aw", "w", "b", "ar", "r")
SAVED = ("registers", "faults", "decode", "counters")
"""What $AXI_RESULTS's JSON part holds."""
COUNTER_PATTERN = 0xA5C3_5A3C
"""The value the counter probe puts in the first counter's register (each next one XOR k * 0x11111111)."""
HOST_CYCLES = 64
"""Cycles the bench allows each register access of the host (an AXI4-Lite transfer takes a few):
the bound that turns a slave that never answers into a difference rather than a hang."""


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
    n = len(batch.names)
    results = {"ext": np.zeros((n, params.EXT_WORDS), np.uint32), "finished": np.zeros(n, bool),
               "registers": [], "faults": [], "decode": None, "counters": None}
    _save(results)          # the bench is up: a failure from here on is the design's (cosim/axi.py)
    await within(host.check(), 8)              # ID and PARAMS: a slave that answers wrong is a difference
    for k, name in enumerate(batch.names):
        ram.write(base, np.asarray(batch.ext[k], "<u4").tobytes())
        limit = int(batch.limit[k] * setting["slowdown"]) + 1000
        finished, early, registers = await within(run_job(dut, host, batch.words[k], base, limit),
                                                  len(batch.words[k]) + 64, limit)
        results["finished"][k] = finished
        results["registers"].append(registers)
        results["ext"][k] = np.frombuffer(ram.read(base, window), "<u4")
        results["faults"].append(faults(dut) | {"irq_without_done": int(early)})
        dut._log.info("program %d, %s: %s", k + 1, name, registers or "NO STOP")
        _save(results)
        if not finished:
            break
    else:
        accesses = len(setting["probes"]) + 2 * len(setting["rw"])
        results["decode"] = await within(probe(master, setting["probes"], setting["rw"]), accesses)
        results["counters"] = await within(counter_probe(dut, host), 4 * len(regmap.counter_names()))
        _save(results)


async def within(work, accesses: int, cycles: int = 0):
    """``work`` (a coroutine), stopped by cocotb's SimTimeoutError after ``cycles`` plus
    HOST_CYCLES for each of ``accesses`` register accesses: a slave that never answers ends the
    bench in the program it was running (a difference, cosim/axi.py), not in a hang."""
    return await with_timeout(work, (cycles + accesses * HOST_CYCLES) * PERIOD_NS, "ns")


async def run_job(dut: HierarchyObject, host: Host, words, base: int,
                  limit: int) -> tuple[bool, bool, dict | None]:
    """Load, start (EXT_BASE ``base``, the interrupt on), wait for ``irq`` at most ``limit`` cycles,
    then DONE and the registers: (finished, the interrupt rose without DONE, the registers or
    None)."""
    await host.load(words)
    await host.start(base)
    if not dut.irq.value:
        await First(RisingEdge(dut.irq), Timer(limit * PERIOD_NS, unit="ns"))
    finished, early = bool(dut.irq.value), False
    if finished:
        try:
            await host.wait(polls=10)
        except HostError:         # the interrupt rose, DONE did not follow: a difference
            finished, early = False, True
    if not finished:
        return finished, early, None
    got = await host.result()
    return True, False, {
        "counters": [getattr(got.counters, c) for c in spec.ALL_COUNTERS],
        "wall": got.wall_cycles, "mem_stall": got.mem_stall, "error_code": int(got.error_code),
        "error_pc": got.error_pc, "bus_error": got.bus_error}


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


def counter_registers(dut: HierarchyObject) -> dict:
    """The registers behind the counter registers of the map (the top's cycles and mem_stall, the
    control unit's count_<name>), by name; those the simulator does not show are left out
    (Verilator shows the top's ports only: cosim/axi.py)."""
    found = {}
    for name in regmap.counter_names():
        own = name in ("cycles", "mem_stall")                     # the top's; the rest the core's
        path = ("top", name) if own else ("top", "core", "control", f"count_{name}")
        try:
            handle = dut
            for part in path:
                handle = getattr(handle, part)
        except AttributeError:
            continue
        found[name] = handle
    return found


async def counter_probe(dut: HierarchyObject, host: Host) -> list[list[int | str]] | None:
    """With the machine idle, put a value in each counter's register (by VPI), another per
    counter, then its complement, and read each through the bus: [name, value put, value read]
    for both rounds (every bit of the path from the register to RDATA seen at 0 and at 1, and no
    two counters alike). None when the simulator shows none of the registers."""
    registers = counter_registers(dut)
    if not registers:
        return None
    seen = []
    for flip in (0, 0xFFFF_FFFF):
        values = {name: (COUNTER_PATTERN ^ (k * 0x1111_1111) ^ flip) & 0xFFFF_FFFF
                  for k, name in enumerate(registers)}
        for name, handle in registers.items():
            handle.value = values[name]
        await ClockCycles(dut.clk, 2)
        for name, value in values.items():
            seen.append([name, value, await host.read(name.upper())])
    return seen


def _save(results: dict) -> None:
    """Write ``$AXI_RESULTS`` (after each program: a run the design breaks keeps those before)."""
    np.savez(os.environ["AXI_RESULTS"], ext=results["ext"], finished=results["finished"],
             json=np.array(json.dumps({k: results.get(k) for k in SAVED})))
