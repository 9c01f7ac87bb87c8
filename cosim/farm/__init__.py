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
    stops it at the end. Tasks that lose their worker or node are retried
    (:data:`cosim.farm.base.MAX_RETRIES`).
``local``
    a pool of forked worker processes on this machine (:mod:`.local`): no start-up cost.
``auto`` (the default)
    Ray when ``RAY_ADDRESS`` is set or the campaign's estimated work is :data:`RAY_FROM` seconds
    or more; the local pool for a small run (a warm ``make cosim SEEDS=100-111`` takes about 7 s,
    a local Ray instance costs about 7 s to start and stop on a 2-core machine).

Every farm says where it runs (:attr:`Farm.where`): the campaigns print it. What the farms and
the tasks share (:class:`Farm`, :class:`Done`, the task errors, :func:`report`) is in
:mod:`cosim.farm.base`, re-exported here.
"""

from __future__ import annotations

import os

from ..errors import CosimError
from .base import (  # noqa: F401 (the farm's names, re-exported)
    MAX_RETRIES,
    Done,
    Farm,
    Shared,
    TaskError,
    TaskHung,
    TaskLost,
    elsewhere,
    report,
    set_context,
)

ENGINES = ("auto", "ray", "local")
RAY_FROM = 60.0
"""Seconds of estimated work (one worker's) from which ``auto`` starts Ray."""


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
