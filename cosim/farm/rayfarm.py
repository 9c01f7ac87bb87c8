"""The Ray farm: tasks on a local Ray instance, or on the cluster at ``RAY_ADDRESS``.

Each task is a Ray task of one CPU that Ray runs again when its worker process or its node dies
(``max_retries``: cosim.farm.MAX_RETRIES); an exception the task itself raises is its result,
never retried (the same programs fail the same way). Progress messages go through a small
actor (:class:`Mailbox`) that the campaign empties as it polls. A task checks first that its
node runs the campaign's own sources (:func:`code_digest`): a node on another commit would give
other programs or another machine.

Without ``RAY_ADDRESS`` the instance is private to the campaign: ``ray.init()`` starts it with
one worker per core (``--jobs``), a small object store and no dashboard; it stops with the
campaign. Ctrl-C cancels every task (its simulator is killed: cosim.farm.procs), then forces
those that did not stop, then stops the instance.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any

from ..errors import CosimError
from .base import MAX_RETRIES, Done, Farm, Shared, TaskError, TaskLost, set_context
from .guard import guarded

ROOT = Path(__file__).resolve().parents[2]
CODE = ("sim", "compiler", "hw", "flows", "cosim")
"""The packages whose sources every node must share with the campaign."""
OBJECT_STORE = 512 * 2**20
"""Bytes of the private instance's object store (the shipped simulator builds are a few MB)."""
STOP_WAIT = 5.0
"""Seconds the cancelled tasks get to stop their simulators before they are forced."""
LOCAL_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}
"""Set for a private instance before it starts (a cluster's are set by whoever starts it). Not
``RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper``: it makes Ray's processes,
the campaign's own included, ignore SIGCHLD, so that every subprocess they wait for exits
"with status 0" (a mutant's failing step would read as a pass); the tasks stop their own
simulators instead (cosim.farm.procs)."""


@functools.cache
def code_digest(root: Path = ROOT) -> str:
    """SHA-256 over the path and content of every ``.py`` file of :data:`CODE` (of ``root``)."""
    h = hashlib.sha256()
    for folder in CODE:
        for path in sorted((root / folder).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _remote():
    """The remote function and the mailbox actor class (defined once Ray is imported)."""
    import ray

    @ray.remote(num_cpus=0)
    class Mailbox:
        def __init__(self):
            self.items: list = []

        def put(self, item) -> None:
            self.items.append(item)

        def take(self) -> list:
            out, self.items = self.items, []
            return out

    @ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)
    def execute(fn, arg, limit, name, mailbox, home, code):
        node = ray.get_runtime_context().get_node_id()
        if code != code_digest():
            raise TaskError(f"{name}: node {node[:12]} runs other sources than the campaign (their "
                            f"digest {code_digest()[:12]}, the campaign's {code[:12]}): check out the same "
                            "commit on every node (docs/cluster.md)")
        set_context(lambda message: mailbox.put.remote(message), away=node != home)
        return guarded(fn, arg, limit, name)

    return Mailbox, execute


def _init(ray, options: dict) -> None:
    """``ray.init`` with SIGINT ignored while it starts its processes (which keep ignoring it): the
    terminal's Ctrl-C then reaches the campaign alone, which stops the tasks and the instance in
    order (were the instance's raylet to die of it first, Ray would end the campaign's process
    at once, with exit status 0)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        ray.init(**options)
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ray.init(**options)
    finally:
        signal.signal(signal.SIGINT, previous)


class RayFarm(Farm):
    """Ray: the cluster at ``RAY_ADDRESS``, else a private instance of ``jobs`` workers
    (default one per core).

    Raises:
        CosimError: Ray is missing, or the cluster cannot be reached.
    """

    engine = "ray"

    def __init__(self, jobs: int | None = None):
        try:
            import ray
            import ray.util.scheduling_strategies
        except ImportError:
            raise CosimError("--engine ray: Ray is not installed (make setup installs it)") from None
        self.address = os.environ.get("RAY_ADDRESS", "")
        options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        if not self.address:
            for name, value in LOCAL_ENV.items():
                os.environ.setdefault(name, value)
            options |= {"num_cpus": jobs or os.cpu_count() or 1, "include_dashboard": False,
                        "object_store_memory": OBJECT_STORE}
            # its notice that the private instance has token authentication on (Ray's default)
            logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        self.own = not ray.is_initialized()     # else: the caller's Ray (a notebook, a test), kept
        try:
            if self.own:
                _init(ray, options)
        except Exception as e:
            where = f"the cluster at RAY_ADDRESS={self.address}" if self.address else "a local instance"
            raise CosimError(f"Ray could not start or reach {where}: {type(e).__name__}: {e} (is the head "
                             "started, `ray start --head`? docs/cluster.md)") from None
        self.ray = ray
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        if self.address:
            self.where = f"the Ray cluster at {self.address}: {nodes} node{'s' if nodes != 1 else ''}, " \
                         f"{self.workers} workers"
        else:
            self.where = f"this machine, a local Ray instance of {self.workers} worker" + \
                ("s" if self.workers != 1 else "")
        Mailbox, self.execute = _remote()
        self.home = ray.get_runtime_context().get_node_id()
        # on this machine's node: a node lost mid-campaign must not take the progress with it
        here = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(self.home, soft=False)
        self.mailbox = Mailbox.options(scheduling_strategy=here).remote()
        self.code = code_digest()
        self.refs: dict[Any, Any] = {}
        self.pids: list[int] = []

    def submit(self, key, fn, arg, *, limit=None) -> None:
        ref = self.execute.remote(fn, arg, limit, str(key), self.mailbox, self.home, self.code)
        self.refs[ref] = key

    def share(self, data: bytes) -> Shared:
        return Shared([self.ray.put(data)])

    @property
    def running(self) -> int:
        return len(self.refs)

    def wait(self, timeout: float) -> list[Done]:
        if not self.refs:
            return []
        ray = self.ray
        ready, rest = ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return [self._done(ref) for ref in ready]

    def _done(self, ref) -> Done:
        ray = self.ray
        key = self.refs.pop(ref)
        try:
            return Done(key, ray.get(ref))
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(e.cause, BaseException) else e
            return Done(key, error=cause)
        except ray.exceptions.TaskCancelledError:
            return Done(key, error=TaskError(f"{key}: cancelled"))
        except ray.exceptions.RayError as e:
            return Done(key, error=TaskLost(f"{key}: its worker or node died {MAX_RETRIES + 1} times "
                                            f"({type(e).__name__}: {str(e).splitlines()[0]})"))

    def messages(self) -> list[Any]:
        """The tasks' progress messages (none when the mailbox cannot answer: progress only)."""
        try:
            return self.ray.get(self.mailbox.take.remote(), timeout=10)
        except self.ray.exceptions.RayError:
            return []

    def stop(self) -> None:
        """Cancel every task (KeyboardInterrupt in it: its simulator is killed), force those
        still running after :data:`STOP_WAIT` s, then let Ray go (a private instance stops)."""
        ray = self.ray
        refs = list(self.refs)
        for ref in refs:
            ray.cancel(ref)
        deadline = time.monotonic() + STOP_WAIT
        while refs and time.monotonic() < deadline:
            _, refs = ray.wait(refs, num_returns=len(refs), timeout=0.2)
        for ref in refs:
            ray.cancel(ref, force=True)
        self.refs.clear()
        self.close()

    def close(self) -> None:
        if self.own and self.ray.is_initialized():
            self.ray.shutdown()
