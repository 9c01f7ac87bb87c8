"""examples/sweep.py: a machine's synthesis figures are kept from docs/sweep.json only while
they carry the Yosys cache key of the current sources (a fresh clone has no reports)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import sweep  # examples/ is not a package

from flows.synth.run import current_key
from sim import machines


def test_a_record_is_kept_only_with_the_key_of_the_current_sources(monkeypatch):
    import flows.synth.run

    params = machines.PRESETS["t2"]
    key = "ab" * 32
    monkeypatch.setattr(flows.synth.run, "current_key", lambda p, mapper="abc": key if p == params else "")
    record = {"LUT4": 1, "yosys_key": key, "date": "2026-12-05", "carries": True}
    assert sweep.still_current(params, record) == record
    assert sweep.still_current(params, {**record, "yosys_key": "0" * 64}) == {}
    assert sweep.still_current(params, {"LUT4": 1}) == {}           # no key: never kept
    assert sweep.still_current(params, {**record, "carries": False}) == {}   # another flow's
    assert sweep.still_current(params, {k: v for k, v in record.items() if k != "carries"}) == {}


@pytest.mark.slow
def test_the_key_is_of_the_verilog_and_the_recorded_synthesis_is_of_the_current_sources():
    """docs/sweep.json's figures were synthesised from what the generator gives now (else run
    make synth PARAMS=<machine> and python examples/sweep.py --synth-reports --write)."""
    assert current_key(machines.PRESETS["t2"]) != current_key(machines.PRESETS["t4"])
    record = json.loads(sweep.RECORD.read_text())
    for figures in record["figures"]:
        synth = figures["synth"]
        if synth.get("yosys_key"):
            params = machines.parse(figures["machine"])
            assert synth["yosys_key"] == current_key(params), f"{figures['machine']}: stale synthesis record"


def _fake_synthesis(arg):
    """flows.synth.run.synthesis_job's stand-in (in a forked worker): T = 8 fails."""
    from flows.synth import SynthError

    params, _, command, _ = arg
    if params.T == 8:
        raise SynthError("nextpnr-ecp5 failed (exit code 1); see log")
    return {"T": params.T, "command": command}, {"report.md": f"# T = {params.T}\n"}


def test_synthesis_runs_as_farm_tasks_and_its_reports_land_here(monkeypatch, tmp_path, capsys):
    """--synth hands each machine's synthesis to a farm (here the local pool; Ray on a cluster):
    the report files come back to this machine's synth folder, a refused machine is named."""
    import flows.synth.run

    monkeypatch.setattr(flows.synth.run, "synthesis_job", _fake_synthesis)
    monkeypatch.setattr(sweep, "synth_dir", lambda params: tmp_path / f"T{params.T}")
    monkeypatch.setattr(sweep, "report_figures", lambda report, params: {"LUT4": 100 * report["T"]})
    (tmp_path / "T2").mkdir()
    chosen = {"t2": machines.PRESETS["t2"], "t8": machines.PRESETS["t8"]}
    out = sweep.synthesise_all(chosen, engine="local")
    assert out == {"t2": {"LUT4": 200}, "t8": {"error": "nextpnr-ecp5 failed (exit code 1); see log"}}
    assert (tmp_path / "T2" / "report.md").read_text() == "# T = 2\n"
    assert "synthesis of 2 machines (tens of minutes each) on this machine, a local pool of 2 worker " \
           "processes" in capsys.readouterr().out


def test_the_sweep_names_machines_by_preset_and_what_else_differs():
    assert sweep.machine_name(machines.parse("t4")) == "t4"
    assert sweep.machine_name(machines.parse("t8 OVERLAP=2")) == "t8 OVERLAP=2"
    assert sweep.machine_name(machines.parse("OVERLAP=1")) == "t4 OVERLAP=1"
    assert sweep.machine_name(machines.parse("T=4 LANES=8")) == "LANES=8"   # no preset is T=4, LANES=8
    for name in sweep.MACHINES:
        assert sweep.machine_name(machines.parse(name)) == name


def _synth(key: str, fmax: float | None = 100.0) -> dict:
    return {"LUT4": 10, "FF": 20, "Fmax": fmax, "target": 125.0, "date": "2026-12-01", "yosys_key": key}


def test_figures_of_other_sources_move_to_the_history():
    """A machine whose new figures carry another Yosys key leaves its old ones in the history;
    the same key, a machine not synthesised now, or old figures without Fmax leave nothing."""
    old = {"t4": _synth("a", 72.5), "t8": _synth("b"), "t2": _synth("c"), "t16": _synth("d", None)}
    last = {"figures": [{"machine": name, "synth": synth} for name, synth in old.items()]}
    figures = [sweep.Figures(name, {}, 0, 0.0, 0, {}, 0.0, synth=synth) for name, synth in
               (("t4", _synth("new")), ("t8", _synth("b")), ("t2", {}), ("t16", _synth("new")))]
    assert sweep.superseded(last, figures) == [
        {"machine": "t4", "Fmax": 72.5, "LUT4": 10, "FF": 20, "target": 125.0, "date": "2026-12-01"}]


def test_a_report_of_earlier_sources_becomes_a_history_entry(tmp_path):
    values = {"command": "python -m flows.synth", "params": {"T": 8, "LANES": 8, "OVERLAP": 2}, "device": {},
              "freq_target": 125.0, "seed": 1, "versions": {}, "yosys": {}, "blocks": {}, "memories": {},
              "fmax": 68.04, "utilisation": {"LUT4": {"used": 35280}, "TRELLIS_FF": {"used": 19241},
                                             "MULT18X18D": {"used": 100}, "DP16KD": {"used": 48}}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(values))
    entry = sweep.report_history(path)
    assert {k: v for k, v in entry.items() if k != "date"} == {
        "machine": "t8 OVERLAP=2", "Fmax": 68.04, "LUT4": 35280, "FF": 19241, "target": 125.0}
    assert sweep.history_table([entry])[2].startswith("| t8 OVERLAP=2 | 68.0 | 125 | 35,280 | 19,241 |")
    path.write_text(json.dumps(values | {"fmax": None}))
    with pytest.raises(ValueError, match=r"report\.json: a report without Fmax"):
        sweep.report_history(path)
    path.write_text("{}")
    with pytest.raises(ValueError, match=r"report\.json: not a synthesis report"):
        sweep.report_history(path)


def test_only_a_placed_machine_is_said_to_fit():
    """nextpnr packs more logic cells than Yosys counts (the T = 8, OVERLAP = 2 machine: 73,491
    by Yosys's count, 85,679 packed, of 83,640), so a Yosys-only record does not say "yes"."""
    base = {"LUT4": 10, "FF": 20, "DSP": 1, "DP16KD": 2, "target": 110.0, "date": "2026-12-07"}
    over = "LUT4 (logic cells, carry halves included) 85,740 of 83,640 (nextpnr's packing)"
    rows = {name: {**base, "Fmax": fmax, "overfull": overfull} for name, fmax, overfull in
            (("t4", 73.4, ""), ("t8", None, over), ("t16", None, ""), ("t2", 50.1, ""))}
    rows["t2"]["router"] = "router2"
    figures = [sweep.Figures(name, {}, 0, 0.0, 0, {}, 0.0, synth=synth) for name, synth in rows.items()]
    fits = [line.split(" | ")[-2] for line in sweep.synth_table(figures)[2:]]
    assert fits == ["yes", f"no: {over}", "by Yosys's count (not placed)", "yes (router2)"]


def test_a_report_of_another_flow_is_not_the_sweeps(monkeypatch, tmp_path, capsys):
    """make synth DSP_REGISTERS=1 and CARRIES=0 are other flows (flows/synth/dsp_regs.py,
    flows/synth/carries.py): a report of either, of the current sources or not, is not recorded
    as the machine's figures, nor one written before the carry chains were rewritten; the
    default flow's is."""
    import flows.synth.run

    values = {"command": "python -m flows.synth", "params": {"T": 4}, "device": {}, "freq_target": 100.0,
              "seed": 1, "versions": {}, "yosys": {"mapper": "abc"}, "blocks": {}, "memories": {},
              "fmax": 102.7, "carries": True,
              "utilisation": {"LUT4": {"used": 25364}, "TRELLIS_FF": {"used": 12679},
                              "MULT18X18D": {"used": 57}, "DP16KD": {"used": 48}}}
    monkeypatch.setattr(sweep, "synth_dir", lambda params: tmp_path)
    monkeypatch.setattr(flows.synth.run, "report_is_current", lambda report, params, cache: True)
    monkeypatch.setattr(flows.synth.run, "current_key", lambda params, mapper="abc": "ab" * 32)
    (tmp_path / "report.json").write_text(json.dumps(values))
    assert sweep.reported(machines.DEFAULT)["Fmax"] == 102.7
    folded = {"blocks": 57, "flip_flops": 1285, "kept": {}}
    (tmp_path / "report.json").write_text(json.dumps(values | {"dsp_registers": folded}))
    assert sweep.reported(machines.DEFAULT) == {}
    assert "DSP_REGISTERS=1" in capsys.readouterr().out
    for other in ({"carries": False}, {}):
        (tmp_path / "report.json").write_text(json.dumps({k: v for k, v in values.items() if k != "carries"}
                                                         | other))
        assert sweep.reported(machines.DEFAULT) == {}
        assert "CARRIES=0" in capsys.readouterr().out
