"""The errors of co-simulation that are not differences from the reference: it could not run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class CosimError(RuntimeError):
    """Co-simulation could not run (as opposed to: it ran and found differences)."""


class SimulatorMissing(CosimError):
    """The simulator is not installed."""


class BuildError(CosimError):
    """The simulator could not build the Verilog; the message names the log."""


class SimulationError(CosimError):
    """The simulation did not produce results; the message names the log."""


@contextmanager
def writing(where: object) -> Iterator[None]:
    """Turn an OSError raised while writing under ``where`` (a read-only or full ``build/``)
    into a CosimError naming the file and what cosim keeps there, not a traceback."""
    try:
        yield
    except OSError as e:
        raise CosimError(f"cannot write {e.filename or where}: {e.strerror or e}; cosim keeps the exported "
                         f"Verilog, the simulators' builds and each launch's files under {where}: make it "
                         "writable (or give --verilog a file elsewhere)") from None
