"""sim/regmap.py: the register table, its generated page and C header, the values it gives."""

from __future__ import annotations

import pytest

from sim import regmap
from sim.machines import parse
from sim.spec import DEFAULT, Params


def test_default_layout_hand_worked():
    # 4,096 instructions of 4 words of 4 bytes: a 64 KiB window at 64 KiB, 17 address bits
    assert regmap.imem_bytes(DEFAULT) == 0x1_0000
    assert regmap.imem_base(DEFAULT) == 0x1_0000
    assert regmap.address_bits(DEFAULT) == 17
    assert [regmap.offset(n, DEFAULT) for n in ("ID", "CTRL", "STATUS")] == [0, 0x10, 0x14]
    # counters from 0x40 in the order of sim.spec.ALL_COUNTERS, then mem_stall
    names = ("CYCLES", "DMA", "MXU", "VPU", "SFU", "HAZARD", "PORT", "MEM_STALL")
    assert [regmap.offset(n, DEFAULT) for n in names] == [0x40, 0x44, 0x48, 0x4C, 0x50, 0x54, 0x58, 0x5C]


def test_params_word_hand_worked():
    # T=4 (bits 4..0), LANES=4 (9..5), OVERLAP=0, SPAD 2^12 (16..12), EXT 2^16 (21..17), K_MAX 64 (29..22)
    assert regmap.params_word(DEFAULT) == 4 | 4 << 5 | 12 << 12 | 16 << 17 | 64 << 22
    t8 = parse("t8")
    assert regmap.params_word(t8) & 0x3FF == 8 | 8 << 5


def test_write_masks():
    regs = regmap.by_name(DEFAULT)
    assert regmap.write_mask(regs["EXT_BASE"], DEFAULT) == 0xFFFF_FFF0           # 16-byte beats
    assert regmap.write_mask(regs["EXT_BASE"], parse("t16")) == 0xFFFF_FFC0
    assert regmap.write_mask(regs["PROG_LEN"], DEFAULT) == 0xFFFF
    assert regmap.write_mask(regs["PROG_LEN"], Params(IMEM_WORDS=65536)) == 0x1_FFFF
    assert regmap.write_mask(regs["IRQ_ENABLE"], DEFAULT) == 1


@pytest.mark.parametrize("machine", ["default", "t8", "t16", "IMEM_WORDS=65536"])
def test_tables_are_consistent(machine):
    params = parse(machine)
    regmap.check_table(params)
    top = max(r.offset for r in regmap.registers(params))
    assert top < regmap.imem_base(params)
    assert regmap.imem_base(params) + regmap.imem_bytes(params) <= 1 << regmap.address_bits(params)


def test_unknown_names_are_refused_by_name():
    with pytest.raises(KeyError, match="no register 'NOPE'; the registers: ID, PARAMS"):
        regmap.offset("NOPE", DEFAULT)
    with pytest.raises(KeyError, match="register CTRL has no field 'STOP'; its fields: START"):
        regmap.by_name(DEFAULT)["CTRL"].field("STOP")


def test_generated_files_are_fresh():
    assert regmap.stale(DEFAULT) == [], "run `python -m sim.regmap --write`"


def test_header_names_every_register_and_field():
    text = regmap.c_header(DEFAULT)
    for r in regmap.registers(DEFAULT):
        assert f"#define GA2_{r.name} 0x{r.offset:03X}u" in text
        for f in r.fields:
            assert f"#define GA2_{r.name}_{f.name}_MASK 0x{f.mask:08X}u" in text


def test_check_refuses_a_stale_page(tmp_path, monkeypatch, capsys):
    page = tmp_path / "regmap.md"
    page.write_text("old\n")
    monkeypatch.setattr(regmap, "GENERATED", {page: regmap.markdown})
    assert regmap.main(["--check"]) == 1
    assert "is stale: run `python -m sim.regmap --write`" in capsys.readouterr().err
    assert regmap.main(["--write"]) == 0
    assert regmap.main(["--check"]) == 0
