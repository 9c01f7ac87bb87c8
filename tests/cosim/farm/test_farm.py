"""cosim/farm: which farm a campaign takes, builds shipped by hash, time limits, crashes retried,
the same results from a local pool and from Ray, and Ctrl-C leaving no process behind.

The Ray tests share one local Ray instance of two workers (a fixture: started once, stopped at
the end); the Ctrl-C test starts its campaign's own instance, in a subprocess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cosim import farm, pool, runner, stress
from cosim.farm import TaskHung, TaskLost, choose, open_farm, shipping
from cosim.farm.local import LocalFarm
from cosim.farm.procs import descendants, wait_gone
from cosim.verilog import ROOT
from sim.spec import DEFAULT
from tests.cosim.farm import helpers as farm_helpers

ray = pytest.importorskip("ray")


def _wait_all(f, timeout: float = 120.0) -> list:
    out, deadline = [], time.monotonic() + timeout
    while f.running and time.monotonic() < deadline:
        out += f.wait(0.5)
    assert not f.running, "tasks still running"
    return out


def test_auto_takes_the_local_pool_for_a_small_run_and_ray_for_a_large_one(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert choose("auto", 7.0) == "local"              # make cosim SEEDS=100-111: 12 x 1.08 s
    assert choose("auto", farm.RAY_FROM) == "ray"
    assert choose("local", 1e9) == "local" and choose("ray", 0.0) == "ray"
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.2:6379")
    assert choose("auto", 0.0) == "ray"                # a cluster is asked for
    with pytest.raises(farm.CosimError, match="--engine 'slurm': expected one of auto, ray, local"):
        choose("slurm", 0.0)


def test_estimate_counts_every_simulator():
    recipes = stress.recipes(1, 250, None)
    assert [r.size for r in recipes] == [100, 100, 50]
    assert pool.estimate(recipes, ("icarus", "verilator")) == pytest.approx(250 * 1.08)


def test_a_shipped_build_unpacks_once_per_node(tmp_path):
    made = tmp_path / "made" / "icarus"
    made.mkdir(parents=True)
    for name, text in (("sim.vvp", "#! vvp\n" + "x" * 5000), ("stamp.sha256", "d" * 64 + "\n"),
                       ("ga2_cosim.v", "module h;"), ("ga2_simtop.v", "module t;"), ("build.log", "log")):
        (made / name).write_text(text)
    build = runner.Build("icarus", made, "d" * 64, False, True, 0.0)
    packed = shipping.pack(build)
    fetched = []

    def fetch() -> bytes:
        fetched.append(1)
        return packed

    here = shipping.materialise(build, fetch, tmp_path / "node")
    assert here.directory == tmp_path / "node" / f"icarus-{'d' * 16}" and not here.cached
    assert (here.directory / "sim.vvp").read_text() == (made / "sim.vvp").read_text()
    assert not (here.directory / "build.log").exists()         # only what a launch needs travels
    again = shipping.materialise(build, fetch, tmp_path / "node")
    assert again.cached and fetched == [1]                      # the second task fetches nothing
    other = runner.Build("icarus", made, "e" * 64, False, True, 0.0)   # a stamp that differs
    with pytest.raises(OSError, match="did not unpack whole"):
        shipping.materialise(other, fetch, tmp_path / "node")


def test_a_hung_task_is_stopped_at_its_limit_on_the_local_pool(tmp_path):
    pid_file = tmp_path / "pid"
    with LocalFarm(jobs=1) as f:
        started = time.monotonic()
        f.submit("sleeper", farm_helpers.sleeping_child, str(pid_file), limit=1.0)
        (done,) = _wait_all(f, 30)
    assert isinstance(done.error, TaskHung), done
    assert str(done.error) == "sleeper: passed its time limit of 1 s; its processes were stopped"
    assert time.monotonic() - started < 10
    assert wait_gone([int(pid_file.read_text())], 5) == []      # the "simulator" is gone


def test_a_hung_launch_is_a_named_error_of_its_simulator(tmp_path, monkeypatch):
    """run_stream with a simulator that never returns: the chunk's error names it and the limit."""
    def hang(b, jobs, params, *, keep=False, progress=None):
        subprocess.run(["sleep", "60"], check=True)

    monkeypatch.setattr(pool, "fresh_verilog", lambda verilog=None, say=print, **_: tmp_path / "ga2_simtop.v")
    monkeypatch.setattr(pool, "verilog_params", lambda verilog: DEFAULT)
    monkeypatch.setattr(runner, "build", lambda name, source, **kw: runner.Build(name, tmp_path, "d", False,
                                                                                 True, 0.0))
    monkeypatch.setattr(runner, "run_batch", hang)
    (o,) = pool.run_stream(stress.recipes(1, 3, None), "icarus", engine="local", jobs=1, limit=1.0)
    assert o.error == ("icarus chunk 0 (jobs 0-2): the simulator (a hung simulator?): passed its time limit "
                       "of 1 s; its processes were stopped")
    assert o.where == "this machine, a local pool of 1 worker process"


@pytest.mark.slow       # CI runs it in the Ray step (.ci/run), beside the two-node cluster
def test_on_ray_a_crashed_worker_is_retried_and_a_hung_task_stopped(tmp_path):
    """One local Ray instance (started and stopped by the farm) for the faults of a task."""
    marker, pid_file = tmp_path / "crashed", tmp_path / "pid"
    with open_farm("ray", jobs=2) as f:
        assert f.where == "this machine, a local Ray instance of 2 workers"
        f.submit("once", farm_helpers.crash_once, str(marker))
        f.submit("always", farm_helpers.always_crash, None)
        f.submit("sleeper", farm_helpers.sleeping_child, str(pid_file), limit=2.0)
        f.submit("status", farm_helpers.exit_status, 3)
        done = {d.key: d for d in _wait_all(f, 180)}
    assert not ray.is_initialized()                                   # the private instance stopped
    # children's exit statuses stay readable, in a worker (a mutant's step) and here
    assert done["status"].value == 3 and farm_helpers.exit_status(3) == 3
    assert done["once"].value == "ran" and marker.exists()          # died once, then ran
    assert isinstance(done["always"].error, TaskLost)
    lost = f"always: its worker or node died {farm.MAX_RETRIES + 1} times"
    assert str(done["always"].error).startswith(lost)
    assert isinstance(done["sleeper"].error, TaskHung), done["sleeper"]
    assert wait_gone([int(pid_file.read_text())], 5) == []


def _chunks(engine: str, recipes) -> list[tuple]:
    seen = []
    (o,) = pool.run_stream(recipes, "icarus", engine=engine, jobs=2, on_result=seen.append)
    assert o.error == "" and o.count == sum(r.size for r in recipes)
    return sorted((r.number, r.first, r.count, r.failed, r.cycles, r.rtl_cycles, r.info["instructions"])
                  for r in seen)


@pytest.mark.rtl
@pytest.mark.slow          # CI runs the same comparison on a two-node cluster (test_localcluster.py)
def test_ray_and_the_local_pool_give_the_same_results(icarus, tmp_path):
    """The same stress chunks (one of them losing its worker first, on Ray) on both farms; the
    local pool first (a process that runs Ray is not forked: gRPC's threads do not survive it)."""
    assert not ray.is_initialized()
    inner = stress.recipes(1, 12, None, size=4)
    local = _chunks("local", inner)
    crashing = [pool.Recipe(farm_helpers.stress_chunk_crashing_once,
                            (str(tmp_path / "m") if k == 1 else "", r.arg), r.size)
                for k, r in enumerate(inner)]
    assert _chunks("ray", crashing) == local
    assert (tmp_path / "m").exists()                                  # chunk 1's worker did die


@pytest.mark.rtl
@pytest.mark.slow       # 12 to 26 s: CI runs it in the Ray step (.ci/run), beside the two-node cluster
def test_ctrl_c_on_ray_stops_every_task_and_leaves_no_process(icarus, tmp_path):
    campaign = tmp_path / "campaign"
    command = [sys.executable, "-m", "cosim", "stress", "--n", "40", "--chunk", "5", "--seed", "3", "--sim",
               icarus, "--engine", "ray", "--campaign", str(campaign)]

    def job() -> None:                              # as a shell starts a foreground job
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.setpgrp()

    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=job)
    deadline, below, simulators = time.monotonic() + 180, [], []
    while not simulators and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.3)
        below = descendants(process.pid)            # the private Ray instance, its workers, their vvp
        simulators = [p for p in below if Path(f"/proc/{p}/comm").exists()
                      and Path(f"/proc/{p}/comm").read_text().strip() == "vvp"]
    assert simulators, "no simulator started"
    below = descendants(process.pid)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=90)
    assert process.returncode == 130, out + err
    assert "interrupted: the tasks, their workers and their simulators are stopped" in err
    assert wait_gone(below, 20) == [], "processes left after Ctrl-C"
    chunks = list((campaign / "chunks").glob("*.json"))
    assert len(chunks) < 8                          # stopped before the end; RESUME=1 continues
