"""compiler/workloads/seedtable.py: the reusable runs of the seed's chapter-11 script."""

from compiler.workloads.seedtable import compile_seed, format_table, section1_network, six_layer_network
from sim.spec import DEFAULT


def test_compile_seed_gives_a_consistent_run():
    run = compile_seed(104, params=DEFAULT)
    assert run.row[:5] == (104, len(run.graph.nodes), len(run.program.code), run.program.spad_high,
                           run.program_no_reuse.spad_high)
    assert run.program.reuse and not run.program_no_reuse.reuse
    assert run.outcome.outputs.keys() == {e.name for e in run.program.ext.values() if e.kind == "output"}


def test_format_table_has_a_header_and_one_line_per_seed():
    lines = format_table([compile_seed(s, params=DEFAULT) for s in (100, 101)]).splitlines()
    assert len(lines) == 3 and lines[1].split()[0] == "100" and lines[2].split()[-1].endswith("%")


def test_networks_have_the_seed_shapes():
    net, calibration, test = section1_network()
    assert len(net.nodes) == 13 and len(calibration) == 30 and len(test["x"]) == 5
    net, calibration = six_layer_network()
    assert len(net.nodes) == 1 + 6 * 3 + 1 and len(calibration) == 10
