"""make mutants-rtl on the farm (cosim/mutants_rtl/__main__.py grade_all, grade.grade_task): each
mutant is one task; a task on another node writes the mutant's Verilog there first; a task that
never returns is a tool error of its mutant, not a hang of the run."""

from __future__ import annotations

import argparse
import io
import time

from rich.console import Console

from cosim import farm
from cosim.farm import Shared, shipping
from cosim.mutants_rtl import __main__ as cli
from cosim.mutants_rtl import grade, report


def _fake_grade(verilog, steps, simulator, timeout):
    """grade.grade's stand-in (in a forked worker): m2 is caught, m3 hangs, the rest survive."""
    name = verilog.parent.name
    if name == "m3":
        time.sleep(60)
    status = grade.CAUGHT if name == "m2" else grade.SURVIVED
    return grade.Grade(status, step="seeds 100" if status == grade.CAUGHT else "",
                       steps=[s.name for s in steps])


def test_each_mutant_is_a_task_and_a_hung_one_is_a_tool_error(monkeypatch, tmp_path):
    monkeypatch.setattr(grade, "grade", _fake_grade)
    monkeypatch.setattr(cli, "LIMIT_SLACK", 1.0)
    paths = {}
    for ident in ("none", "m1", "m2", "m3", cli.BUS_NONE, "b1"):
        paths[ident] = tmp_path / ident / "ga2_simtop.v"
        paths[ident].parent.mkdir()
        paths[ident].write_text("module ga2_simtop;")
    rows = [report.Row(ident, None) for ident in ("m1", "m2", "m3", "b1")]
    args = argparse.Namespace(seeds="100", stress_n=0, stress_seed=1, bus_stress_n=0, sim="icarus",
                              timeout=1.0, keep=True, engine="local", jobs=2)
    nones = {ident: paths[ident] for ident in ("none", cli.BUS_NONE)}
    bases = cli.grade_all(rows, nones, paths, args, Console(file=io.StringIO()))
    assert {ident: g.status for ident, g in bases.items()} == {"none": grade.SURVIVED,
                                                               cli.BUS_NONE: grade.SURVIVED}
    bus_steps = ["axi seeds 100", "axi long"]                      # the long transfer: bus mutants b02, b16
    assert bases["none"].steps == ["seeds 100", "faults"] and bases[cli.BUS_NONE].steps == bus_steps
    assert [r.grade.status for r in rows] == [grade.SURVIVED, grade.CAUGHT, grade.ERROR, grade.SURVIVED]
    assert rows[2].grade.detail == ["m3: passed its time limit of 2 s; its processes were stopped"]
    assert rows[3].grade.steps == bus_steps                         # a bus mutant: through AXI


def test_a_grading_task_elsewhere_writes_the_mutant_first(monkeypatch, tmp_path):
    made = tmp_path / "made"
    made.mkdir()
    (made / "ga2_simtop.v").write_text("module ga2_simtop; // m7")
    (made / "ga2_ports.json").write_text("{}")
    (made / "icarus").mkdir()                                       # a build beside it: cleaned after
    files = Shared(None, shipping.pack_files(made, ("ga2_simtop.v", "ga2_ports.json")))
    there = tmp_path / "node" / "m7" / "ga2_simtop.v"
    seen = []
    monkeypatch.setattr(grade, "grade", lambda v, steps, sim, timeout: seen.append(v.read_text()) or
                        grade.Grade(grade.SURVIVED))
    work = grade.Work("m7", there, files, (), "icarus", 10.0)
    farm.set_context(None, away=True)
    try:
        assert grade.grade_task(work) == ("m7", grade.Grade(grade.SURVIVED))
    finally:
        farm.set_context(None, away=False)
    assert seen == ["module ga2_simtop; // m7"] and (there.parent / "ga2_ports.json").read_text() == "{}"
