"""cosim: GA-2 programs on the RTL under Icarus and Verilator, compared with the reference machine.

Modules:

* :mod:`cosim.api` -- ``run_programs(jobs, simulator)`` and ``compare(job, run)``, for other code;
* :mod:`cosim.jobs` -- jobs, the reference's expectations, RTL results, the files between them;
* :mod:`cosim.harness` -- the Verilog test harness around ``ga2_simtop`` (clock, loads, dumps);
* :mod:`cosim.memfiles` -- memories as the files the harness loads and dumps;
* :mod:`cosim.tb` -- the cocotb test bench (one ``TB`` class), run inside the simulator;
* :mod:`cosim.verilog` -- the Verilog (fresh by content hash) and its ``ga2_ports.json``;
* :mod:`cosim.simulators` -- Icarus and Verilator: finding them, the build's options;
* :mod:`cosim.runner` -- cached builds and launches, on ``cocotb_tools.runner``;
* :mod:`cosim.pool` -- a campaign's chunks of jobs, made, run and compared on a farm's workers;
* :mod:`cosim.farm` -- the farm: a local pool of processes, or Ray (this machine or a cluster);
* :mod:`cosim.batch` -- the verdict per simulator: outcomes, PASS/FAIL lines, timings;
* :mod:`cosim.board` -- the progress display;
* :mod:`cosim.seeds` -- ``make cosim``: compiled random graphs (the seed table);
* :mod:`cosim.stress` -- ``make stress``: random programs drawn from the ISA spec;
* :mod:`cosim.coverage` -- what stress programs exercise (cocotb-coverage);
* :mod:`cosim.campaign` -- a stress campaign's folder, for --resume;
* :mod:`cosim.bench` -- ``make bench-cosim``: how fast co-simulation runs;
* :mod:`cosim.mutants` -- deliberately broken copies of the Verilog;
* :mod:`cosim.errors` -- the errors of a run that could not run;
* :mod:`cosim.text` -- counted nouns and plain-text ``--help``;
* ``python -m cosim`` -- the command line (:mod:`cosim.__main__`).
"""
