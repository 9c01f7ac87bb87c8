"""Where GA-2's memories sit in the exported Verilog, for simulator backdoors (cosim).

Every memory is a set of LANES (or INSTR_WORDS) 32-bit-wide Verilog arrays, ``reg [31:0]
<name> [0:depth-1]``, and every word the host thinks of has one place:

==========  =====================================  ==========================================
memory      word w lives in                         arrays (relative to the simulation top)
==========  =====================================  ==========================================
scratchpad  bank ``w % 4``, row ``w // 4``          ``core.spad.bank0`` .. ``core.spad.bank3``
external    bank ``w % 4``, row ``w // 4``          ``ext.bank0`` .. ``ext.bank3``
program     bank ``w % 4``, row ``w // 4``: word    ``core.control.imem0`` .. ``imem3``
            ``w % 4`` of instruction ``w // 4``
==========  =====================================  ==========================================

For the core alone (``build/ga2.v``) drop the leading ``core.``; the external memory is then
outside. The names are the Amaranth submodule names (``hw/top.py``, ``hw/simtop.py``,
``hw/control.py``, ``hw/banked.py``), which Amaranth's Verilog keeps as instance and array names;
``tests/flows/test_export.py`` checks them in the generated Verilog. ``python -m flows.export`` also
writes them to ``build/ga2_ports.json``.

Notes for a test bench driving the Verilog (``tests/flows/test_export.py`` does all of this):

* the clock is ``clk``, the reset ``rst`` (synchronous, active high); under Icarus let ``rst``
  rise after time 0 (``reg rst = 0; initial #1 rst = 1;``) and hold it for two clock edges:
  Icarus does not run Yosys' ``always @*`` blocks at time 0, so a reset that is already high
  then loads X into the registers;
* write the arrays after time 0 too (Amaranth's ``initial`` blocks zero them at time 0);
* the instance names avoid SystemVerilog keywords (the checker is ``core.control.checks``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sim import spec
from sim.spec import Params

CORE = "ga2"
"""The core's Verilog module, and the stem of its file (``build/ga2.v``)."""
SIMTOP = "ga2_simtop"
"""The simulation top's Verilog module (:class:`hw.simtop.SimTop`), and the stem of its file
(``build/ga2_simtop.v``): what cosim runs."""
PORTS_JSON = "ga2_ports.json"
"""The description ``python -m flows.export`` writes beside the Verilog: each top's ports and
memories, the parameters and the timing constants it was generated with."""
# The artifact names live here, not in flows/export.py, so that cosim and its test bench can
# import them without loading Amaranth.

MEMORIES = ("spad", "ext", "imem")
"""The memories a test bench loads or reads: scratchpad, external memory, program."""

_ARRAYS = {
    "spad": ("core", "spad", "bank"),
    "ext": ("ext", "bank"),
    "imem": ("core", "control", "imem"),
}


@dataclass(frozen=True)
class Array:
    """One Verilog memory array: its hierarchical path (instance names from the top, then the
    array name), its depth in words, its word width."""

    path: tuple[str, ...]
    depth: int
    width: int = spec.WORD_BITS

    def dotted(self) -> str:
        return ".".join(self.path)


def arrays(memory: str, params: Params, *, top: str = "simtop") -> list[Array]:
    """The arrays of one memory, bank 0 first.

    Args:
        memory: one of :data:`MEMORIES`.
        top: ``"simtop"`` (paths from :class:`hw.simtop.SimTop`) or ``"core"`` (from
            :class:`hw.top.GA2`; the external memory is not inside it).

    Raises:
        ValueError: unknown memory or top, or ``ext`` asked of the core.
    """
    if memory not in MEMORIES:
        raise ValueError(f"memory={memory!r}: expected one of {', '.join(MEMORIES)}")
    if top not in ("simtop", "core"):
        raise ValueError(f"top={top!r}: expected 'simtop' or 'core'")
    prefix = _ARRAYS[memory][:-1]
    if top == "core":
        if prefix[0] != "core":
            raise ValueError(f"memory={memory!r} is not inside the core")
        prefix = prefix[1:]
    banks = spec.INSTR_WORDS if memory == "imem" else params.LANES
    words = {"spad": params.SPAD_WORDS, "ext": params.EXT_WORDS,
             "imem": params.IMEM_WORDS * spec.INSTR_WORDS}[memory]
    return [Array((*prefix, f"{_ARRAYS[memory][-1]}{b}"), words // banks) for b in range(banks)]


def locate(memory: str, word: int, params: Params, *, top: str = "simtop") -> tuple[str, int]:
    """(dotted array path, index) of word ``word`` of a memory (for ``imem``, of the encoded
    program: INSTR_WORDS words per instruction, least significant first).

    Raises:
        ValueError: as :func:`arrays`, or the word is outside the memory.
    """
    banks = arrays(memory, params, top=top)
    size = len(banks) * banks[0].depth
    if not 0 <= word < size:
        raise ValueError(f"word={word} is outside {memory} ({size} words)")
    return banks[word % len(banks)].dotted(), word // len(banks)


def describe(params: Params, *, top: str = "simtop") -> dict:
    """The map as plain data (for ``build/ga2_ports.json``): memory -> banks, depth, rule."""
    out = {}
    for memory in MEMORIES:
        if top == "core" and memory == "ext":
            continue
        banks = arrays(memory, params, top=top)
        out[memory] = {
            "arrays": [b.dotted() for b in banks],
            "depth": banks[0].depth,
            "width": banks[0].width,
            "word": f"word w is at arrays[w % {len(banks)}][w // {len(banks)}]",
        }
    return out
