"""compiler/testing/bench.py: the chains it times, and a short run."""

import numpy as np
import pytest

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


@pytest.mark.parametrize("size", ["0", "-5", "10", "ten"])
def test_a_size_no_chain_has_is_refused_before_any_work(size, capsys, monkeypatch):
    monkeypatch.setattr(bench, "battery_throughput", lambda: pytest.fail("ran before refusing"))
    with pytest.raises(SystemExit) as stop:
        bench.main(["--sizes", "100", size])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m compiler.testing.bench")
    assert "argument --sizes: " in err and ("is too small: a chain has at least 11 nodes" in err
                                           or "'ten' is not a whole number" in err)
    assert len(bench.chain(bench.CHAIN_MIN)[0].nodes) == bench.CHAIN_MIN


def test_a_chain_too_long_for_the_instruction_memory_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(bench, "battery_throughput", lambda: (1.0, 1.0))
    monkeypatch.setattr(bench, "CHAIN_IMEM_WORDS", 4096)
    assert bench.main(["--sizes", "2000"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: a chain of 2,000 nodes: the program has ")
    assert "more than the 4096 the instruction memory holds" in err
