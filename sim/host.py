"""A host driver for GA-2 on a register bus: load a program, start it, wait, read what it did.

The driver speaks the register map of :mod:`sim.regmap` (every offset and field comes from
there) over any bus object with two coroutines, ``read_dword(address) -> int`` and
``write_dword(address, value)``: cocotbext-axi's ``AxiLiteMaster`` in co-simulation
(cosim/axi_tb.py), or a bridge to real hardware. The external memory is the system's, not the
driver's: the caller puts the program's external image at ``EXT_BASE`` before :meth:`Host.run`
and reads the outputs from there after it (the firmware in flows/soc/firmware does the same in
C).

    host = Host(bus, base=0x0, params=params)
    await host.check()                               # the hardware is the machine the program is for
    result = await host.run(words, ext_base=0x4000_0000, wait=irq_edge)
    result.counters.cycles, result.mem_stall, result.error_code
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from . import regmap, spec
from .machine import Counters
from .spec import ErrorCode, Params


class Bus(Protocol):
    """What the driver needs of a bus: 32-bit reads and writes at byte addresses."""

    async def read_dword(self, address: int) -> int: ...

    async def write_dword(self, address: int, data: int) -> None: ...


class HostError(RuntimeError):
    """The hardware is not the machine expected, or it did not stop within the polls allowed."""


@dataclass
class HostResult:
    """What a run left in the registers.

    Attributes:
        counters: the machine's counters, with ``cycles`` as the reference machine counts it
            (the CYCLES register less MEM_STALL: docs/GA2.md section 8).
        wall_cycles: the CYCLES register, START to DONE, stalls included.
        mem_stall: the MEM_STALL register.
        error_code: :class:`sim.spec.ErrorCode` of the stop; error_pc: its pc.
        bus_error: STATUS.BUS_ERROR (an error response on the master bus).
    """

    counters: Counters
    wall_cycles: int
    mem_stall: int
    error_code: ErrorCode
    error_pc: int
    bus_error: bool


class Host:
    """GA-2 behind its register slave.

    Args:
        bus: a :class:`Bus`.
        base: the slave's byte address on that bus.
        params: the machine the offsets are computed for (the window's place).
    """

    def __init__(self, bus: Bus, base: int = 0, *, params: Params):
        self.bus = bus
        self.base = base
        self.params = params
        self.regs = regmap.by_name(params)

    def address(self, name: str) -> int:
        """The bus address of a register (KeyError naming the registers for an unknown one)."""
        return self.base + regmap.offset(name, self.params)

    async def read(self, name: str) -> int:
        return await self.bus.read_dword(self.address(name))

    async def write(self, name: str, value: int) -> None:
        await self.bus.write_dword(self.address(name), value)

    async def field(self, register: str, name: str) -> int:
        f = self.regs[register].field(name)
        return (await self.read(register) & f.mask) >> f.lsb

    async def check(self) -> None:
        """Refuse hardware that is not GA-2 or not the driver's machine (``self.params``).

        Raises:
            HostError: ID or PARAMS differ (both values named).
        """
        params = self.params
        ident = await self.read("ID")
        if ident != regmap.MAGIC:
            raise HostError(f"ID reads 0x{ident:08X}, not GA-2's 0x{regmap.MAGIC:08X}: no GA-2 at "
                            f"0x{self.base:X}")
        got, want = await self.read("PARAMS"), regmap.params_word(params)
        if got != want:
            raise HostError(f"PARAMS reads 0x{got:08X}, the program's machine is 0x{want:08X} "
                            f"({params}): compile for the hardware's machine")

    async def load(self, words: Sequence[int]) -> None:
        """Write an encoded program (:func:`sim.asm.encode_program`) into the instruction window
        and set PROG_LEN.

        Raises:
            ValueError: the program is not whole instructions or does not fit IMEM_WORDS.
        """
        if len(words) % spec.INSTR_WORDS or len(words) // spec.INSTR_WORDS > self.params.IMEM_WORDS:
            raise ValueError(f"a program of {len(words)} words: must be whole instructions of "
                             f"{spec.INSTR_WORDS} words, at most IMEM_WORDS = {self.params.IMEM_WORDS}")
        window = self.base + regmap.imem_base(self.params)
        for k, word in enumerate(words):
            await self.bus.write_dword(window + regmap.REG_BYTES * k, int(word) & 0xFFFF_FFFF)
        await self.write("PROG_LEN", len(words) // spec.INSTR_WORDS)

    async def start(self, ext_base: int, irq: bool = True) -> None:
        """Clear a pending interrupt, set EXT_BASE (and IRQ_ENABLE), raise CTRL.START."""
        await self.write("IRQ_STATUS", self.regs["IRQ_STATUS"].field("DONE").mask)
        await self.write("IRQ_ENABLE", self.regs["IRQ_ENABLE"].field("DONE").mask if irq else 0)
        await self.write("EXT_BASE", ext_base)
        await self.write("CTRL", self.regs["CTRL"].field("START").mask)

    async def wait(self, polls: int = 1_000_000) -> None:
        """Poll STATUS until DONE.

        Raises:
            HostError: not DONE after ``polls`` reads.
        """
        for _ in range(polls):
            if await self.field("STATUS", "DONE"):
                return
        raise HostError(f"GA-2 at 0x{self.base:X} did not stop within {polls:,} polls of STATUS")

    async def result(self) -> HostResult:
        """The counters, the stop and the bus's state, from the registers."""
        values = {name: await self.read(name.upper()) for name in regmap.counter_names()}
        stall = values.pop("mem_stall")
        wall = values["cycles"]
        values["cycles"] = wall - stall
        return HostResult(Counters(**values), wall, stall, ErrorCode(await self.read("ERROR_CODE")),
                          await self.read("ERROR_PC"), bool(await self.field("STATUS", "BUS_ERROR")))

    async def run(self, words: Sequence[int], ext_base: int,
                  wait: Callable[[], Awaitable[None]] | None = None) -> HostResult:
        """Load, start, wait (``wait()``, e.g. for the interrupt line, then STATUS is polled
        until DONE), read the result. The external image must be at ``ext_base`` already."""
        await self.load(words)
        await self.start(ext_base, irq=wait is not None)
        if wait is not None:
            await wait()
        await self.wait()
        return await self.result()
