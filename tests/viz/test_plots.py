"""viz: the plots of running example A and the seeds, checked against what they draw."""

import itertools
import xml.etree.ElementTree as ET

import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

from compiler import compile_graph
from compiler.workloads.seedtable import TABLE_SEEDS, attention_step_network, compile_seed
from sim import spec
from sim.spec import DEFAULT
from viz import (
    SweepPoint,
    figure_svg,
    graph_svg,
    plot_memory_map,
    plot_roofline,
    plot_scales,
    plot_sweep,
    plot_tiling,
    plot_timeline,
    roofline_point,
    save,
    save_program_plots,
)
from viz.graph import layers
from viz.memory import lifetimes


@pytest.fixture(scope="module")
def example_a():
    graph, calibration, _ = attention_step_network()
    return compile_graph(graph, calibration)


def spad_regions(ins):
    """(first word, words) of each scratchpad span an instruction reads or writes, from the spec
    (a span of no words, as an RQ's table of C = 0 channels when pc = 0, touches nothing)."""
    out = []
    for region in ins.spec.regions:
        if region.mem is spec.Mem.SPAD and region.extent(ins.fields):
            out.append((ins.fields[region.start], int(region.extent(ins.fields))))
    return out


@pytest.mark.parametrize("seed", [None, *TABLE_SEEDS])
def test_every_access_lies_in_a_live_buffer(seed, example_a):
    """The lifetimes (events and their pcs) cover every word every instruction touches, and
    two buffers alive at the same pc never share a word."""
    program = example_a if seed is None else compile_seed(seed, params=DEFAULT).program
    lives = lifetimes(program)
    for pc, ins in enumerate(program.code):
        live = [life for life in lives if life.start <= pc < life.end]
        for first, words in spad_regions(ins):
            assert any(life.addr <= first and first + words <= life.addr + life.words for life in live), (
                pc,
                ins,
            )
        spans = sorted((life.addr, life.addr + life.words) for life in live)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), pc


def test_example_a_memory_map_as_the_seed_describes_it(example_a):
    lives = lifetimes(example_a)
    key = lives[0]
    assert (key.addr, key.words, key.start) == (0, 48, 0)
    values = next(life for life in lives if life.words == 48 and life is not key)
    assert (
        values.addr == 6 and values.start >= key.end
    )  # placed after the key side is freed, on its addresses


def test_every_plot_draws(example_a, tmp_path):
    for plot in (plot_scales, plot_tiling, plot_memory_map, plot_timeline, plot_roofline):
        assert isinstance(plot(example_a), Figure)
    paths = save_program_plots(example_a, tmp_path)
    assert [p.name for p in paths] == [
        "scales.png",
        "tiling.png",
        "memory.png",
        "timeline.png",
        "roofline.png",
    ]
    image = imread(paths[0])
    assert image.shape[0] > 300 and len({tuple(px) for px in image.reshape(-1, image.shape[2])[::50]}) > 20


def test_pinned_scales_are_hatched(example_a):
    ax = plot_scales(example_a).axes[0]
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 2  # the scores (1/16) and the softmax output (1/127)
    assert "2 pinned" in ax.get_title()


def test_one_outlined_tile_per_mm(example_a):
    fig = plot_tiling(example_a)
    outlined = sum(1 for ax in fig.axes for p in ax.patches if p.get_linewidth() == 2)
    assert outlined == sum(1 for ins in example_a.code if ins.op == "MM") == 4


def test_the_memory_map_shows_the_views(example_a):
    ax = plot_memory_map(example_a).axes[0]
    labels = {t.get_text() for t in ax.texts}
    assert {"%1 input kc", "%2 input kn", "%6 input vc", "%7 input vn"} <= labels
    assert plot_memory_map(example_a, axis="cycle").axes[0].get_xlabel() == "cycle"
    with pytest.raises(ValueError, match="axis"):
        plot_memory_map(example_a, axis="time")


def test_the_timeline_title_gives_the_cycles(example_a):
    assert "164 cycles" in plot_timeline(example_a).axes[0].get_title()


def test_roofline_point_by_hand(example_a):
    point = roofline_point(example_a)
    # MMs: 1x8x4 + 1x8x2 (scores), 1x6x4 twice (weighted sum); DMA: LD 40, 8, 8, 40, 8 and ST 8
    assert point.macs == 32 + 16 + 24 + 24
    assert point.words == 40 + 8 + 8 + 40 + 8 + 8
    assert point.cycles == 164 and point.peak == 16 and point.bandwidth == 4
    assert point.mxu_bound == 96 / 16 and point.dma_bound == 112 / 4


def test_sweep_marks_refused_widths():
    points = [
        SweepPoint(8, 256, 512, 469, 0.019),
        SweepPoint(48, 3328, None, 2449, 0.024),
        SweepPoint(64, refusal="scratchpad is full"),
    ]
    fig = plot_sweep(points, 4096)
    assert "3 compiled" not in fig.get_suptitle() and "1 refused" in fig.get_suptitle()
    with pytest.raises(ValueError, match="no points"):
        plot_sweep([], 4096)


def test_save_refuses_another_format(example_a, tmp_path):
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        save(plot_scales(example_a), tmp_path / "x.jpg")
    svg = save(plot_scales(example_a), tmp_path / "x.svg", description="digest 123")
    assert "digest 123" in svg.read_text()
    assert figure_svg(plot_scales(example_a)).startswith("<svg")


def test_graph_svg(example_a):
    svg = graph_svg(example_a)
    root = ET.fromstring(svg)  # well-formed XML
    ns = "{http://www.w3.org/2000/svg}"
    nodes = [g for g in root.iter(f"{ns}g") if g.get("class") == "node"]
    assert len(nodes) == len(example_a.graph.nodes)
    edges = [p for p in root.iter(f"{ns}path") if p.get("marker-end")]
    assert len(edges) == sum(len(n.ins) for n in example_a.graph.nodes)
    rows = layers(example_a.graph)
    depth = {nid: k for k, row in enumerate(rows) for nid in row}
    assert all(depth[i] < depth[n.id] for n in example_a.graph.nodes for i in n.ins)
