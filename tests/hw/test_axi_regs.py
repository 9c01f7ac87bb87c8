"""hw/axi_regs.py: the register slave's decode, generated from sim/regmap.py, through AXI4-Lite."""

from __future__ import annotations

from amaranth.sim import Simulator

from hw.axi_regs import AxiLiteRegs
from sim import regmap
from sim.spec import DEFAULT


async def write(ctx, dut, addr, data, strb=0b1111):
    ctx.set(dut.s_axil_awaddr, addr)
    ctx.set(dut.s_axil_wdata, data)
    ctx.set(dut.s_axil_wstrb, strb)
    ctx.set(dut.s_axil_awvalid, 1)
    ctx.set(dut.s_axil_wvalid, 1)
    ctx.set(dut.s_axil_bready, 1)
    assert ctx.get(dut.s_axil_awready) and ctx.get(dut.s_axil_wready)
    await ctx.tick()
    ctx.set(dut.s_axil_awvalid, 0)
    ctx.set(dut.s_axil_wvalid, 0)
    assert ctx.get(dut.s_axil_bvalid)
    resp = ctx.get(dut.s_axil_bresp)
    await ctx.tick()
    return resp, None


async def read(ctx, dut, addr):
    ctx.set(dut.s_axil_araddr, addr)
    ctx.set(dut.s_axil_arvalid, 1)
    ctx.set(dut.s_axil_rready, 1)
    await ctx.tick()
    ctx.set(dut.s_axil_arvalid, 0)
    assert ctx.get(dut.s_axil_rvalid)
    value, resp = ctx.get(dut.s_axil_rdata), ctx.get(dut.s_axil_rresp)
    await ctx.tick()
    return value, resp


def run(bench):
    dut = AxiLiteRegs(DEFAULT)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    async def testbench(ctx):
        await bench(ctx, dut)

    sim.add_testbench(testbench)
    sim.run()


def test_fixed_registers_and_rw_storage():
    async def bench(ctx, dut):
        assert await read(ctx, dut, regmap.offset("ID", DEFAULT)) == (regmap.MAGIC, 0)
        assert await read(ctx, dut, regmap.offset("PARAMS", DEFAULT)) == (regmap.params_word(DEFAULT), 0)
        assert (await write(ctx, dut, regmap.offset("EXT_BASE", DEFAULT), 0x4000_1237))[0] == 0
        assert await read(ctx, dut, regmap.offset("EXT_BASE", DEFAULT)) == (0x4000_1230, 0)   # beat-aligned
        assert (await write(ctx, dut, regmap.offset("PROG_LEN", DEFAULT), 0x1_2345))[0] == 0
        assert ctx.get(dut.prog_len) == 0x2345
        ctx.set(dut.cycles, 4940)
        assert await read(ctx, dut, regmap.offset("CYCLES", DEFAULT)) == (4940, 0)
        assert await read(ctx, dut, regmap.offset("CTRL", DEFAULT)) == (0, 0)        # write-only reads 0
    run(bench)


def test_refusals_answer_slverr_and_change_nothing():
    async def bench(ctx, dut):
        assert (await write(ctx, dut, regmap.offset("EXT_BASE", DEFAULT), 0x10, strb=0b0011))[0] == 2
        assert ctx.get(dut.ext_base) == 0
        assert (await write(ctx, dut, regmap.offset("STATUS", DEFAULT), 1))[0] == 2         # read-only
        assert (await write(ctx, dut, 0x3C, 1))[0] == 2                            # no register
        assert (await read(ctx, dut, 0x3C))[1] == 2
        assert (await read(ctx, dut, regmap.imem_base(DEFAULT)))[1] == 2           # the window is write-only
    run(bench)


def test_instruction_window_writes_only_while_idle():
    async def bench(ctx, dut):
        base = regmap.imem_base(DEFAULT)
        ctx.set(dut.s_axil_awaddr, base + 4 * 5)
        ctx.set(dut.s_axil_wdata, 0xABCD)
        ctx.set(dut.s_axil_wstrb, 0b1111)
        ctx.set(dut.s_axil_awvalid, 1)
        ctx.set(dut.s_axil_wvalid, 1)
        ctx.set(dut.s_axil_bready, 1)
        _, _, we, waddr, wdata = await ctx.tick().sample(dut.imem_we, dut.imem_waddr, dut.imem_wdata)
        assert (we, waddr, wdata) == (1, 5, 0xABCD)
        ctx.set(dut.s_axil_awvalid, 0)
        ctx.set(dut.s_axil_wvalid, 0)
        assert ctx.get(dut.s_axil_bresp) == 0
        await ctx.tick()
        ctx.set(dut.busy, 1)
        assert (await write(ctx, dut, base + 8, 1))[0] == 2
    run(bench)


def test_write_strobes_for_w1c_and_w_registers():
    async def bench(ctx, dut):
        ctx.set(dut.s_axil_awaddr, regmap.offset("CTRL", DEFAULT))
        ctx.set(dut.s_axil_wdata, 1)
        ctx.set(dut.s_axil_wstrb, 0b1111)
        ctx.set(dut.s_axil_awvalid, 1)
        ctx.set(dut.s_axil_wvalid, 1)
        _, _, pulse, data = await ctx.tick().sample(dut.ctrl_write, dut.write_data)
        assert (pulse, data) == (1, 1)
        ctx.set(dut.s_axil_awvalid, 0)
        ctx.set(dut.s_axil_wvalid, 0)
        ctx.set(dut.s_axil_bready, 1)
        _, _, pulse = await ctx.tick().sample(dut.ctrl_write)
        assert pulse == 0
    run(bench)
