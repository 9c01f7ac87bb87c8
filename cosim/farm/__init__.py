"""The engine every campaign runs on: a local pool of processes, or Ray (on this machine or a cluster).

A campaign (stress, seeds, the fault sweep, ``make mutants-rtl``, the studies' RTL runs, the
sweep's synthesis runs) is a list of independent tasks: a module-level function and a small
argument each. It hands them to a :class:`Farm` (:func:`open_farm`) and collects their results
as they finish, in any order; what it makes of them does not depend on where or in which order
they ran.

Which farm (``--engine``, make's ``ENGINE=``):

``ray``
    Ray. With ``RAY_ADDRESS=host:port`` (Ray's own convention) the campaign joins that cluster
    (``ray start --head`` on one machine, ``ray start --address=...`` on the others:
    docs/cluster.md); without it ``ray.init()`` starts a private instance inside the process and
    stops it at the end. Tasks that lose their worker or node are retried (:data:`MAX_RETRIES`).
``local``
    a pool of forked worker processes on this machine (:mod:`.local`): no start-up cost.
``auto`` (the default)
    Ray when ``RAY_ADDRESS`` is set or the campaign's estimated work is :data:`RAY_FROM` seconds
    or more; the local pool for a small run (a warm ``make cosim SEEDS=100-111`` takes about 7 s,
    a local Ray instance costs about 7 s to start and stop on a 2-core machine).

Every farm says where it runs (:attr:`Farm.where`): the campaigns print it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CosimError

ENGINES = ("auto", "ray", "local")
RAY_FROM = 60.0
"""Seconds of estimated work (one worker's) from which ``auto`` starts Ray."""
MAX_RETRIES = 3
"""Times Ray runs a task again whose worker process or node died under it."""


class TaskError(CosimError):
    """A task that did not finish: the message names it and why."""


class TaskHung(TaskError):
    """A task that passed its time limit; what it ran (its simulator) was stopped."""


class TaskLost(TaskError):
    """A task whose worker or node died under it, more often than it may be retried."""


@dataclass
class Done:
    """A finished task: its ``value``, or the ``error`` it raised (a :class:`TaskError` when it
    never finished)."""

    key: Any
    value: Any = None
    error: BaseException | None = None


class Farm:
    """Where a campaign's tasks run (a context manager; :func:`open_farm` makes one).

    Attributes:
        engine: ``local`` or ``ray``.
        where: a phrase for the output: this machine or the cluster's address, and the workers.
        workers: how many tasks run at the same time.
    """

    engine = ""
    where = ""
    workers = 1

    def submit(self, key: Any, fn: Callable[[Any], Any], arg: Any, *, limit: float | None = None) -> None:
        """Start ``fn(arg)`` in a worker; ``key`` names it in :meth:`wait`'s :class:`Done`.
        ``limit``: seconds it may run; past them it is stopped and fails with :class:`TaskHung`."""
        raise NotImplementedError

    def wait(self, timeout: float) -> list[Done]:
        """The tasks that finished since the last call (waiting up to ``timeout`` s for one)."""
        raise NotImplementedError

    def messages(self) -> list[Any]:
        """What the tasks said with :func:`report` since the last call, in order per task."""
        raise NotImplementedError

    def share(self, data: bytes) -> Shared:
        """Put bytes where every worker can :meth:`Shared.fetch` them (once, for every task)."""
        return Shared(None, data)

    @property
    def running(self) -> int:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop every task now and every process it started (Ctrl-C)."""
        raise NotImplementedError

    def close(self) -> None:
        """Let the workers go (after the last task)."""

    def __enter__(self) -> Farm:
        return self

    def __exit__(self, kind, value, tb) -> None:
        if kind is not None:
            self.stop()
        self.close()


@dataclass(frozen=True)
class Shared:
    """Bytes shared with the workers: a reference into Ray's object store (in a list, so that Ray
    does not fetch it for every task), or the bytes themselves on a local farm."""

    ref: Any
    data: bytes | None = None

    def fetch(self) -> bytes:
        if self.data is not None:
            return self.data
        import ray

        return ray.get(self.ref[0])


# --------------------------------------------------------------------------- inside a task

_reporter: Callable[[Any], None] | None = None
_elsewhere = False


def report(message: Any) -> None:
    """Send a message to the campaign (progress), from inside a task; nothing outside one."""
    if _reporter is not None:
        _reporter(message)


def elsewhere() -> bool:
    """Inside a task: whether it runs on another node than the campaign's own (whose files,
    its simulator builds, this node does not have)."""
    return _elsewhere


def set_context(reporter: Callable[[Any], None] | None, away: bool) -> None:
    """Called by a farm's worker before a task (:func:`report`, :func:`elsewhere`)."""
    global _reporter, _elsewhere
    _reporter, _elsewhere = reporter, away


# --------------------------------------------------------------------------- choosing one


def choose(engine: str, estimate: float) -> str:
    """``ray`` or ``local`` for ``--engine`` (see the module docstring)."""
    if engine not in ENGINES:
        raise CosimError(f"--engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if engine != "auto":
        return engine
    return "ray" if os.environ.get("RAY_ADDRESS") or estimate >= RAY_FROM else "local"


def open_farm(engine: str = "auto", *, jobs: int | None = None, estimate: float = 0.0,
              tasks: int | None = None) -> Farm:
    """A farm for a campaign.

    Args:
        engine: ``auto``, ``ray`` or ``local`` (:func:`choose`).
        jobs: workers on this machine (default: one per core); a cluster has its own.
        estimate: the campaign's work in seconds of one worker (for ``auto``).
        tasks: how many tasks there are (a local pool starts no more workers than that).

    Raises:
        CosimError: an unknown engine, or Ray cannot start or reach its cluster (the message
            says which address and what to check).
    """
    if choose(engine, estimate) == "ray":
        from .rayfarm import RayFarm

        return RayFarm(jobs)
    from .local import LocalFarm

    return LocalFarm(jobs, tasks)
