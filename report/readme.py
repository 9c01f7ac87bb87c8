"""The pictures of the README and of docs/guide/inspect.md: running example A's scratchpad memory
map and engine timeline (the README shows the timeline, the guide both).

``python -m report.readme --write`` draws them into docs/img/ (``make plots`` does it);
``--check`` exits 1 when one is stale. Each PNG carries, in its ``Description`` metadata, a
SHA-256 digest of what it depends on: the program (its listing and allocator events) and the
source of the plot's module. A test recomputes the digest, so a change to the compiler's
decisions or to the plot's code that would change the picture fails until it is redrawn.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

from compiler import Program, compile_graph
from viz import plot_memory_map, plot_timeline, save

ROOT = Path(__file__).resolve().parent.parent
FIGURES: dict[str, Callable[[Program], Figure]] = {
    "docs/img/example-a-memory.png": plot_memory_map,
    "docs/img/example-a-timeline.png": plot_timeline,
}
"""Path (from the repository's root) -> the plot of running example A it holds."""


def example_a() -> Program:
    from compiler.workloads.seedtable import attention_step_network

    graph, calibration, _ = attention_step_network()
    return compile_graph(graph, calibration)


def digest(program: Program, plot: Callable[[Program], Figure]) -> str:
    """SHA-256 of the program's listing and events and of the plot's module source."""
    h = hashlib.sha256()
    h.update(program.listing().encode())
    h.update(repr(program.events).encode())
    h.update(inspect.getsource(sys.modules[plot.__module__]).encode())
    return "ga2-viz-digest " + h.hexdigest()


def stored_digest(path: Path) -> str | None:
    """The digest a PNG carries, None when it has none (or the file is missing)."""
    from PIL import Image

    if not path.exists():
        return None
    with Image.open(path) as image:
        return image.text.get("Description")


def stale(root: Path = ROOT) -> list[str]:
    """The README pictures whose digest is not the one the current code gives."""
    program = example_a()
    return [name for name, plot in FIGURES.items() if stored_digest(root / name) != digest(program, plot)]


def write(root: Path = ROOT) -> list[Path]:
    program = example_a()
    return [
        save(plot(program), root / name, description=digest(program, plot)) for name, plot in FIGURES.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m report.readme",
                                     description="Draw the pictures of the README and the guide.")
    parser.add_argument("--write", action="store_true", help="redraw them into docs/img/")
    parser.add_argument("--check", action="store_true", help="exit 1 when one is stale")
    args = parser.parse_args(argv)
    if args.write:
        for path in write():
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    old = stale()
    for name in old:
        print(f"stale: {name} (run make plots)")
    return 1 if old and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
