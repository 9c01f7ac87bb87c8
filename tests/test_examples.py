"""Examples are tests: each script in examples/ runs (quickly) and prints what it should.

Add an entry per example: (script, arguments for a quick run, texts the output must hold).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

RUNS = [
    ("attention_step.py", [], [
        "node 4: (12345120, 32)",
        "high-water mark: 70 words with reuse, 132 without",
        "machine == integer interpreter, every output value: True",
        "against float, relative: 2.36%",
        "real-number check, node by node: no problems",
    ]),
    ("own_graph.py", ["--widths", "8", "64"], [
        "40 instructions, scratchpad high-water mark 1728 words",
        "relative error 2.92%",
        "refused: scratchpad is full",
        "message: matmul node 2: its inner dimension is 65",
        "fix: ",
    ]),
]


TORCH_RUNS = [
    ("digits.py", ["--quick"], [
        "machine == integer interpreter on the first batch, both outputs: True",
        "MXU utilisation: 18944 multiply-adds",
        "RTL bit-exact on 0 images",
        "REFUSED relu: torch.relu: GA-2 has no relu instruction",
        "REFUSED softmax: torch.softmax: normalises over dim=0",
    ]),
    ("attention_block.py", ["--tests", "4"], [
        "%7  = matmul  %2, %4    -> (8, 8)    ^T x0.2500",
        "machine == integer interpreter, every output value of every run: True",
    ]),
]
"""Examples that need the optional torch extra (torch and scikit-learn)."""

DIGITS_LAST_LINE = r"digits: float (\d+\.\d)%, GA-2 (\d+\.\d)%, agree \d+\.\d%, RTL bit-exact on \d+ images"


@pytest.mark.parametrize("script, args, expected", RUNS, ids=[r[0] for r in RUNS])
def test_example_runs(script, args, expected):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, text


@pytest.mark.torch
@pytest.mark.parametrize("script, args, expected", TORCH_RUNS, ids=[r[0] for r in TORCH_RUNS])
def test_torch_example_runs(script, args, expected):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, text
    if script == "digits.py":  # the last line's format, and GA-2 within 1.5 points of float
        last = done.stdout.strip().splitlines()[-1]
        match = re.fullmatch(DIGITS_LAST_LINE, last)
        assert match, last
        assert abs(float(match[1]) - float(match[2])) <= 1.5, last


@pytest.mark.torch
@pytest.mark.rtl
@pytest.mark.slow
def test_digits_on_the_rtl():
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    done = subprocess.run([sys.executable, str(EXAMPLES / "digits.py"), "--quick", "--rtl", "8"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    for simulator in ("icarus", "verilator"):
        assert f"{simulator:9s}: 1 run bit-exact" in done.stdout, simulator
    assert done.stdout.strip().endswith("RTL bit-exact on 8 images")


@pytest.mark.parametrize("script", sorted({r[0] for r in RUNS + TORCH_RUNS}))
def test_example_help(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout
