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
    record = {"LUT4": 1, "yosys_key": key, "date": "2026-12-05"}
    assert sweep.still_current(params, record) == record
    assert sweep.still_current(params, {**record, "yosys_key": "0" * 64}) == {}
    assert sweep.still_current(params, {"LUT4": 1}) == {}           # no key: never kept


@pytest.mark.slow
def test_the_key_is_of_the_verilog_and_the_recorded_synthesis_is_of_the_current_sources():
    """docs/sweep.json's figures were synthesised from what the generator gives now (else run
    make synth PARAMS=<machine> and python examples/sweep.py --synth-reports --write)."""
    assert current_key(machines.PRESETS["t2"]) != current_key(machines.PRESETS["t4"])
    record = json.loads(sweep.RECORD.read_text())
    for figures in record["figures"]:
        synth = figures["synth"]
        if synth.get("yosys_key"):
            params = machines.PRESETS[figures["machine"]]
            assert synth["yosys_key"] == current_key(params), f"{figures['machine']}: stale synthesis record"
