"""The local farm: a pool of forked worker processes on this machine, for small campaigns.

It starts in milliseconds (a local Ray instance costs seconds), so ``--engine auto`` takes it
for a run of less than a minute's work (cosim.farm.RAY_FROM). Each worker is a process group of
its own: Ctrl-C reaches the campaign's process only, which stops every worker and the simulator
it runs as a whole (:meth:`LocalFarm.stop`). Workers are forked before the campaign starts any
thread (its simulator builds run in threads).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from .base import Done, Farm, set_context
from .guard import guarded
from .procs import wait_gone

STOP_WAIT = 5.0
"""Seconds to wait for the stopped workers to exit."""

_queue: Any = None


def _initialise(queue) -> None:
    """A worker's start: its own process group, the default action for SIGINT and SIGTERM (a
    forked worker has the campaign's handlers, which raise KeyboardInterrupt: concurrent.futures
    would catch it and go on with the next task), and the message queue."""
    global _queue
    os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _queue = queue
    set_context(_queue.put, away=False)


def _run(fn, arg, limit, name):
    return guarded(fn, arg, limit, name)


def workers_for(tasks: int | None, jobs: int | None = None) -> int:
    """Worker processes: ``jobs`` (default: one per core), never more than there are tasks."""
    n = jobs or os.cpu_count() or 1
    return max(1, min(n, tasks)) if tasks is not None else max(1, n)


class LocalFarm(Farm):
    """A pool of ``jobs`` forked workers (default: one per core, at most ``tasks``)."""

    engine = "local"

    def __init__(self, jobs: int | None = None, tasks: int | None = None):
        self.workers = workers_for(tasks, jobs)
        self.where = f"this machine, a local pool of {self.workers} worker process" + \
            ("es" if self.workers != 1 else "")
        context = multiprocessing.get_context("fork")
        self.queue = context.Queue()
        self.pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_initialise,
                                        initargs=(self.queue,))
        self.pool.submit(int).result()      # the first submit forks every worker
        self.futures: dict[Future, Any] = {}
        self.pids = [p.pid for p in multiprocessing.active_children()]

    def submit(self, key, fn, arg, *, limit=None) -> None:
        self.futures[self.pool.submit(_run, fn, arg, limit, str(key))] = key

    @property
    def running(self) -> int:
        return len(self.futures)

    def wait(self, timeout: float) -> list[Done]:
        if not self.futures:
            return []
        done, _ = wait(self.futures, timeout=timeout, return_when=FIRST_COMPLETED)
        out = []
        for future in done:
            key = self.futures.pop(future)
            error = future.exception()
            out.append(Done(key, None if error else future.result(), error))
        return out

    def messages(self) -> list[Any]:
        out = []
        while True:
            try:
                out.append(self.queue.get_nowait())
            except Exception:   # queue.Empty, or a queue closed at shutdown
                return out

    def stop(self) -> None:
        """Stop every worker and what it runs (each worker is a process group) now."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        children = multiprocessing.active_children()
        for child in children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)
        for child in children:
            child.join(STOP_WAIT)
        wait_gone([c.pid for c in children], STOP_WAIT)
        self.futures.clear()

    def close(self) -> None:
        self.pool.shutdown()
