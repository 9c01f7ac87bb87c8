"""flows/synth/parse.py and report.py: the critical path in a few words, and the report in Markdown."""

from __future__ import annotations

from flows import synth


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


def test_the_report_names_the_router_and_what_the_carry_rewrite_saved():
    report = synth.Report(
        command="python -m flows.synth", params={"T": 8},
        device={"part": "LFE5U-85F", "speed": 6, "package": "CABGA381"}, freq_target=110.0,
        seed=1, router="router2", versions={}, yosys={"mapper": "abc", "fallback": ""}, utilisation={},
        blocks={}, memories={}, fmax=51.25,
        carries=True, carry_chains={"chains": 3, "left": 1, "cells_before": 10, "cells_after": 12,
                                    "packer_before": [4, 4], "packer_after": [1, 0]})
    text = synth.markdown(report)
    assert "**Fmax 51.2 MHz** (target 110 MHz, NOT met; nextpnr seed 1, router2)." in text
    # (10 + 8) - (12 + 1) = 5 cells, two logic cells each
    assert ("Carry chains (flows/synth/carries.py): 3 of 4 take their carry-in and carry-out in their own "
            "halves; nextpnr adds 1 feed-in and feed-out cells rather than 8: 10 logic cells fewer.") in text
