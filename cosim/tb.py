"""The cocotb test bench: runs a batch of GA-2 programs back to back on ``ga2_simtop``.

This module runs inside the simulator's process (cocotb loads it there); :mod:`cosim.runner`
launches it. It reads its work from files named by environment variables:

``COSIM_JOBS``
    the batch (:func:`cosim.jobs.write_jobs`: programs, external-memory images, cycle limits,
    the machine's parameters);
``COSIM_RESULTS``
    where to write the results (:func:`cosim.jobs.write_results`);
``COSIM_PROGRESS``
    a file that gets one line per finished job (the host shows a progress bar from it).

For each job :class:`TB` resets the core, loads the program, the external memory and a zeroed
scratchpad through the Verilog arrays :mod:`flows.memmap` names (backdoor writes, only of the
words that differ from what the arrays already hold), pulses ``start`` and waits for ``done``
or for the job's cycle limit, whichever comes first, without touching a signal per cycle: the
clock is cocotb's GPI clock (C++), and the wait is one trigger. Then, FAULT_SETTLE_CYCLES
cycles later, it reads back the whole external memory and scratchpad, the five counters,
``error``, ``error_code``, ``error_pc`` and ``timing_fault``; X or Z bits are recorded as such,
never guessed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.handle import HierarchyObject
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, First, RisingEdge, Timer
from cocotb.types import Logic

from flows import memmap
from sim import spec
from sim.spec import Params

from .jobs import X, empty_results, read_jobs, write_results

PERIOD_NS = 10
"""Clock period of the simulation (any value works: the design is cycle-based)."""
RESET_CYCLES = 2
"""Rising edges with ``rst`` high (flows/memmap.py: hold it for two clock edges)."""
FAULT_SETTLE_CYCLES = 2
"""Rising edges waited after the one where ``done`` rose before anything is read:
``hw.top.TIMING_CHECK_DELAY`` (not imported: this module stays free of Amaranth), so that
``timing_fault`` has judged every cycle up to the first one with ``done`` high. The machine is
stopped by then: nothing else the test bench reads changes meanwhile."""


def _words(handles) -> tuple[np.ndarray, np.ndarray]:
    """Read word handles -> (uint32 words, True where a word held X/Z bits).

    ``int(str(value), 2)`` is about seven times faster than ``is_resolvable`` and
    ``to_unsigned()`` on cocotb 2.1's LogicArray; a value with X/Z bits does not parse.
    """
    out = np.zeros(len(handles), np.int64)
    unresolved = np.zeros(len(handles), bool)
    for k, handle in enumerate(handles):
        try:
            out[k] = int(str(handle.value), 2)
        except ValueError:
            unresolved[k] = True
    return out.astype(np.uint32), unresolved


def _value(handle) -> int:
    """A port's value as an unsigned int, or X (-1) when it holds X/Z bits."""
    v = handle.value
    if not v.is_resolvable:
        return X
    return int(v) if isinstance(v, Logic) else v.to_unsigned()


class Memory:
    """One GA-2 memory as its banks of Verilog arrays, with what the test bench knows they hold.

    Word w sits where :func:`flows.memmap.locate` says (row ``w // 4`` of bank ``w % 4``).
    ``known`` is the content as last written or read (X, i.e. -1, where unknown), so a load
    writes only the words that change.
    """

    def __init__(self, dut: HierarchyObject, name: str, params: Params):
        self.name = name
        banks = {}
        for array in memmap.arrays(name, params):
            handle = dut
            for part in array.path:
                handle = getattr(handle, part)
            banks[array.dotted()] = handle
        self.size = sum(a.depth for a in memmap.arrays(name, params))
        # the handle of word w at words[w], placed by flows.memmap.locate
        self.words = []
        for w in range(self.size):
            path, index = memmap.locate(name, w, params)
            self.words.append(banks[path][index])
        self.known = np.full(self.size, X, np.int64)

    def read(self) -> tuple[np.ndarray, np.ndarray]:
        """Every word (uint32) and where it held X/Z bits; updates ``known``."""
        words, unresolved = _words(self.words)
        self.known = words.astype(np.int64)
        self.known[unresolved] = X
        return words, unresolved

    def load(self, image: np.ndarray) -> int:
        """Write the words of ``image`` (at most ``size`` words; the rest become 0) that differ
        from what the arrays hold. Returns the number of words written."""
        want = np.zeros(self.size, np.int64)
        want[:len(image)] = np.asarray(image, dtype=np.int64) & 0xFFFFFFFF
        changed = np.flatnonzero(want != self.known)
        for w in changed:
            self.words[w].value = int(want[w])
        self.known = want
        return len(changed)


class TB:
    """GA-2's simulation top (``hw.simtop.SimTop`` as ``ga2_simtop``) driven by cocotb.

    Args:
        dut: the top-level handle.
        params: the machine the Verilog was generated for (memory sizes).
    """

    def __init__(self, dut: HierarchyObject, params: Params):
        self.dut = dut
        self.params = params
        self.spad = Memory(dut, "spad", params)
        self.ext = Memory(dut, "ext", params)
        self.imem = Memory(dut, "imem", params)
        self.counters = [getattr(dut, f"count_{name}") for name in spec.COUNTERS]
        self.log = dut._log

    async def start_clock(self) -> None:
        """Start the clock and hold every input low; ``rst`` rises after time 0 (under Icarus
        a reset that is high at time 0 loads X into the registers, flows/memmap.py)."""
        d = self.dut
        for port in (d.rst, d.start, d.prog_len, d.imem_we, d.imem_waddr, d.imem_wdata):
            port.value = 0
        Clock(d.clk, PERIOD_NS, unit="ns", impl="gpi").start(start_high=False)
        await Timer(1, unit="ns")

    async def reset(self) -> None:
        """``rst`` high for RESET_CYCLES rising edges; inputs change on falling edges."""
        await FallingEdge(self.dut.clk)
        self.dut.rst.value = 1
        for _ in range(RESET_CYCLES):
            await RisingEdge(self.dut.clk)
        await FallingEdge(self.dut.clk)
        self.dut.rst.value = 0

    def load(self, words: np.ndarray, ext: np.ndarray) -> int:
        """Program (the rest of the instruction memory zeroed), external memory, zeroed scratchpad."""
        return self.imem.load(words) + self.ext.load(ext) + self.spad.load(np.zeros(0, np.int64))

    async def run(self, prog_len: int, limit: int) -> tuple[bool, int]:
        """Pulse ``start`` for one cycle and wait for ``done`` (at most ``limit`` cycles).

        Returns:
            (done rose in time, cycles waited from the start pulse). It returns
            FAULT_SETTLE_CYCLES cycles after that, half a cycle after a rising edge.
        """
        d = self.dut
        d.prog_len.value = prog_len
        d.start.value = 1
        await FallingEdge(d.clk)
        d.start.value = 0
        begin = get_sim_time(unit="ns")
        await First(RisingEdge(d.done), Timer(limit * PERIOD_NS, unit="ns"))
        waited = round((get_sim_time(unit="ns") - begin) / PERIOD_NS)
        finished = _value(d.done) == 1
        # timing_fault lags the cycles it judges (FAULT_SETTLE_CYCLES); then half a cycle more,
        # so that every register updated at the last edge is settled
        for _ in range(FAULT_SETTLE_CYCLES):
            await RisingEdge(d.clk)
        await FallingEdge(d.clk)
        return finished, waited

    def read_state(self, results: dict[str, np.ndarray], k: int) -> None:
        """Row k of the results: memories, counters, error outputs, timing_fault."""
        results["ext"][k], results["ext_x"][k] = self.ext.read()
        results["spad"][k], results["spad_x"][k] = self.spad.read()
        for c, handle in enumerate(self.counters):
            v = _value(handle)
            results["counters"][k, c] = max(v, 0)
            results["counters_x"][k, c] = v == X
        results["error"][k] = _value(self.dut.error)
        results["error_code"][k] = _value(self.dut.error_code)
        results["error_pc"][k] = _value(self.dut.error_pc)
        results["timing_fault"][k] = _value(self.dut.timing_fault)


@cocotb.test()
async def run_jobs(dut: HierarchyObject) -> None:
    """Run every job of ``$COSIM_JOBS``, write ``$COSIM_RESULTS``."""
    batch = read_jobs(Path(os.environ["COSIM_JOBS"]))
    results_path = Path(os.environ["COSIM_RESULTS"])
    progress = Path(os.environ["COSIM_PROGRESS"]) if os.environ.get("COSIM_PROGRESS") else None
    tb = TB(dut, batch.params)
    await tb.start_clock()
    results = empty_results(len(batch), batch.params)
    # the arrays' initial content (Amaranth zeroes them at time 0): read once, then track
    tb.imem.read()
    tb.ext.read()
    tb.spad.read()
    for k, name in enumerate(batch.names):
        t0 = time.perf_counter()
        await tb.reset()
        written = tb.load(batch.words[k], batch.ext[k])
        t1 = time.perf_counter()
        finished, waited = await tb.run(len(batch.words[k]) // spec.INSTR_WORDS, batch.limit[k])
        results["sim_seconds"][k] = time.perf_counter() - t1
        tb.read_state(results, k)
        results["finished"][k] = finished
        results["waited"][k] = waited
        results["seconds"][k] = time.perf_counter() - t0
        tb.log.info("%s: %s after %d cycles (limit %d); %d words loaded, %.3f s", name,
                    "stopped" if finished else "NO STOP", waited, batch.limit[k], written,
                    results["seconds"][k])
        if progress is not None:
            with progress.open("a") as f:
                f.write(f"{k}\n")
    write_results(results_path, results)
