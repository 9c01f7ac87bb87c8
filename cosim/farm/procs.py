"""The processes a task started (its simulators), found and stopped without knowing their names.

A campaign's task runs a simulator as a child process (cocotb_tools' runner starts it with
``subprocess.run``, so the task holds no handle on it). When the task must stop (it passed its
time limit, or the run was interrupted), the processes to stop are its descendants: found in
``/proc`` (Linux) by their parent ids, stopped by their process ids, never by a name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """Every process's parent id, from /proc/<pid>/stat (a process gone meanwhile is left out)."""
    out = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
        out[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
    return out


def descendants(pid: int | None = None) -> list[int]:
    """The process ids below ``pid`` (default: this process), children before grandchildren."""
    root = os.getpid() if pid is None else pid
    parents = _parents()
    out, frontier = [], [root]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        out += below
        frontier = below
    return out


def kill_descendants(pid: int | None = None, sig: int = signal.SIGKILL) -> list[int]:
    """Send ``sig`` to every descendant of ``pid`` (default: this process); their ids."""
    found = descendants(pid)
    for child in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, sig)
    return found


class Watchdog:
    """Stops this process's descendants (its simulators) when ``limit`` seconds pass before
    :meth:`close` (a context manager); :attr:`fired` says whether it did.

    Args:
        limit: seconds; None: never.
    """

    def __init__(self, limit: float | None):
        self.limit = limit
        self.fired = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def _watch(self) -> None:
        if not self._done.wait(self.limit):
            self.fired = True
            while not self._done.wait(0.5):   # the task may start another simulator meanwhile
                kill_descendants()
            kill_descendants()

    def __enter__(self) -> Watchdog:
        if self.limit is not None:
            self._thread = threading.Thread(target=self._watch, name="farm-watchdog", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


@contextlib.contextmanager
def reaped() -> Iterator[None]:
    """On an interruption (KeyboardInterrupt, SystemExit: Ray's cancel, a signal) stop this
    process's descendants before passing it on, so no simulator outlives its task."""
    try:
        yield
    except BaseException:
        kill_descendants()
        raise


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """Wait up to ``seconds`` for the processes to end; those still there."""
    deadline = time.monotonic() + seconds
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if (PROC / str(p)).exists() and not _zombie(p)]
        if left:
            time.sleep(0.05)
    return left


def _zombie(pid: int) -> bool:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"
