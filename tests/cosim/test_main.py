"""cosim/__main__.py: the command line."""

from __future__ import annotations

import subprocess
import sys

from cosim import runner
from cosim.__main__ import main


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cosim", *args], capture_output=True, text=True,
                          cwd=runner.ROOT, timeout=120)


def test_help_documents_the_commands():
    done = run("--help")
    assert done.returncode == 0
    for text in ("seeds", "stress", "build", "mutants", "build/cosim/<sim>/", "exits with 0"):
        assert text in done.stdout, text
    seeds = run("seeds", "--help").stdout
    assert "--sim {icarus,verilator,both}" in seeds and "--waves" in seeds and "--mutant {rq-round}" in seeds
    assert "--seed" in run("stress", "--help").stdout


def test_mutants_are_listed(capsys):
    assert main(["mutants"]) == 0
    assert capsys.readouterr().out.startswith("rq-round   hw/requant.py (Requantizer, stage 6): truncates")


def test_bad_seeds_are_refused():
    done = run("seeds", "9-3")
    assert done.returncode == 2 and "'9-3' in '9-3' is not N or N-M" in done.stderr
