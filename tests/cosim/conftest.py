"""Shared fixtures of the cosim tests: the simulators, each skipped when it is not installed.

The RTL tests use the cached builds in build/cosim/ (the first run of a fresh clone builds
them: a few seconds for Icarus, about half a minute for Verilator, which is why the Verilator
cases are also marked slow).
"""

from __future__ import annotations

import pytest

from cosim import runner

SIMULATORS = [pytest.param("icarus", marks=pytest.mark.rtl),
              pytest.param("verilator", marks=[pytest.mark.rtl, pytest.mark.slow])]


@pytest.fixture(params=SIMULATORS)
def simulator(request) -> str:
    """Each simulator in turn (skipped when missing)."""
    try:
        runner.check_simulator(request.param)
    except runner.SimulatorMissing as e:
        pytest.skip(str(e))
    return request.param


@pytest.fixture
def icarus() -> str:
    try:
        runner.check_simulator("icarus")
    except runner.SimulatorMissing as e:
        pytest.skip(str(e))
    return "icarus"
