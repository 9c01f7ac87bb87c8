"""The compiler's layers: it imports sim and nothing else of the project, and its test tooling
(compiler.testing) is imported by no module of the compiler proper."""

import ast
from pathlib import Path

import compiler

PACKAGE = Path(compiler.__file__).resolve().parent
PROJECT = ("sim", "compiler", "hw", "flows", "cosim", "tests", "examples")


def imports(path: Path) -> set[str]:
    """Absolute names a module imports (relative imports resolved against the compiler package)."""
    package = ("compiler", *path.relative_to(PACKAGE).parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            names.add(".".join([*base, *([node.module] if node.module else [])]))
    return names


def test_the_compiler_imports_only_sim_of_the_project():
    for path in PACKAGE.rglob("*.py"):
        outside = {n for n in imports(path) if n.split(".")[0] in PROJECT and n.split(".")[0] not in
                   ("sim", "compiler")}
        assert not outside, f"{path.relative_to(PACKAGE)} imports {sorted(outside)}"


def test_nothing_outside_compiler_testing_imports_it():
    for path in PACKAGE.rglob("*.py"):
        if "testing" in path.relative_to(PACKAGE).parts:
            continue
        tooling = {n for n in imports(path) if n.startswith("compiler.testing")}
        assert not tooling, f"{path.relative_to(PACKAGE)} imports {sorted(tooling)}"
