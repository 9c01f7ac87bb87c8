"""python -m flows.synth: its help, and bad options, parameters and folders refused by name before
any tool runs."""

from __future__ import annotations

import pytest

from flows import synth


def test_help(capsys):
    with pytest.raises(SystemExit) as info:
        synth.main(["--help"])
    assert info.value.code == 0
    assert "ECP5-85F" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--freq", "0"], "--freq: expected a frequency in MHz between 1 and 1000, got '0'"),
    (["--freq", "fast"], "--freq: expected a frequency in MHz between 1 and 1000, got 'fast'"),
    (["--param", "Q=1"], "--param: machine item 'Q=1' is neither NAME=VALUE with NAME one of T, K_MAX"),
    (["--seed", "-2"], "--seed: expected a positive integer, got '-2'"),
    (["--router", "router3"], "--router: invalid choice: 'router3'"),
])
def test_bad_options_are_refused_by_name(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        synth.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_parameters_are_refused_before_any_tool_runs(capsys, tmp_path):
    assert synth.main(["--param", "T=99", "--out", str(tmp_path)]) == 1
    assert "Params.T = 99: must be 1..16" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_parameters_the_rtl_does_not_build_are_refused_before_anything_is_written(capsys, tmp_path):
    out = tmp_path / "synth"
    assert synth.main(["--param", "T=8", "--out", str(out)]) == 1
    assert "Params.LANES = 4: must be at least T = 8" in capsys.readouterr().err
    assert not out.exists()


def test_an_unwritable_output_folder_is_an_error_not_a_traceback(capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert synth.main(["--out", str(blocker / "synth"), "--yosys-only"]) == 1
    assert str(blocker) in capsys.readouterr().err


def test_an_unknown_router_is_refused_before_anything_is_written(tmp_path):
    from sim.spec import DEFAULT
    with pytest.raises(ValueError, match=r"router='router3' must be one of \('router1', 'router2'\)"):
        synth.synthesise(DEFAULT, tmp_path / "synth", router="router3")
    assert not (tmp_path / "synth").exists()
