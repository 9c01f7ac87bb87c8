"""A stress campaign's folder: what it runs and every chunk it finished, so it can be resumed.

``make stress`` keeps its campaign in ``build/stress/seed<SEED>-n<N>-<sim>`` (``-<mutant>``
added for a mutant, a hash of the path for another Verilog; ``--campaign DIR`` for another
folder):

``campaign.json``
    what makes the campaign: the first seed, the number of programs, the simulators, the
    SHA-256 of the Verilog and of the program generator (cosim/stress.py, cosim/coverage.py),
    the options. The programs follow from the seeds alone, so the same command reproduces the
    campaign, and ``--resume`` continues it only when all of this is unchanged;
``chunks/<sim>-<chunk>.json``
    one finished chunk on one simulator (:class:`cosim.pool.ChunkResult`): written as the chunk
    finishes, read back by ``--resume``, which runs only the chunks that have none;
``coverage/<chunk>.yml``, ``coverage.yml``
    each chunk's coverage counts, and their merge at the end (:mod:`cosim.coverage`).

Starting a campaign without ``--resume`` replaces the folder. A lock keeps two runs out of one
folder.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import shutil
from pathlib import Path

from .batch import Failure
from .errors import CosimError
from .pool import ChunkResult
from .verilog import BUILD, ROOT, VERILOG, file_digest

STRESS_ROOT = BUILD / "stress"
GENERATOR_FILES = ("cosim/stress.py", "cosim/coverage.py")
"""The sources that decide which programs a seed makes and what their coverage counts."""


def default_folder(seed: int, n: int, choice: str, mutant: str | None = None,
                   verilog: Path | None = None) -> Path:
    """``build/stress/seed<SEED>-n<N>-<sim>[-<mutant>][-<hash>]``: the hash of the Verilog's path
    when it is not ``build/ga2_simtop.v`` (runs on different files never share a folder);
    ``build/machines/<tag>/stress/seed<SEED>-...`` for another machine's exported Verilog
    (``--param``, cosim.verilog)."""
    name = f"seed{seed}-n{n}-{choice}" + (f"-{mutant}" if mutant else "")
    if verilog is not None and Path(verilog).resolve().parent.parent == (BUILD / "machines").resolve():
        return Path(verilog).resolve().parent / "stress" / name
    if verilog is not None and Path(verilog).resolve() != VERILOG.resolve():
        name += "-" + hashlib.sha256(str(Path(verilog).resolve()).encode()).hexdigest()[:12]
    return STRESS_ROOT / name


def generator_digest() -> str:
    h = hashlib.sha256()
    for name in GENERATOR_FILES:
        h.update((ROOT / name).read_bytes())
    return h.hexdigest()


def identity(seed: int, n: int, choice: str, verilog: Path, options: list[str]) -> dict:
    """What makes a campaign (its ``campaign.json``)."""
    return {"seed": seed, "n": n, "sim": choice, "verilog": str(verilog),
            "verilog_sha256": file_digest(verilog), "generator_sha256": generator_digest(),
            "options": list(options)}


def _to_json(result: ChunkResult) -> str:
    return json.dumps(dataclasses.asdict(result))


def _from_json(text: str) -> ChunkResult:
    data = json.loads(text)
    data["failures"] = [Failure(**f) for f in data["failures"]]
    return ChunkResult(**data)


class Campaign:
    """An open campaign folder (a context manager: it holds the folder's lock).

    Args:
        folder: the folder.
        what: its :func:`identity`.
        resume: continue the campaign in the folder (else start it afresh).

    Raises:
        CosimError: another run holds the folder; ``resume`` and there is no campaign, or one
            made of something else (the message names what differs).
    """

    def __init__(self, folder: Path, what: dict, resume: bool):
        self.folder = Path(folder)
        self.what = what
        self.resume = resume
        self._lock = None

    def __enter__(self) -> Campaign:
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.folder.parent / f".{self.folder.name}.lock", "a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise CosimError(f"the campaign folder {self.folder} is in use by another run") from None
        if self.resume:
            try:
                self._check()
            except CosimError:
                self.__exit__()
                raise
        else:
            shutil.rmtree(self.folder, ignore_errors=True)
            (self.folder / "chunks").mkdir(parents=True)
            (self.folder / "campaign.json").write_text(json.dumps(self.what, indent=1) + "\n")
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()

    def _check(self) -> None:
        path = self.folder / "campaign.json"
        try:
            before = json.loads(path.read_text())
        except (OSError, ValueError):
            raise CosimError(f"--resume: no campaign to resume in {self.folder} (run without --resume to "
                             "start it)") from None
        differ = [f"{key} {before.get(key)!r} then, {value!r} now" for key, value in self.what.items()
                  if before.get(key) != value]
        if differ:
            raise CosimError(f"--resume: the campaign in {self.folder} was made differently ("
                             + "; ".join(differ) + "); run without --resume to start it afresh")

    def done(self) -> list[ChunkResult]:
        """The chunks finished so far (none when the campaign starts afresh)."""
        return [_from_json(p.read_text()) for p in sorted((self.folder / "chunks").glob("*.json"))]

    def record(self, result: ChunkResult) -> None:
        """Keep a finished chunk (written whole, then renamed: an interrupted run leaves none
        half-written)."""
        path = self.folder / "chunks" / f"{result.simulator}-{result.number:06d}.json"
        part = path.with_suffix(".part")
        part.write_text(_to_json(result))
        part.replace(path)

    def coverage_file(self, number: int) -> Path:
        return self.folder / "coverage" / f"{number:06d}.yml"

    @property
    def merged_coverage(self) -> Path:
        return self.folder / "coverage.yml"
