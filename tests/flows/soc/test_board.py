"""flows/soc/board.py: the figures of a finished ULX3S build, its report and its record (no LiteX,
no tools: a build folder with nextpnr's report and LiteX's script, written here)."""

from __future__ import annotations

import json

from flows.soc import board
from tests.docs.quoted import ROOT

# nextpnr-ecp5's --report JSON, cut to what board.py reads: one clock, two resources, a path
NEXTPNR = {
    "fmax": {"$glbnet$build_crg_clkout0": {"achieved": 52.31234, "constraint": 50}},
    "utilization": {"TRELLIS_COMB": {"used": 27000, "available": 83640},
                    "DP16KD": {"used": 83, "available": 208},
                    "DCSC": {"used": 0, "available": 2}},
    "critical_paths": [{"from": "a", "to": "b", "path": [
        {"type": "clk-to-q", "delay": 0.5, "from": {"cell": "ga2_axi.reader.take"}, "to": {"cell": "x"}},
        {"type": "routing", "delay": 1.25, "from": {"cell": "x"}, "to": {"cell": "y"}, "net": "n"},
        {"type": "logic", "delay": 0.25, "from": {"cell": "y"}, "to": {"cell": "ga2_axi.stall"}},
    ]}],
}
SCRIPT = ("yosys -l radiona_ulx3s.rpt radiona_ulx3s.ys\nnextpnr-ecp5 --report radiona_ulx3s_report.json "
          "--json radiona_ulx3s.json --85k --package CABGA381 --speed 6 --timing-allow-fail --seed 3\n")


def _build(tmp_path):
    gateware = tmp_path / "litex" / "gateware"
    gateware.mkdir(parents=True)
    (gateware / "radiona_ulx3s_report.json").write_text(json.dumps(NEXTPNR))
    (gateware / "build_radiona_ulx3s.sh").write_text(SCRIPT)
    return tmp_path


def test_the_figures_come_from_nextpnrs_report_and_the_script(tmp_path):
    figures = board.read_figures(_build(tmp_path))
    assert figures["fmax_mhz"] == 52.31 and figures["target_mhz"] == 50
    assert (figures["speed"], figures["seed"], figures["device"]) == (6, 3, "LFE5U-85F")
    assert list(figures["used"]) == ["TRELLIS_COMB", "DP16KD"]        # SHOWN's order, unused left out
    path = figures["critical_path"]
    assert (path["from"], path["to"], path["delay_ns"], path["logic_levels"]) == (
        "ga2_axi.reader.take", "ga2_axi.stall", 2.0, 1)
    assert "steps" not in path


def test_the_report_says_whether_the_clock_is_met(tmp_path):
    figures = board.read_figures(_build(tmp_path))
    text = board.report(figures)
    assert "52.3 MHz achieved, 50 MHz asked (met; nextpnr-ecp5 speed grade 6, seed 3)." in text
    assert "| TRELLIS_COMB | 27,000 | 83,640 |" in text
    assert "NOT met" in board.report({**figures, "fmax_mhz": 43.8})


def test_no_build_reads_the_folder_and_writes_the_record(tmp_path, monkeypatch):
    monkeypatch.setattr(board, "versions", lambda: {"yosys": "Yosys 0.70"})   # not the tools' own runs
    out = _build(tmp_path)
    record = tmp_path / "soc.json"
    record.write_text('{"units": {"cells": {}}}')                            # another section stays
    assert board.main(["--no-build", "--out", str(out), "--record", str(record)]) == 0
    both = json.loads(record.read_text())
    assert both["units"] == {"cells": {}}
    kept = both["ulx3s"]
    assert kept["fmax_mhz"] == 52.31 and kept["command"] == "make soc-bitstream"
    assert "bitstream" not in kept and "yosys" in kept["versions"]
    assert json.loads((out / "report.json").read_text())["seed"] == 3


def test_no_build_without_a_build_is_a_clear_error(tmp_path, capsys):
    assert board.main(["--no-build", "--out", str(tmp_path / "nothing")]) == 1
    assert "no nextpnr report" in capsys.readouterr().err


def test_the_default_clock_is_the_records_and_met():
    """make soc-bitstream asks for the clock of the record docs/guide/soc.md quotes, and the
    record met it."""
    kept = json.loads((ROOT / "docs" / "soc.json").read_text())[board.SECTION]
    assert kept["target_mhz"] == board.DEFAULT_FREQ and kept["fmax_mhz"] >= board.DEFAULT_FREQ
