"""GA-2 in a LiteX SoC (issue 29): the system top as a LiteX peripheral, a simulated SoC with a
VexRiscv CPU whose firmware runs the digits MLP on GA-2, and the ULX3S build (docs/guide/soc.md).

Modules: :mod:`.core` (GA-2 as a Migen module on LiteX's AXI interfaces), :mod:`.payload` (the
compiled model, its inputs and the reference machine's answers, as a C header), :mod:`.sim`
(``make soc-sim``), :mod:`.board` (``make soc-bitstream``). LiteX and Migen come from the
``soc`` extra of pyproject.toml (``make soc-setup``); nothing here is imported by the rest of
the project.
"""
