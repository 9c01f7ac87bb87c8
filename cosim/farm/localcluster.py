"""A Ray cluster of several nodes on this machine, for tests, CI and a first try of a cluster.

``python -m cosim.farm.localcluster [--nodes 2] COMMAND ...`` starts a head node (``ray start
--head``) and ``--nodes - 1`` more nodes (``ray start --address=...``), each with its own
temporary folder, ports and one CPU, runs the command with ``RAY_ADDRESS`` set to the head, and
stops every node it started, whatever the command did; its exit status is the command's.

The nodes listen on 127.0.0.2 (a loopback address that Ray does not replace by the machine's
network address, as it does 127.0.0.1), use Ray's token authentication, and each runs under
``ray start --block`` in a process group of its own, so a node is stopped (or, in a test, lost:
:meth:`LocalCluster.kill`) by signalling its group, and nothing else on the machine is touched
(``ray stop`` would stop every Ray process of the user).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .procs import descendants, wait_gone

HOST = "127.0.0.2"
START_WAIT = 90.0
"""Seconds a node may take to join (a loaded 2-core machine)."""
ENV = {"RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0",
       # a lost node is noticed within seconds, not the default half minute
       "RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class LocalCluster:
    """``nodes`` Ray nodes on this machine, one CPU each (a context manager).

    Attributes:
        address: the head's ``host:port`` (what ``RAY_ADDRESS`` takes).
        env: the environment for a campaign on it (``RAY_ADDRESS`` and the settings above).

    Raises:
        RuntimeError: a node did not start or join within START_WAIT seconds (its log named).
    """

    def __init__(self, nodes: int = 2, cpus: int = 1):
        self.root = Path(tempfile.mkdtemp(prefix="ga2-ray-"))
        self.port = _free_port()
        self.address = f"{HOST}:{self.port}"
        self.env = {**os.environ, **ENV, "RAY_ADDRESS": self.address}
        self.ray = str(Path(sys.executable).with_name("ray"))
        self.nodes: list[subprocess.Popen] = []
        self.count, self.cpus = nodes, cpus

    def _start(self, k: int) -> None:
        low = 20000 + 200 * k + (self.port % 50) * 400 % 20000
        common = ["--block", f"--node-ip-address={HOST}", f"--num-cpus={self.cpus}",
                  f"--temp-dir={self.root / f'node{k}'}", f"--min-worker-port={low}",
                  f"--max-worker-port={low + 99}", "--object-store-memory=150000000", "--disable-usage-stats"]
        head = ["--head", f"--port={self.port}", "--include-dashboard=false"] if k == 0 \
            else [f"--address={self.address}"]
        env = {k_: v for k_, v in self.env.items() if k_ != "RAY_ADDRESS"}
        log = open(self.root / f"node{k}.log", "w")  # noqa: SIM115 (the node's own, for its life)
        self.nodes.append(subprocess.Popen([self.ray, "start", *head, *common], env=env, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True))

    def _joined(self, n: int) -> bool:
        status = subprocess.run([self.ray, "status", f"--address={self.address}"], env=self.env,
                                capture_output=True, text=True, timeout=60)
        return status.returncode == 0 and status.stdout.count("node_") >= n

    def __enter__(self) -> LocalCluster:
        try:
            for k in range(self.count):
                self._start(k)
                deadline = time.monotonic() + START_WAIT
                while not self._joined(k + 1):
                    if time.monotonic() > deadline or self.nodes[k].poll() is not None:
                        log = self.root / f"node{k}.log"
                        raise RuntimeError(f"Ray node {k} did not start; its log: {log}")
                    time.sleep(1)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def kill(self, k: int) -> None:
        """Lose node ``k`` at once (SIGKILL to its processes), as a machine that dies."""
        self._signal(k, signal.SIGKILL)

    def _signal(self, k: int, sig: int) -> list[int]:
        node = self.nodes[k]
        pids = [node.pid, *descendants(node.pid)]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(node.pid, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        return pids

    def stop(self) -> None:
        """Stop every node (the others before the head): SIGTERM, then SIGKILL what is left."""
        for k in reversed(range(len(self.nodes))):
            left = wait_gone(self._signal(k, signal.SIGTERM), 5.0)
            if left:
                self._signal(k, signal.SIGKILL)
                wait_gone(left, 5.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.nodes[k].wait(5)
        self.nodes = []
        shutil.rmtree(self.root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosim.farm.localcluster",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2, help="nodes, the head included (default 2)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command to run on the cluster (after -- if it starts with an option)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.nodes < 1:
        parser.error("give at least one node and a command")
    with LocalCluster(args.nodes) as cluster:
        print(f"a Ray cluster of {args.nodes} nodes on this machine at {cluster.address}", file=sys.stderr,
              flush=True)
        return subprocess.run(command, env=cluster.env).returncode


if __name__ == "__main__":
    sys.exit(main())
