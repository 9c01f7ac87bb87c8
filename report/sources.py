"""Where a report's program comes from: a seed of the battery, running example A, or a
function of the user's (returning a graph and its data, or a PyTorch module)."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from compiler import Graph, Program, compile_graph

from .page import Subject

TORCH_SAMPLES = 30
"""Calibration batches drawn for a PyTorch module (unit Gaussian), plus one test batch."""


def seed_subject(seed: int) -> Subject:
    """The battery's random graph of ``seed``, calibrated and tested as ``make cosim`` does
    (:func:`compiler.workloads.seedtable.compile_seed`)."""
    from compiler.workloads.seedtable import CALIBRATION_SAMPLES, compile_seed
    from sim.spec import DEFAULT

    run = compile_seed(seed, DEFAULT)   # the report page is the default machine's
    return Subject(
        f"seed {seed}",
        run.program,
        run.test_inputs,
        CALIBRATION_SAMPLES,
        f"compiler.workloads.seedtable.compile_seed({seed})",
    )


def example_a_subject() -> Subject:
    """Running example A (one attention decode step) as the seed runs it: 20 calibration samples."""
    from compiler.workloads.seedtable import attention_step_network

    graph, calibration, test = attention_step_network()
    return Subject(
        "running example A: one attention decode step",
        compile_graph(graph, calibration),
        test,
        len(calibration),
        "compiler.workloads.seedtable.attention_step_network()",
    )


def load_function(spec: str) -> Callable:
    """``path/to/file.py:name`` -> the function ``name`` defined in that file.

    Raises:
        ValueError: no ``:name``, the file is missing, or it has no such callable.
    """
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise ValueError(f"{spec!r}: give FILE.py:FUNCTION, e.g. examples/own_graph.py:build")
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{spec!r}: there is no file {path}")
    module = _import_file(file)
    found = getattr(module, name, None)
    if not callable(found):
        raise ValueError(f"{spec!r}: {path} defines no function {name!r}")
    return found


def call_function(spec: str) -> object:
    """Load the function ``spec`` names (:func:`load_function`) and call it with no arguments.

    Raises:
        ValueError: as :func:`load_function`, or the call raised (names the function, the
            exception and the line it was raised at).
    """
    function = load_function(spec)
    try:
        return function()
    except Exception as raised:
        file = Path(spec.rpartition(":")[0])
        raise ValueError(f"{spec}: calling it raised {_one_line(raised, file)}") from None


def _import_file(file: Path) -> ModuleType:
    """Run ``file`` as a module registered in ``sys.modules`` (dataclasses and
    ``from __future__ import annotations`` look their module up there), with the file's own
    folder first on ``sys.path``, as a script run has it.

    Raises:
        ValueError: the file has a syntax error, or running it raised (names the file, the line
            and the problem; the half-run module is not left in ``sys.modules``).
    """
    module_name = f"_report_user_{file.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, file)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(file.resolve().parent))
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as bad:
        sys.modules.pop(module_name, None)
        raise ValueError(f"{file}:{bad.lineno}: syntax error: {bad.msg}") from None
    except Exception as raised:
        sys.modules.pop(module_name, None)
        raise ValueError(f"{file}: running it raised {_one_line(raised, file)}") from None
    finally:
        sys.path.pop(0)
    return module


def _one_line(raised: BaseException, file: Path) -> str:
    """``ExceptionName: message`` and the last line of the user's ``file`` it came through, if any."""
    frames = [f for f in traceback.extract_tb(raised.__traceback__) if Path(f.filename) == file.resolve()]
    where = f" (line {frames[-1].lineno})" if frames else ""
    message = str(raised).splitlines()[0] if str(raised) else ""
    return f"{type(raised).__name__}{': ' + message if message else ''}{where}"


def user_subject(spec: str, samples: int, seed: int) -> Subject:
    """The function ``spec`` names returns a :class:`Program`, or ``(graph, calibration)``,
    ``(graph, calibration, test_inputs)``, or ``(graph, input_shapes)`` (input name ->
    (rows, cols): ``samples`` unit-Gaussian calibration samples and a test input are drawn
    from ``numpy.random.default_rng(seed)``).

    Raises:
        ValueError: it returns something else (the message says what it should return).
        CompileError: the graph is refused.
    """
    made = call_function(spec)
    if isinstance(made, Program):
        return Subject(spec, made, None, None, spec)
    if isinstance(made, tuple) and len(made) in (2, 3) and isinstance(made[0], Graph):
        graph, second = made[0], made[1]
        if isinstance(second, dict):  # input shapes
            rng = np.random.default_rng(seed)
            draw = [
                {name: rng.normal(size=shape) for name, shape in second.items()} for _ in range(samples + 1)
            ]
            return Subject(spec, compile_graph(graph, draw[:samples]), draw[samples], samples, spec)
        test = made[2] if len(made) == 3 else None
        return Subject(spec, compile_graph(graph, list(second)), test, len(second), spec)
    raise ValueError(
        f"{spec} returned {type(made).__name__}; return a compiler.Program, (graph, calibration), "
        "(graph, calibration, test_inputs) or (graph, {input name: (rows, cols)})"
    )


def torch_subject(spec: str, shape: tuple[int, ...], batch: int | None, samples: int, seed: int) -> Subject:
    """The function ``spec`` names returns a PyTorch module of one input; it is traced for inputs of
    ``shape`` (one row when ``batch`` is given) and calibrated on ``samples`` unit-Gaussian
    batches from ``numpy.random.default_rng(seed)``; the next batch is the test input.

    Raises:
        compiler.frontend.UnsupportedModel: the module has operations GA-2 cannot run.
        CompileError: the lowered graph is refused.
    """
    import torch

    from compiler.frontend import from_torch

    module = call_function(spec)
    if not isinstance(module, torch.nn.Module):
        raise ValueError(f"{spec} returned {type(module).__name__}; return a torch.nn.Module of one input")
    lowered = from_torch(module, tuple(shape), batch=batch)
    full = (batch, *shape) if batch is not None else tuple(shape)
    rng = np.random.default_rng(seed)
    feeds = [lowered.feed(rng.normal(size=full)) for _ in range(samples + 1)]
    program = compile_graph(lowered.graph, feeds[:samples])
    return Subject(f"{spec} (PyTorch)", program, feeds[samples], samples, f"{spec} through torch.fx")
