"""The cocotb test bench: runs a batch of GA-2 programs back to back on the test harness.

This module runs inside the simulator's process (cocotb loads it there); :mod:`cosim.runner`
launches it. It reads its work from files named by environment variables:

``COSIM_JOBS``
    the batch (:func:`cosim.jobs.write_jobs`: programs, external-memory images, cycle limits,
    the machine's parameters);
``COSIM_RESULTS``
    where to write the results (:func:`cosim.jobs.write_results`);
``COSIM_PROGRESS``
    a file that gets one line per finished job (the host shows a progress bar from it);
``COSIM_BINARY``
    ``1`` when the harness moves memories as binary files (:data:`cosim.harness.BINARY`).

The top level is the harness (:mod:`cosim.harness`), which holds the clock and does every step
of a program inside the simulator. For each job :class:`TB` writes the program, the external
memory and the job file (prog_len, cycle limit, backdoor or host port) into the simulator's
working folder, raises ``request`` and waits for the harness to set ``served`` (one trigger,
with a time-out of the job's cycle limit plus the steps' overhead in simulated time: a broken
harness fails the test, it never hangs it), then reads back the dumped scratchpad and external
memory and the state line (the stop, the counters, ``timing_fault``, the cycles waited);
X or Z bits are recorded as such, never guessed. Python wakes twice per program, never per cycle.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.handle import HierarchyObject
from cocotb.triggers import First, Timer

from flows import memmap
from sim import spec
from sim.spec import Params

from . import harness, memfiles
from .jobs import X, empty_results, read_jobs, write_results

CYCLES = spec.COUNTERS.index("cycles")
"""The column of ``count_cycles`` among the counters (the figure cosim's table prints)."""


class HarnessError(AssertionError):
    """The harness did not answer a request in time, or wrote files the test bench cannot read."""


class TB:
    """The test harness (:data:`cosim.harness.TOP`) driven by cocotb, one program at a time.

    Args:
        dut: the top-level handle (the harness).
        params: the machine the Verilog was generated for (memory sizes).
        folder: the simulator's working folder, where the harness reads and writes its files.
        binary: the harness moves memories as binary files, not text (cosim.harness.BINARY).
    """

    def __init__(self, dut: HierarchyObject, params: Params, folder: Path, binary: bool = False):
        self.dut = dut
        self.params = params
        self.folder = folder
        self.binary = binary
        self.banks = {m: [a.depth for a in memmap.arrays(m, params)] for m in memmap.MEMORIES}
        self.requests = 0
        self.log = dut._log

    def files(self, memory: str, dumped: bool = False) -> list[str]:
        return [harness.bank_file(memory, b, dumped) for b in range(len(self.banks[memory]))]

    def _load(self, memory: str, words: np.ndarray) -> None:
        if self.binary:
            names = [harness.binary_file(memory, b) for b in range(len(self.banks[memory]))]
            memfiles.write_banks_binary(self.folder, names, words)
        else:
            memfiles.write_banks(self.folder, self.files(memory), words)

    def _dumped(self, memory: str) -> tuple[np.ndarray, np.ndarray]:
        if self.binary:
            return memfiles.read_binary(self.folder / harness.binary_file(memory), sum(self.banks[memory]))
        return memfiles.read_banks(self.folder, self.files(memory, dumped=True), self.banks[memory][0])

    def write_inputs(self, words: np.ndarray, ext: np.ndarray, limit: int, port: bool = False,
                     name: str = "") -> None:
        """The program's rows of the instruction memory (for a backdoor load the harness zeroes the rest), the
        external memory, the job file; ``port``: the harness loads the program through the
        host's write port (cosim.harness.HOST_PORT), not by backdoor; ``name``: the program's
        name, which the harness shows in ``program_name``."""
        banks = len(self.banks["imem"])
        rows = -(-len(words) // banks)
        self._load("imem", np.asarray(words, np.uint32))
        self._load("ext", np.asarray(ext, np.uint32))
        job = np.array([len(words) // spec.INSTR_WORDS, limit, rows, int(port), *harness.name_words(name)],
                       np.uint32)
        (self.folder / harness.JOB_FILE).write_bytes(memfiles.hex_text(job))

    async def serve(self, limit: int, loading: int = 0) -> None:
        """Raise ``request``; return when the harness has set ``served`` to it (``loading``:
        the cycles the harness spends writing the program through the port).

        Raises:
            HarnessError: no answer within the limit plus the steps' overhead (simulated time).
        """
        self.requests += 1
        self.dut.request.value = self.requests
        timeout = Timer((limit + loading + harness.OVERHEAD_CYCLES) * harness.PERIOD_NS, unit="ns")
        await First(self.dut.served.value_change, timeout)
        if self.dut.served.value.to_unsigned() != self.requests:
            raise HarnessError(f"the harness did not answer request {self.requests} within {limit:,} + "
                               f"{loading + harness.OVERHEAD_CYCLES} cycles")

    def read_outputs(self, results: dict[str, np.ndarray], k: int) -> None:
        """Row k of the results: memories, counters, error outputs, timing_fault, cycles waited."""
        try:
            for memory in harness.DUMPED:
                results[memory][k], results[f"{memory}_x"][k] = self._dumped(memory)
            state = memfiles.parse_fields((self.folder / harness.STATE_FILE).read_text(),
                                          harness.STATE_FIELDS, harness.STATE_FILE)
        except (OSError, ValueError) as e:
            raise HarnessError(f"reading the harness's files: {e}") from None
        for c, name in enumerate(spec.ALL_COUNTERS):
            v = state[f"count_{name}"]
            results["counters"][k, c] = max(v, 0)
            results["counters_x"][k, c] = v == X
        for name in ("error", "error_code", "error_pc", "timing_fault"):
            results[name][k] = state[name]
        results["finished"][k] = state["finished"] == 1
        results["waited"][k] = max(state["waited"], 0)
        results["started"][k] = state["started"]
        results["drift"][k] = state["drift"]
        results["unreset"][k] = state["unreset"]


@cocotb.test()
async def run_jobs(dut: HierarchyObject) -> None:
    """Run every job of ``$COSIM_JOBS``, write ``$COSIM_RESULTS``."""
    batch = read_jobs(Path(os.environ["COSIM_JOBS"]))
    results_path = Path(os.environ["COSIM_RESULTS"])
    progress = Path(os.environ["COSIM_PROGRESS"]) if os.environ.get("COSIM_PROGRESS") else None
    tb = TB(dut, batch.params, Path.cwd(), binary=os.environ.get("COSIM_BINARY") == "1")
    results = empty_results(len(batch), batch.params)
    for k, name in enumerate(batch.names):
        t0 = time.perf_counter()
        port = batch.port[k]
        tb.write_inputs(batch.words[k], batch.ext[k], batch.limit[k], port, name)
        t1, cpu = time.perf_counter(), time.process_time()
        await tb.serve(batch.limit[k], len(batch.words[k]) + 1 if port else 0)
        results["sim_seconds"][k] = time.perf_counter() - t1
        results["sim_cpu_seconds"][k] = time.process_time() - cpu
        tb.read_outputs(results, k)
        results["seconds"][k] = time.perf_counter() - t0
        tb.log.info("program %d, %s%s: started at %d ns, %s, %d cycles (count_cycles; waited %d/%d), %.3f s",
                    k + 1, name, " (via the port)" if port else "", results["started"][k],
                    "stopped" if results["finished"][k] else "NO STOP", results["counters"][k, CYCLES],
                    results["waited"][k], batch.limit[k], results["seconds"][k])
        if progress is not None:
            with progress.open("a") as f:
                f.write(f"{k}\n")
    write_results(results_path, results)
