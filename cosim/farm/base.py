"""What every farm and every task shares (:mod:`cosim.farm`): the farm's interface, a finished
task, the errors of a task that did not finish, shared bytes, and what a task may ask of the
campaign from inside (:func:`report`, :func:`elsewhere`). The farms (:mod:`.local`,
:mod:`.rayfarm`) build on it; :func:`cosim.farm.open_farm` chooses one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CosimError

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
