"""Examples are tests: each script in examples/ runs (quickly) and prints what it should.

Add an entry per example: (script, arguments for a quick run, texts the output must hold).
"""

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


@pytest.mark.parametrize("script, args, expected", RUNS, ids=[r[0] for r in RUNS])
def test_example_runs(script, args, expected):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    for text in expected:
        assert text in done.stdout, text


@pytest.mark.parametrize("script", sorted({r[0] for r in RUNS}))
def test_example_help(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "usage:" in done.stdout
