"""Survivors: equivalent (and why) or a gap.

A mutant that cosim and stress did not catch is judged in three ways, in this order:

1. the **netlist**: a bit forced to the constant it already is (Yosys lists ``const0`` on a
   bit tied to 0, the reset value of a register for instance), or a ``cnot`` whose control is
   the constant that leaves the bit as it is;
2. a **note** (:data:`NOTES`): a kind of survivor studied by hand, recognised by where it is
   (module, signal, bit, mode) rather than by Yosys's cell names, which change with every
   export, and why such mutants are equivalent;
3. a **proof** by Yosys on the mutated module alone: the original and the mutated module
   side by side in a miter (``miter -equiv``), and ``sat -tempinduct`` (k-induction from
   the all-zero state, the reset input free) proves that no input sequence makes their
   outputs differ. A module holding a memory is not tried (its words would become
   thousands of registers). A proof is a verdict; a counterexample at the module's ports
   is not one (the rest of the core may never drive those inputs), and neither is an
   induction that does not close.

Anything else is a GAP: a mutant the grading should catch and does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from sim import arith, spec
from sim.spec import DEFAULT, Params

from ..runner import ROOT
from . import yosys
from .draw import Mutation

EQUIVALENT = "equivalent"
INDUCTION_STEPS = 8
"""k of the k-induction."""
PROOF_TIMEOUT = 300.0
"""Seconds Yosys may take for one proof."""


@dataclass(frozen=True)
class Verdict:
    """What a survivor is.

    Attributes:
        equivalent: True when no program can tell it from the original machine.
        why: the reason, in a sentence.
        method: ``note`` (studied by hand), ``proof`` (Yosys), or ``none``.
    """

    equivalent: bool
    why: str
    method: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Site:
    """A mutation with what the netlist says of its port: the connected bits (a Yosys bit
    number, or "0"/"1"/"x" for a constant) and the cell's type."""

    m: Mutation
    cell_type: str
    bits: tuple
    module: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def width(self) -> int:
        return len(self.bits)

    def constant(self, index: int) -> str | None:
        """"0" or "1" when that bit of the port is tied to a constant, else None."""
        b = self.bits[index] if 0 <= index < len(self.bits) else None
        return b if b in ("0", "1") else None


def site(netlist: dict, m: Mutation) -> Site:
    mod = netlist[m.module]
    cell = mod["cells"][m.cell]
    return Site(m, cell["type"], tuple(cell["connections"][m.port]), mod)


def unchanged(at: Site) -> str | None:
    """Why the mutation changes nothing at all, or None: a bit tied to 0 (1) made 0 (1), or a
    cnot whose control bit is the constant that leaves it as it is (XOR 0, XNOR 1)."""
    m = at.m
    value = at.constant(m.portbit)
    if (m.mode, value) in (("const0", "0"), ("const1", "1")):
        return f"the bit is the constant {value} already; {m.mode} leaves it"
    ctrl = at.constant(m.ctrlbit)
    if (m.mode, ctrl) in (("cnot1", "0"), ("cnot0", "1")):
        xor = "XOR" if ctrl == "0" else "XNOR"
        return f"its control bit is the constant {ctrl}, so the bit is {xor}ed with {ctrl}: unchanged"
    return None


def longest_latency(params: Params = DEFAULT) -> int:
    """The longest latency of any legal instruction (sim/spec.py): every field at its legal
    maximum, a length as long as its regions fit their memories (a strided MM's strides do not
    enter its latency)."""
    longest = 0
    for ispec in spec.INSTRUCTIONS:
        f = {fl.name: fl.legal_range(params)[1] for fl in ispec.fields}
        if "len" in f:
            f["len"] = min(f["len"], params.SPAD_WORDS)
            while any(r.extent(f) > (params.SPAD_WORDS if r.mem is spec.Mem.SPAD else params.EXT_WORDS)
                      for r in ispec.regions):
                f["len"] -= 1
        longest = max(longest, spec.latency(ispec, f, params))
    return longest


def counter_reach(params: Params = DEFAULT) -> int:
    """Bits a cycle counter can reach: the bit length of an upper bound of the cycles of any
    legal program, IMEM_WORDS instructions of :func:`longest_latency` with FRONTEND_CYCLES and
    STOP_CYCLES added (hw/README.md's counter formula)."""
    bound = spec.FRONTEND_CYCLES + params.IMEM_WORDS * longest_latency(params) + spec.STOP_CYCLES
    return bound.bit_length()


def _counter_bits(at: Site) -> str | None:
    m, reach = at.m, counter_reach()
    if m.unit != "counters" or at.width != spec.COUNTER_BITS:
        return None
    if m.mode == "const0" and m.portbit >= reach:
        return (f"bit {m.portbit} of a cycle counter is never 1: no legal program runs 2**{reach} cycles "
                f"({DEFAULT.IMEM_WORDS} instructions of at most the longest latency)")
    if m.mode == "cnot1" and m.ctrlbit >= reach:
        return (f"its control, bit {m.ctrlbit} of a cycle counter, is never 1 (2**{reach} cycles are out "
                "of reach)")
    return None


def _stop_countdown(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.control" or m.signal != "stop_left" or m.mode != "const0" \
            or spec.STOP_CYCLES != 1:
        return None
    return ("with STOP_CYCLES = 1 the stop's countdown stop_left is loaded with STOP_CYCLES - 1 = 0 and "
            "counts down only from a nonzero value (hw/control.py): it is 0 in every cycle")


def _dma_st_enable(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.dma":
        return None
    if m.signal.startswith("st_arrives") and m.mode == "const1":
        return ("st_arrives only enables the register that takes an ST beat off the shared read port; the "
                "beat is written the cycle after it arrives, so a register loaded every cycle holds the same "
                "word then")
    select = at.module["cells"][m.cell]["connections"].get("S", [None])[0]
    held = any(n.startswith("st_arrives") for n in _names(at, select))
    if at.cell_type == "$mux" and m.port == "A" and held:
        return ("it changes what the ST beat register (from_spad) holds while no beat arrives; a beat is "
                "written to the external memory in the cycle after it arrives, when the register still holds "
                "it as loaded (hw/dma.py)")
    return None


def _names(at: Site, bit) -> list[str]:
    """The public wires holding a bit of the module."""
    return [name for name, net in at.module.get("netnames", {}).items()
            if not net.get("hide_name") and bit in net["bits"]]


def _bank_read_hold(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.spad" or at.cell_type != "$mux" or m.port != "A":
        return None
    select = at.module["cells"][m.cell]["connections"]["S"]
    names = _names(at, select[0]) if len(select) == 1 and isinstance(select[0], int) else []
    port = next((n for n in names if re.fullmatch(r"rd\d+_(?:en_q|fresh)", n)), "")
    if not port:
        return None
    return (f"it changes what a bank's read register holds while its read port is idle ({port} low); "
            "every unit takes read data only in the cycle its own read returns, which the bank loaded "
            "afresh (hw/banked.py, hw/README.md)")


DIVISOR_MAX = DEFAULT.SM_MAX_LEN * arith.Q16_ONE
"""The largest softmax sum z, the dividers' divisor: SM_MAX_LEN entries of EXP_LUT[0] = 65536."""


def _divider_bounds(at: Site) -> str | None:
    m = at.m
    kind = re.fullmatch(r"(?:pre|s\d+)_(divisor|x(\d+))", m.signal)
    if not m.module.startswith("ga2_simtop.core.softmax.div") or kind is None:
        return None
    net = at.module["netnames"].get(m.signal, {})
    if at.width != len(net.get("bits", ())):
        return None
    factor = int(kind[2]) if kind[2] else 1
    top = (factor * DIVISOR_MAX).bit_length()
    what = "the divisor" if factor == 1 else f"{factor} x the divisor"
    why = (f"{m.signal} holds {what}, at most {factor} x {DIVISOR_MAX} (the softmax sum of SM_MAX_LEN "
           f"entries of 65536), so its bits from {top} up are 0")
    if m.mode == "const0" and m.portbit >= top:
        return f"{why}, as const0 makes bit {m.portbit}"
    if m.mode == "cnot1" and m.ctrlbit >= top:
        return f"{why}: the control bit {m.ctrlbit} is 0 and XOR 0 changes nothing"
    return None


def _lane0_mask(at: Site) -> str | None:
    m = at.m
    if m.module not in ("ga2_simtop.core.requant", "ga2_simtop.core.dma") or at.cell_type != "$gt":
        return None
    cell = at.module["cells"][m.cell]["connections"]
    if m.port != "Y" or m.mode != "const1" or any(b != "0" for b in cell["B"]):
        return None
    return ("it makes a lane mask's `left > 0` term (lane 0) always true (hw/lanes.py); the mask counts "
            "only while a beat is issued (Mux(issue, ...)), when at least one element is left and lane 0 "
            "is valid anyway")


def _source_line(m: Mutation) -> str:
    """The Python line a mutation is attributed to ("" when unknown)."""
    if ":" not in m.src:
        return ""
    file, line = m.src.rsplit(":", 1)
    lines = (ROOT / file).read_text().splitlines() if (ROOT / file).is_file() else []
    return lines[int(line) - 1] if 0 < int(line) <= len(lines) else ""


def _softmax_max_pass(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.softmax" or at.cell_type != "$logic_not" or m.mode != "const0" \
            or m.portbit != 0 or "tag_e.pass_ == 0" not in _source_line(m):
        return None
    return ("it makes pass 1 (pass_ = 1) update the running maximum as pass 0 does; pass 1 reads the same "
            "row again (SM may not run in place: the source cannot change), whose maximum mx already holds, "
            "so mx stays as it is (hw/softmax.py)")


def _array_rows(at: Site) -> str | None:
    """Row i of the systolic array keeps ``rows{i}`` (M, 0..T) only to compare it, ``rows > i``, and to
    pass it to row i + 1: a forced bit is equivalent when no M compares otherwise in any later row."""
    m = at.m
    found = re.fullmatch(r"rows(\d+)", m.signal)
    if m.module != "ga2_simtop.core.mxu.array" or found is None or m.mode not in ("const0", "const1", "inv"):
        return None
    t, i = DEFAULT.T, int(found[1])
    if at.width != t.bit_length() or m.portbit >= at.width:
        return None
    bit = 1 << m.portbit
    mutated = {"const0": lambda v: v & ~bit, "const1": lambda v: v | bit, "inv": lambda v: v ^ bit}[m.mode]
    if any((mutated(v) > k) != (v > k) for v in range(t + 1) for k in range(i, t)):
        return None
    return (f"rows{i} (M, 0..{t}) is only compared with {i}..{t - 1} (rows > k, in row {i} and the rows "
            f"after it: hw/systolic.py), and {m.mode} on bit {m.portbit} leaves every comparison as it is")


def _lut_table_address(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.lut" or m.signal != "tbl_addr" or at.cell_type != "$mux":
        return None
    select = at.module["cells"][m.cell]["connections"].get("S", [None])[0]
    if "in_source" not in _names(at, select):
        return None
    return ("it changes the table beats' address register only outside the table beats (the source "
            "beats and idle); the address is read only while in_table, and start loads it afresh "
            "(hw/lut.py)")


NOTES: tuple[Callable[[Site], str | None], ...] = (
    _counter_bits, _stop_countdown, _dma_st_enable, _bank_read_hold, _divider_bounds, _lane0_mask,
    _softmax_max_pass, _array_rows, _lut_table_address)
"""The survivors studied by hand: each returns why its mutations are equivalent, or None."""


def proof_script(net: yosys.Netlist, m: Mutation) -> str:
    """The Yosys script of :func:`prove` (the mutated module against the original)."""
    side = ("read_rtlil {il}\n{mutate}hierarchy -top {mod}\nflatten\nrename {mod} {name}\n"
            "design -save {name}\ndesign -reset\n")
    return (side.format(il=net.rtlil, mutate="", mod=m.module, name="gold")
            + side.format(il=net.rtlil, mutate=yosys.apply_command(m.line) + "\n", mod=m.module, name="gate")
            + "design -copy-from gold gold\ndesign -copy-from gate gate\n"
            "miter -equiv -flatten -make_assert -ignore_gold_x gold gate miter\nhierarchy -top miter\n"
            "opt -fast\nselect -assert-none t:$mem_v2 t:$mem\n"
            f"sat -prove-asserts -tempinduct -set-init-zero -maxsteps {INDUCTION_STEPS} miter\n")


def prove(net: yosys.Netlist, m: Mutation, ident: str, timeout: float = PROOF_TIMEOUT) -> tuple[str, str]:
    """Try to prove the mutated module equivalent to the original.

    Returns:
        (outcome, detail): ``proved``, ``differs`` (a counterexample at the module's ports,
        found within INDUCTION_STEPS cycles), ``open`` (the induction did not close), or
        ``skipped`` (the module holds a memory, Yosys failed or timed out).
    """
    folder = net.root / "proofs"
    folder.mkdir(exist_ok=True)
    try:
        log = yosys.run(proof_script(net, m), net.root, f"proofs/{ident}", timeout=timeout)
    except yosys.YosysError as e:
        text = str(e)
        if "select -assert-none" in text or "Assertion failed: selection is not empty" in text:
            return "skipped", f"module {m.module} holds a memory"
        return "skipped", text.splitlines()[0]
    if "Induction step proven: SUCCESS" in log:
        return "proved", f"k-induction, k <= {INDUCTION_STEPS}"
    if "model found for base case" in log:
        return "differs", f"a counterexample at the ports of {m.module}"
    return "open", f"no counterexample within {INDUCTION_STEPS} cycles; the induction did not close"


def judge(net: yosys.Netlist, netlist: dict, m: Mutation, ident: str, *, proofs: bool = True) -> Verdict:
    """The verdict on a survivor (see the module docstring); ``netlist`` is the JSON netlist's
    modules."""
    at = site(netlist, m)
    why = unchanged(at)
    if why:
        return Verdict(True, why, "netlist")
    for note in NOTES:
        why = note(at)
        if why:
            return Verdict(True, why, "note")
    if proofs:
        outcome, detail = prove(net, m, ident)
        if outcome == "proved":
            where = m.module.removeprefix("ga2_simtop.")
            return Verdict(True, f"Yosys proves {where} unchanged at its ports ({detail})", "proof")
        return Verdict(False, f"no note; Yosys: {outcome}, {detail}", "none")
    return Verdict(False, "no note (proofs not run)", "none")


def judge_all(net: yosys.Netlist, netlist: dict, survivors: list[tuple[str, Mutation]], *,
              proofs: bool = True) -> dict[str, Verdict]:
    """:func:`judge` for every (id, mutation) of ``survivors``."""
    return {ident: judge(net, netlist, m, ident, proofs=proofs) for ident, m in survivors}
