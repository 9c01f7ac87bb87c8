"""A stress campaign on a two-node Ray cluster on this machine (cosim.farm.localcluster): the same
results as on the local pool, and still the same when one node is lost mid-campaign (its tasks
are retried on the other; the finished chunks are in the campaign folder already).

Slow (a cluster takes 10-20 s to start, and each campaign launches Icarus once per chunk); CI
runs the first test (.ci/run)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cosim.farm.localcluster import LocalCluster
from cosim.verilog import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.rtl]
N, CHUNK, SEED = 24, 4, 5


def _stress(campaign: Path, env: dict | None = None, engine: str = "local") -> subprocess.Popen:
    command = [sys.executable, "-m", "cosim", "stress", "--n", str(N), "--chunk", str(CHUNK), "--seed",
               str(SEED), "--sim", "icarus", "--engine", engine, "--campaign", str(campaign)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _results(campaign: Path) -> list[dict]:
    """Each chunk's record without what depends on where and when it ran."""
    out = []
    for path in sorted((campaign / "chunks").glob("*.json")):
        record = json.loads(path.read_text())
        for key in ("seconds", "sim_seconds", "waves"):
            record.pop(key)
        record["info"].pop("coverage")
        out.append(record)
    return out


def _verdict(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if "PASS" in line or "FAIL" in line or line.startswith("  ")]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> tuple[list[dict], list[str], str]:
    campaign = tmp_path_factory.mktemp("local") / "campaign"
    out, err = _stress(campaign).communicate(timeout=600)
    assert "ran on this machine, a local pool" in out, out + err
    return _results(campaign), _verdict(out), (campaign / "coverage.yml").read_text()


def test_a_two_node_cluster_gives_the_local_results(icarus, local_run, tmp_path):
    campaign = tmp_path / "campaign"
    with LocalCluster(2) as cluster:
        process = _stress(campaign, cluster.env, "auto")              # RAY_ADDRESS: the cluster
        out, err = process.communicate(timeout=600)
    assert process.returncode == 0, out + err
    assert f"ran on the Ray cluster at {cluster.address}: 2 nodes, 2 workers" in out
    assert (_results(campaign), _verdict(out), (campaign / "coverage.yml").read_text()) == local_run
    assert len(_results(campaign)) == N // CHUNK


def test_losing_a_node_mid_campaign_loses_no_result(icarus, local_run, tmp_path):
    campaign = tmp_path / "campaign"
    with LocalCluster(2) as cluster:
        process = _stress(campaign, cluster.env, "ray")
        deadline = time.monotonic() + 300
        while len(list((campaign / "chunks").glob("*.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        cluster.kill(1)                                                # the second node dies
        out, err = process.communicate(timeout=600)
    assert process.returncode == 0, out + err
    assert (_results(campaign), _verdict(out), (campaign / "coverage.yml").read_text()) == local_run
