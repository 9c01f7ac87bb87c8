"""cosim/runner.py: the Verilog, the build cache, the errors."""

from __future__ import annotations

import json

import pytest

from cosim import runner
from sim.spec import DEFAULT, Params


def test_default_roots_keep_copies_apart(tmp_path):
    assert runner.default_root(runner.VERILOG) == runner.COSIM_BUILD
    inside = runner.COSIM_BUILD / "mutants" / "x" / "ga2_simtop.v"
    assert runner.default_root(inside) == inside.parent
    elsewhere = runner.default_root(tmp_path / "ga2_simtop.v")
    assert elsewhere.parent == runner.COSIM_BUILD / "other"


def test_verilog_params_from_ports_json(tmp_path):
    (tmp_path / "ga2_simtop.v").write_text("")
    assert runner.verilog_params(tmp_path / "ga2_simtop.v") == DEFAULT
    (tmp_path / "ga2_ports.json").write_text(json.dumps({"params": {"SPAD_WORDS": 256, "EXT_WORDS": 512}}))
    assert runner.verilog_params(tmp_path / "ga2_simtop.v") == Params(SPAD_WORDS=256, EXT_WORDS=512)


def test_unknown_simulator_and_missing_verilog(tmp_path):
    with pytest.raises(ValueError, match="simulator='ghdl': expected one of icarus, verilator"):
        runner.check_simulator("ghdl")
    with pytest.raises(runner.CosimError, match="no Verilog file"):
        runner.fresh_verilog(tmp_path / "none.v")


def test_build_is_cached(icarus, tmp_path):
    # a copy: build/ga2_simtop.v is exported again whenever hw/ changes, maybe by another test
    source = tmp_path / "ga2_simtop.v"
    source.write_bytes(runner.fresh_verilog().read_bytes())
    first = runner.build(icarus, source, root=tmp_path / "builds")
    again = runner.build(icarus, source, root=tmp_path / "builds")
    assert not first.cached and again.cached
    assert (again.directory / "stamp.sha256").read_text().strip() == again.digest
    source.write_text(source.read_text() + "// changed\n")
    assert not runner.build(icarus, source, root=tmp_path / "builds").cached


def test_build_failure_names_the_log(icarus, tmp_path):
    bad = tmp_path / "ga2_simtop.v"
    bad.write_text("module ga2_simtop(input clk);\n  this is not verilog\nendmodule\n")
    with pytest.raises(runner.BuildError, match=r"icarus: building .* failed .*; the log: .*build\.log") as e:
        runner.build(icarus, bad, root=tmp_path / "builds")
    assert (tmp_path / "builds" / "icarus" / "build.log").is_file()
    assert "syntax error" in str(e.value)
