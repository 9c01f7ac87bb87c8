"""The project's layers, enforced: every import of every module (read with ``ast``, imports inside
functions included) stays within what its layer may import (/work/shared/design/ARCHITECTURE.md,
"Layout" and convention 8), no modules import each other in a circle, the compiler's own layers
run one way, production never imports the compiler's test tooling, and every package has its
tests in ``tests/<package>``.

=====================  ================================================  ==========================
folder                 owns                                              may import (project)
=====================  ================================================  ==========================
``sim/``               the ISA spec, integer arithmetic, assembler,      ``sim`` (and only the
                       the reference machine                             standard library, numpy)
``compiler/``          Capra: operations, IR, passes, back end, program  ``sim``, ``compiler``
``compiler/testing/``  the compiler's test tooling (battery, mutants...) ``sim``, ``compiler``
``hw/``                the gateware (Amaranth)                           ``sim.spec``, ``sim.arith``,
                                                                         ``sim.regmap`` (issue 29)
``flows/``             export, memory map, synthesis, the board build    ``hw``, ``sim``, ``compiler``
``cosim/``             cocotb benches, runners, stress                   ``hw``, ``sim``, ``compiler``,
                                                                         ``flows``
``viz/``               pictures of a compiled program                    ``sim``, ``compiler``
``report/``            a program's HTML report page                      ``sim``, ``compiler``,
                                                                         ``viz``, ``cosim``
``tests/``,            (everything may be imported)                      all
``examples/``
=====================  ================================================  ==========================

``compiler.testing`` is imported only by ``compiler/testing`` itself, ``tests`` and ``examples``:
production code (the compiler proper, flows, cosim, viz, report) never depends on test tooling.

Inside ``compiler/`` the layers of :data:`COMPILER_LAYERS` run one way (convention 8): what an
operation is and the IR at the bottom, importing no pass; the passes over the graph above them;
the back end (lowerings, streaming, scheduling, emission) above those; the program and its
readers, the pipeline, the front ends. An import under ``if TYPE_CHECKING:`` (for annotations
only, never run) is aside from the circles and from the compiler's layers, as it is from Python.

Not covered: imports by name at run time (``importlib.import_module``: hw/top.py's unit modules,
all in ``hw``; the mutation check's seams, in ``compiler/testing``).
"""

from __future__ import annotations

import ast
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sim", "compiler", "hw", "flows", "cosim", "viz", "report")
"""The project's packages of production code."""
PROJECT = (*PACKAGES, "tests", "examples")
"""The project's top-level packages and folders of Python code."""

ALLOWED: dict[str, tuple[str, ...]] = {
    "sim": ("sim",),
    "compiler.testing": ("sim", "compiler"),
    "compiler": ("sim", "compiler"),
    "hw": ("hw", "sim.spec", "sim.arith", "sim.regmap"),
    "flows": ("flows", "hw", "sim", "compiler"),
    "cosim": ("cosim", "flows", "hw", "sim", "compiler"),
    "viz": ("viz", "sim", "compiler"),
    "report": ("report", "viz", "cosim", "sim", "compiler"),
    "tests": PROJECT,
    "examples": PROJECT,
}
"""Layer (the longest matching prefix of a module's name) -> the project modules it may import."""

TESTING_USERS = ("compiler.testing", "tests", "examples")
"""The layers that may import compiler.testing."""

COMPILER_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundations", ("compiler.errors", "compiler.int4", "compiler.packing", "compiler.requant",
                     "compiler.bias", "compiler.channels", "compiler.tables", "compiler.allocator",
                     "compiler.timeline")),
    ("operations and the IR", ("compiler.ops", "compiler.node", "compiler.text", "compiler.ir")),
    ("passes over the graph", ("compiler.limits", "compiler.cse", "compiler.fusion", "compiler.placement",
                               "compiler.lifetimes", "compiler.layout", "compiler.evaluate",
                               "compiler.calibrate", "compiler.scales")),
    ("back end", ("compiler.lowering", "compiler.blocking", "compiler.streaming", "compiler.convstep",
                  "compiler.convtaps", "compiler.addstep", "compiler.residual", "compiler.spill",
                  "compiler.schedule", "compiler.emit", "compiler.bounds")),
    ("program and its readers", ("compiler.program", "compiler.symbols", "compiler.interpret",
                                 "compiler.realcheck", "compiler.accuracy", "compiler.explain")),
    ("pipeline", ("compiler.compilation", "compiler.contracts", "compiler.arguments", "compiler.pipeline")),
    ("front ends and the package's face", ("compiler.frontend", "compiler")),
    ("reference workloads", ("compiler.workloads",)),
    ("test tooling", ("compiler.testing",)),
)
"""The compiler's layers, bottom first: a compiler module (the longest prefix that names it) may
import, outside ``if TYPE_CHECKING:``, the compiler modules of its own layer and of the layers
below, never one above."""

SIM_THIRD_PARTY = ("numpy",)
"""What sim may import beyond the standard library and itself."""
SIM_EXCEPTIONS = {("sim.bench", "rich")}
"""(module, package) pairs allowed beyond that, each for a reason: sim/bench.py prints its table
with rich when it is installed (a guarded import in the command-line report; the golden model
itself never sees it)."""


@dataclass(frozen=True)
class Import:
    """One import: its line, the absolute name imported, and whether it is for annotations only
    (inside ``if TYPE_CHECKING:``)."""

    line: int
    name: str
    typing: bool = False


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    return max((layer for layer in ALLOWED if _within(module, (layer,))), key=len)


def _typing_lines(tree: ast.Module) -> set[int]:
    """The lines of the imports under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            lines |= {inner.lineno for stmt in node.body for inner in ast.walk(stmt)
                      if isinstance(inner, ast.Import | ast.ImportFrom)}
    return lines


def imports(path: Path) -> list[Import]:
    """Every import in the file, at any depth (inside functions too). ``from X import y`` gives
    ``X.y`` when y may be a module (a project package's member), so that ``from sim import
    machine`` counts as ``sim.machine``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    typing = _typing_lines(tree)
    out = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if _within(source, PROJECT):
                names = [f"{source}.{alias.name}" for alias in node.names]
            else:
                names = [source]
        out += [Import(node.lineno, name, node.lineno in typing) for name in names]
    return out


def _python_files() -> list[Path]:
    return sorted(p for top in PROJECT for p in (ROOT / top).rglob("*.py") if ".venv" not in p.parts)


def violations(path: Path) -> list[str]:
    """Every import of ``path`` its layer does not allow, as ``file:line: message``."""
    module = _module_name(path)
    layer = _layer(module)
    where = path.relative_to(ROOT)
    out = []
    for imp in imports(path):
        line, name = imp.line, imp.name
        top = name.split(".")[0]
        if top in PROJECT and not _within(name, ALLOWED[layer]):
            out.append(f"{where}:{line}: {layer} imports {name} (may import {', '.join(ALLOWED[layer])})")
        elif _within(name, ("compiler.testing",)) and not _within(module, TESTING_USERS):
            out.append(f"{where}:{line}: {layer} imports {name}: only {', '.join(TESTING_USERS)} may import "
                       "the test tooling")
        elif layer == "sim" and top not in PROJECT and top not in sys.stdlib_module_names \
                and top not in SIM_THIRD_PARTY and (module, top) not in SIM_EXCEPTIONS:
            out.append(f"{where}:{line}: sim imports {name}: sim takes the standard library and "
                       f"{', '.join(SIM_THIRD_PARTY)} only")
    return out


def compiler_layer(module: str) -> int:
    """The index in :data:`COMPILER_LAYERS` of a compiler module's layer (the longest prefix)."""
    found = [(len(prefix), k) for k, (_, prefixes) in enumerate(COMPILER_LAYERS)
             for prefix in prefixes if _within(module, (prefix,))]
    return max(found)[1]


def compiler_violations(path: Path, modules: set[str]) -> list[str]:
    """Every run-time import of a compiler module ``path`` from a layer above its own."""
    module = _module_name(path)
    if not _within(module, ("compiler",)):
        return []
    mine = compiler_layer(module)
    out = []
    for imp in imports(path):
        target = _resolve(imp.name, modules)
        if imp.typing or target is None or not _within(target, ("compiler",)):
            continue
        theirs = compiler_layer(target)
        if theirs > mine:
            out.append(f"{path.relative_to(ROOT)}:{imp.line}: {module} ({COMPILER_LAYERS[mine][0]}) imports "
                       f"{target} ({COMPILER_LAYERS[theirs][0]}), a layer above it")
    return out


def _resolve(name: str, modules: set[str]) -> str | None:
    """The project module an imported name is in (``compiler.ops.OPS`` -> ``compiler.ops``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(paths: list[Path]) -> dict[str, dict[str, int]]:
    """module -> {module it imports at run time: the line}, among the given files (an import
    under ``if TYPE_CHECKING:`` is no edge; an import inside a function is)."""
    modules = {_module_name(p) for p in paths}
    graph: dict[str, dict[str, int]] = {}
    for path in paths:
        module = _module_name(path)
        edges = graph.setdefault(module, {})
        for imp in imports(path):
            target = _resolve(imp.name, modules)
            if not imp.typing and target is not None and target != module:
                edges.setdefault(target, imp.line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The circles of the graph (strongly connected parts of two modules or more), each as one
    loop of modules, the first module (by name) first and last: ``[a, b, a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(start: str) -> None:      # Tarjan's algorithm, with an explicit stack
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {})))))
                    break
                if nxt in stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        found.append(_loop(sorted(part), graph))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _loop(part: list[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """One loop through a strongly connected part, from its first module back to it (the
    shortest, by breadth-first search)."""
    members, start = set(part), part[0]
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for succ in sorted(graph[node]):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [*reversed(path), start]
                if succ in members and succ not in came:
                    came[succ] = node
                    nxt.append(succ)
        frontier = nxt
    raise AssertionError("a strongly connected part has a loop")


def describe_circle(loop: list[str], graph: dict[str, dict[str, int]]) -> str:
    """``a (line 3) -> b (line 9) -> a``: each import of the loop with its line."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(loop)]
    return " -> ".join([*steps, loop[-1]])


def test_no_layer_imports_upward():
    found = [v for path in _python_files() for v in violations(path)]
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_no_modules_import_each_other_in_a_circle():
    """Imports inside functions count: a circle they hold open is a circle (issue 24, item 7)."""
    graph = import_graph(_python_files())
    found = [describe_circle(loop, graph) for loop in circles(graph)]
    assert not found, "modules that import each other in a circle:\n" + "\n".join(found)


def test_the_compiler_layers_run_one_way():
    """What an operation is and the IR import no pass, the passes no lowering, and so on up."""
    paths = _python_files()
    modules = {_module_name(p) for p in paths}
    found = [v for path in paths for v in compiler_violations(path, modules)]
    assert not found, "compiler imports against its layers:\n" + "\n".join(found)


def test_every_compiler_module_has_a_layer():
    """A new module of the compiler is placed in COMPILER_LAYERS (only the package's own
    __init__ is the face)."""
    unplaced = [m for m in map(_module_name, _python_files()) if _within(m, ("compiler",)) and m != "compiler"
                and all(not _within(m, (p,)) for _, prefixes in COMPILER_LAYERS for p in prefixes
                        if p != "compiler")]
    assert unplaced == []


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


@pytest.mark.parametrize("folder", ["compiler", "flows", "cosim", "viz", "report"])
def test_production_never_imports_the_compiler_test_tooling(tmp_path, monkeypatch, folder):
    """The compiler proper and every package of production code (issue 24, item 9), at module
    level or inside a function."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / "probe.py"
    path.write_text("import json\n\n\ndef f():\n    from compiler.testing import battery\n")
    assert violations(path) == [f"{folder}/probe.py:5: {folder} imports compiler.testing.battery: only "
                                f"{', '.join(TESTING_USERS)} may import the test tooling"]


def test_the_check_sees_a_circle_held_open_by_an_import_inside_a_function(tmp_path, monkeypatch):
    """Two modules importing each other, one of them inside a function, are a circle; the same
    import under ``if TYPE_CHECKING:`` is not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "compiler").mkdir()
    a, b = tmp_path / "compiler" / "a.py", tmp_path / "compiler" / "b.py"
    a.write_text("from .b import g\n")
    b.write_text("import math\n\n\ndef g():\n    from .a import f\n")
    graph = import_graph([a, b])
    assert [describe_circle(loop, graph) for loop in circles(graph)] == [
        "compiler.a (line 1) -> compiler.b (line 5) -> compiler.a"]
    b.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .a import f\n")
    assert circles(import_graph([a, b])) == []


def test_the_check_sees_an_operation_that_imports_a_pass(tmp_path, monkeypatch):
    """compiler/ops importing a lowering at run time is refused; for annotations only, it is not."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "compiler" / "ops").mkdir(parents=True)
    (tmp_path / "compiler" / "lowering").mkdir()
    probe = tmp_path / "compiler" / "ops" / "probe.py"
    modules = {"compiler.ops.probe", "compiler.lowering.matmul", "compiler.program"}
    probe.write_text("from ..lowering.matmul import tiles\nfrom typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from ..program import Program\n")
    assert compiler_violations(probe, modules) == [
        "compiler/ops/probe.py:1: compiler.ops.probe (operations and the IR) imports "
        "compiler.lowering.matmul (back end), a layer above it"]


def test_every_package_has_its_tests_beside_the_others():
    """Each package (sim, compiler and its subpackages, hw, flows, cosim, viz, report) has a
    folder tests/<package> with tests in it."""
    packages = sorted(init.parent.relative_to(ROOT) for top in PACKAGES
                      for init in (ROOT / top).rglob("__init__.py"))
    assert {Path("sim"), Path("compiler/testing"), Path("compiler/ops")} <= set(packages)
    missing = [str(p) for p in packages if not list((ROOT / "tests" / p).glob("test_*.py"))]
    assert not missing, f"packages without tests in tests/<package>: {missing}"
