"""Registers folded into the ECP5's DSP blocks: each multiplier's product register moves into
its MULT18X18D's own output register.

Yosys's ECP5 flow maps a product to a combinational MULT18X18D (``dsp_map_18x18.v``: every
``REG_*_CLK`` is ``NONE``) and leaves the register that takes the product in the fabric, so the
product crosses the routing twice in one cycle: operand register -> DSP block -> product
register, routing at both ends (on GA-2 at OVERLAP = 2, about 3.7 + 3.9 + 3.2 ns). The block has
an output register of its own (Lattice TN1267, ECP5 sysDSP; ``REG_OUTPUT_CLK``), and
nextpnr-ecp5 times a block that uses it from its clock (``ecp5/pack.cc``: timing class
``MULT18X18D_REGS_OUTPUT``). Vendor tools fold such registers themselves; this pass does it on
Yosys's netlist (JSON) before place and route.

A product register is folded when it is the register the DSP block's output would be:

* every output bit of the block that anything reads goes to exactly one flip-flop (TRELLIS_FF),
  into its data input, and to nothing else;
* those flip-flops share one clock (rising edge), one clock enable (active high, or none) and one
  reset (active high, or none), with a synchronous reset that wins over the enable
  (``SRMODE = LSR_OVER_CE``) to 0 (``REGSET = RESET``) and without the global set/reset
  (``GSR = DISABLED``).

That is exactly the block's output register with ``RESETMODE = SYNC``: in Lattice's simulation
model of MULT18X18D (ECP5U/M), a synchronous register clears on its reset and otherwise loads
when its enable is high; it powers up at 0 as such a flip-flop does. The pass then connects the
block's output bits to the flip-flops' outputs, removes the flip-flops and sets the block's
``REG_OUTPUT_CLK/CE/RST`` to ``CLK0/CE0/RST0``, wired to that clock, enable and reset.

The netlist keeps its meaning: :func:`equivalence_script` has Yosys prove a netlist and its
folded copy equivalent (``equiv_make``, ``equiv_simple``, ``equiv_induct``), with Yosys's models of
the ECP5's cells and :data:`MODEL` for the block; ``tests/flows/synth/test_dsp_regs.py`` runs it on
a synthesised unit, and on a wrongly folded copy, which it must refuse.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .netlist import readers, top_module
from .wrapper import TOP_NAME

DSP = "MULT18X18D"
FF = "TRELLIS_FF"
OUTPUT_PORTS = tuple(f"P{i}" for i in range(36))

FOLDABLE_FF = {"GSR": ("DISABLED",), "SRMODE": ("LSR_OVER_CE",), "REGSET": ("RESET",), "CLKMUX": ("CLK",),
               "CEMUX": ("CE", "1"), "LSRMUX": ("LSR",)}
"""The flip-flop parameters of a register the block's synchronous output register can be, each
as Yosys's ECP5 mapping writes it (``cells_ff.vh``): a flip-flop without one of them is left
alone rather than read with a default, since Yosys's model and nextpnr-ecp5 default CEMUX apart.
LSRMODE, when present, must be LSR (PRLD loads M on reset); SRMODE does not matter to a flip-flop
whose reset is the constant 0 (Yosys leaves it out there)."""


MODEL_TYPE = "GA2_MULT18X18D"
"""The block's type in the copies :func:`equivalence_script` reads: Yosys's own model of
MULT18X18D (``cells_sim_ecp5.v``) stops at any register."""
MODEL = """\
// MULT18X18D as the folded netlist uses it, written from Lattice's simulation model (ECP5U/M):
// P = A * B, each operand signed when its SIGNEDx pin is high; with REG_OUTPUT_CLK = CLK0, P is
// the output register, which clears on RST0 and otherwise loads on CE0 (RESETMODE SYNC).
module GA2_MULT18X18D (
    input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
    input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
    input C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17,
    input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, RST0,
    output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
    output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34, P35);
    parameter REG_OUTPUT_CLK = "NONE";
    parameter REG_OUTPUT_CE = "CE0";
    parameter REG_OUTPUT_RST = "RST0";
    parameter RESETMODE = "SYNC";
    parameter GSR = "ENABLED";
    wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
    wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
    wire [35:0] product = {{18{SIGNEDA & a[17]}}, a} * {{18{SIGNEDB & b[17]}}, b};
    reg [35:0] q = 36'd0;
    always @(posedge CLK0)
        if (RST0) q <= 36'd0;
        else if (CE0) q <= product;
    assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
            P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} =
        REG_OUTPUT_CLK == "CLK0" ? q : product;
endmodule
"""


@dataclass(frozen=True)
class Folded:
    """What :func:`fold_output_registers` did: ``blocks`` DSP blocks given their output register,
    ``flip_flops`` flip-flops removed, ``kept`` blocks left as they were, each with the reason."""
    blocks: int
    flip_flops: int
    kept: dict[str, str]


def _param(cell: dict, name: str) -> str | None:
    value = cell.get("parameters", {}).get(name)
    return value.strip() if isinstance(value, str) else value


def _control(cell: dict) -> tuple | str:
    """A flip-flop's (clock, enable, reset) bits, or why its register is not the block's."""
    conn = cell["connections"]
    no_reset = tuple(conn.get("LSR", ("0",))) == ("0",)
    for name, allowed in FOLDABLE_FF.items():
        if name == "SRMODE" and no_reset:
            continue                  # a flip-flop without a reset has no reset mode to match
        if _param(cell, name) not in allowed:
            return (f"a product flip-flop has {name} = {_param(cell, name)} "
                    f"(the block's register: {' or '.join(allowed)})")
    if _param(cell, "LSRMODE") not in (None, "LSR"):
        return f"a product flip-flop has LSRMODE = {_param(cell, 'LSRMODE')}"
    clk = tuple(conn.get("CLK", ()))
    ce = ("1",) if _param(cell, "CEMUX") == "1" else tuple(conn.get("CE", ()))
    lsr = tuple(conn.get("LSR", ("0",)))
    if len(clk) != 1 or len(ce) != 1 or len(lsr) != 1:
        return "a product flip-flop has no clock or no enable"
    return clk, ce, lsr


def fold_output_registers(netlist: dict, top: str = TOP_NAME) -> Folded:
    """Fold each MULT18X18D's product register into the block (in place; see the module's
    docstring for when). ``netlist``: Yosys's ``write_json`` of the mapped design; ``top``: its
    top module (flows/synth/wrapper.py's TOP_NAME).

    Raises:
        ValueError: the netlist has no module ``top``.
    """
    module = top_module(netlist, top)
    cells = module["cells"]
    sinks = readers(module)
    kept: dict[str, str] = {}
    blocks = removed = 0
    for name in [n for n, c in cells.items() if c["type"] == DSP]:
        dsp = cells[name]
        why, moves, control = _plan(dsp, cells, sinks)
        if why:
            kept[name] = why
            continue
        if not moves:
            kept[name] = "no output bit is read"
            continue
        clk, ce, lsr = control
        for port, ff in moves:
            dsp["connections"][port] = list(cells[ff]["connections"]["Q"])
            del cells[ff]
        dsp.setdefault("parameters", {}).update(
            {"REG_OUTPUT_CLK": "CLK0", "REG_OUTPUT_CE": "CE0", "REG_OUTPUT_RST": "RST0",
             "RESETMODE": "SYNC", "GSR": "DISABLED"})
        dsp["connections"].update({"CLK0": list(clk), "CE0": list(ce), "RST0": list(lsr)})
        dsp.setdefault("port_directions", {}).update({"CLK0": "input", "CE0": "input", "RST0": "input"})
        blocks += 1
        removed += len(moves)
    return Folded(blocks, removed, kept)


def _plan(dsp: dict, cells: dict, sinks: dict) -> tuple[str, list[tuple[str, str]], tuple]:
    """(why not, [(output port, flip-flop)], (clock, enable, reset)) for one block."""
    params = dsp.get("parameters", {})
    if any(str(params.get(f"REG_{r}_CLK", "NONE")).strip() != "NONE"
           for r in ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT")):
        return "the block already uses a register", [], ()
    moves = []
    controls = set()
    for port in OUTPUT_PORTS:
        bits = dsp["connections"].get(port, [])
        if len(bits) != 1 or isinstance(bits[0], str) or not sinks.get(bits[0]):
            continue
        readers = sinks[bits[0]]
        if len(readers) != 1 or readers[0][0] not in cells or cells[readers[0][0]]["type"] != FF \
                or readers[0][1] != "DI":
            return f"output {port} is read by something other than one flip-flop's data input", [], ()
        control = _control(cells[readers[0][0]])
        if isinstance(control, str):
            return control, [], ()
        controls.add(control)
        moves.append((port, readers[0][0]))
    if len(controls) > 1:
        return "the product flip-flops have different clocks, enables or resets", [], ()
    return "", moves, next(iter(controls), ())


def for_equivalence(netlist: dict, side: str, top: str = TOP_NAME, apart: tuple[str, ...] = ()) -> dict:
    """A copy of ``netlist`` for :func:`equivalence_script`: its top module alone (the cell
    libraries come from Yosys's models), its blocks typed :data:`MODEL_TYPE` and named apart by
    ``side`` ("gold" or "gate"), so that the equivalence pairs the design's nets and not the
    blocks' own output wires, which differ by design (a product before and after its register);
    so are the cells of the types in ``apart`` (flows/synth/carries.py's CCU2C, whose halves move);
    an output left unconnected ("x", as flows/synth/carries.py leaves a chain's last COUT) gets
    a net of its own."""
    module = json.loads(json.dumps(top_module(netlist, top)))
    spare = 1 + max((b for c in module["cells"].values() for bits in c["connections"].values() for b in bits
                     if isinstance(b, int)), default=1)
    cells = {}
    for name, cell in module["cells"].items():
        if cell["type"] == DSP:
            cell["type"] = MODEL_TYPE
        if cell["type"] in (MODEL_TYPE, *apart):
            name = f"{name}.{side}"
        for port, bits in cell["connections"].items():     # Yosys refuses an output tied to "x"
            if cell.get("port_directions", {}).get(port) == "output" and bits == ["x"]:
                cell["connections"][port] = [spare]
                spare += 1
        cells[name] = cell
    module["cells"] = cells
    return {"modules": {"top": module}}


def equivalence_script(gold: str, gate: str, model: str) -> str:
    """Yosys commands that prove the netlists in the JSON files ``gold`` and ``gate`` (each
    written by :func:`for_equivalence`) equivalent, register by register, and fail if they are
    not; ``model``: a file holding :data:`MODEL`."""
    return "; ".join([
        f"read_json {gold}", "rename top gold", f"read_json {gate}", "rename top gate",
        f"read_verilog {model}", "read_verilog -overwrite +/lattice/cells_sim_ecp5.v",
        "setattr -mod -unset top gold gate", "hierarchy -check", "proc", "flatten", "opt_clean -purge",
        "async2sync", "equiv_make gold gate equiv", "hierarchy -top equiv", "equiv_simple -seq 2",
        "equiv_induct", "equiv_status -assert"])
