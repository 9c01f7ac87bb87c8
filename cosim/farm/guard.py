"""How every farm runs a task in its worker: within its time limit, leaving no process behind."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

from .base import TaskHung
from .procs import Watchdog, kill_descendants, reaped

GRACE = 10.0
"""Seconds after the limit (and after its processes were stopped) before the task itself is
interrupted (a hang in Python rather than in a simulator)."""


def guarded(fn: Callable[[Any], Any], arg: Any, limit: float | None, name: str) -> Any:
    """``fn(arg)``, stopped at ``limit`` seconds: its descendants (simulators) are killed, and
    after :data:`GRACE` more seconds the task itself is interrupted.

    Raises:
        TaskHung: the limit passed (named after ``name``).
        whatever ``fn`` raises otherwise; on any exception its descendants are killed first.
    """
    with Watchdog(limit) as dog, reaped():
        nudge, previous = None, None
        if limit is not None:
            nudge = threading.Timer(limit + GRACE, os.kill, (os.getpid(), signal.SIGINT))
            nudge.daemon = True
            nudge.start()
            if threading.current_thread() is threading.main_thread() and \
                    signal.getsignal(signal.SIGINT) in (signal.SIG_DFL, signal.SIG_IGN, None):
                # the nudge raises KeyboardInterrupt only where Python handles SIGINT (a local worker
                # leaves it to the system: cosim.farm.local)
                previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            value = fn(arg)
        except BaseException as e:
            if dog.fired:
                raise TaskHung(f"{name}: passed its time limit of {limit:,.0f} s; its processes were "
                               "stopped") from (None if isinstance(e, KeyboardInterrupt) else e)
            raise
        finally:
            if nudge is not None:
                nudge.cancel()
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
    if dog.fired:
        kill_descendants()
        raise TaskHung(f"{name}: passed its time limit of {limit:,.0f} s; its processes were stopped")
    return value
