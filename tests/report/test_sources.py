"""report/sources.py: a user's FILE.py:FUNCTION is loaded as a module of its own, and each way it
can be wrong is one line naming the file and the problem (issue 24, defect 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from report.sources import call_function, load_function

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "users.py"
    path.write_text(text)
    return path


def test_a_dataclass_under_postponed_annotations_loads(tmp_path):
    """dataclasses look the module up in sys.modules, which a bare exec_module never filled."""
    source = write(tmp_path, "from __future__ import annotations\nfrom dataclasses import dataclass\n\n"
                             "@dataclass\nclass Pair:\n    a: int\n    b: int\n\n"
                             "def build():\n    return Pair(1, 2)\n")
    made = call_function(f"{source}:build")
    assert (type(made).__name__, made.a, made.b) == ("Pair", 1, 2)


def test_the_digits_example_loads():
    assert load_function(f"{ROOT / 'examples' / 'digits.py'}:make_models").__name__ == "make_models"


@pytest.mark.parametrize(("text", "spec_tail", "message"), [
    ("def f(:\n", ":f", r"users.py:1: syntax error: invalid syntax"),
    ("x = 1\n", ":g", r"users.py defines no function 'g'"),
    ("import no_such_module_here\n", ":f",
     r"users.py: running it raised ModuleNotFoundError: No module named 'no_such_module_here' \(line 1\)"),
    ("def f():\n    return 1 / 0\n", ":f",
     r"users.py:f: calling it raised ZeroDivisionError: division by zero \(line 2\)"),
    ("def f(seed):\n    return seed\n", ":f", r"calling it raised TypeError: f\(\) missing 1 required"),
])
def test_each_fault_is_one_line_naming_the_file(tmp_path, text, spec_tail, message):
    source = write(tmp_path, text)
    with pytest.raises(ValueError, match=message):
        call_function(f"{source}{spec_tail}")
    if "running it" in message or "syntax" in message:   # a half-run module is not left behind
        assert "_report_user_users" not in sys.modules


def test_the_command_prints_the_line_not_a_traceback(tmp_path):
    source = write(tmp_path, "def f(:\n")
    done = subprocess.run([sys.executable, "-m", "report", "torch", f"{source}:f", "--shape", "4"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {source}:1: syntax error: invalid syntax"


def test_a_torch_source_must_return_a_module(tmp_path):
    pytest.importorskip("torch")
    from report.sources import torch_subject

    source = write(tmp_path, "def f():\n    return 3\n")
    with pytest.raises(ValueError, match=r"users.py:f returned int; return a torch.nn.Module"):
        torch_subject(f"{source}:f", (4,), None, 2, 0)
