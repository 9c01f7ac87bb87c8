"""The mutations: Yosys's listing parsed, each attributed to a unit and a Python line, and a sample
spread over every unit.

A listing line (``mutate -list``) names a module, a cell, one of its ports and a bit of it, and
the mode. Its unit is the Python file of the cell's own ``src`` attribute (Amaranth writes
``hw/<file>.py:<line>`` on every operator it emits); a cell without one (a multiplexer that
Yosys's ``proc`` made of an ``always`` block) takes the first Python ``src`` found on the wire
it drives or, following its outputs through the netlist, on the next cell or wire that has one
(for a register's reset multiplexer: the register). Mutations that touch one of the five
counters (a wire ``count_*``) form their own stratum, ``counters``.

The sample (:func:`draw`) takes an equal share from every stratum (the rest by lot), each
stratum's picks at random: everything from ``random.Random(seed)``, so a seed names a sample.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict, deque
from dataclasses import asdict, dataclass
from pathlib import Path

from . import bus

UNITS = {
    "hw/mxu.py": "MXU", "hw/systolic.py": "MXU systolic array", "hw/requant.py": "requantizer",
    "hw/softmax.py": "softmax", "hw/divider.py": "softmax divider", "hw/exp_lut.py": "softmax exp table",
    "hw/vector.py": "vector unit", "hw/dma.py": "DMA", "hw/banked.py": "scratchpad banks, rotation",
    "hw/control.py": "control", "counters": "cycle counters", "hw/checker.py": "checker",
    "hw/formula.py": "checker formulas", "hw/top.py": "top (sharing, timing check)",
    "hw/lanes.py": "lane masks", "hw/isa.py": "opcode decode", "hw/lut.py": "table unit (LUT)",
    "hw/layernorm.py": "LayerNorm unit (LN)",
}
"""What each stratum is, for the table."""
MODULE_HOME = {
    "ga2_simtop.core": "hw/top.py", "ga2_simtop.core.control": "hw/control.py",
    "ga2_simtop.core.control.checks": "hw/checker.py", "ga2_simtop.core.control.execute": "hw/overlap.py",
    "ga2_simtop.core.dma": "hw/dma.py",
    "ga2_simtop.core.mxu": "hw/mxu.py", "ga2_simtop.core.mxu.array": "hw/systolic.py",
    "ga2_simtop.core.requant": "hw/requant.py", "ga2_simtop.core.requant.lanes": "hw/requant.py",
    "ga2_simtop.core.softmax": "hw/softmax.py", "ga2_simtop.core.spad": "hw/banked.py",
    "ga2_simtop.core.vector": "hw/vector.py", "ga2_simtop.core.softmax.div": "hw/divider.py",
    "ga2_simtop.core.softmax.exp": "hw/exp_lut.py", "ga2_simtop.core.lut": "hw/lut.py",
    "ga2_simtop.core.layernorm": "hw/layernorm.py",
}
"""The file a module comes from (a name here, or its prefix: ``softmax.div0``), when no ``src``
attribute names another (or only ``hw/ports.py`` does: a port is declared there, its logic is
the unit's)."""
UNITS |= bus.UNITS
MODULE_HOME |= bus.MODULE_HOME
DECLARATIONS = ("hw/ports.py",)
"""Files that declare signals but hold no logic: a mutation they name goes to its module's unit."""
PY_SRC = re.compile(r"(?:^|/)(hw/[\w/]+\.py):(\d+)")
FOLLOW_DEPTH = 8
"""How many cells deep :class:`Netlist` follows a cell's outputs for a Python ``src``."""


@dataclass(frozen=True)
class Mutation:
    """One line of Yosys's listing, attributed.

    Attributes:
        line: the listing line (``mutate -mode ... -module ... -cell ... -port ... -portbit ...``).
        mode: inv, const0, const1, cnot0 or cnot1.
        module, cell, port: where (a Yosys module, cell name and port).
        portbit: the bit of the port; ctrlbit: the other bit (cnot modes), else -1.
        wire, wirebit: the public wire the bit belongs to, when Yosys names one ("" otherwise).
        unit: the stratum: ``hw/<file>.py`` or ``counters``.
        src: ``hw/<file>.py:<line>`` of the Python line, or "" when none was found.
        signal: the public wire attributed (for counters: ``count_*``), or "".
    """

    line: str
    mode: str
    module: str
    cell: str
    port: str
    portbit: int
    ctrlbit: int
    wire: str
    wirebit: int
    unit: str = ""
    src: str = ""
    signal: str = ""

    @property
    def where(self) -> str:
        """``module cell.port[bit]`` (cnot: ``[bit^ctrl]``), short."""
        bit = f"{self.portbit}" if self.ctrlbit < 0 else f"{self.portbit},{self.ctrlbit}"
        cell = re.sub(r"\$[^$]*\.v:\d+\$", "$", self.cell)     # $add$<file>:<line>$12 -> $add$12
        return f"{self.module.removeprefix('ga2_simtop.')} {cell}.{self.port}[{bit}]"

    @property
    def key(self) -> tuple:
        """What makes two listing lines the same mutation."""
        return (self.mode, self.module, self.cell, self.port, self.portbit, self.ctrlbit)

    def as_dict(self) -> dict:
        return asdict(self)


def parse(line: str) -> Mutation:
    """A ``mutate -mode ...`` line as a :class:`Mutation` (not yet attributed).

    Raises:
        ValueError: not a mutate line with -mode, -module, -cell, -port and -portbit.
    """
    words = line.split()
    opts: dict[str, str] = {}
    k = 1
    while k + 1 < len(words):
        if words[k].startswith("-") and words[k] != "-src":
            opts.setdefault(words[k][1:], words[k + 1])
        k += 2
    missing = [o for o in ("mode", "module", "cell", "port", "portbit") if o not in opts]
    if words[:1] != ["mutate"] or missing:
        raise ValueError(f"not a Yosys mutate line (missing {', '.join(missing) or 'mutate'}): {line!r}")
    return Mutation(line, opts["mode"], opts["module"], opts["cell"], opts["port"], int(opts["portbit"]),
                    int(opts.get("ctrlbit", -1)), opts.get("wire", "").lstrip("\\"),
                    int(opts.get("wirebit", -1)))


def _py(attrs: dict) -> str:
    m = PY_SRC.search(attrs.get("src", ""))
    return f"{m[1]}:{m[2]}" if m else ""


class Netlist:
    """The JSON netlist (``write_json``), indexed for :meth:`attribute`."""

    def __init__(self, path: Path):
        self.modules = json.loads(Path(path).read_text())["modules"]
        self._index: dict[str, tuple[dict, dict]] = {}

    def _module(self, name: str) -> tuple[dict, dict]:
        """(bit -> consuming cells, bit -> public netnames with a Python src) of a module."""
        if name not in self._index:
            mod = self.modules[name]
            users: dict[int, list[str]] = defaultdict(list)
            for cname, cell in mod["cells"].items():
                for port, bits in cell["connections"].items():
                    if cell.get("port_directions", {}).get(port) == "input":
                        for b in bits:
                            if isinstance(b, int):
                                users[b].append(cname)
            named: dict[int, list[tuple[str, str]]] = defaultdict(list)
            for nname, net in mod["netnames"].items():
                src = _py(net.get("attributes", {}))
                if src and not net.get("hide_name"):
                    for b in net["bits"]:
                        if isinstance(b, int):
                            named[b].append((nname, src))
            self._index[name] = (users, named)
        return self._index[name]

    def attribute(self, m: Mutation) -> Mutation:
        """The mutation with its unit, Python line and signal filled in."""
        mod = self.modules.get(m.module)
        if mod is None or m.cell not in mod["cells"]:
            raise ValueError(f"{m.module}.{m.cell} is not in the netlist (a listing of another Verilog?)")
        users, named = self._module(m.module)
        cell = mod["cells"][m.cell]
        src = _py(cell.get("attributes", {}))
        bit = cell["connections"][m.port][m.portbit]
        signal = next((n for n, _ in named.get(bit, [])), "") if isinstance(bit, int) else ""
        if not src and signal:
            src = next(s for n, s in named[bit] if n == signal)
        if not src or not signal:
            output = cell.get("port_directions", {}).get(m.port) == "output"
            first = [bit] if output and isinstance(bit, int) else _outputs(cell)
            found_src, found_signal = _follow(mod, first, users, named)
            src, signal = src or found_src, signal or found_signal
        signal = signal or m.wire
        file = src.split(":")[0] if src else ""
        unit = "counters" if signal.startswith("count_") else \
            file if file and file not in DECLARATIONS else home(m.module)
        return Mutation(**{**m.as_dict(), "unit": unit, "src": src, "signal": signal})


def _outputs(cell: dict) -> list[int]:
    return [b for port, bits in cell["connections"].items()
            if cell.get("port_directions", {}).get(port) == "output" for b in bits if isinstance(b, int)]


def _follow(mod: dict, bits: list[int], users: dict, named: dict) -> tuple[str, str]:
    """The first Python src and public wire found following ``bits`` forwards through the cells
    that read them (breadth first, at most FOLLOW_DEPTH cells deep)."""
    src = signal = ""
    seen: set[str] = set()
    queue = deque((b, 0) for b in bits)
    while queue and not (src and signal):
        b, depth = queue.popleft()
        if named.get(b) and not signal:
            signal, wire_src = named[b][0]
            src = src or wire_src
        for user in users.get(b, []):
            if user in seen or depth >= FOLLOW_DEPTH:
                continue
            seen.add(user)
            cell = mod["cells"][user]
            src = src or _py(cell.get("attributes", {}))
            queue.extend((o, depth + 1) for o in _outputs(cell))
    return src, signal


def draw(candidates: list[Mutation], count: int, seed: int) -> list[Mutation]:
    """``count`` mutations, an equal share from every unit (the remainder by lot), deterministic
    from ``seed``; sorted by unit and line.

    Raises:
        ValueError: fewer distinct candidates than ``count``.
    """
    rng = random.Random(seed)
    strata: dict[str, list[Mutation]] = defaultdict(list)
    seen = set()
    for m in candidates:
        if m.key not in seen:
            seen.add(m.key)
            strata[m.unit].append(m)
    if len(seen) < count:
        raise ValueError(f"only {len(seen)} distinct mutations listed, {count} asked for")
    names = sorted(strata)
    for name in names:
        rng.shuffle(strata[name])
    picked: list[Mutation] = []
    while len(picked) < count:
        open_ = [n for n in names if strata[n]]
        share = max(1, (count - len(picked)) // len(open_))
        if share * len(open_) > count - len(picked):
            open_ = rng.sample(open_, count - len(picked))
        for n in open_:
            picked += strata[n][:share]
            del strata[n][:share]
    return sorted(picked, key=lambda m: (m.unit, _line(m.src), m.line))


def home(module: str) -> str:
    """The file of a Yosys module (:data:`MODULE_HOME`, by name or prefix)."""
    for name in sorted(MODULE_HOME, key=len, reverse=True):
        if module == name or module.startswith(name):
            return MODULE_HOME[name]
    return module


def _line(src: str) -> int:
    return int(src.rsplit(":", 1)[1]) if ":" in src else 0
