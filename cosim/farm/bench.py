"""``python -m cosim.farm.bench``: what a farm costs, the local pool and Ray side by side.

For each engine: the start-up (the farm ready for its first task) and the stop; the overhead per
task, from the wall time of TASKS empty tasks on the farm's workers (a chunk's real task is a
simulator launch of about a second plus its programs: cosim.pool); and, for Ray, what shipping a
simulator build costs (packing it, putting it in the object store, unpacking it on a node). The
figures are wall times on this machine at the time: quote them with its load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from . import open_farm, shipping

TASKS = 400


def _nothing(arg: int) -> int:
    return arg


def engine_figures(engine: str, tasks: int, jobs: int | None) -> dict[str, float]:
    """Start-up, overhead per task and stop of one engine, in seconds."""
    t0 = time.perf_counter()
    farm = open_farm(engine, jobs=jobs, tasks=tasks)
    farm.submit(-1, _nothing, -1)
    while farm.running:
        farm.wait(0.05)
    t1 = time.perf_counter()
    for k in range(tasks):
        farm.submit(k, _nothing, k)
    done = 0
    while farm.running:
        done += len(farm.wait(0.05))
    t2 = time.perf_counter()
    farm.close()
    t3 = time.perf_counter()
    assert done == tasks
    return {"start": t1 - t0, "per_task": (t2 - t1) / tasks * farm.workers, "stop": t3 - t2,
            "workers": farm.workers, "where": farm.where}


def shipping_figures(build_dir: Path, simulator: str) -> dict[str, float]:
    """Packing and unpacking a cached build (as a node that lacks it does)."""
    from ..runner import Build

    digest = (build_dir / "stamp.sha256").read_text().strip()
    build = Build(simulator, build_dir, digest, False, True, 0.0)
    t0 = time.perf_counter()
    data = shipping.pack(build)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as node:
        shipping.materialise(build, lambda: data, Path(node))
    t2 = time.perf_counter()
    return {"bytes": len(data), "pack": t1 - t0, "unpack": t2 - t1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosim.farm.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=TASKS, help=f"empty tasks per engine (default {TASKS})")
    parser.add_argument("--jobs", type=int, default=None, help="workers (default: one per core)")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.tasks} empty tasks each")
    for engine in ("local", "ray"):
        f = engine_figures(engine, args.tasks, args.jobs)
        print(f"{engine:6s} start {f['start']:6.2f} s, {1000 * f['per_task']:7.2f} ms per task and worker, "
              f"stop {f['stop']:5.2f} s ({f['where']})")
    from ..verilog import COSIM_BUILD

    for simulator in ("icarus", "verilator"):
        folder = COSIM_BUILD / simulator
        if (folder / "stamp.sha256").is_file():
            s = shipping_figures(folder, simulator)
            print(f"{simulator:9s} build shipped: {s['bytes'] / 1e6:.1f} MB packed in {s['pack']:.2f} s, "
                  f"unpacked on a node in {s['unpack']:.2f} s (once per node)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
