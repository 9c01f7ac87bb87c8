"""House rules that span the packages (issue 24, items 10 and 11), checked over the production
code (sim, compiler, hw, flows, cosim, viz, report; the compiler's test tooling included):

* no silent default machine: a function or a dataclass field takes the machine (``params``,
  ``lanes``) explicitly, except the public entry points, whose documented default is the
  default machine (:data:`ENTRY_POINTS`);
* no function over :data:`MAX_FUNCTION_LINES` lines, its decorators and docstring counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sim", "compiler", "hw", "flows", "cosim", "viz", "report")

ENTRY_POINTS = {
    ("compiler/pipeline.py", "compile_graph"): "the compiler's entry point",
    ("compiler/frontend/torch_fx.py", "from_torch"): "the PyTorch front end's entry point",
    ("sim/machines.py", "parse"): "the command lines' machine, NAME=VALUE items from the default machine",
}
"""(file, function) -> why it may default the machine to DEFAULT (documented in its docstring)."""
MAX_FUNCTION_LINES = 100
"""The charter's limit for a production function (issue 24, item 10)."""


def production_files() -> list[Path]:
    return sorted(p for top in PACKAGES for p in (ROOT / top).rglob("*.py"))


def machine_defaults(path: Path) -> list[str]:
    """``file:line: function(name=...)`` for every parameter or dataclass field that defaults the
    machine: a default naming DEFAULT (``params=DEFAULT``, ``lanes=DEFAULT.LANES``), or a
    ``params`` that defaults to None."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(ROOT).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if (where, node.name) in ENTRY_POINTS:
                continue
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                text = ast.unparse(default)
                if "DEFAULT" in text or (arg.arg == "params" and text == "None"):
                    found.append(f"{where}:{default.lineno}: {node.name}({arg.arg}={text})")
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if (isinstance(stmt, ast.AnnAssign) and stmt.value is not None
                        and "DEFAULT" in ast.unparse(stmt.value) and isinstance(stmt.target, ast.Name)):
                    value = ast.unparse(stmt.value)
                    found.append(f"{where}:{stmt.lineno}: {node.name}.{stmt.target.id} = {value}")
    return found


def test_no_function_beneath_the_entry_points_defaults_the_machine():
    """A forgotten machine deep inside would be the 4 x 4 machine without a word: only the
    public entry points default to it (issue 24, item 11)."""
    found = [f for path in production_files() for f in machine_defaults(path)]
    assert not found, "the machine defaulted beneath the entry points:\n" + "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("def f(x, params=DEFAULT):\n    pass\n", ["sim/probe.py:1: f(params=DEFAULT)"]),
    ("def f(*, lanes: int = spec.DEFAULT.LANES):\n    pass\n",
     ["sim/probe.py:1: f(lanes=spec.DEFAULT.LANES)"]),
    ("def f(params=None):\n    pass\n", ["sim/probe.py:1: f(params=None)"]),
    ("class C:\n    params: Params = DEFAULT\n", ["sim/probe.py:2: C.params = DEFAULT"]),
    ("def f(params, other=None):\n    return params == DEFAULT\n", []),
])
def test_the_check_sees_a_default_machine(tmp_path, monkeypatch, source, expected):
    import tests.test_conventions as me
    monkeypatch.setattr(me, "ROOT", tmp_path)
    (tmp_path / "sim").mkdir()
    path = tmp_path / "sim" / "probe.py"
    path.write_text(source)
    assert machine_defaults(path) == expected


def long_functions(path: Path) -> list[str]:
    """``file:line: name (N lines)`` for every function or method of ``path`` longer than
    :data:`MAX_FUNCTION_LINES`, from its first decorator to its last line."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(ROOT).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = node.end_lineno - first + 1
            if lines > MAX_FUNCTION_LINES:
                found.append(f"{where}:{node.lineno}: {node.name} ({lines} lines)")
    return found


def test_no_production_function_over_100_lines():
    """The charter's rule (hw/overlap.py's execute stage, 143 lines, and viz/memory.py's
    plot_memory_map, 112, were the last to break it)."""
    found = [f for path in production_files() for f in long_functions(path)]
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(found)


@pytest.mark.parametrize("lines, expected", [(100, []), (101, ["sim/probe.py:2: f (101 lines)"])])
def test_the_check_counts_a_function_from_its_decorator(tmp_path, monkeypatch, lines, expected):
    import tests.test_conventions as me
    monkeypatch.setattr(me, "ROOT", tmp_path)
    (tmp_path / "sim").mkdir()
    path = tmp_path / "sim" / "probe.py"
    path.write_text("@decorated\ndef f():\n" + "    x = 1\n" * (lines - 3) + "    return x\n")
    assert long_functions(path) == expected
