"""Testing the tests of the issue rule (issue 15, "mutation"): each broken rule of
tests/sim/issue_mutant.py, applied to the reference machine in a subprocess, must make
tests/sim/test_overlap.py fail (its hand-worked cycle counts, or its pairwise restatement of
the rule on random programs); the unbroken rule must pass it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sim.issue_mutant import MUTANTS

ROOT = Path(__file__).resolve().parents[2]


def _run(mutant: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ISSUE_MUTANT": mutant}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "tests.sim.issue_mutant",
                           "-p", "no:cacheprovider", "-p", "no:xdist", "tests/sim/test_overlap.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_unbroken_rule_passes():
    done = _run("")
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_broken_rule_is_caught(mutant):
    done = _run(mutant)
    assert done.returncode == 1 and " failed" in done.stdout, f"{mutant}: not caught\n{done.stdout[-2000:]}"
