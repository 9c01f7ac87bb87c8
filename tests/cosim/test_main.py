"""cosim/__main__.py: the command line."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from cosim import mutants, runner
from cosim.__main__ import _bare_waves, main, switch
from cosim.verilog import COSIM_BUILD as BUILDS
from cosim.verilog import ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    """``python -m cosim args`` in this process: main() as cosim/__main__.py calls it, argparse's
    exit caught, the output captured (a new interpreter for each refusal took 0.8 s;
    test_help_documents_the_commands runs the module once as a user does)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:
            code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1   # as Python exits
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def test_help_documents_the_commands():
    done = subprocess.run([sys.executable, "-m", "cosim", "--help"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0
    for text in ("seeds", "stress", "bench", "build", "mutants", "build/cosim/<sim>/", "exits with 0",
                 "--jobs"):
        assert text in done.stdout, text
    seeds = run("seeds", "--help").stdout
    assert "--sim {icarus,verilator,both}" in seeds and "--waves" in seeds
    assert f"--mutant {{{','.join(sorted(mutants.MUTANTS))}}}" in seeds    # every mutant, from the list
    stress = run("stress", "--help").stdout
    assert "--seed" in stress and "--resume" in stress and "--campaign DIR" in stress
    assert "--length" in run("bench", "--help").stdout


def test_mutants_are_listed(capsys):
    assert main(["mutants"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"rq-round +hw/requant\.py \(Requantizer, stage 7\): truncates", lines[0])
    assert re.match(r"dma-late +hw/dma\.py \(DMA, its done output\): raises done one cycle after", lines[1])
    assert len(lines) == len(mutants.MUTANTS)
    assert len({line.index(" hw/") for line in lines}) == 1          # one column


def test_bad_seeds_are_refused():
    done = run("seeds", "9-3")
    assert done.returncode == 2 and "argument SEEDS: '9-3' in '9-3' is not N or N-M" in done.stderr


def test_help_is_plain_text():
    for args in (["--help"], ["seeds", "--help"], ["stress", "--help"]):
        text = run(*args).stdout
        for markup in ("``", ":func:", ":mod:", ":class:", ":meth:"):
            assert markup not in text, (args, markup)
    seeds = run("seeds", "--help").stdout
    assert "1,000,000" in seeds and "--waves [on|off]" in seeds


@pytest.mark.parametrize(("args", "message"), [
    (["stress", "--n", "-1"], "argument --n: expected a whole number of at least 1, got '-1'"),
    (["stress", "--n", ""], "argument --n: expected a whole number of at least 1, got ''"),
    (["stress", "--n", "2000000"], "argument --n: 2,000,000 programs in one run is more than the 1,000,000"),
    (["stress", "--seed", "-3"], "argument --seed: expected a whole number of at least 0, got '-3'"),
    (["stress", "--jobs", "0"], "argument --jobs: expected a whole number of at least 1, got '0'"),
    (["seeds", ""], "argument SEEDS: empty; give N, N-M or a comma-separated list of those"),
    (["seeds", "1-10000000"], "argument SEEDS: 10,000,000 seeds in one run is more than the 1,000,000"),
    (["seeds", "--waves=maybe"], "argument --waves: expected 1, yes, true or on (or 0, no, false, off), "
                                 "got 'maybe'"),
])
def test_bad_options_are_named_under_their_command(args, message):
    done = run(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert f"usage: python -m cosim {args[0]} " in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["seeds", "100", "--param", "T=0"], "error: Params.T = 0: must be a positive int (machine: T=0)"),
    (["stress", "--n", "3", "--param", "T=8"], "error: Params.LANES = 4: must be at least T = 8"),
    (["seeds", "100", "--param", "SPAD_WORDS=3000"],
     "error: Params.SPAD_WORDS = 3000: must be a power of two from LANES = 4 to 65536"),
    (["build", "--param", "t8 EXT_WORDS=131072"],
     "error: Params.EXT_WORDS = 131072: must be a power of two from LANES = 8 to 65536"),
    (["seeds", "100", "--param", "t2", "--verilog", "x.v"],
     "error: --param t2 with --verilog: a Verilog file runs the machine of its ga2_ports.json"),
])
def test_a_machine_the_generator_does_not_build_is_refused_before_anything_runs(args, message):
    """Refused with exit status 2 before any export, build or simulation: nothing is written."""
    done = run(*args)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert done.stdout == "" and "exporting" not in done.stderr


def test_the_rerun_command_names_the_machine():
    import argparse

    from cosim.__main__ import _options

    args = argparse.Namespace(param=["t8", "SPAD_WORDS=2048"], verilog=None, mutant="rq-round")
    assert _options(args) == ["--param", "t8 SPAD_WORDS=2048", "--mutant", "rq-round"]


def test_waves_values():
    values = ("1", "yes", "TRUE", "On", "0", "no", "false", "OFF")
    assert [switch(v) for v in values] == [True] * 4 + [False] * 4
    assert _bare_waves(["seeds", "--waves", "100-111"]) == ["seeds", "--waves=on", "100-111"]
    assert _bare_waves(["seeds", "--waves", "yes"]) == ["seeds", "--waves", "yes"]
    assert _bare_waves(["stress", "--waves"]) == ["stress", "--waves=on"]


def _make(*variables: str) -> list[str]:
    """The python command make would run (make -n), as arguments."""
    done = subprocess.run(["make", "-n", "--no-print-directory", *variables], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    line = next(ln for ln in done.stdout.splitlines() if " -m cosim " in ln)
    return shlex.split(line)[3:]


@pytest.mark.parametrize(("variables", "refused"), [
    (("cosim", "SEEDS="), "argument SEEDS: empty; give N, N-M"),
    (("cosim", "WAVES=maybe"), "argument --waves: expected 1, yes, true or on (or 0, no, false, off)"),
    (("stress", "N="), "argument --n: expected a whole number of at least 1, got ''"),
    (("stress", "N=-1"), "argument --n: expected a whole number of at least 1, got '-1'"),
    (("cosim", "SEEDS=1'2"), "argument SEEDS: \"1'2\" in \"1'2\" is not N or N-M"),
    (("stress", "SEED=it's"), "argument --seed: expected a whole number of at least 0, got \"it's\""),
])
def test_make_passes_bad_variables_on_to_be_refused(variables, refused):
    args = _make(*variables)
    assert args[0] == ("seeds" if variables[0] == "cosim" else "stress")
    done = run(*args)
    assert done.returncode == 2 and refused in done.stderr and "usage: python -m cosim" in done.stderr


@pytest.mark.parametrize("value", ["1'2", "'", "a b", '"x"', "`id`", "1;echo hi", "\\", "*"])
def test_make_passes_any_value_as_one_word(value):
    """Quotes, spaces and shell syntax in a variable reach cosim as they were typed (cosim then
    refuses them with its usage), never as a shell syntax error or a command."""
    assert _make("cosim", f"SEEDS={value}", f"SIM={value}", f"JOBS={value}") == \
        ["seeds", value, "--sim", value, "--jobs", value]
    assert _make("stress", f"N={value}", f"WAVES={value}")[:3] == ["stress", "--n", value]
    assert _make("stress", f"WAVES={value}")[-1] == f"--waves={value}"


def test_make_passes_the_machine_on():
    assert _make("cosim", "PARAMS=t8")[-2:] == ["--param", "t8"]
    assert _make("stress", "PARAMS=T=8 LANES=8")[-2:] == ["--param", "T=8 LANES=8"]
    assert "--param" not in _make("cosim") and "--param" not in _make("stress")
    done = run(*_make("cosim", "PARAMS=T=8 LANES=5"))
    assert done.returncode == 2 and "error: Params.LANES = 5: must be one of 4, 8, 16" in done.stderr


def test_make_waves_values():
    assert _make("cosim", "WAVES=yes")[-1] == "--waves=yes"
    assert _make("stress", "WAVES=1")[-1] == "--waves=1"
    assert not any(a.startswith("--waves") for a in _make("cosim"))
    assert _make("cosim", "SEEDS=3,7")[:2] == ["seeds", "3,7"]
    assert _make("cosim", "SEEDS=1 2")[:2] == ["seeds", "1 2"]
    assert _make("stress", "RESUME=1", "JOBS=1")[-3:] == ["--resume", "--jobs", "1"]
    assert "--resume" not in _make("stress")


@pytest.mark.rtl
def test_ctrl_c_stops_the_workers_and_says_how_to_resume(icarus, tmp_path):
    """The terminal's Ctrl-C reaches the main process (workers are process groups of their
    own); it stops every worker and simulator at once and exits with 130."""
    campaign = tmp_path / "campaign"
    command = [sys.executable, "-m", "cosim", "stress", "--n", "300", "--seed", "7", "--sim", icarus,
               "--campaign", str(campaign), "--engine", "local"]

    def job() -> None:                              # as a shell starts a foreground job
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setpgrp()

    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=job)
    deadline = time.monotonic() + 120
    while not list(campaign.parent.glob(f".{campaign.name}.lock")) and time.monotonic() < deadline:
        time.sleep(0.2)
    workers, folders = [], []
    while not folders and time.monotonic() < deadline:      # workers forked, simulators launched
        time.sleep(0.5)
        workers = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True,
                                 text=True).stdout.split()
        folders = [f for pid in workers for f in runner.run_folders(BUILDS / icarus, int(pid))]
    assert folders, "no launch folder appeared"
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, out + err
    assert "interrupted: the tasks, their workers and their simulators are stopped" in err
    assert "Traceback" not in err, err                # no worker caught it and went on
    left = subprocess.run(["pgrep", "-f", str(campaign)], capture_output=True, text=True).stdout.split()
    assert left == [], left
    for pid in workers:                               # each worker's group: it and its simulator
        deadline = time.monotonic() + 10              # a signalled simulator takes a moment to exit
        while subprocess.run(["pgrep", "-g", pid], capture_output=True).returncode == 0:
            assert time.monotonic() < deadline, f"worker group {pid} still running 10 s after Ctrl-C"
            time.sleep(0.2)
        assert runner.run_folders(BUILDS / icarus, int(pid)) == [], pid
