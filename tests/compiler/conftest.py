"""Shared helpers for the compiler tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from compiler import Graph

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    """Import examples/<name>.py as a module (the examples folder is not a package; its
    scripts import their shared examples/_cli.py by its plain name, so the folder goes on
    sys.path, as it is when a script runs)."""
    if name in sys.modules:
        return sys.modules[name]
    if str(EXAMPLES) not in sys.path:
        sys.path.append(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def example():
    return load_example


def single_matmul(rows: int, inner: int, cols: int, weight: np.ndarray | None = None) -> Graph:
    """x (rows, inner) @ w (inner, cols) -> output "y"; w defaults to 0.1 everywhere."""
    g = Graph()
    x = g.input("x", (rows, inner))
    w = g.weight("w", np.full((inner, cols), 0.1) if weight is None else weight)
    g.output(g.matmul(x, w), "y")
    return g
