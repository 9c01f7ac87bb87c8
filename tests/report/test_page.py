"""report: the page's sections, that it is self-contained, the command, and the RTL section."""

import subprocess
import sys
from html.parser import HTMLParser

import pytest

from report import SECTION_IDS, Subject, page_html, write_report
from report.rtl import RtlResult, simulators
from report.sources import example_a_subject


class Ids(HTMLParser):
    """The ids of the sections, and every src/href of the page."""

    def __init__(self):
        super().__init__()
        self.sections, self.links = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.sections.append(attrs.get("id"))
        for key in ("src", "href"):
            if key in attrs and tag != "a":
                self.links.append(attrs[key])


def parse(html):
    ids = Ids()
    ids.feed(html)
    return ids


@pytest.fixture(scope="module")
def example_a():
    return example_a_subject()


def test_every_section_in_order(example_a):
    ids = parse(page_html(example_a))
    assert ids.sections == [
        "summary",
        "graph",
        "ranges",
        "scales",
        "requantizers",
        "tiles",
        "allocation",
        "listing",
        "checks",
        "roofline",
        "cosim",
    ]
    assert set(SECTION_IDS) <= set(ids.sections)


def test_self_contained(example_a):
    html = page_html(example_a)
    assert parse(html).links == [] and "<script" not in html and "<img" not in html
    assert html.count("<svg") >= 6  # the graph and five plots, inline
    assert "not run on the rtl" in html.lower()


def test_without_inputs_no_checks(example_a, tmp_path):
    bare = Subject("bare", example_a.program)
    ids = parse(write_report(tmp_path / "bare.html", bare).read_text())
    assert "checks" not in ids.sections and "cosim" in ids.sections


def test_the_rtl_section_shows_each_verdict(example_a):
    passed = RtlResult("icarus", 1, cycles=[164], seconds=1.0)
    failed = RtlResult(
        "verilator", 1, differences={0: ["counter cycles: RTL 165, reference 164 (+1)"]}, cycles=[165]
    )
    html = page_html(example_a, [passed, failed])
    assert "co-simulation: FAIL" in html and "counter cycles: RTL 165, reference 164 (+1)" in html
    assert passed.verdict == "PASS" and failed.verdict == "FAIL"
    assert RtlResult("icarus", 1, failure="iverilog is missing").verdict == "NOT RUN"
    first = "ext: 1 word differs; first [150] RTL 0x00000001 (1), reference 0x00000002 (2)"
    named = "ext[150] (output 'out' row 0 col 3, from node 12 (concat)): last written by pc 17: ST src=93 ..."
    memory = RtlResult("icarus", 2, differences={1: [first, named, "counter cycles: RTL 165, reference 164"]})
    assert memory.summary() == f"1 of 2 runs differ from the reference; the first, run 1: {first}; {named}"
    assert passed.summary() == ("1 run bit-exact (every memory word, the five counters, the stop; 164 cycles "
                                "each) in 1.0 s")
    many = RtlResult("verilator", 6, cycles=[100, 200, 300, 400, 500, 500], seconds=2.0, counters=7)
    assert many.summary() == ("6 runs bit-exact (every memory word, the seven counters, the stop; 100 to 500 "
                              "cycles, 2,000 in all) in 2.0 s")
    assert simulators("both") == ("icarus", "verilator") and simulators("none") == ()
    with pytest.raises(ValueError, match="give icarus"):
        simulators("vcs")


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "report", *args], capture_output=True, text=True, timeout=300
    )


def test_the_command_writes_the_page_and_the_account(tmp_path):
    done = run("seed", "100", "--out", str(tmp_path / "s.html"), "--plots", str(tmp_path / "plots"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "s.html").exists() and (tmp_path / "plots" / "memory.png").exists()
    text = run("example-a", "--text")
    assert text.returncode == 0 and "== pass 5: allocation" in text.stdout and "2.36%" in text.stdout


def test_the_command_refuses_bad_arguments(tmp_path):
    assert run("seed", "x").returncode == 2
    bad = run("graph", str(tmp_path / "none.py") + ":build")
    assert bad.returncode == 2 and "there is no file" in bad.stderr


def test_a_graph_of_the_users(tmp_path):
    source = tmp_path / "net.py"
    source.write_text(
        "import numpy as np\nfrom compiler import Graph\n\ndef build():\n    g = Graph()\n"
        "    x = g.input('x', (2, 8))\n    g.output(g.matmul(x, g.weight('w', np.eye(8))), 'y')\n"
        "    return g, {'x': (2, 8)}\n"
    )
    done = run("graph", f"{source}:build", "--out", str(tmp_path / "net.html"), "--samples", "5")
    assert done.returncode == 0, done.stderr
    assert 'id="checks"' in (tmp_path / "net.html").read_text()


@pytest.mark.rtl
@pytest.mark.slow
def test_seed_100_on_icarus(tmp_path):
    done = run("seed", "100", "--sim", "icarus", "--out", str(tmp_path / "s.html"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS icarus: 1 run bit-exact" in done.stdout
    assert "co-simulation: PASS" in (tmp_path / "s.html").read_text()
