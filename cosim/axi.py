"""GA-2 on AXI against the reference machine: programs through the bus, with back-pressure.

    python -m cosim.axi seeds 100-111 --sim both --pause 0.3
    python -m cosim.axi stress --seed 1 --n 40 --sim icarus --pause 0.3
    python -m cosim.axi long --sim icarus

Each program runs on ``ga2_axi_simtop`` (hw/axi_simtop.py: the system top and its protocol
checkers) under cocotb (cosim/axi_tb.py): the Python host driver (sim/host.py) loads and starts
it through cocotbext-axi's AxiLiteMaster, and cocotbext-axi's AxiRam answers its master with a
random pause on every channel (``--pause`` is the probability that a channel stalls in a cycle;
0: none). The rule checked (docs/GA2.md section 8): every external-memory word and the stop
(error code and pc) equal the reference machine's, every counter equals the reference's but
``cycles``, which is the reference's plus MEM_STALL; the protocol checkers, the core's
timing_fault and the bridge's self-check stay 0. The scratchpad is not read through the bus; the
reference machine starts each program from the scratchpad its previous program left, as the
hardware does. Every launch also probes the register slave's decode after its last program
(cosim/axi_probes.py: offsets the register map does not name answer SLVERR and change nothing);
a wrong answer is a difference of the last program; on Icarus, which shows the inner registers,
the counters are then read out with values put in their registers (cosim/axi_tb.py). A slave
that fails the host's check or never answers ends the bench in its program: a difference.
``long`` is one program that moves the whole scratchpad until the DMA counter passes 2**14
cycles (an ST of SPAD_WORDS words, the counters' high bits), after IMEM_WORDS / 2 VADDs. The
seeds put external word 0 at EXT_BASE = 0x12340, stress and ``long`` at 0xFFF82340
(:data:`EXT_BASES`): the same bursts, and every address bit above the window seen at 0 and at 1.

The Verilog (build/axi/ga2_axi_simtop.v, :mod:`flows.axi`) is exported again when the sources
of hw/, sim/ or flows/ change; the simulator builds are cached in build/axi/<sim>/ by the
Verilog's SHA-256. Exit status: 0 all match, 1 a difference, 2 the simulation could not run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flows import axi as axi_flow
from hw.axi_check import LITE_RULES, RULES
from sim import machines, spec
from sim.spec import DEFAULT, Params

from .axi_probes import decode_differences, decode_probes, long_job, rw_registers
from .errors import BuildError, CosimError, SimulationError, writing
from .jobs import Job, write_jobs
from .runner import TEST_ENV
from .simulators import (
    SIMULATORS,
    TIMESCALE,
    VERILATOR_ARGS,
    check_simulator,
    prepare_environment,
    runner_for,
)
from .verilog import ROOT, flock, sources_digest

TOP = "ga2_axi_simtop"
TEST_MODULE = "cosim.axi_tb"
EXT_BASE = 0x0001_2340
"""Where the bench's RAM puts external word 0 for the seeds' graphs: beat-aligned but not
page-aligned, so that bursts meet 4 KiB boundaries at other words than a base of 0 would."""
EXT_BASE_HIGH = 0xFFF8_2340
"""Where it puts it for the stress programs and the long transfer: the same offset in a 4 KiB page
(the same bursts, the same cycles), every address bit above the external window 1 where
EXT_BASE has it 0, so that a master which drops or mixes up high address bits is seen."""
EXT_BASES = {"seeds": EXT_BASE, "stress": EXT_BASE_HIGH, "long": EXT_BASE_HIGH}
"""The base each kind of launch uses (``python -m cosim.axi seeds|stress|long``)."""
PUBLIC_TOP = ("--public-depth", "1")
"""The bench touches the top's ports only: Verilator makes those reachable through VPI, not every
signal of the design (cosim.simulators.LeanVerilator drops cocotb's --public-flat-rw)."""
PAUSE = 0.3
"""The default back-pressure: each channel stalls in a cycle with this probability."""


@dataclass
class AxiRun:
    """One program's run through the bus.

    Attributes:
        name: the job's.
        finished: DONE (the interrupt) came within the limit.
        ext: the RAM's window after the run (EXT_WORDS uint32).
        registers: counters (sim.spec.ALL_COUNTERS, cycles less mem_stall), wall, mem_stall,
            error_code, error_pc, bus_error; None when it did not finish.
        faults: the checkers' and self-checks' outputs.
    """

    name: str
    finished: bool
    ext: np.ndarray
    registers: dict | None
    faults: dict


def verilog(params: Params, say=print) -> Path:
    """``ga2_axi_simtop.v`` of the machine, exported again when the generator's sources changed."""
    folder = ROOT / axi_flow.out_dir(params)
    target = folder / f"{TOP}.v"
    stamp = folder / "sources.sha256"
    digest = sources_digest()
    with flock(folder.parent / "axi.lock", exclusive=True):
        if target.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
            return target
        say(f"exporting {target.relative_to(ROOT)} (python -m flows.axi)")
        machine = [] if params == DEFAULT else ["--param", machines.describe(params)]
        command = [sys.executable, "-m", "flows.axi", "--top", TOP, "--out", str(folder), *machine]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode:
            raise CosimError(f"python -m flows.axi failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        with writing(folder):
            stamp.write_text(digest + "\n")
    return target


def build(simulator: str, source: Path, root: Path | None = None) -> Path:
    """The simulator's build of a ``ga2_axi_simtop`` Verilog (cached by its SHA-256); its folder."""
    check_simulator(simulator)
    root = Path(root) if root is not None else source.parent
    directory = root / simulator
    text = source.read_bytes()
    args = [*VERILATOR_ARGS, *PUBLIC_TOP] if simulator == "verilator" else []
    recipe = json.dumps({"args": args, "timescale": TIMESCALE})
    digest = hashlib.sha256(text + recipe.encode()).hexdigest()
    stamp = directory / "stamp.sha256"
    with flock(root / f"{simulator}.lock", exclusive=True):
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return directory
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        prepare_environment()
        log = directory / "build.log"
        try:
            runner_for(simulator).build(
                sources=[source], hdl_toplevel=TOP, build_dir=directory, always=True, timescale=TIMESCALE,
                log_file=log, build_args=args)
        except (RuntimeError, SystemExit, subprocess.CalledProcessError) as e:
            raise BuildError(f"{simulator}: building {source} failed ({e}); the log: {log}") from None
        stamp.write_text(digest + "\n")
    return directory


def run(jobs: list[Job], simulator: str, params: Params, *, pause: float = PAUSE, seed: int = 1,
        source: Path | None = None, say=print, ext_base: int = EXT_BASE) -> list[AxiRun]:
    """Run the jobs back to back through the bus in one launch; one :class:`AxiRun` each (fewer
    when one does not finish: the bench stops there). ``ext_base``: the byte address of external
    word 0 on the master (EXT_BASE, beat-aligned).

    Raises:
        CosimError: the export, build or simulation failed (the message names the log).
    """
    source = Path(source).resolve() if source else verilog(params, say)
    directory = build(simulator, source)
    with writing(directory):
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=directory))
    jobs_file, results_file = run_dir / "jobs.npz", run_dir / "results.npz"
    write_jobs(jobs_file, jobs, params)
    slowdown = 1 + 4 * pause / (1 - pause) if pause < 1 else 100
    probes = decode_probes(params)
    setting = {"ext_base": ext_base, "pause": pause, "seed": seed, "slowdown": max(4.0, slowdown),
               "probes": probes, "rw": rw_registers(params)}
    env = {"AXI_JOBS": str(jobs_file), "AXI_RESULTS": str(results_file), "AXI_SETTING": json.dumps(setting),
           **TEST_ENV}
    prepare_environment()
    log = run_dir / "sim.log"
    try:
        runner_for(simulator).test(test_module=TEST_MODULE, hdl_toplevel=TOP, hdl_toplevel_lang="verilog",
                                   build_dir=directory, test_dir=run_dir, extra_env=env, log_file=log,
                                   results_xml=str(run_dir / "results.xml"))
    except (RuntimeError, SystemExit) as e:
        raise SimulationError(f"{simulator}: the AXI simulation failed ({e}); the log: {log}") from None
    if not results_file.is_file():
        raise SimulationError(f"{simulator}: the AXI bench wrote no results; the log: {log}")
    with np.load(results_file) as f:
        ext, finished, extra = f["ext"], f["finished"], json.loads(str(f["json"]))
    runs = [AxiRun(job.name, bool(finished[k]), ext[k], extra["registers"][k], extra["faults"][k])
            for k, job in enumerate(jobs[:len(extra["faults"])])]
    decode = extra.get("decode")
    if runs and decode:
        runs[-1].faults["decode"] = decode_differences(probes, decode["answers"], decode["before"],
                                                       decode["after"], params)
    if runs and extra.get("counters"):
        runs[-1].faults["counters"] = [
            f"counter read-out: {name.upper()} reads 0x{got:08x} with 0x{put:08x} in its register"
            for name, put, got in extra["counters"] if got != put]
    stopped = bench_failure(run_dir / "results.xml")
    if not stopped:
        shutil.rmtree(run_dir, ignore_errors=True)
    elif len(runs) < len(jobs):          # the bench was up (it wrote results): the design broke it
        runs.append(AxiRun(jobs[len(runs)].name, False, np.zeros_like(ext[0]), None,
                           {"bench_stopped": stopped}))
    elif runs:                           # every program ran: the probes after them broke it
        runs[-1].faults["bench_stopped"] = f"{stopped} (in the register decode's probes, after the programs)"
    return runs


def bench_failure(results_xml: Path) -> str:
    """The exception that ended the cocotb test (its type and last traceback line), from
    cocotb's results.xml; "" when the test passed or the file is missing.

    The bench writes its results once it is up and after every program, so an exception past
    that point comes from the design's behaviour (cocotbext-axi's AxiRam asserts on a burst
    across 4 KiB, the host driver on a register that never reads DONE): a difference of the
    program it was running, not a broken tool."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(results_xml).getroot()
    except (OSError, ET.ParseError):
        return ""
    for failure in root.iter("failure"):
        lines = [ln.strip() for ln in (failure.text or "").splitlines() if ln.strip()]
        where = next((ln for ln in reversed(lines) if ln.startswith("File ")), "")
        message = failure.get("message") or ""
        return f"{failure.get('type', 'failure')}{': ' + message if message else ''} ({where})"
    return ""


def compare(job: Job, run: AxiRun, params: Params, spad: np.ndarray | None = None) -> list[str]:
    """How a run through the bus differs from the reference machine started from ``spad``;
    empty when it keeps the rule of the module docstring."""
    want = job.expected(params, spad)
    out = []
    f = run.faults
    if f.get("bench_stopped"):
        return [f"the bench stopped in this program: {f['bench_stopped']}"]
    out += f.get("decode", []) + f.get("counters", [])
    if f["axi_fault"]:
        out.append(f"AXI protocol checker (master): rule {f['axi_code']}: {_rule(RULES, f['axi_code'])}")
    if f["axil_fault"]:
        out.append(f"AXI protocol checker (register slave): rule {f['axil_code']}: "
                   f"{_rule(LITE_RULES, f['axil_code'])}")
    if f["timing_fault"]:
        out.append("timing_fault: a unit's done and the execute stage's count disagreed")
    if f["bridge_fault"]:
        out.append("bridge_fault: the core advanced in a cycle whose read data was not there")
    if f.get("irq_without_done"):
        out.append("the interrupt rose but STATUS.DONE did not follow within 10 polls")
    if not run.finished or run.registers is None:
        return [*out, f"no DONE within the cycle limit (the reference stops after {want.counters.cycles})"]
    r = run.registers
    if (r["error_code"], r["error_pc"]) != (int(want.error_code), want.error_pc):
        out.append(f"stop: bus error_code {r['error_code']} at pc {r['error_pc']}, reference "
                   f"{int(want.error_code)} at pc {want.error_pc}")
    if r["bus_error"]:
        out.append("STATUS.BUS_ERROR: the memory answered with an error")
    expected_counters = want.counters.as_tuple(spec.ALL_COUNTERS)
    for name, got, expected in zip(spec.ALL_COUNTERS, r["counters"], expected_counters, strict=True):
        if got != expected:
            label = "cycles - mem_stall" if name == "cycles" else name
            out.append(f"counter {label}: bus {got}, reference {expected} ({got - expected:+d})")
    bad = np.flatnonzero(run.ext != want.ext)
    if len(bad):
        first = "; ".join(f"[{a}] bus 0x{int(run.ext[a]):08x}, reference 0x{int(want.ext[a]):08x}"
                          for a in bad[:3])
        out.append(f"ext: {len(bad)} words differ; first {first}")
    return out


def _rule(rules: tuple[str, ...], code: int) -> str:
    return rules[code - 1] if 1 <= code <= len(rules) else "unknown rule"


def check(jobs: list[Job], simulator: str, params: Params, *, pause: float, seed: int,
          source: Path | None = None, say=print,
          ext_base: int = EXT_BASE) -> tuple[list[str], list[tuple[str, int, int, int]]]:
    """Run and compare: (the differences, each line naming its program; one row per program:
    name, reference cycles, cycles on the bus, mem_stall)."""
    runs = run(jobs, simulator, params, pause=pause, seed=seed, source=source, say=say, ext_base=ext_base)
    problems, rows, spad = [], [], None
    for job, got in zip(jobs, runs, strict=False):
        diffs = compare(job, got, params, spad)
        want = job.expected(params, spad)
        problems += [f"{job.name}: {d}" for d in diffs]
        if got.registers:
            rows.append((job.name, want.counters.cycles, got.registers["wall"], got.registers["mem_stall"]))
        spad = want.spad
    if len(runs) < len(jobs):
        problems.append(f"{jobs[len(runs)].name} and after: not run (a program before them did not stop)")
    return problems, rows


def seed_jobs(text: str, params: Params) -> list[Job]:
    """The seed table's graphs (``100-111``) compiled for the machine, as jobs."""
    from .seeds import compile_seed_for, parse_seeds
    jobs = []
    for seed in parse_seeds(text):
        compiled = compile_seed_for(seed, params)
        jobs.append(Job.of_program(compiled.program, compiled.test_inputs, f"seed {seed}"))
    return jobs


def stress_jobs(first: int, n: int, params: Params) -> list[Job]:
    """The stress generator's programs first .. first + n - 1 (cosim/stress.py, edges included)."""
    from .stress import programs
    jobs = []
    for prog in programs(first, n, params):
        prog.job.name = f"stress {prog.seed}"
        jobs.append(prog.job)
    return jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosim.axi", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("what", choices=("seeds", "stress", "long"))
    parser.add_argument("seeds", nargs="?", default="100-111",
                        help="seeds' graphs (seeds only; default 100-111)")
    parser.add_argument("--seed", type=int, default=1, help="first stress program (stress; default 1)")
    parser.add_argument("--n", type=int, default=40, help="stress programs (default 40)")
    parser.add_argument("--sim", choices=(*SIMULATORS, "both"), default="both")
    parser.add_argument("--pause", type=float, default=PAUSE,
                        help=f"probability that a channel stalls in a cycle (default {PAUSE}; 0: none)")
    parser.add_argument("--pause-seed", type=int, default=1, help="seed of the pause patterns (default 1)")
    parser.add_argument("--verilog", type=Path, default=None, help="a ga2_axi_simtop Verilog (mutants)")
    machines.add_argument(parser)
    args = parser.parse_args(argv)
    params = machines.from_args(args, parser)
    if not 0 <= args.pause < 1:
        parser.error(f"--pause {args.pause}: must be at least 0 and below 1")
    if args.what == "long":
        try:
            jobs = [long_job(params)]
        except ValueError as e:
            parser.error(str(e))
    elif args.what == "seeds":
        jobs = seed_jobs(args.seeds, params)
    else:
        jobs = stress_jobs(args.seed, args.n, params)
    status = 0
    for simulator in SIMULATORS if args.sim == "both" else (args.sim,):
        t0 = time.perf_counter()
        try:
            problems, rows = check(jobs, simulator, params, pause=args.pause, seed=args.pause_seed,
                                   source=args.verilog, ext_base=EXT_BASES[args.what])
        except CosimError as e:
            print(f"{simulator}: ERROR: {e}", file=sys.stderr)
            return 2
        ref, wall, stall = (sum(r[k] for r in rows) for k in (1, 2, 3))
        print(f"{simulator}: {len(rows)} programs through AXI at pause {args.pause}: reference {ref:,} "
              f"cycles, on the bus {wall:,} (mem_stall {stall:,}, +{100 * stall / max(ref, 1):.1f}%), "
              f"{time.perf_counter() - t0:.0f} s")
        if problems:
            status = 1
            print(f"{simulator} FAIL: {len(problems)} differences; first:")
            for line in problems[:8]:
                print(f"  {line}")
        else:
            print(f"{simulator} PASS")
    return status


if __name__ == "__main__":
    sys.exit(main())
