"""compiler/bench.py: the chains it times, and a short run."""

from compiler import bench, compile_graph


def test_chains_have_the_requested_size_and_compile():
    net, calibration = bench.chain(100)
    assert len(net.nodes) == 100
    program = compile_graph(net, calibration)
    assert len(program.code) == 2 + 2 * 97 + 2  # two loads, MM + RQ per matmul, ST, HALT


def test_bench_prints_its_figures(capsys):
    assert bench.main(["--sizes", "100", "300"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "graphs/s" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["100", "300"]
