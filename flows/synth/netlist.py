"""Reading Yosys's mapped netlist (``write_json``): its top module, and who reads each net.

Shared by the passes that rewrite the netlist before place and route (flows/synth/dsp_regs.py,
flows/synth/carries.py).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def top_module(netlist: dict, top: str) -> dict:
    """The module ``top`` of a ``write_json`` netlist.

    Raises:
        ValueError: the netlist has no module ``top``.
    """
    try:
        return netlist["modules"][top]
    except (KeyError, TypeError):
        raise ValueError(f"the netlist has no module {top!r} (Yosys's write_json of the top)") from None


def readers(module: dict) -> dict[Any, list[tuple[str, str]]]:
    """Each net bit's readers, as (cell, input port); a module's output port reads its bits as
    ("", port). Constant bits ("0", "1", "x") are left out."""
    sinks: dict[Any, list[tuple[str, str]]] = defaultdict(list)
    for port_name, port in module.get("ports", {}).items():
        for bit in port.get("bits", []) if port.get("direction") != "input" else []:
            if not isinstance(bit, str):
                sinks[bit].append(("", port_name))
    for name, cell in module["cells"].items():
        for port, bits in cell["connections"].items():
            if cell.get("port_directions", {}).get(port) != "output":
                for bit in bits:
                    if not isinstance(bit, str):
                        sinks[bit].append((name, port))
    return sinks
