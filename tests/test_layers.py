"""The project's layers, enforced: every import of every module (read with ``ast``, imports inside
functions included) stays within what its layer may import (/work/shared/design/ARCHITECTURE.md,
"Layers"), and every package has its tests in ``tests/<package>``.

=====================  ================================================  ==========================
folder                 owns                                              may import (project)
=====================  ================================================  ==========================
``sim/``               the ISA spec, integer arithmetic, assembler,      ``sim`` (and only the
                       the reference machine                             standard library, numpy)
``compiler/``          Capra: graph, passes, emitter                     ``sim``, ``compiler``
``compiler/testing/``  the compiler's test tooling (battery, seeds, ...) ``sim``, ``compiler``
``hw/``                the gateware (Amaranth)                           ``sim.spec``, ``sim.arith``,
                                                                         ``sim.regmap`` (issue 29)
``flows/``             export, memory map, synthesis, the board build    ``hw``, ``sim``, ``compiler``
``cosim/``             cocotb benches, runners, stress                   ``hw``, ``sim``, ``compiler``,
                                                                         ``flows``
``tests/``,            (everything may be imported)                      all
``examples/``
=====================  ================================================  ==========================

``compiler.testing`` is imported only by ``compiler/testing`` itself, ``flows``, ``cosim``,
``tests`` and ``examples``: the compiler proper never depends on its own test tooling.

Not covered: imports by name at run time (``importlib.import_module``: hw/top.py's unit modules,
all in ``hw``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("sim", "compiler", "hw", "flows", "cosim", "tests", "examples")
"""The project's top-level packages and folders of Python code."""

ALLOWED: dict[str, tuple[str, ...]] = {
    "sim": ("sim",),
    "compiler.testing": ("sim", "compiler"),
    "compiler": ("sim", "compiler"),
    "hw": ("hw", "sim.spec", "sim.arith", "sim.regmap"),
    "flows": ("flows", "hw", "sim", "compiler"),
    "cosim": ("cosim", "flows", "hw", "sim", "compiler"),
    "tests": PROJECT,
    "examples": PROJECT,
}
"""Layer (the longest matching prefix of a module's name) -> the project modules it may import."""

TESTING_USERS = ("compiler.testing", "flows", "cosim", "tests", "examples")
"""The layers that may import compiler.testing."""

SIM_THIRD_PARTY = ("numpy",)
"""What sim may import beyond the standard library and itself."""
SIM_EXCEPTIONS = {("sim.bench", "rich")}
"""(module, package) pairs allowed beyond that, each for a reason: sim/bench.py prints its table
with rich when it is installed (a guarded import in the command-line report; the golden model
itself never sees it)."""


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    return max((layer for layer in ALLOWED if _within(module, (layer,))), key=len)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, at any depth. ``from X import
    y`` gives ``X.y`` when y may be a module (a project package's member), so that ``from sim
    import machine`` counts as ``sim.machine``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if _within(source, PROJECT):
                out += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
            else:
                out.append((node.lineno, source))
    return out


def _python_files() -> list[Path]:
    return sorted(p for top in PROJECT for p in (ROOT / top).rglob("*.py") if ".venv" not in p.parts)


def violations(path: Path) -> list[str]:
    """Every import of ``path`` its layer does not allow, as ``file:line: message``."""
    module = _module_name(path)
    layer = _layer(module)
    where = path.relative_to(ROOT)
    out = []
    for line, name in imports(path):
        top = name.split(".")[0]
        if top in PROJECT and not _within(name, ALLOWED[layer]):
            out.append(f"{where}:{line}: {layer} imports {name} (may import {', '.join(ALLOWED[layer])})")
        elif _within(name, ("compiler.testing",)) and not _within(module, TESTING_USERS):
            out.append(f"{where}:{line}: {layer} imports {name}: only {', '.join(TESTING_USERS)} may")
        elif layer == "sim" and top not in PROJECT and top not in sys.stdlib_module_names \
                and top not in SIM_THIRD_PARTY and (module, top) not in SIM_EXCEPTIONS:
            out.append(f"{where}:{line}: sim imports {name}: sim takes the standard library and "
                       f"{', '.join(SIM_THIRD_PARTY)} only")
    return out


def test_no_layer_imports_upward():
    found = [v for path in _python_files() for v in violations(path)]
    assert not found, "imports against the layers:\n" + "\n".join(found)


@pytest.mark.parametrize("source, line, message", [
    ("from compiler import compile_graph\n", 1, "sim imports compiler.compile_graph"),
    ("def f():\n    import amaranth.hdl\n", 2, "sim imports amaranth.hdl: sim takes the standard"),
    ("from . import machine\nimport numpy\n", None, None),
])
def test_the_check_sees_an_upward_import(tmp_path, monkeypatch, source, line, message):
    """A file in sim/ with an upward import (at module level, or inside a function) is named with
    its line; a clean one passes."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "sim").mkdir()
    path = tmp_path / "sim" / "probe.py"
    path.write_text(source)
    found = violations(path)
    if message is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(f"sim/probe.py:{line}: {message}"), found


def test_hw_takes_from_sim_only_the_spec_and_the_arithmetic(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "hw").mkdir()
    path = tmp_path / "hw" / "probe.py"
    path.write_text("from sim import spec, machine\nfrom sim.arith import clamp_int8\n"
                    "from flows import synth\n")
    found = violations(path)
    assert [f.split(": ", 1)[1].split(" (")[0] for f in found] == ["hw imports sim.machine",
                                                                    "hw imports flows.synth"]


def test_only_its_users_import_the_compiler_test_tooling(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "compiler").mkdir()
    path = tmp_path / "compiler" / "probe.py"
    path.write_text("from .testing import seedtable\n")
    assert violations(path) == ["compiler/probe.py:1: compiler imports compiler.testing.seedtable: "
                                f"only {', '.join(TESTING_USERS)} may"]


def test_every_package_has_its_tests_beside_the_others():
    """Each package (sim, compiler, compiler/frontend, compiler/testing, hw, flows, cosim) has a
    folder tests/<package> with tests in it."""
    packages = sorted(init.parent.relative_to(ROOT) for top in PROJECT[:5]
                      for init in (ROOT / top).rglob("__init__.py"))
    assert Path("sim") in packages and Path("compiler/testing") in packages
    missing = [str(p) for p in packages if not list((ROOT / "tests" / p).glob("test_*.py"))]
    assert not missing, f"packages without tests in tests/<package>: {missing}"
