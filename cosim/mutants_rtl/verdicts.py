"""Survivors: equivalent (and why) or a gap.

A mutant that cosim and stress did not catch is judged in three ways, in this order:

1. the **netlist**: a bit forced to the constant it already is (Yosys lists ``const0`` on a
   bit tied to 0, the reset value of a register for instance), or a ``cnot`` whose control is
   the constant that leaves the bit as it is;
2. a **note** (:data:`NOTES`): a kind of survivor studied by hand, recognised by where it is
   (module, signal, bit, mode) rather than by Yosys's cell names, which change with every
   export, and why such mutants are equivalent. Some check a fact on the netlist themselves:
   a bit whose forward cone (followed through the module's cells, per bit through
   multiplexers and flip-flops, every output bit of any other cell) reaches no output port,
   memory or submodule; a memory's write data on the input chosen when its write enable is
   0; a register's value (its Q, D and the multiplexers of its enable and reset) against a
   bound, such as the checker's latency registers (found by elaborating hw.checker with its
   formula evaluation observed) against the longest legal latency of their kind, there or
   where the opcode picks one; a self-check the original never sets (``timing_fault``) that
   the mutation can only keep at 0;
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
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache

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
    params: Params
    """The machine the netlist is of: the notes' bounds and the checker's register names are its."""
    module: dict = field(default_factory=dict, repr=False, compare=False)
    design: dict = field(default_factory=dict, repr=False, compare=False)
    """Every module of the netlist, by name (for a cone followed across the hierarchy)."""

    @property
    def width(self) -> int:
        return len(self.bits)


def site(netlist: dict, m: Mutation, params: Params) -> Site:
    mod = netlist[m.module]
    cell = mod["cells"][m.cell]
    return Site(m, cell["type"], tuple(cell["connections"][m.port]), params, mod, netlist)


def unchanged_in(netlist: dict, m: Mutation) -> str | None:
    """:func:`unchanged` from the netlist's modules alone (it needs no machine: the draw's filter)."""
    cell = netlist[m.module]["cells"][m.cell]
    return _unchanged(m, tuple(cell["connections"][m.port]))


def unchanged(at: Site) -> str | None:
    """Why the mutation changes nothing at all, or None: a bit tied to 0 (1) made 0 (1), or a
    cnot whose control bit is the constant that leaves it as it is (XOR 0, XNOR 1)."""
    return _unchanged(at.m, at.bits)


def _unchanged(m: Mutation, bits: tuple) -> str | None:
    def constant(index: int) -> str | None:
        b = bits[index] if 0 <= index < len(bits) else None
        return b if b in ("0", "1") else None

    value = constant(m.portbit)
    if (m.mode, value) in (("const0", "0"), ("const1", "1")):
        return f"the bit is the constant {value} already; {m.mode} leaves it"
    ctrl = constant(m.ctrlbit)
    if (m.mode, ctrl) in (("cnot1", "0"), ("cnot0", "1")):
        xor = "XOR" if ctrl == "0" else "XNOR"
        return f"its control bit is the constant {ctrl}, so the bit is {xor}ed with {ctrl}: unchanged"
    return None


def longest_latency(params: Params) -> int:
    """The longest latency of any legal instruction (sim/spec.py): every field at its legal
    maximum, a length as long as its regions fit their memories (a strided MM's strides do not
    enter its latency)."""
    longest = 0
    for ispec in spec.instructions(params):
        f = {fl.name: fl.legal_range(params)[1] for fl in ispec.fields}
        longest = max(longest, spec.latency(ispec, _fitting_len(ispec, f, params), params))
    return longest


def _fitting_len(ispec: spec.InstrSpec, f: dict[str, int], params: Params) -> dict[str, int]:
    """``f`` with len (if the kind has one) the longest at most its value for which every region
    that grows with len fits its memory. A region that does not grow with len (an RQ's table of
    C channels, sized by C) is left out: its fields do not enter a latency, and shrinking len
    could never make it fit."""
    if "len" not in f:
        return f
    def size(r: spec.Region, n: int) -> int:
        return r.extent({**f, "len": n})
    grows = [r for r in ispec.regions if size(r, 2) > size(r, 1)]
    n = min(f["len"], params.SPAD_WORDS)
    while n > 0 and any(size(r, n) > (params.SPAD_WORDS if r.mem is spec.Mem.SPAD else params.EXT_WORDS)
                        for r in grows):
        n -= 1
    return {**f, "len": n}


def counter_reach(params: Params) -> int:
    """Bits a cycle counter can reach: the bit length of an upper bound of the cycles of any
    legal program, IMEM_WORDS instructions of :func:`longest_latency` with FRONTEND_CYCLES and
    STOP_CYCLES added (hw/README.md's counter formula)."""
    bound = spec.FRONTEND_CYCLES + params.IMEM_WORDS * longest_latency(params) + spec.STOP_CYCLES
    return bound.bit_length()


def engine_counter_reach(engine: str, params: Params) -> int | None:
    """Bits the busy counter of ``engine`` can reach, when a bound tighter than
    :func:`counter_reach` holds: IMEM_WORDS instructions of the engine's longest latency, for an
    engine whose spans are its latencies (every engine but the DMA, whose LDs grow by the other
    engines' write windows at OVERLAP = 1 and 2: GA2.md section 7). None for the DMA."""
    if engine == spec.SHARED_WRITER and params.OVERLAP:
        return None
    longest = max(longest_latency_of(ispec.name, params) for ispec in spec.instructions(params)
                  if ispec.counter == engine)
    return (params.IMEM_WORDS * longest).bit_length()


def _counter_bits(at: Site) -> str | None:
    m, reach = at.m, counter_reach(at.params)
    if m.unit != "counters" or at.width != spec.COUNTER_BITS:
        return None
    engine = m.signal.removeprefix("count_")
    own = engine_counter_reach(engine, at.params) if engine in spec.ENGINES else None
    above = _above(m, own) if own is not None and own < reach else None
    if above is not None:
        return (f"{m.signal} counts the {engine}'s busy cycles, at most {at.params.IMEM_WORDS} instructions "
                f"of its longest latency, below 2**{own}, so its bit {above[0]} is 0: {above[1]}")
    if m.signal in ("count_hazard", "count_port") and at.params.OVERLAP == 2:
        return None             # each engine's waiting head counts a cycle: more than the run's cycles
    if m.mode == "const0" and m.portbit >= reach:
        return (f"bit {m.portbit} of a cycle counter is never 1: no legal program runs 2**{reach} cycles "
                f"({at.params.IMEM_WORDS} instructions of at most the longest latency)")
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


_WIRING: dict[int, tuple[dict, Wiring]] = {}
"""The modules :func:`wiring` indexed, by id (the module kept beside, so that an id reused by
another dict is not mistaken for it); a run judges the cells of a few modules."""
_WIRING_KEPT = 16


@dataclass(frozen=True)
class Wiring:
    """A module's netlist indexed by bit: the (cell, index) of the output that drives it, the
    (cell, input port, index) that read it (:func:`_readers`), the public wires holding it."""

    drivers: dict
    readers: dict
    names: dict


def wiring(mod: dict) -> Wiring:
    """The :class:`Wiring` of a module, indexed once (up to _WIRING_KEPT modules are kept)."""
    kept = _WIRING.get(id(mod))
    if kept is not None and kept[0] is mod:
        return kept[1]
    drivers = {b: (name, i) for name, c in mod["cells"].items()
               for port, bits in c["connections"].items() if c["port_directions"].get(port) == "output"
               for i, b in enumerate(bits) if isinstance(b, int)}
    names = defaultdict(list)
    for name, net in mod.get("netnames", {}).items():
        if not net.get("hide_name"):
            for b in net["bits"]:
                names[b].append(name)
    if len(_WIRING) >= _WIRING_KEPT:
        _WIRING.clear()
    _WIRING[id(mod)] = (mod, Wiring(drivers, _readers(mod), dict(names)))
    return _WIRING[id(mod)][1]


def _names(at: Site, bit) -> list[str]:
    """The public wires holding a bit of the module."""
    return list(wiring(at.module).names.get(bit, ()))


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


def divisor_max(params: Params) -> int:
    """The largest softmax sum z, the dividers' divisor: SM_MAX_LEN entries of EXP_LUT[0] = 65536."""
    return params.SM_MAX_LEN * arith.Q16_ONE


DIVISOR_MAX = divisor_max(DEFAULT)
"""The default machine's :func:`divisor_max`."""


def _divider_bounds(at: Site) -> str | None:
    m = at.m
    kind = re.fullmatch(r"(?:pre|s\d+)_(divisor|x(\d+))", m.signal)
    if not m.module.startswith("ga2_simtop.core.softmax.div") or kind is None:
        return None
    net = at.module["netnames"].get(m.signal, {})
    if at.width != len(net.get("bits", ())):
        return None
    factor = int(kind[2]) if kind[2] else 1
    largest = divisor_max(at.params)
    top = (factor * largest).bit_length()
    what = "the divisor" if factor == 1 else f"{factor} x the divisor"
    why = (f"{m.signal} holds {what}, at most {factor} x {largest} (the softmax sum of SM_MAX_LEN "
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
    t, i = at.params.T, int(found[1])
    if at.width != t.bit_length() or m.portbit >= at.width:
        return None
    bit = 1 << m.portbit
    mutated = {"const0": lambda v: v & ~bit, "const1": lambda v: v | bit, "inv": lambda v: v ^ bit}[m.mode]
    if any((mutated(v) > k) != (v > k) for v in range(t + 1) for k in range(i, t)):
        return None
    return (f"rows{i} (M, 0..{t}) is only compared with {i}..{t - 1} (rows > k, in row {i} and the rows "
            f"after it: hw/systolic.py), and {m.mode} on bit {m.portbit} leaves every comparison as it is")


def _lands_in_own_register(at: Site, bit: int, q_bit: int) -> bool:
    """Whether ``bit`` (a multiplexer's output) reaches, through multiplexers' data inputs only,
    the D of a flip-flop at the position whose Q is ``q_bit``: a register's next-value path."""
    cells = at.module["cells"].values()
    todo, seen = [bit], set()
    while todo:
        b = todo.pop()
        if b in seen:
            continue
        seen.add(b)
        for c in cells:
            conn = c["connections"]
            if c["type"] == "$dff" and b in conn["D"]:
                if conn["Q"][conn["D"].index(b)] == q_bit:
                    return True
            elif c["type"] == "$mux":
                for port in ("A", "B"):
                    if b in conn[port]:
                        todo.append(conn["Y"][conn[port].index(b)])
    return False


def _array_accumulator_hold(at: Site) -> str | None:
    """The hold input of the systolic array's accumulator (hw/systolic.py: acc loads only when
    p_step<i>), which no read sees."""
    m = at.m
    if m.module != "ga2_simtop.core.mxu.array" or at.cell_type != "$mux" or m.port != "A" \
            or not 0 <= m.portbit < at.width:
        return None
    conn = at.module["cells"][m.cell]["connections"]
    acc = at.module["netnames"].get("acc", {}).get("bits", [])
    held = at.bits[m.portbit]
    if not any(re.fullmatch(r"p_step\d+", n) for n in _names(at, conn["S"][0])) or held not in acc \
            or not _lands_in_own_register(at, conn["Y"][m.portbit], held):
        return None
    return ("it changes an accumulator of the systolic array (acc) only in a cycle without a step, on "
            "the input that holds it (hw/systolic.py: acc loads only when p_step); the steps of an MM come "
            "in consecutive cycles (hw/mxu.py: step while skew <= c < s_end), the first loads the product "
            "alone (p_first), and the MXU reads acc only in the cycle after a row's last step (row_done, "
            "hw/mxu.py _write_results), before a held value can reach the register: a held value is "
            "never read nor added to")


LN_COUNT_LINE = "return Cat(Mux(hi_zero, lo_count, hi_count), hi_zero), hi_zero & lo_zero"
"""The source text of a level of hw/layernorm.leading_zero_pairs's tree (the count of k)."""
LN_SMALL_D = 1 << spec.LN_EPS_FRAC
"""D = 2^8 * (N*S2 - S1^2) + eps (GA2.md section 4): at least 2^8 unless N*S2 - S1^2 = 0."""


def _cone_back(at: Site, cell: str) -> set[tuple[str, int]]:
    """The (register, bit) pairs and constants that a cell's inputs come from, followed back
    through the module's combinational cells to the Q of its flip-flops (per bit through
    multiplexers, every input bit of any other cell); ("?", bit) for a module input or a memory."""
    mod = at.module
    driver = {}
    for name, c in mod["cells"].items():
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) == "output":
                for k, b in enumerate(bits):
                    if isinstance(b, int):
                        driver[b] = (name, port, k)
    found, seen = set(), set()
    todo = [b for port, bits in mod["cells"][cell]["connections"].items()
            if mod["cells"][cell]["port_directions"].get(port) == "input" for b in bits]
    while todo:
        b = todo.pop()
        if not isinstance(b, int):
            found.add(("const", b))
            continue
        if b in seen:
            continue
        seen.add(b)
        if b not in driver:
            found.add(("?", b))
            continue
        name, port, k = driver[b]
        c = mod["cells"][name]
        if c["type"] == "$dff":
            reg = next((n for n in _names(at, b) if mod["netnames"][n]["bits"] == c["connections"]["Q"]), "?")
            found.add((reg, c["connections"]["Q"].index(b)))
        elif c["type"] == "$mux":
            todo += [c["connections"]["A"][k], c["connections"]["B"][k], *c["connections"]["S"]]
        elif c["type"].startswith("$") and not c["type"].startswith("$mem"):
            todo += [x for p, bits in c["connections"].items() if c["port_directions"].get(p) == "input"
                     for x in bits]
        else:
            found.add(("?", b))
    return found


def _layernorm_low_count(at: Site) -> str | None:
    """A level of LN's leading-zero-pair count (k) that reads only the lowest bits of D, which the
    tree picks only when every pair above them is 0."""
    m = at.m
    if m.module != "ga2_simtop.core.layernorm" or LN_COUNT_LINE not in _source_line(m):
        return None
    sources = _cone_back(at, m.cell)
    bits = [bit for reg, bit in sources if reg != "const"]
    if not bits or any(reg not in ("const", "d") for reg, _ in sources):
        return None
    low = 1 << (max(bits) + 1)
    if (low - 1).bit_length() % 2 or low > LN_SMALL_D:        # whole pairs of D, all below 2^8
        return None
    return (f"the mutated level of the count of D's leading zero pairs (hw/layernorm.leading_zero_pairs) "
            f"reads only bits 0..{max(bits)} of D (its inputs followed back through the netlist), and the "
            f"tree takes its count only when every pair above is 0: D < {low}; D = 2^8 * (N*S2 - S1^2) + eps "
            f"is at least {LN_SMALL_D} unless N*S2 - S1^2 = 0, when every x_i equals the mean and every "
            "d_i = N*x_i - S1 is 0, so y_i = 0 whatever k, the root, R and the shift (LN_SHIFT - k >= 3) "
            "are, and LN's latency does not depend on k (sim/spec.py)")


LN_A_LOAD_LINE = "with m.If(sums_at | (tag_x.second & tag_x.mask[i])):"
"""The source text of the enable of a lane's copy of LN's A = N*R (hw/layernorm.py ``_scale``)."""


def _layernorm_scale_reload(at: Site) -> str | None:
    """The enable of a lane's copy of A made to load in more cycles (a term forced to 1), or only
    at ``sums_at`` (its pass 2 term forced to 0): A's sum is the same from sums_at to the end of
    the instruction, and only pass 2, after sums_at, reads the copy."""
    m = at.m
    if m.module != "ga2_simtop.core.layernorm" or LN_A_LOAD_LINE not in _source_line(m) \
            or at.cell_type not in ("$or", "$and") or m.mode not in ("const0", "const1"):
        return None
    cell = at.module["cells"][m.cell]
    if m.mode == "const0":
        sums_at = any(n.startswith("ln_scale_sum") for b in cell["connections"][m.port] if isinstance(b, int)
                      for n in _names(at, b))
        if at.cell_type == "$or" and (m.port == "Y" or sums_at):
            return None                 # sums_at's load taken away: not this note
    how = ("loads in more cycles" if m.mode == "const1"
           else "loads only when sums_at (the pass 2 reload taken away)")
    return (f"the enable of {m.signal or 'a lane'}'s copy of A = N*R (hw/layernorm.py _scale) {how}: A's "
            "partial products are registered every cycle from N (loaded once per row, at sums_done) and "
            "R (final from t0 + 52 until the next LN's reciprocal, after this one ends), so their sum is "
            "the same A from sums_at (t0 + 53) to the instruction's end; a load before sums_at is "
            "overwritten then, and only pass 2, after it, reads the copy")


COUNTDOWNS = {("ga2_simtop.core.layernorm", "gap"):
              "an LN starts only with the unit idle, never within its own gap between the passes "
              "(hw/layernorm.py _reads): the count is neither held nor reloaded before it reaches 0"}
"""Down counters read only as ``== 0`` (and by their own decrement), with why their only hold
and reload are at 0: (module, register) -> the reason."""
_ZERO_TESTS = ("$logic_not", "$reduce_or", "$reduce_bool")


def _mutated_value(m: Mutation, value: int) -> int:
    """The value a word takes through the mutation of its bit ``m.portbit`` (cnot1: XOR with bit
    ``m.ctrlbit`` of the same word; cnot0: XNOR; inv; const0; const1), as Yosys's mutate makes it."""
    bit, ctrl = 1 << m.portbit, (value >> m.ctrlbit) & 1 if m.ctrlbit >= 0 else 0
    flip = {"inv": 1, "cnot1": ctrl, "cnot0": 1 - ctrl}.get(m.mode)
    if flip is not None:
        return value ^ (bit if flip else 0)
    return value | bit if m.mode == "const1" else value & ~bit


def _countdown_steps(m: Mutation, load: int, cycles: int) -> list[tuple[int, int]]:
    """The original and the mutated count, cycle by cycle, from a load of ``load``: each counts
    down while nonzero (as its own ``!= 0`` sees it) and holds at 0; the mutation acts on every
    next value (the flip-flop's D)."""
    o, u, seen = load, _mutated_value(m, load), []
    for _ in range(cycles):
        seen.append((o, u))
        o = o - 1 if o else 0
        u = _mutated_value(m, u - 1 if u else u)
    return seen


def _countdown_arrival(at: Site) -> str | None:
    """A bit of the next value (D) of a down counter of :data:`COUNTDOWNS` whose mutated count
    reaches 0 in the same cycle as the original's from every value loaded into it, and stays
    there: the netlist reads the counter only as a whole through zero tests, through its own
    decrement by 1 and through the multiplexers of its own next value."""
    m = at.m
    why = COUNTDOWNS.get((m.module, m.signal))
    values, resets = register_chain(at, m.signal)
    q = tuple(at.module["netnames"].get(m.signal, {}).get("bits", ()))
    cell = at.module["cells"][m.cell]
    if why is None or at.cell_type != "$dff" or m.port != "D" or tuple(cell["connections"]["Q"]) != q:
        return None
    for name, port, _ in {r for b in q for r in wiring(at.module).readers.get(b, ())}:
        c = at.module["cells"][name]
        conn, kind = c["connections"], c["type"]
        whole = tuple(conn[port]) == q
        own_next = kind == "$mux" and port in ("A", "B") and tuple(conn["Y"]) in values
        if own_next or (kind in _ZERO_TESTS and whole):
            continue
        if kind == "$sub" and whole and port == "A" and conn["B"] == ["1"] and tuple(conn["Y"]) in values:
            continue
        return None
    cells = at.module["cells"]
    constants = [bits for bits in values if all(b in ("0", "1") for b in bits)]
    constants += [tuple(cells[name]["connections"]["B"]) for name in resets]
    if any(b not in ("0", "1") for bits in constants for b in bits):
        return None
    loads = sorted({int("".join(reversed(bits)), 2) for bits in constants})
    for load in loads:
        if any((o == 0) != (u == 0) for o, u in _countdown_steps(m, load, load + 2)):
            return None
    return (f"{m.signal} (hw: {_source_line(m).strip() or m.src}) is a down counter the netlist reads only "
            f"as == 0 / != 0, by its own decrement and by its own next-value multiplexers; from each value "
            f"loaded into it ({', '.join(map(str, loads))}) the mutated count, which counts down while it "
            "sees itself nonzero, reaches 0 in the same cycle as the original and stays there (0 maps to 0); "
            f"{why}")


def _flip_flop_of(at: Site, bit) -> dict | None:
    """The $dff cell whose Q drives ``bit``, or None."""
    found = wiring(at.module).drivers.get(bit)
    cell = at.module["cells"][found[0]] if found else None
    return cell if cell is not None and cell["type"] == "$dff" else None


def _delayed(at: Site, w_bit, e_bit) -> bool:
    """Whether ``w_bit`` is a register of ``e_bit`` one cycle later (its D is ``e_bit``, or
    ``e_bit`` behind a multiplexer that gives 0 on rst)."""
    dff = _flip_flop_of(at, w_bit)
    if dff is None:
        return False
    d = dff["connections"]["D"][0]
    if d == e_bit:
        return True
    found = wiring(at.module).drivers.get(d)
    mux = at.module["cells"][found[0]] if found else None
    return (mux is not None and mux["type"] == "$mux" and mux["connections"]["A"] == [e_bit]
            and mux["connections"]["B"] == ["0"] and "rst" in _names(at, mux["connections"]["S"][0]))


def _read_only_after_load(at: Site) -> str | None:
    """The hold input (A) of the multiplexer that loads a register when its select E is 1: the
    register is read only through multiplexers that pass it when W is 1, W being E one cycle
    later (a register of it), and give a constant or x otherwise, so whenever it is read it holds
    what E loaded the cycle before, never a held value (the LUT's table beat: ``tbl_data`` is
    written to the table memory on ``tbl_write``, the cycle after ``back.table`` loads it)."""
    m = at.m
    if at.cell_type != "$mux" or m.port != "A":
        return None
    conn = at.module["cells"][m.cell]["connections"]
    q = tuple(conn["A"])
    dff = _flip_flop_of(at, q[0]) if q and isinstance(q[0], int) else None
    if dff is None or tuple(dff["connections"]["Q"]) != q or len(conn["S"]) != 1:
        return None
    name = next((n for n in _names(at, q[0]) if tuple(at.module["netnames"][n]["bits"]) == q), None)
    values, _ = register_chain(at, name) if name else (set(), set())
    if tuple(conn["Y"]) not in values:
        return None
    e_bit, gates = conn["S"][0], set()
    for cell_name, port, _ in {r for b in q for r in wiring(at.module).readers.get(b, ())}:
        c = at.module["cells"][cell_name]
        cc = c["connections"]
        if c["type"] == "$mux" and tuple(cc["Y"]) in values:
            continue                    # the register's own enable and reset multiplexers
        if c["type"] != "$mux" or port != "B" or tuple(cc["B"]) != q \
                or any(b not in ("0", "x") for b in cc["A"]) or not _delayed(at, cc["S"][0], e_bit):
            return None
        gates.add(cell_name)
    if not gates:
        return None
    wire = next(iter(_names(at, e_bit)), "its select")
    return (f"it changes what {name} holds while it is not loaded; the register is read only through "
            f"{len(gates)} multiplexer(s) that pass it the cycle after {wire} loads it (their select is a "
            f"register of {wire}) and give x or 0 otherwise, so no read ever sees a held value")


CHECKS = "ga2_simtop.core.control.checks"


def _checker_flushed_stage(at: Site) -> str | None:
    """The value a checker stage register other than ``valid`` takes in a flush cycle (the hold
    input of its flush multiplexer): the flush clears the stage's ``valid``, and only a load
    (``en``) sets it again, which loads the register too; the core reads the checker's outputs
    only with ``out_valid`` (hw/control.py: the front end's queue pushes on it)."""
    m = at.m
    if m.module != CHECKS or at.cell_type != "$mux" or m.port != "B" \
            or not m.src.startswith("hw/checker.py"):
        return None
    conn = at.module["cells"][m.cell]["connections"]
    if "flush" not in _names(at, conn["S"][0]):
        return None
    stage = re.fullmatch(r"([rc])_(\w+)", m.signal)
    if stage is None or stage[2] == "valid" or f"{stage[1]}_valid" not in at.module["netnames"]:
        return None
    values, _ = register_chain(at, m.signal)
    if tuple(conn["Y"]) not in values or tuple(conn["B"]) != tuple(at.module["netnames"][m.signal]["bits"]):
        return None
    return (f"it changes what {m.signal} holds in a flush cycle; the flush clears {stage[1]}_valid, which "
            "only a load (en) sets again, loading the register with it (hw/checker.py _stage), and the core "
            "reads the checker's outputs only with out_valid (hw/control.py: the front end's queue pushes "
            "on it)")


def _and_above_narrow_operand(at: Site) -> str | None:
    """A bit of an AND's output above the width of one of its unsigned operands (Yosys extends
    it with zeros): the bit is 0 whatever the inputs, so const0 on it, or a cnot1 controlled by
    such a bit, changes nothing (the carries of hw/lanes.carry_save that meet an e_i of 17 bits
    in the softmax's sum tree)."""
    m = at.m
    cell = at.module["cells"][m.cell]
    if at.cell_type != "$and" or m.port != "Y":
        return None
    p = {k: int(v, 2) for k, v in cell["parameters"].items()}
    narrow = min((p[f"{x}_WIDTH"] for x in ("A", "B") if not p[f"{x}_SIGNED"]), default=None)
    if narrow is None:
        return None
    if m.mode == "const0" and m.portbit >= narrow:
        return (f"bit {m.portbit} of an AND with an unsigned operand of {narrow} bits (zero-extended) is "
                "0 whatever the inputs; const0 leaves it")
    if m.mode == "cnot1" and m.ctrlbit >= narrow:
        return (f"its control, bit {m.ctrlbit} of an AND with an unsigned operand of {narrow} bits "
                "(zero-extended), is 0 whatever the inputs: XOR 0 changes nothing")
    return None


def _mxu_old_row_hold(at: Site) -> str | None:
    """The hold input (A) of the multiplexer that loads MM acc = 1's old word ``acc_old<j>``
    (hw/mxu.py ``_read_old_rows``): row i's old words arrive in the cycle row i of the array is
    done, and the sum row + old is formed and written in the next (``summed``, MM_ACC_CYCLES), so
    the register is read only the cycle after each load, never while it holds."""
    m = at.m
    if m.module != "ga2_simtop.core.mxu" or not re.fullmatch(r"acc_old\d+", m.signal) \
            or at.cell_type != "$mux" or m.port != "A":
        return None
    conn = at.module["cells"][m.cell]["connections"]
    values, resets = register_chain(at, m.signal)
    q = tuple(at.module["netnames"][m.signal]["bits"])
    if tuple(conn["A"]) != q or tuple(conn["Y"]) not in values or m.cell in resets:
        return None
    return (f"it changes what {m.signal} holds while no old row arrives; row i's old words are registered "
            "as they return on rd1 (old_back), in the cycle row i of the array is done, and MM acc = 1 reads "
            "the register only in the next cycle, when it forms and writes row i's sum (summed = row_done & "
            "acc a cycle later: hw/mxu.py, MM_ACC_CYCLES), so it never reads a held value")


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


def register_chain(at: Site, signal: str) -> tuple[set[tuple], set[str]]:
    """The ports that carry the value of register ``signal`` of the mutation's module: its Q,
    its D and, back from D, the multiplexers of its enable and reset (their Y and A; B where the
    select is not rst). Returns those ports' bit tuples and the names of the reset multiplexers
    (select rst: their B is the reset value). Empty when no flip-flop drives ``signal``."""
    mod = at.module
    q = tuple(mod["netnames"].get(signal, {}).get("bits", ()))
    dff = next((c for c in mod["cells"].values()
                if c["type"] == "$dff" and tuple(c["connections"]["Q"]) == q), None)
    if not q or dff is None:
        return set(), set()
    by_y = {tuple(c["connections"]["Y"]): (n, c) for n, c in mod["cells"].items() if c["type"] == "$mux"}
    d = tuple(dff["connections"]["D"])
    values, resets, todo = {q, d}, set(), [d]
    while todo:
        found = by_y.get(todo.pop())
        if found is None:
            continue
        name, mux = found
        conn = mux["connections"]
        reset = "rst" in _names(at, conn["S"][0])
        if reset:
            resets.add(name)
        for port in ("A",) if reset else ("A", "B"):
            bits = tuple(conn[port])
            if bits not in values:
                values.add(bits)
                todo.append(bits)
    return values, resets


def _affected(cell: dict, port: str, index: int) -> list | None:
    """The output bits of a cell that input bit ``port[index]`` can change: Y[index] of a
    multiplexer's data input, Q[index] of a flip-flop's D, every output bit of any other cell;
    None when the bit leaves the module's own logic (a memory, a submodule)."""
    kind, conn = cell["type"], cell["connections"]
    if kind.startswith("$mem") or not kind.startswith("$"):
        return None
    if kind == "$mux" and port in ("A", "B"):
        return [conn["Y"][index]]
    if kind == "$dff" and port == "D":
        return [conn["Q"][index]]
    return [b for name, bits in conn.items() if cell["port_directions"].get(name) == "output" for b in bits]


def _readers(mod: dict) -> dict[int, list[tuple[str, str, int]]]:
    """Each bit of a module's netlist -> the (cell, input port, index) that read it."""
    readers = defaultdict(list)
    for name, cell in mod["cells"].items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for k, b in enumerate(bits):
                    if isinstance(b, int):
                        readers[b].append((name, port, k))
    return readers


def _mutated_bits(at: Site) -> list[int] | None:
    """The bits of the mutated cell's module that the mutation changes first: the bit itself on
    an output port, else what the input bit drives (:func:`_affected`); None when that leaves the
    module's own logic."""
    cell = at.module["cells"][at.m.cell]
    if cell["port_directions"].get(at.m.port) == "output":
        first = [at.bits[at.m.portbit]]
    else:
        first = _affected(cell, at.m.port, at.m.portbit)
    return None if first is None else [b for b in first if isinstance(b, int)]


def fanout_cone(at: Site) -> int | None:
    """The cells the mutated bit can reach, followed forwards through the module's netlist (per
    bit through multiplexers and flip-flops, any output bit of any other cell), or None when it
    reaches an output port, a memory or a submodule."""
    mod = at.module
    outputs = {b for port in mod.get("ports", {}).values() if port["direction"] != "input"
               for b in port["bits"]}
    readers = _readers(mod)
    first = _mutated_bits(at)
    if first is None:
        return None
    todo, seen, cells = deque(first), set(), set()
    while todo:
        bit = todo.popleft()
        if bit in seen:
            continue
        seen.add(bit)
        if bit in outputs:
            return None
        for name, port, k in readers[bit]:
            cells.add(name)
            more = _affected(mod["cells"][name], port, k)
            if more is None:
                return None
            todo.extend(b for b in more if isinstance(b, int) and b not in seen)
    return len(cells)


DESIGN_CONE_LIMIT = 200_000
"""Bits a cone across the hierarchy may visit before it gives up (no verdict)."""


def design_cone(at: Site) -> int | None:
    """:func:`fanout_cone` across the hierarchy: a bit that reaches a submodule's input goes on
    from that module's port, one that reaches its module's output port goes on from the bit the
    parent connects to it (Amaranth names each module instance ``<parent>.<cell>``). The number
    of bits visited, or None when the cone reaches a port of the simulation top's core (its
    outputs, the external memory's side), a memory, a cell with no output (an assertion or a
    print: a simulation sees it), or more than :data:`DESIGN_CONE_LIMIT` bits."""
    design, m = at.design, at.m
    if not design:
        return None
    readers: dict[str, dict] = {}
    outputs: dict[str, dict[int, tuple[str, int]]] = {}

    def module(name: str) -> tuple[dict, dict, dict]:
        mod = design[name]
        if name not in readers:
            readers[name] = _readers(mod)
            outputs[name] = {b: (port, k) for port, info in mod.get("ports", {}).items()
                             if info["direction"] != "input" for k, b in enumerate(info["bits"])}
        return mod, readers[name], outputs[name]

    first = _mutated_bits(at)
    if first is None:
        return None
    todo = deque((m.module, b) for b in first)
    seen: set[tuple[str, int]] = set()
    while todo:
        state = todo.popleft()
        if state in seen:
            continue
        seen.add(state)
        if len(seen) > DESIGN_CONE_LIMIT:
            return None
        name, bit = state
        mod, reads, outs = module(name)
        if bit in outs:
            parent, _, instance = name.rpartition(".")
            if parent not in design or "." not in parent:       # the core's own ports: outside
                return None
            port, k = outs[bit]
            up = design[parent]["cells"][instance]["connections"][port][k]
            if isinstance(up, int):
                todo.append((parent, up))
        for cname, port, k in reads[bit]:
            c = mod["cells"][cname]
            if c["type"] in design:                                 # a submodule instance
                todo.append((c["type"], design[c["type"]]["ports"][port]["bits"][k]))
                continue
            more = _affected(c, port, k)
            if more is None or (more == [] and c["type"] not in ("$mux", "$dff")):
                return None
            todo.extend((name, b) for b in more if isinstance(b, int))
    return len(seen)


def _unread_in_design(at: Site) -> str | None:
    m = at.m
    if not 0 <= m.portbit < at.width:
        return None
    reach = design_cone(at)
    if reach is None:
        return None
    return (f"the mutated bit ({m.signal or m.wire or m.cell} bit {m.portbit}) is read by nothing that "
            f"reaches an output: followed forwards through the netlist across module boundaries ({reach} "
            "bits, from its module into the submodules it feeds and out to its parents) it reaches no "
            "port of the core, no memory and no assertion")


def _unread(at: Site) -> str | None:
    m = at.m
    if not 0 <= m.portbit < at.width:
        return None
    reach = fanout_cone(at)
    if reach is None:
        return None
    what = f"{m.signal or m.wire or m.cell} bit {m.portbit}"
    why = (f"the mutated bit ({what}) drives nothing outside itself: followed forwards through the "
           f"netlist of {m.module.removeprefix('ga2_simtop.')} ({reach} cells) it reaches no output port, "
           "no memory and no submodule")
    if m.module == "ga2_simtop.core.vector" and re.fullmatch(r"a[1-9]\d*", m.signal) and m.portbit >= 8:
        why += (f" (with LANES = {at.params.LANES}, bits 8-31 of the operand register of lane {m.signal[1:]} "
                "are read by nothing: VADD and AMAX take its low byte, UNPACK only lane 0's word; "
                "hw/vector.py)")
    return why


def _memory_write_idle(at: Site) -> str | None:
    """The write-data multiplexer of a memory (Yosys's proc: data = en ? value : x) changed on its
    idle input: the memory's write enable is the same select's 0 then."""
    m, mod = at.m, at.module
    if at.cell_type != "$mux" or m.port != "A":
        return None
    conn = mod["cells"][m.cell]["connections"]
    select, y = conn["S"], conn["Y"]
    for name, cell in mod["cells"].items():
        if not cell["type"].startswith("$mem"):
            continue
        data, enable = cell["connections"]["WR_DATA"], cell["connections"]["WR_EN"]
        if y[0] not in data:
            continue
        offset = data.index(y[0])
        guards = enable[offset:offset + len(y)]
        driven = {tuple(c["connections"]["Y"]): c for c in mod["cells"].values() if c["type"] == "$mux"}
        ok = all(
            (g := driven.get((bit,))) is not None and g["connections"]["S"] == select
            and g["connections"]["A"] == ["0"] and g["connections"]["B"] == ["1"] for bit in guards)
        if ok and len(guards) == len(y):
            return (f"it changes the data written into memory {name} while its write port is idle: the "
                    "write enable of those bits is the multiplexer's own select, 0 whenever this input is "
                    "chosen, so no word is written then")
    return None


DIVIDEND_SHIFT = 16
"""The softmax feeds each divider e << 16 (hw/softmax.py: dividend = e_i << Q16_BITS)."""


def _divider_rest(at: Site) -> str | None:
    m = at.m
    if not m.module.startswith("ga2_simtop.core.softmax.div") \
            or not re.fullmatch(r"(?:pre|s\d+)_rest", m.signal):
        return None
    width = len(at.module["netnames"].get(m.signal, {}).get("bits", ()))
    if at.bits not in register_chain(at, m.signal)[0] or width > DIVIDEND_SHIFT + 1:
        return None
    why = (f"{m.signal} holds the dividend bits not yet shifted in, bits 0..{width - 1} of 2 x dividend "
           f"(rounding: hw/divider.py), and the softmax's dividend is e << {DIVIDEND_SHIFT} (hw/softmax.py), "
           f"so every bit of it is 0")
    if m.mode == "const0":
        return f"{why}, as const0 makes bit {m.portbit}"
    if m.mode == "cnot1":
        return f"{why}: the control bit {m.ctrlbit} is 0 and XOR 0 changes nothing"
    return None


@cache
def checker_latencies(params: Params) -> dict[str, tuple[str, int]]:
    """The checker's registers (``extent_r<k>``, hw/formula.py) that hold an instruction kind's
    latency, or a delay of it: name -> (kind, width). Found by elaborating hw.checker.Checker
    with its formula evaluation observed (Pipeline.register and formula.evaluate wrapped for the
    while), so the names are the exported Verilog's."""
    from amaranth.hdl import Fragment, Signal

    from hw import checker, formula

    inputs: dict[str, object] = {}
    widths: dict[str, int] = {}
    results: dict[str, str] = {}
    register, evaluate, latency = formula.Pipeline.register, formula.evaluate, checker._latency

    def observed_register(self, value):
        out = register(self, value)
        if out is not None:
            inputs[out.name], widths[out.name] = value, len(out)
        return out

    def observed_evaluate(pipe, fn, fields, *args):
        out = evaluate(pipe, fn, fields, *args)
        if isinstance(fn, _Tagged) and isinstance(out.value, Signal):
            results[out.value.name] = fn.kind
        return out

    formula.Pipeline.register, formula.evaluate, checker._latency = observed_register, observed_evaluate, \
        lambda ispec, p: _Tagged(latency(ispec, p), ispec.name)
    try:
        Fragment.get(checker.Checker(params), None)
    finally:
        formula.Pipeline.register, formula.evaluate, checker._latency = register, evaluate, latency
    changed = True
    while changed:         # a delay register of a latency register holds that latency, a cycle later
        changed = False
        for name, value in inputs.items():
            source = getattr(value, "name", None)
            if name not in results and isinstance(value, Signal) and source in results:
                results[name] = results[source]
                changed = True
    return {name: (kind, widths[name]) for name, kind in results.items()}


class _Tagged:
    """A latency formula that says whose it is (for :func:`checker_latencies`)."""

    def __init__(self, fn: Callable, kind: str):
        self.fn, self.kind = fn, kind

    def __call__(self, *args):
        return self.fn(*args)


def longest_latency_of(kind: str, params: Params) -> int:
    """The longest latency of a legal instruction of ``kind``: its fields at their legal maxima
    (every value of a field of at most four), a length as long as its regions fit."""
    import itertools

    ispec = spec.BY_NAME[kind]
    small = [fl for fl in ispec.fields if fl.legal_range(params)[1] - fl.legal_range(params)[0] < 4]
    longest = 0
    for values in itertools.product(*(range(fl.legal_range(params)[0], fl.legal_range(params)[1] + 1)
                                      for fl in small)):
        f = {fl.name: fl.legal_range(params)[1] for fl in ispec.fields} | {
            fl.name: v for fl, v in zip(small, values, strict=True)}
        longest = max(longest, spec.latency(ispec, _fitting_len(ispec, f, params), params))
    return longest


def _above(m: Mutation, top: int) -> tuple[int, str] | None:
    """For a const0 on a bit, or a cnot1 controlled by a bit, of a value below ``2**top``: that
    bit and why the mutation changes nothing, when the bit is ``top`` or above (else None)."""
    bit = m.portbit if m.mode == "const0" else m.ctrlbit
    if m.mode not in ("const0", "cnot1") or bit < top:
        return None
    return bit, (f"const0 makes bit {bit}" if m.mode == "const0"
                 else f"its control bit {bit} is 0 and XOR 0 changes nothing")


def _checker_latency(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.control.checks" or m.mode not in ("const0", "cnot1"):
        return None
    found = checker_latencies(at.params).get(m.signal)
    if found is None or at.bits not in register_chain(at, m.signal)[0]:
        return None                      # not the register's value (a reset value is not a latency)
    kind, _ = found
    longest = longest_latency_of(kind, at.params)
    top = longest.bit_length()
    above = _above(m, top)
    if above is None:
        return None
    bit, how = above
    return (f"{m.signal} holds the {kind} latency the checker computes for the instruction in its "
            "pipeline (or a delay of it); the execute stage loads a latency into its countdown only for an "
            "instruction that does not stop the machine (hw/control.py: consume & ~head.stop), a legal "
            f"{kind}, whose latency is at most {longest} < 2**{top}: bit {bit} is 0 in every value used, "
            f"and {how}")


def _gated_latency(at: Site, bit) -> tuple[str, int] | None:
    """(kind, index) when ``bit`` is Y[k] of ``Mux(op is kind's opcode, kind's latency, 0)``
    (hw/checker._select_value's term): A[k] the constant 0, S an equality of the opcode bits with
    the kind's opcode, B[k] bit ``index`` of a checker register holding that kind's latency."""
    mod = at.module
    if not isinstance(bit, int):
        return None
    found = next(((c, c["connections"]["Y"].index(bit)) for c in mod["cells"].values()
                  if c["type"] == "$mux" and bit in c["connections"]["Y"]), None)
    if found is None:
        return None
    mux, k = found
    conn = mux["connections"]
    if conn["A"][k] != "0":
        return None
    eq = next((c for c in mod["cells"].values() if c["type"] == "$eq" and c["connections"]["Y"] == conn["S"]),
              None)
    if eq is None:
        return None
    operands = [eq["connections"]["A"], eq["connections"]["B"]]
    side = [b for b in operands if all(x in ("0", "1") for x in b)]
    other = [b for b in operands if b is not (side[0] if side else None)]
    # Yosys keeps the constant at its own width (LD's opcode is the 1-bit '1'): zero-extended
    if len(side) != 1 or len(side[0]) > spec.OPCODE_BITS or _signed(eq) or len(other) != 1 \
            or not _instruction_opcode(at, other[0]):
        return None
    opcode = int("".join(reversed(side[0])), 2)
    source = conn["B"][k]
    dff = next((c for c in mod["cells"].values() if c["type"] == "$dff" and source in c["connections"]["Q"]),
               None)
    if dff is None:
        return None
    reg = next((n for n in _names(at, source) if mod["netnames"][n]["bits"] == dff["connections"]["Q"]), None)
    kind = checker_latencies(at.params).get(reg, (None,))[0]
    if kind is None or int(spec.BY_NAME[kind].opcode) != opcode:
        return None
    return kind, dff["connections"]["Q"].index(source)


def _instruction_opcode(at: Site, bits: list) -> bool:
    """Whether ``bits`` are the opcode bits (the lowest OPCODE_BITS) of an instruction register of
    the module (a net of INSTR_BITS bits)."""
    return len(bits) == spec.OPCODE_BITS and any(
        len(net["bits"]) == spec.INSTR_BITS and net["bits"][:spec.OPCODE_BITS] == bits
        for net in at.module["netnames"].values())


def _selected_latency(at: Site) -> str | None:
    """The OR that picks the latency of the kind the opcode names (hw/checker._select_value), a
    bit forced to 0 or XORed under a control bit, where that bit is one of a kind's latency above
    the longest legal latency of that kind."""
    m = at.m
    if m.module != "ga2_simtop.core.control.checks" or at.cell_type != "$or" \
            or m.mode not in ("const0", "cnot1"):
        return None
    bit = m.portbit if m.mode == "const0" else m.ctrlbit
    gated = _gated_latency(at, at.bits[bit]) if 0 <= bit < at.width else None
    if gated is None:
        return None
    kind, index = gated
    longest = longest_latency_of(kind, at.params)
    if index < longest.bit_length():
        return None
    how = ("const0 makes it 0" if m.mode == "const0"
           else "the mutated bit is XORed with it, so it changes only where that bit is 1")
    return (f"bit {bit} of the OR's {m.port} is bit {index} of the {kind} latency the checker computes, "
            f"gated by the opcode being {kind}'s (hw/checker._select_value), and {how}: only for an {kind} "
            f"whose latency reaches 2**{index}, past the longest legal {kind}'s {longest} cycles; the "
            "execute stage loads a latency into its countdown only for an instruction that does not stop "
            "the machine (hw/control.py: consume & ~head.stop)")


TIMING_FAULT = "timing_fault"
"""The core's sticky self-check of the units' ``done`` against the countdown (hw/top.timing_check)."""


def _timing_fault_kept_low(at: Site) -> str | None:
    """A multiplexer of timing_fault's register whose select is forced, so that the self-check can
    only be cleared or kept (never set where the original would not be)."""
    m = at.m
    if m.module != "ga2_simtop.core" or at.cell_type != "$mux" or m.port != "S" \
            or m.mode not in ("const0", "const1"):
        return None
    values, _ = register_chain(at, TIMING_FAULT)
    q = tuple(at.module["netnames"].get(TIMING_FAULT, {}).get("bits", ()))
    conn = at.module["cells"][m.cell]["connections"]
    taken = tuple(conn["B"] if m.mode == "const1" else conn["A"])
    if not q or tuple(conn["Y"]) not in values or (taken != q and set(taken) != {"0"}):
        return None
    return (f"the select of a multiplexer on {TIMING_FAULT}'s register is held at {m.mode[-1]}, which takes "
            f"{'the constant 0' if taken != q else 'the value the register holds'}: from reset (0) the "
            "sticky self-check can then be set only where the original's is, when a unit's done and the "
            "execute stage's countdown disagree (hw/top.timing_check: from the units' registered done, which "
            "do not read it), and no program makes that happen: every cosim and stress run demands it 0 "
            "(cosim/api.py TIMING_FAULT), the unmutated machine's among them")


def _reset_value(at: Site) -> str | None:
    """The reset value (a multiplexer on rst, port B) of a data register that is loaded before it
    is ever read (hw/lut.py's lut_out<k>, hw/mxu.py's acc_old<j>)."""
    m = at.m
    if at.cell_type != "$mux" or m.port != "B" or m.cell not in register_chain(at, m.signal)[1]:
        return None
    if m.module == "ga2_simtop.core.lut" and re.fullmatch(r"lut_out\d+", m.signal):
        return (f"it changes the value {m.signal} takes during reset; the register loads its lane's table "
                "entry in every cycle (no enable), so that value lasts one cycle, and the register is read "
                "only as write data gated by the write tag (Mux(write, out, 0): hw/lut.py), 0 until a LUT "
                "instruction's first source beat is written, many cycles after a start")
    if m.module == "ga2_simtop.core.layernorm" and re.fullmatch(r"ln_(?:prod|v|t|y|out)\d+", m.signal):
        return (f"it changes the value {m.signal} takes during reset; a lane's pass 2 registers (x*A, v, t, "
                "y, y + bias: hw/layernorm.py _normalise) load in every cycle (no enable), so that value "
                "lasts one cycle, and only a pass 2 write beat takes the last of them, LN_OVERHEAD cycles "
                "and more after an LN's dispatch, many cycles after a start")
    if m.module == "ga2_simtop.core.dma" and m.signal == "row_addr":
        return ("it changes the value row_addr takes during reset; the register loads src + offset in "
                "every cycle (no enable), so that value lasts one cycle, and it is read only with a "
                "GATHER's row_go (the first beat's external address; row_src beside it), GATHER_INDEX_CYCLES "
                "after the GATHER's dispatch, many cycles after a start (hw/dma.py _row_number)")
    if m.module == "ga2_simtop.core.mxu" and re.fullmatch(r"acc_old\d+", m.signal):
        return (f"it changes the value {m.signal} takes during reset; the register is read only by MM "
                "acc = 1's write data, under summed (hw/mxu.py), and each row's old word is loaded into it "
                "(old_back) before the row's sum is written: a reset value is overwritten before any read")
    return None


WRITE_ADDRESS_LINE = "addr = Signal(len(unit.wr.addr))"
"""The source text of write_beats's address register (hw/lanes.py), shared by the LUT and LN units."""


def _read_only_gated(at: Site, signal: str) -> bool:
    """True when every cell reading register ``signal``'s Q is either a multiplexer whose other
    data input is all 0 (a read gated by its select, as ``Mux(write, addr, 0)``) or a cell whose
    every output carries the register's own next value (its increment, in its register chain)."""
    values = register_chain(at, signal)[0]
    q = set(at.module["netnames"].get(signal, {}).get("bits", ()))
    if not q or not values:
        return False
    chain = {b for bits in values for b in bits}
    readers = 0
    for cell in at.module["cells"].values():
        conn, dirs = cell["connections"], cell["port_directions"]
        inputs = [p for p in conn if dirs.get(p) == "input" and q & set(conn[p])]
        if not inputs or (cell["type"] == "$dff" and inputs == ["D"]) or tuple(conn.get("Y", ())) in values:
            continue                     # the register itself, or its own enable/reset multiplexers
        readers += 1
        if cell["type"] == "$mux" and set(inputs) <= {"A", "B"} and len(inputs) == 1:
            other = "B" if inputs[0] == "A" else "A"
            if all(b == "0" for b in conn[other]):
                continue
        outputs = [b for p, bits in conn.items() if dirs.get(p) == "output" for b in bits]
        if not outputs or not set(outputs) <= chain:
            return False
    return readers > 0


def _write_address_reset(at: Site) -> str | None:
    """The reset value of write_beats's address register (hw/lanes.py), read only under the
    unit's write select and loaded with dst at every start."""
    m = at.m
    if at.cell_type != "$mux" or m.port != "B" or WRITE_ADDRESS_LINE not in _source_line(m) \
            or m.cell not in register_chain(at, m.signal)[1] or not _read_only_gated(at, m.signal):
        return None
    return (f"it changes the value {m.signal}, a unit's write address (write_beats, hw/lanes.py), takes "
            "during reset; the netlist reads the register only through a multiplexer that gives 0 when its "
            "select (the write tag) is low, and through its own increment, and every start loads it with the "
            "instruction's dst before the instruction's first beat is written")


def dma_spad_bound(params: Params) -> int:
    """The largest value of the DMA's spad_q (the next beat's scratchpad address, hw/dma.py) on a
    legal program: a beat's address is at most SPAD_WORDS - 1 (what an LD, ST or GATHER's row
    touches fits the scratchpad, or the machine stops at its issue, before its DMA starts), and
    spad_q is that address plus LANES (or the held address itself under OVERLAP)."""
    return params.SPAD_WORDS - 1 + params.LANES


def _dma_spad_address(at: Site) -> str | None:
    m = at.m
    if m.module != "ga2_simtop.core.dma" or at.bits not in register_chain(at, "spad_q")[0]:
        return None
    bound = dma_spad_bound(at.params)
    above = _above(m, bound.bit_length())
    if above is None:
        return None
    return (f"the port carries the DMA's spad_q, the scratchpad address of its next beat (hw/dma.py), at "
            f"most {bound} = SPAD_WORDS - 1 + LANES on a legal program (the words an LD, ST or GATHER "
            "touches fit the scratchpad; an illegal one stops the machine before its DMA starts): bits from "
            f"{bound.bit_length()} up are 0, and {above[1]}")


def _signed(cell: dict) -> bool:
    """Whether a comparison cell reads either operand as signed (its A_SIGNED or B_SIGNED)."""
    return any(int(str(cell.get("parameters", {}).get(f"{k}_SIGNED", "0")), 2) for k in "AB")


def _compare_mismatch(at: Site) -> str | None:
    """A cnot on one operand of an equality with a constant, whose flip happens only when the
    control bit differs from the constant's bit there: the operands differ then anyway."""
    m = at.m
    if at.cell_type not in ("$eq", "$ne") or m.mode not in ("cnot0", "cnot1") or m.port not in ("A", "B"):
        return None
    cell = at.module["cells"][m.cell]
    other = cell["connections"]["B" if m.port == "A" else "A"]
    if _signed(cell) or not all(b in ("0", "1") for b in other) or m.portbit == m.ctrlbit \
            or not 0 <= m.ctrlbit < at.width:
        return None
    flips_at = "1" if m.mode == "cnot1" else "0"
    constant = other[m.ctrlbit] if m.ctrlbit < len(other) else "0"      # unsigned: zero-extended
    if constant == flips_at:
        return None
    value = int("".join(reversed(other)), 2)
    return (f"{m.mode} flips bit {m.portbit} of {m.signal or m.wire or 'the operand'} only when its bit "
            f"{m.ctrlbit} is {flips_at}, and the constant it is compared with (0x{value:x}) has {constant} "
            f"there: the operands differ in bit {m.ctrlbit} whenever the flip happens, so {at.cell_type[1:]} "
            "gives the same answer with and without it")


READER = "ga2_axi_simtop.top.reader"
"""The AXI read side's module in the bus mutants' netlist (cosim/mutants_rtl/bus.py)."""


def reader_bounds(params: Params) -> dict[str, int]:
    """The read side's counts and their largest value on a legal program: ``left`` (the words an
    LD or a GATHER's row still takes, at most its region: SPAD_WORDS, since the words it writes fit
    the scratchpad, or the machine stops at its issue, before its DMA starts; a row number out of
    the table reads nothing) and ``bursts_left`` (the bus words still to request: a region of
    SPAD_WORDS words at any alignment spans SPAD_WORDS / LANES + 1)."""
    return {"left": params.SPAD_WORDS, "bursts_left": params.SPAD_WORDS // params.LANES + 1}


def _reader_counts(at: Site) -> str | None:
    m = at.m
    if m.module != READER or m.mode not in ("const0", "cnot1"):
        return None
    carried = [(name, bound) for name, bound in reader_bounds(at.params).items()
               if at.bits in register_chain(at, name)[0]]
    above = _above(m, carried[0][1].bit_length()) if carried else None
    if above is None:
        return None
    (name, bound), how = carried[0], above[1]
    return (f"the port carries the read side's {name} (hw/axi_read.py), at most {bound} on a legal "
            "program (what an LD or a GATHER's row writes fits the scratchpad; an illegal one stops "
            f"the machine before its DMA starts): bits from {bound.bit_length()} up are 0, and {how}")


def _reader_request_at_start(at: Site) -> str | None:
    m = at.m
    if m.module != READER or at.cell_type != "$mux" or m.port != "B":
        return None
    select = at.module["cells"][m.cell]["connections"]["S"]
    if len(select) != 1 or "start" not in _names(at, select[0]):
        return None
    held = next((r for r in ("m_axi_araddr", "m_axi_arlen") if at.bits in register_chain(at, r)[0]), None)
    if held is None:
        return None
    return (f"it changes what {held} holds after an LD's start, when no AR request waits (the LD before "
            "it ended only after its last R beat, so every AR of it was accepted) and ARVALID is 0; the "
            f"next request loads {held} afresh in the cycle ARVALID rises (hw/axi_read.py), and AXI reads "
            "the address channel only while ARVALID is 1")


STATION_OVERLAP_LINE = "return (a_s < b_e) & (b_s < a_e)"
"""The source text of hw/station._overlaps: one bound of two regions' overlap."""
STATION_READ_FIELD = re.compile(r"(?:w(?P<waiting>[a-z]+)_\d+|r_(?P<running>[a-z]+))\.r(?P<k>\d)[se]")
"""A station entry's (waiting ``w<engine>_<k>`` or running ``r_<engine>``) bound of read region k."""


def read_slots_of(engine: str, params: Params) -> int:
    """The most scratchpad regions an instruction of ``engine`` only reads: the station's read
    slots it can fill (hw/checker.station_regions; the others' ``r<k>v`` stay 0)."""
    from hw.checker import station_regions

    return max((len(station_regions(ispec)[1]) for ispec in spec.instructions(params)
                if ispec.counter == engine), default=0)


def _and_tree_leaves(at: Site, bit: int, drivers: dict) -> set[int]:
    """The bits a 1-bit conjunction is made of: ``bit`` followed back through $and cells."""
    leaves, todo = set(), [bit]
    while todo:
        b = todo.pop()
        cell = drivers.get(b)
        if cell is None or at.module["cells"][cell[0]]["type"] != "$and":
            leaves.add(b)
            continue
        conn = at.module["cells"][cell[0]]["connections"]
        todo += [conn["A"][cell[1]], conn["B"][cell[1]]]
    return leaves


def _station_unused_read_slot(at: Site) -> str | None:
    """A bound of the station's write-after-read comparison against read region k of an engine
    whose instructions read k regions or fewer: the pair is ANDed with that entry's r<k>v, which
    is 0 for each of them (hw/station._pairs), so the comparison never counts."""
    m = at.m
    if m.module != "ga2_simtop.core.control" or at.cell_type not in ("$lt", "$gt", "$le", "$ge") \
            or m.port != "Y" or STATION_OVERLAP_LINE not in _source_line(m):
        return None
    cell = at.module["cells"][m.cell]
    wires = wiring(at.module)
    fields = {n for b in (*cell["connections"]["A"], *cell["connections"]["B"])
              for n in wires.names.get(b, ()) if STATION_READ_FIELD.fullmatch(n)}
    if len(fields) != 1:
        return None
    field_ = STATION_READ_FIELD.fullmatch(fields.pop())
    engine, k = field_["waiting"] or field_["running"], int(field_["k"])
    entry = field_.group(0).rsplit(".", 1)[0]
    if engine not in spec.ENGINES or k < read_slots_of(engine, at.params):
        return None
    valid = at.module["netnames"].get(f"{entry}.r{k}v", {}).get("bits", [None])[0]
    bit = at.bits[m.portbit]
    for _ in range(4):              # up the AND of the pair's terms until r<k>v is one of them
        read = wires.readers.get(bit, [])
        if len(read) != 1 or at.module["cells"][read[0][0]]["type"] != "$and":
            return None
        name, port, i = read[0]
        conn = at.module["cells"][name]["connections"]
        other = conn["B" if port == "A" else "A"][i]
        if valid in _and_tree_leaves(at, other, wires.drivers):
            return (f"the comparison reads {entry}'s read region {k}, and no {engine} instruction reads "
                    f"more than {read_slots_of(engine, at.params)} scratchpad regions (hw/checker."
                    f"station_regions): its only reader is an AND with {entry}.r{k}v, which every such "
                    "entry holds at 0 (hw/station._pairs), so the pair is 0 whatever it compares")
        bit = conn["Y"][i]
    return None


OPCODE_COMPARE_LINE = "return any_of(op == opcode(name) for name in names)"
"""The source text of hw/isa.is_one_of: a unit's dispatch compares its engine's opcode."""


def unit_opcodes(params: Params) -> dict[str, tuple[str, ...]]:
    """Each unit of the core, by its submodule name (its module's, as hw/top.py's GA2 names it)
    -> the instructions it executes on the machine ``params``."""
    from hw.top import unit_classes

    out: dict[str, tuple[str, ...]] = {}
    for cls in dict.fromkeys(unit_classes().values()):
        out[cls.__module__.rsplit(".", 1)[-1]] = tuple(op for op in cls.OPCODES
                                                       if spec.built(spec.BY_NAME[op], params))
    return out


def _sole_unit_of_engine(at: Site) -> str | None:
    """At OVERLAP = 2 a unit's ``<unit>_take`` is its engine's issue AND its opcodes' compare
    (hw/control.dispatch_registers); a unit that executes every instruction of its engine finds
    one of its opcodes whenever its engine issues, so a compare forced to 1 changes nothing."""
    m = at.m
    if at.params.OVERLAP != 2 or m.module != "ga2_simtop.core" or at.cell_type != "$eq" \
            or m.mode != "const1" or m.port != "Y" or OPCODE_COMPARE_LINE not in _source_line(m):
        return None
    unit = m.signal.removesuffix("_take")
    opcodes = unit_opcodes(at.params).get(unit) if m.signal.endswith("_take") else None
    engines = {spec.BY_NAME[name].counter for name in opcodes or ()}
    if len(engines) != 1:
        return None
    engine = engines.pop()
    theirs = sorted(ispec.name for ispec in spec.instructions(at.params) if ispec.counter == engine)
    if set(theirs) != set(opcodes):
        return None
    return (f"the {unit} unit executes every instruction of the {engine} engine ({', '.join(theirs)}), so "
            f"at OVERLAP = 2, where {m.signal} is that engine's issue AND the compare of its head's "
            "opcode with the unit's (hw/control.dispatch_registers), the head is one of them whenever "
            "the engine issues: the compare forced to 1 changes no take")


NOTES: tuple[Callable[[Site], str | None], ...] = (
    _counter_bits, _stop_countdown, _dma_st_enable, _bank_read_hold, _divider_bounds, _lane0_mask,
    _softmax_max_pass, _array_rows, _array_accumulator_hold, _layernorm_low_count, _layernorm_scale_reload,
    _countdown_arrival, _read_only_after_load, _checker_flushed_stage, _and_above_narrow_operand,
    _mxu_old_row_hold,
    _lut_table_address,
    _unread, _unread_in_design, _memory_write_idle, _divider_rest, _checker_latency, _selected_latency,
    _timing_fault_kept_low, _reset_value,
    _compare_mismatch, _reader_counts, _reader_request_at_start, _write_address_reset, _dma_spad_address,
    _station_unused_read_slot, _sole_unit_of_engine)
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
        written = net.root / "proofs" / f"{ident}.log"  # the error's tail may be the selection's long list
        text = str(e) + (written.read_text(errors="replace") if written.is_file() else "")
        if "select -assert-none" in text or "Assertion failed: selection is not empty" in text:
            return "skipped", f"module {m.module} holds a memory"
        return "skipped", text.splitlines()[0]
    if "Induction step proven: SUCCESS" in log:
        return "proved", f"k-induction, k <= {INDUCTION_STEPS}"
    if "model found for base case" in log:
        return "differs", f"a counterexample at the ports of {m.module}"
    return "open", f"no counterexample within {INDUCTION_STEPS} cycles; the induction did not close"


def judge(net: yosys.Netlist, netlist: dict, m: Mutation, ident: str, *, params: Params,
          proofs: bool = True) -> Verdict:
    """The verdict on a survivor (see the module docstring); ``netlist`` is the JSON netlist's
    modules, of the machine ``params``."""
    at = site(netlist, m, params)
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
              params: Params, proofs: bool = True) -> dict[str, Verdict]:
    """:func:`judge` for every (id, mutation) of ``survivors``."""
    return {ident: judge(net, netlist, m, ident, proofs=proofs, params=params) for ident, m in survivors}
