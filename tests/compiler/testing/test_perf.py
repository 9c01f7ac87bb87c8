"""compiler.testing.perf (make bench): the figures add up and the headline has its fixed form."""

import re
from functools import partial

from compiler.testing.perf import SEED_CHIP_CYCLES, format_report, measure, useful_macs
from sim import spec
from sim.asm import build
from sim.spec import DEFAULT

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""


def test_seed_chip_figures_are_ga2_md_section_6():
    # GA2.md section 6: twelve graphs, 17,022 cycles in total
    assert len(SEED_CHIP_CYCLES) == 12
    assert sum(SEED_CHIP_CYCLES.values()) == 17022


def test_useful_macs_counts_only_mm():
    code = [
        build("LD", dst=0, src=0, len=60),
        build("MM", dst=240, A=8, B=72, M=3, K=10, N=4, tb=0, lda=10, ldb=9, ldc=11),  # 3*4*10 = 120
        build("MM", dst=300, A=8, B=72, M=1, K=10, N=2, tb=0, lda=10, ldb=9, ldc=11),  # 1*2*10 = 20
        build("HALT"),
    ]
    assert useful_macs(code) == 140


def test_report_adds_up_and_ends_with_the_headline():
    rows, example = measure(DEFAULT)
    lines = format_report(rows, example, params=DEFAULT)
    for row in [*rows, example]:
        c = row.counters
        # every cycle is the front end, one unit's latency, or the final HALT
        assert c.cycles == spec.FRONTEND_CYCLES + c.dma + c.mxu + c.vpu + c.sfu + spec.STOP_CYCLES
    total = sum(row.counters.cycles for row in rows)
    match = re.fullmatch(r"seeds 100-111: (\d+) cycles \(seed chip 17022, (\d+\.\d\d)x fewer\)", lines[-1])
    assert match, lines[-1]
    assert int(match.group(1)) == total
    assert float(match.group(2)) == round(17022 / total, 2)
