"""The `make bench` output that docs/guide/performance.md quotes is what `make bench` prints today.

``make bench`` is ``python -m compiler.testing.perf`` then ``python -m compiler.testing.mlpbench``
(exact cycle counts of the reference machine, which the RTL reproduces). Every quoted row of
their tables (``total``, ``example A``, the ``seeds 100-111:`` line, the batch rows) must be a
row they print on the default machine; the table of the engines side by side quotes the
serial column from the same run and the ``OVERLAP=1`` column from a run of that machine (its
digits MLP takes a minute to schedule: a slow test); the table of the engines decoupled its
``OVERLAP=2`` column from a run of that one (its digits MLP slow likewise).
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache

import pytest

from compiler.testing import mlpbench, perf
from sim.spec import DEFAULT

from .quoted import ROOT

PAGE = ROOT / "docs" / "guide" / "performance.md"
OVERLAP = replace(DEFAULT, OVERLAP=1)
DECOUPLED = replace(DEFAULT, OVERLAP=2)
_ROW = re.compile(r"\s*(total|example A|seeds 100-111:|\d+\s+[\d,]+\.\d)")


def _norm(line: str) -> str:
    return " ".join(line.split())


def quoted_rows() -> list[str]:
    """The rows of make bench's tables in the page's code blocks."""
    blocks = re.findall(r"^```\n(.*?)^```", PAGE.read_text(), re.M | re.S)
    return [line for block in blocks for line in block.splitlines() if _ROW.match(line)]


@cache
def serial_mlp() -> dict[int, float]:
    return {b: mlpbench.measure(b, DEFAULT).cycles / b for b in mlpbench.BATCHES}


def per_image(value: float, batch: int) -> str:
    """The page's form: whole cycles at batch 1, one decimal at the larger batches."""
    return f"{value:,.0f}" if batch == 1 else f"{value:,.1f}"


def test_the_quoted_rows_are_make_bench_output():
    lines = perf.format_report(*perf.measure(DEFAULT), params=DEFAULT) + mlpbench.report(DEFAULT)
    printed = {_norm(line) for line in lines}
    rows = quoted_rows()
    assert len(rows) == 6, rows          # total, example A, the seeds line, batches 1, 8 and 64
    stale = [row for row in rows if _norm(row) not in printed]
    assert not stale, f"docs/guide/performance.md quotes rows make bench no longer prints: {stale}"


def test_the_waits_of_the_overlapping_machine():
    rows, example = perf.measure(OVERLAP)
    hazard, port = sum(r.counters.hazard for r in rows), sum(r.counters.port for r in rows)
    expected = (f"(seeds 100-111: {hazard:,} and {port} cycles; example A {example.counters.hazard} and "
                f"{example.counters.port})")
    assert expected in _norm(PAGE.read_text())


@pytest.mark.parametrize("batch", mlpbench.BATCHES)
def test_the_serial_column_of_the_digits_mlp(batch):
    figure = re.escape(per_image(serial_mlp()[batch], batch))
    row = rf"\| digits MLP, batch {batch}, cycles/image[^|]* \| {figure} \|"
    assert re.search(row, _norm(PAGE.read_text())), f"batch {batch}: {figure}"


@pytest.mark.slow
@pytest.mark.parametrize("batch", mlpbench.BATCHES)
def test_the_overlap_column_of_the_digits_mlp(batch):
    cycles = mlpbench.measure(batch, OVERLAP).cycles / batch
    page = _norm(PAGE.read_text())
    expected = f"| {per_image(serial_mlp()[batch], batch)} | {per_image(cycles, batch)}"
    assert expected in page, f"batch {batch}: {expected}"


def test_the_decoupled_column_of_the_seeds_and_example_a():
    rows, example = perf.measure(DECOUPLED)
    page = _norm(PAGE.read_text())
    seeds = f"{sum(r.counters.cycles for r in rows):,}"
    head = r"\| program \| OVERLAP=0 \| OVERLAP=1 \| OVERLAP=2 \|"
    table = re.search(head + r"(.*?)\n\n", PAGE.read_text(), re.S)
    assert table, "the table of the three machines"
    text = table.group(1)
    assert re.search(rf"\| seeds 100-111 \(total\) \| [\d,]+ \| [\d,]+ \| {seeds} \|", text)
    assert re.search(rf"\| example A \| \d+ \| \d+ \| {example.counters.cycles} \|", text)
    hazard, port = sum(r.counters.hazard for r in rows), sum(r.counters.port for r in rows)
    assert f"`hazard` {hazard:,} and `port` {port} for the seeds" in page


@pytest.mark.slow
@pytest.mark.parametrize("batch", (1, 8))
def test_the_decoupled_column_of_the_digits_mlp(batch):
    cycles = mlpbench.measure(batch, DECOUPLED).cycles / batch
    page = _norm(PAGE.read_text())
    assert f"| {per_image(cycles, batch)} (" in page, f"batch {batch}: {per_image(cycles, batch)}"


@pytest.mark.slow
@pytest.mark.torch
def test_the_quoted_mlperf_tiny_rows_are_make_bench_output():
    """The fourth part of make bench (compiler/testing/cnnbench.py): ResNet-8 and DS-CNN on the
    default machine and T = 8, every row of the page's table as printed."""
    pytest.importorskip("torch")
    from compiler.testing import cnnbench
    from sim.machines import PRESETS

    lines = cnnbench.report([r for m in ("t4", "t8") for r in cnnbench.rows(PRESETS[m])])
    page = {_norm(line) for line in PAGE.read_text().splitlines()}
    assert len(lines) == 6 and all(_norm(line) in page for line in lines), lines
