"""sim/host.py: the host driver against a register model that keeps the map's rules."""

from __future__ import annotations

import asyncio

import pytest

from sim import regmap
from sim.host import Host, HostError
from sim.spec import DEFAULT, ErrorCode


class Model:
    """A bus with GA-2's registers: ID and PARAMS fixed, writes recorded, DONE after START."""

    def __init__(self, params=DEFAULT):
        self.params = params
        self.values = {regmap.offset(n, params): v for n, v in regmap.fixed_values(params).items()}
        self.writes = []

    async def read_dword(self, address):
        return self.values.get(address, 0)

    async def write_dword(self, address, data):
        self.writes.append((address, data))
        if address == regmap.offset("CTRL", self.params) and data & 1:
            self.values[regmap.offset("STATUS", self.params)] = 0b10            # DONE
            self.values[regmap.offset("CYCLES", self.params)] = 120
            self.values[regmap.offset("MEM_STALL", self.params)] = 20
            self.values[regmap.offset("DMA", self.params)] = 30
            self.values[regmap.offset("ERROR_PC", self.params)] = 1


def test_run_loads_starts_and_reads_back():
    bus = Model()
    words = [0x11, 0x22, 0x33, 0x44, 0xF, 0, 0, 0]       # two instructions
    result = asyncio.run(Host(bus, params=DEFAULT).run(words, ext_base=0x4000_0000))
    window = regmap.imem_base(DEFAULT)
    assert bus.writes[:8] == [(window + 4 * k, w) for k, w in enumerate(words)]
    assert (regmap.offset("PROG_LEN", DEFAULT), 2) in bus.writes
    assert (regmap.offset("EXT_BASE", DEFAULT), 0x4000_0000) in bus.writes
    assert bus.writes[-1] == (regmap.offset("CTRL", DEFAULT), 1)
    assert result.wall_cycles == 120 and result.mem_stall == 20
    assert result.counters.cycles == 100 and result.counters.dma == 30     # 120 - 20
    assert result.error_code is ErrorCode.NONE and result.error_pc == 1 and not result.bus_error


def test_check_names_what_differs():
    bus = Model()
    asyncio.run(Host(bus, params=DEFAULT).check())
    bus.values[regmap.offset("PARAMS", DEFAULT)] ^= 1
    with pytest.raises(HostError, match=r"PARAMS reads 0x.*compile for the hardware's machine"):
        asyncio.run(Host(bus, params=DEFAULT).check())
    bus.values[0] = 0
    with pytest.raises(HostError, match="ID reads 0x00000000, not GA-2's 0x47413201"):
        asyncio.run(Host(bus, params=DEFAULT).check())


def test_bad_program_and_no_stop():
    bus = Model()
    with pytest.raises(ValueError, match="must be whole instructions"):
        asyncio.run(Host(bus, params=DEFAULT).load([1, 2, 3]))
    with pytest.raises(HostError, match="did not stop within 5 polls"):
        asyncio.run(Host(bus, params=DEFAULT).wait(polls=5))
