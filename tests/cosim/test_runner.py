"""cosim/runner.py: the build cache and its errors; cosim/simulators.py: what the builds are made with."""

from __future__ import annotations

import shutil

import pytest

from cosim import runner, simulators
from cosim.verilog import COSIM_BUILD, VERILOG, fresh_verilog
from flows.memmap import PORTS_JSON, SIMTOP
from sim.spec import DEFAULT


def test_default_roots_keep_copies_apart(tmp_path):
    assert runner.default_root(VERILOG) == COSIM_BUILD
    inside = COSIM_BUILD / "mutants" / "x" / f"{SIMTOP}.v"
    assert runner.default_root(inside) == inside.parent
    elsewhere = runner.default_root(tmp_path / f"{SIMTOP}.v")
    assert elsewhere.parent == COSIM_BUILD / "other"


def test_unknown_simulator():
    with pytest.raises(ValueError, match="simulator='ghdl': expected one of icarus, verilator"):
        simulators.check_simulator("ghdl")


def test_the_verilator_model_is_built_lean_and_fast():
    """No --public-flat-rw (every signal reachable through VPI: 5.5 times slower), -O2 for the
    model and Verilator's library, the harness's clock in the model (--timing)."""
    assert issubclass(simulators.LeanVerilator, simulators.Verilator)
    assert simulators.PUBLIC_FLAT_RW not in simulators.VERILATOR_ARGS
    assert "--timing" in simulators.VERILATOR_ARGS
    assert {"OPT_FAST=-O2", "OPT_GLOBAL=-O2"} <= set(simulators.verilator_makeflags().split())


def _copy(tmp_path):
    """A copy of the Verilog and its description (build/ga2_simtop.v may be exported again
    meanwhile by another test)."""
    source = tmp_path / f"{SIMTOP}.v"
    fresh = fresh_verilog(params=DEFAULT)
    source.write_bytes(fresh.read_bytes())
    shutil.copyfile(fresh.with_name(PORTS_JSON), tmp_path / PORTS_JSON)
    return source


def test_build_is_cached(icarus, tmp_path):
    source = _copy(tmp_path)
    first = runner.build(icarus, source, root=tmp_path / "builds")
    again = runner.build(icarus, source, root=tmp_path / "builds")
    assert not first.cached and again.cached
    assert (again.directory / "stamp.sha256").read_text().strip() == again.digest
    source.write_text(source.read_text() + "// changed\n")
    assert not runner.build(icarus, source, root=tmp_path / "builds").cached
    (again.directory / runner.PRODUCT[icarus]).unlink()      # the stamp intact, sim.vvp gone
    rebuilt = runner.build(icarus, source, root=tmp_path / "builds")
    assert not rebuilt.cached and (rebuilt.directory / "sim.vvp").is_file()
    assert runner.build(icarus, source, root=tmp_path / "builds").cached


def test_build_failure_names_the_log(icarus, tmp_path):
    bad = _copy(tmp_path)
    bad.write_text(bad.read_text() + "module broken(input clk);\n  this is not verilog\nendmodule\n")
    with pytest.raises(runner.BuildError, match=r"icarus: building .* failed .*; the log: .*build\.log") as e:
        runner.build(icarus, bad, root=tmp_path / "builds")
    assert (tmp_path / "builds" / "icarus" / "build.log").is_file()
    assert "syntax error" in str(e.value)


@pytest.mark.slow
def test_the_verilator_build_command(tmp_path):
    """The command line Verilator recorded in the cached build: cocotb_tools' command, without
    --public-flat-rw."""
    try:
        simulators.check_simulator("verilator")
    except simulators.SimulatorMissing as e:
        pytest.skip(str(e))
    built = runner.build("verilator", fresh_verilog(params=DEFAULT))
    recorded = (built.directory / "Vtop__verFiles.dat").read_text(errors="replace")
    command = next(line for line in recorded.splitlines() if line.startswith("C ") and " --vpi " in line)
    assert " --timing " in command and simulators.PUBLIC_FLAT_RW not in command


def test_each_machine_builds_in_its_own_folder():
    """build/machines/<tag>/ga2_simtop.v builds in build/machines/<tag>/cosim, a mutant of it in
    its own folder, and the default machine's builds stay in build/cosim."""
    machines = runner.BUILD / "machines"
    assert runner.default_root(VERILOG) == COSIM_BUILD
    assert runner.default_root(machines / "T2" / "ga2_simtop.v") == (machines / "T2" / "cosim").resolve()
    mutant = machines / "T2" / "cosim" / "mutants" / "rq-round" / "ga2_simtop.v"
    assert runner.default_root(mutant) == mutant.parent.resolve()
