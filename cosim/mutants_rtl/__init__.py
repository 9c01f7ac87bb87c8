"""``make mutants-rtl``: mutations of GA-2's hardware drawn by Yosys, graded by cosim and stress.

The mutations are not edits of the Amaranth source: Yosys's own ``mutate`` pass (the engine
behind MCY) lists them on the exported simulation top (``build/ga2_simtop.v``) and applies
them one at a time, each a single bit of one cell port of the netlist inverted, tied to 0 or
1, or XORed with another bit of the same port (modes ``inv``, ``const0``, ``const1``,
``cnot1``, ``cnot0``). Amaranth's Verilog carries ``src`` attributes naming the Python line of
every signal and operator, so each mutant is reported by its unit (``hw/mxu.py``,
``hw/requant.py``, ...) and line.

The steps (each module does one):

* :mod:`.yosys` runs Yosys: reads the Verilog once (cached by its SHA-256), lists mutations,
  writes a mutated Verilog per mutant, and checks survivors for equivalence;
* :mod:`.draw` parses the list, attributes each mutation to a unit and line, and draws a
  sample spread over every unit, deterministic from the seed;
* :mod:`.grade` runs ``python -m cosim seeds`` and then ``python -m cosim stress`` on each
  mutant until the first FAIL, each mutant a task of the campaign's farm (cosim/farm: a local
  pool of processes, or Ray on this machine or a cluster);
* :mod:`.verdicts` says, for every survivor, why it is equivalent or that it is a gap;
* :mod:`.report` prints the table and the score line and writes the JSON report.
"""
