"""MLPerf Tiny's ResNet-8 and DS-CNN from PyTorch (issue 25; compiler/workloads/mlperf_tiny.py):
compiled unchanged for the default machine and for T = 8 (both of the default sizes, which fit
the ECP5-85F: docs/sweep.md), the outputs equal the integer interpreter's value for value and lie
within 10% of PyTorch's; the cycles per image are pinned (the serial timeline's sum, checked
against the reference machine's counters), and the per-layer table adds up to them."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("torch")

from compiler.timeline import serial_timeline
from compiler.workloads.mlperf_tiny import measure
from sim.machines import PRESETS

CYCLES = {("ds_cnn", "t8"): 301_591, ("ds_cnn", "t4"): 799_163, ("resnet8", "t8"): 354_667,
          ("resnet8", "t4"): 1_135_513}
"""Cycles per image on the reference machine (the RTL's are the same: tests/test_examples.py runs
ResNet-8's launches on Verilator), with seed 0's weights and image."""
LAUNCHES = {("ds_cnn", "t8"): 3, ("ds_cnn", "t4"): 11, ("resnet8", "t8"): 2, ("resnet8", "t4"): 5}
OVERLAPPED = 293_817
"""ResNet-8's cycles per image on T = 8 with OVERLAP = 1 (same seed), its two launches."""
DECOUPLED = 293_599
"""The same on T = 8 with OVERLAP = 2 (the engines' queues decoupled; python examples/mlperf_tiny.py
--param t8 --param OVERLAP=2 printed it on 2026-12-08, the residual adds done by the convolutions'
bands: compiler/residual.py)."""


def check(name: str, machine: str) -> object:
    m = measure(name, PRESETS[machine])
    assert m.equal, "the machine's logits differ from the integer interpreter's"
    assert m.error < 0.1, m.error
    launches = m.program.launches()
    assert len(launches) == LAUNCHES[name, machine]
    timeline = sum(serial_timeline(code, m.params)[-1].end for code in launches)
    assert m.cycles == timeline == CYCLES[name, machine]
    front_and_halts = m.cycles - sum(r.cycles for r in m.rows)
    assert 0 < front_and_halts < 20 * len(launches)    # the front end and HALT of each launch
    return m


def test_ds_cnn_on_the_t8_machine():
    """Its depthwise layers run at under 3% of the array (one multiply-add in T of each diagonal
    block is useful, and K = N = T, M = W_o = 5): the honest cost of the mapping."""
    m = check("ds_cnn", "t8")
    depthwise = [r for r in m.rows if r.name.endswith(" dw")]
    assert len(depthwise) == 4 and all(r.macs == 25 * 5 * 64 * 9 and r.utilisation < 0.03 for r in depthwise)
    assert {r.name for r in m.rows if r.name.endswith(" avg")} == {"conv2d 25x5x64 k25x5 s1x1 p0x0 avg"}


@pytest.mark.slow
def test_resnet8_with_the_engines_side_by_side():
    """T = 8 with OVERLAP = 1 (the same program order's launches; its deep layers take two weight
    chunk buffers and a spare ring slot, compiler/convtaps.py): 293,817 cycles per image, the
    issue's 60% of the array (useful multiply-adds over T x T x cycles), which the serial T = 8
    machine does not reach (55.1%)."""
    m = measure("resnet8", dataclasses.replace(PRESETS["t8"], OVERLAP=1))
    assert m.equal and m.error < 0.1
    assert (m.cycles, m.launches) == (OVERLAPPED, 2)
    assert m.utilisation >= 0.6 > m.macs / (64 * CYCLES["resnet8", "t8"])


@pytest.mark.slow
def test_resnet8_decoupled():
    """T = 8 with OVERLAP = 2: the same launches, fewer cycles than OVERLAP = 1 (issue 27 asks 75% of
    the array; the dependence chains' bound holds it near 65%: docs/studies.md section 5)."""
    m = measure("resnet8", dataclasses.replace(PRESETS["t8"], OVERLAP=2))
    assert m.equal and m.error < 0.1
    assert (m.cycles, m.launches) == (DECOUPLED, 2) and DECOUPLED < OVERLAPPED


@pytest.mark.slow
@pytest.mark.parametrize("name, machine", [("ds_cnn", "t4"), ("resnet8", "t8"), ("resnet8", "t4")])
def test_the_models_on_both_machines(name, machine):
    m = check(name, machine)
    if name == "resnet8":
        assert m.macs == 12_505_728 and sum("conv2d" in r.name for r in m.rows) == 10
