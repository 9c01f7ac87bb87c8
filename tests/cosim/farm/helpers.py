"""Tasks for the farm tests, in a module of their own so that Ray's workers import them by name."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from cosim import stress
from cosim.pool import Made


def crash_once(marker: str) -> str:
    """Kill this worker process the first time (no marker yet), return "ran" the next."""
    path = Path(marker)
    if not path.exists():
        path.write_text(str(os.getpid()))
        os._exit(1)
    return "ran"


def always_crash(_: object) -> None:
    os._exit(1)


def sleeping_child(pid_file: str) -> None:
    """Start a child that sleeps a minute (a hung simulator), note its id, wait for it."""
    child = subprocess.Popen(["sleep", "60"])
    Path(pid_file).write_text(str(child.pid))
    child.wait()


def stress_chunk_crashing_once(arg: tuple[str, tuple[int, int, None]], params) -> Made:
    """stress.make_chunk, but the worker of the chunk whose marker is missing dies first."""
    marker, inner = arg
    if marker and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        time.sleep(0.5)
        os._exit(1)
    return stress.make_chunk(inner, params)


def exit_status(code: int) -> int:
    """The exit status of a child that exits with ``code``, as this worker sees it."""
    import sys

    return subprocess.run([sys.executable, "-c", f"import sys; sys.exit({code})"]).returncode
