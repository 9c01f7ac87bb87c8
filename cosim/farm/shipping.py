"""Simulator builds shipped to the nodes of a cluster: made once, keyed by their content hash.

A build (:class:`cosim.runner.Build`) is made once, on the machine that starts the campaign. A
task on that machine runs it where it is. A task on another node (a Ray cluster) gets it from
Ray's object store: :func:`pack` makes the bytes once per build, the campaign puts them in the
store once, and the first task on a node unpacks them into ``build/farm/<sim>-<digest>/``
(:func:`materialise`, under a file lock); every later task on that node finds them there by
the build's digest (the SHA-256 of the Verilog, the harness and the recipe: its stamp), so no
node ever builds, and none unpacks twice.

What travels: the product a launch runs (``sim.vvp``, or Verilator's executable), the stamp,
and the two Verilog files (a waveform's save file names the simulation top's signals). Every
node must hold the same checkout, installed with ``make setup`` at the same path (the
Verilator executable finds cocotb's libraries by their path): docs/cluster.md.
"""

from __future__ import annotations

import dataclasses
import io
import tarfile
from collections.abc import Sequence
from pathlib import Path

from ..harness import TOP
from ..runner import PRODUCT, Build
from ..verilog import BUILD, flock

SHIPPED = ("stamp.sha256", f"{TOP}.v", "ga2_simtop.v")
"""The files of a build folder that travel besides its product (runner.PRODUCT)."""
FARM_CACHE = BUILD / "farm"
"""Where a node keeps the builds it received: ``<sim>-<digest>`` folders."""


def pack_files(folder: Path, names: Sequence[str]) -> bytes:
    """Files of a folder as a gzip'd tar (level 1: a simulator's product is tens of MB and
    compresses well; speed matters more than the last few percent)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as tar:
        for name in names:
            tar.add(Path(folder) / name, arcname=name)
    return out.getvalue()


def unpack_files(data: bytes, folder: Path) -> None:
    """The files of :func:`pack_files` into ``folder`` (made if missing)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def pack(build: Build) -> bytes:
    """The build's product, stamp and Verilog (:func:`pack_files`)."""
    return pack_files(build.directory, (PRODUCT[build.simulator], *SHIPPED))


def is_built(directory: Path, build: Build) -> bool:
    """Whether ``directory`` holds this build (its stamp and its product)."""
    stamp = directory / "stamp.sha256"
    return (stamp.is_file() and stamp.read_text().strip() == build.digest
            and (directory / PRODUCT[build.simulator]).is_file())


def node_folder(build: Build, root: Path = FARM_CACHE) -> Path:
    """Where a node keeps a shipped build: ``<root>/<sim>-<digest[:16]>``."""
    return Path(root) / f"{build.simulator}-{build.digest[:16]}"


def materialise(build: Build, fetch, root: Path = FARM_CACHE) -> Build:
    """The build as this node can run it: unpacked from ``fetch()`` (the packed bytes, from the
    object store) into :func:`node_folder` unless it is there already.

    Args:
        build: the build as made on the campaign's machine.
        fetch: returns the bytes of :func:`pack`; called only when this node lacks the build.
        root: the node's cache.

    Returns:
        the build with ``directory`` on this node (``cached`` True when nothing was unpacked).
    """
    folder = node_folder(build, root)
    if is_built(folder, build):
        return dataclasses.replace(build, directory=folder, cached=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with flock(folder.parent / f"{folder.name}.lock", exclusive=True):
        if is_built(folder, build):
            return dataclasses.replace(build, directory=folder, cached=True)
        (folder / "stamp.sha256").unlink(missing_ok=True)
        unpack_files(fetch(), folder)
        if not is_built(folder, build):
            raise OSError(f"the build shipped for {build.simulator} ({build.digest[:16]}) did not unpack "
                          f"whole into {folder}")
    return dataclasses.replace(build, directory=folder, cached=False)
