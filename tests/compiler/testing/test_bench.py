"""compiler/testing/bench.py: the chains it times, and a short run."""

import numpy as np

from compiler import compile_graph
from compiler.testing import bench


def test_chains_have_the_requested_size_and_compile():
    net, calibration = bench.chain(100)
    assert len(net.nodes) == 100
    ops = [n.op for n in net.nodes]
    assert ops.count("matmul") == 45 and ops.count("add") == 45 and ops.count("weight") == 8
    program = compile_graph(net, calibration)
    outcome = program.run(calibration[0])
    assert np.abs(outcome.outputs["y"].floats).max() > 0.1


def test_bench_prints_its_figures(capsys):
    assert bench.main(["--sizes", "100", "300"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "graphs/s" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["100", "300"]
