"""The errors of co-simulation that are not differences from the reference: it could not run."""

from __future__ import annotations


class CosimError(RuntimeError):
    """Co-simulation could not run (as opposed to: it ran and found differences)."""


class SimulatorMissing(CosimError):
    """The simulator is not installed."""


class BuildError(CosimError):
    """The simulator could not build the Verilog; the message names the log."""


class SimulationError(CosimError):
    """The simulation did not produce results; the message names the log."""
