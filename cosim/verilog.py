"""The Verilog cosim runs, kept fresh by content hash, and what its export says about it.

* **the default Verilog** is ``build/ga2_simtop.v``, the output of ``make verilog``
  (``python -m flows.export --out build``). It is exported again only when the SHA-256 of the
  generator's sources (every ``.py`` file under ``hw/``, ``sim/``, ``flows/``) or of the
  exported files differs from what ``build/cosim/verilog.json`` recorded at the last export:
  content decides, not file times (a checkout, a copy or an editor that touches a file without
  changing it exports nothing).
* **another machine's Verilog** (``--param``, ``make cosim PARAMS=...``) is
  ``build/machines/<tag>/ga2_simtop.v`` (sim.machines.machine_dir), kept fresh the same way with
  its own ``verilog.json`` beside it: each machine has its own files, and one machine's are
  never taken for another's.
* **its description** is ``ga2_ports.json`` beside it (:data:`flows.memmap.PORTS_JSON`): the
  machine parameters it was generated with, the simulation top's ports and where its memories
  are. cosim needs it (the programs are compiled for those parameters, the test harness is
  generated from those ports and memories) and refuses a Verilog without one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flows.memmap import MEMORIES, PORTS_JSON, SIMTOP
from sim import machines
from sim.spec import DEFAULT, Params

from .errors import CosimError, writing

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
VERILOG = BUILD / f"{SIMTOP}.v"
"""Where ``make verilog`` writes the simulation top."""
COSIM_BUILD = BUILD / "cosim"
"""Default root of the cached simulator builds."""
GENERATOR_SOURCES = ("hw", "sim", "flows")
"""Folders whose Python sources make the Verilog."""
STAMP = COSIM_BUILD / "verilog.json"
"""What the last export by cosim was made from (:func:`fresh_verilog`)."""


@contextmanager
def flock(path: Path, exclusive: bool) -> Iterator[None]:
    """Hold a file lock (shared or exclusive) on ``path`` (created if missing).

    Raises:
        CosimError: the lock file cannot be made or opened (a read-only folder).
    """
    with writing(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "a")     # noqa: SIM115 (closed below, after the lock's body)
    with f:
        fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def sources_digest(root: Path | None = None) -> str:
    """SHA-256 over the path and content of every ``.py`` file under GENERATOR_SOURCES (of
    ``root``, by default the project's)."""
    root = ROOT if root is None else root
    h = hashlib.sha256()
    for folder in GENERATOR_SOURCES:
        for path in sorted((root / folder).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _places(params: Params) -> tuple[Path, Path]:
    """The exported Verilog of a machine and its stamp: ``build/ga2_simtop.v`` and
    ``build/cosim/verilog.json`` for the default machine, ``build/machines/<tag>/ga2_simtop.v``
    and ``verilog.json`` beside it for another (sim.machines.machine_dir)."""
    if params == DEFAULT:
        return VERILOG, STAMP
    folder = machines.machine_dir(BUILD, params)
    return folder / f"{SIMTOP}.v", folder / "verilog.json"


def _record(verilog: Path | None = None) -> dict:
    """What an exported Verilog (default ``build/ga2_simtop.v``) is made from now: the sources
    and the exported files."""
    verilog = VERILOG if verilog is None else verilog
    record = {"sources": sources_digest()}
    for path in (verilog, verilog.with_name(PORTS_JSON)):
        record[path.name] = file_digest(path) if path.is_file() else None
    return record


def _stale_reason(params: Params) -> str | None:
    """Why the machine's Verilog must be exported again, or None when it is fresh."""
    verilog, stamp = _places(params)
    if not verilog.is_file() or not verilog.with_name(PORTS_JSON).is_file():
        return "missing"
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return f"not exported by cosim yet (no {stamp.relative_to(ROOT)})"
    now = _record(verilog)
    if recorded.get("sources") != now["sources"]:
        return "the sources in hw/, sim/ or flows/ changed since its export"
    if any(recorded.get(name) != now[name] for name in (verilog.name, PORTS_JSON)):
        return "rewritten since cosim exported it"
    return None


def fresh_verilog(verilog: Path | None = None, say: Callable[[str], None] = print, *,
                  params: Params) -> Path:
    """The Verilog to simulate.

    Args:
        verilog: a given file (used as it is; its ``ga2_ports.json`` must be beside it), or
            None for the Verilog of the machine ``params``: ``build/ga2_simtop.v`` for the
            default machine, ``build/machines/<tag>/ga2_simtop.v`` for another, exported again
            (``python -m flows.export``, what ``make verilog PARAMS=...`` runs) when it is
            missing or its sources changed (see the module docstring).
        say: where to report that the Verilog is being exported, and why.
        params: the machine (only without ``verilog``: a given file names its own).

    Raises:
        CosimError: the given file does not exist, or the export failed.
    """
    if verilog is not None:
        verilog = Path(verilog).resolve()
        if not verilog.is_file():
            raise CosimError(f"no Verilog file {verilog}")
        return verilog
    target, stamp = _places(params)
    with flock(_lock(target), exclusive=True):
        why = _stale_reason(params)
        if why is None:
            return target
        machine = [] if params == DEFAULT else ["--param", machines.describe(params)]
        command = ["python", "-m", "flows.export", "--out", str(target.parent.relative_to(ROOT)), *machine]
        say(f"exporting the Verilog ({target.relative_to(ROOT)}: {why}): {shlex.join(command)}")
        done = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise CosimError(f"python -m flows.export failed (exit {done.returncode}):\n"
                             f"{done.stderr.strip()[-3000:]}")
        with writing(stamp.parent):
            stamp.write_text(json.dumps(_record(target), indent=1) + "\n")
    return target


def _lock(verilog: Path) -> Path | None:
    """The lock that :func:`fresh_verilog` holds while it exports a machine's Verilog: one per
    machine (``build/cosim/verilog.lock``, ``build/machines/<tag>/verilog.lock``), so that the
    export of one machine does not hold up the runs of another; None for any other file."""
    verilog = Path(verilog).resolve()
    if verilog == VERILOG.resolve():
        return COSIM_BUILD / "verilog.lock"
    if verilog.parent.parent == (BUILD / "machines").resolve():
        return verilog.with_name("verilog.lock")
    return None


@contextmanager
def reading(verilog: Path) -> Iterator[None]:
    """Hold off :func:`fresh_verilog`'s export while an exported Verilog is read."""
    lock = _lock(verilog)
    if lock is None:
        yield
        return
    with flock(lock, exclusive=False):
        yield


@dataclass(frozen=True)
class Description:
    """What ``ga2_ports.json`` says about the simulation top of a Verilog file.

    Attributes:
        params: the machine parameters it was generated with.
        ports: its ports, ``{"name", "dir", "width"}`` each (flows.export.ports).
        memories: memory -> ``{"arrays": dotted paths, bank 0 first, "depth": words per bank,
            "width": bits}`` (flows.memmap.describe).
    """

    params: Params
    ports: tuple[dict, ...]
    memories: dict


def describe(verilog: Path) -> Description:
    """Read the ``ga2_ports.json`` beside a Verilog file.

    Raises:
        CosimError: there is none, or it does not describe the simulation top (the message
            says how to write one).
    """
    path = Path(verilog).with_name(PORTS_JSON)
    remedy = (f"cosim reads the machine's parameters, the ports and the memories of {SIMTOP} from it; "
              f"python -m flows.export --out DIR writes both files")
    with reading(verilog):
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise CosimError(f"no {PORTS_JSON} beside {verilog}: {remedy}") from None
        except ValueError as e:
            raise CosimError(f"{path} is not JSON ({e}): {remedy}") from None
    try:
        top = data["tops"][SIMTOP]
        params = Params(**data["params"])
        memories = {name: top["memories"][name] for name in MEMORIES}
        ports = tuple(top["ports"])
        missing = _undeclared(verilog, memories)
    except (KeyError, TypeError, ValueError) as e:
        raise CosimError(f"{path} does not describe {SIMTOP} ({type(e).__name__}: {e}): {remedy}") from None
    if missing:
        raise CosimError(f"{path} does not match {verilog}: it describes {missing}, which the Verilog "
                         f"does not declare (exported for another machine?): {remedy}")
    return Description(params, ports, memories)


def _undeclared(verilog: Path, memories: dict) -> str:
    """The first memory array ``ga2_ports.json`` describes that the Verilog does not declare
    with that width and depth (``reg [31:0] bank0 [1023:0];``), or "" when all are there (an
    empty file is not checked: tests describe a file they do not build)."""
    with reading(verilog):
        text = Path(verilog).read_text() if Path(verilog).is_file() else ""
    if not text:
        return ""
    for name, memory in memories.items():
        width, depth = int(memory["width"]), int(memory["depth"])
        for path in memory["arrays"]:
            leaf = path.rsplit(".", 1)[-1]
            if f"reg [{width - 1}:0] {leaf} [{depth - 1}:0];" not in text:
                return f"{name} array {path} of {depth} words"
    return ""


def verilog_params(verilog: Path) -> Params:
    """The parameters the Verilog was generated with (its ``ga2_ports.json``).

    Raises:
        CosimError: as :func:`describe`.
    """
    return describe(verilog).params
