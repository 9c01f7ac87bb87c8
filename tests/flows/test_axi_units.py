"""flows/axi_units.py: the AXI units' cells as a table and as the record's section (Yosys is
stood in for: the real run is `python -m flows.axi_units`, about 30 s)."""

from __future__ import annotations

import json

from flows import axi_units

CELLS = {"AxiReader": {"LUT4": 1323, "PFUMX": 376, "L6MUX21": 17, "CCU2C": 109, "TRELLIS_FF": 643},
         "AxiLiteRegs": {"LUT4": 866, "PFUMX": 303, "L6MUX21": 95, "CCU2C": 0, "TRELLIS_FF": 81}}


def test_the_table_has_a_row_a_unit_with_thousands_separated():
    lines = axi_units.table(CELLS).splitlines()
    assert lines[0] == "| unit | LUT4 | PFUMX | L6MUX21 | CCU2C | TRELLIS_FF |"
    assert lines[2] == "| `AxiReader` | 1,323 | 376 | 17 | 109 | 643 |"
    assert lines[3] == "| `AxiLiteRegs` | 866 | 303 | 95 | 0 | 81 |"


def test_the_record_gets_its_section_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(axi_units, "measure", lambda params, out: CELLS)
    monkeypatch.setattr(axi_units, "versions", lambda: {"yosys": "Yosys 0.70"})
    path = tmp_path / "soc.json"
    path.write_text('{"ulx3s": {"fmax_mhz": 50.5}}')
    assert axi_units.main(["--record", str(path), "--out", str(tmp_path / "units")]) == 0
    kept = json.loads(path.read_text())
    assert kept["ulx3s"] == {"fmax_mhz": 50.5}
    assert kept["units"]["cells"] == CELLS and kept["units"]["command"] == "python -m flows.axi_units"
    assert "| `AxiReader` | 1,323 |" in capsys.readouterr().out


def test_a_record_that_is_not_an_object_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(axi_units, "measure", lambda params, out: CELLS)
    path = tmp_path / "soc.json"
    monkeypatch.setattr(axi_units, "versions", lambda: {})
    path.write_text("[1, 2]")
    assert axi_units.main(["--record", str(path), "--out", str(tmp_path / "units")]) == 1
    assert "a record is a JSON object of sections, not list" in capsys.readouterr().err


def test_check_names_each_stale_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(axi_units, "measure", lambda params, out: CELLS)
    path = tmp_path / "soc.json"
    path.write_text(json.dumps({"units": {"cells": CELLS}}))
    assert axi_units.main(["--check", str(path), "--out", str(tmp_path / "units")]) == 0
    moved = {**CELLS, "AxiReader": {**CELLS["AxiReader"], "LUT4": 1285, "TRELLIS_FF": 633}}
    path.write_text(json.dumps({"units": {"cells": moved}}))
    assert axi_units.main(["--check", str(path), "--out", str(tmp_path / "units")]) == 1
    err = capsys.readouterr().err
    assert "AxiReader LUT4: recorded 1285, measured 1323" in err and "AxiReader TRELLIS_FF" in err
    assert "AxiLiteRegs" not in err
    path.write_text("{}")
    assert axi_units.main(["--check", str(path), "--out", str(tmp_path / "units")]) == 1
    assert "has no section 'units'" in capsys.readouterr().err
