"""cosim: GA-2 programs on the RTL under Icarus and Verilator, compared with the reference machine.

Modules:

* :mod:`cosim.api` -- ``run_programs(jobs, simulator)`` and ``compare(job, run)``, for other code;
* :mod:`cosim.jobs` -- jobs, the reference's expectations, RTL results, the files between them;
* :mod:`cosim.tb` -- the cocotb test bench (one ``TB`` class), run inside the simulator;
* :mod:`cosim.runner` -- the Verilog, cached builds, launches, on ``cocotb_tools.runner``;
* :mod:`cosim.batch` -- runs on one or both simulators a chunk at a time, progress, PASS/FAIL lines;
* :mod:`cosim.seeds` -- ``make cosim``: compiled random graphs (the seed table);
* :mod:`cosim.stress` -- ``make stress``: random programs drawn from the ISA spec;
* :mod:`cosim.mutants` -- deliberately broken copies of the Verilog;
* :mod:`cosim.text` -- counted nouns and plain-text ``--help``;
* ``python -m cosim`` -- the command line (:mod:`cosim.__main__`).
"""
