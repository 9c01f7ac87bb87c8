"""The progress display of a run: a ``rich`` bar per simulator on a terminal, else plain lines.

On a terminal each simulator has a bar (its build, then its programs, with the count of those
that differ); elsewhere (a pipe, a log) a plain line every :data:`PLAIN_EVERY` seconds, so a
long run is never silent. Progress and notes go to stderr; the verdicts go to stdout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .text import verb

PLAIN_EVERY = 10.0
"""Seconds between the plain progress lines when stderr is not a terminal."""
COLD_HINT = {"verilator": "one to three minutes", "icarus": "a few seconds"}
"""How long a cold build takes on a 2-core machine (shown while it runs)."""


class Board:
    """The progress display.

    Args:
        console: where it goes (stderr).
        total: jobs each simulator runs.
        names: the simulators.
        noun: what a job is called.
    """

    def __init__(self, console: Console, total: int, names: Sequence[str], noun: str):
        self.console = console
        self.live = console.is_terminal
        self.total = total
        self.noun = noun
        self.progress = Progress(TextColumn("{task.description:<32}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=console, disable=not self.live, transient=True)
        self.state = {name: ["checking the build", 0] for name in names}
        self.failed = dict.fromkeys(names, 0)
        self.tasks = {name: self.progress.add_task(f"{name}: checking the build", total=total)
                      for name in names}
        self.started = time.perf_counter()
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def note(self, text: str) -> None:
        """A line on stderr, whole (no wrapping at 80 columns when it is not a terminal)."""
        if self.live:
            self.console.print(text, highlight=False)
        else:
            with self.lock:
                print(text, file=self.console.file, flush=True)

    def update(self, key: str, what: str | None = None, done: int | None = None) -> None:
        with self.lock:
            if what is not None:
                self.state[key][0] = what
            if done is not None:
                self.state[key][1] = done
        self.progress.update(self.tasks[key], description=None if what is None else f"{key}: {what}",
                             completed=done)

    def line(self) -> str:
        """The plain progress line: elapsed time, then each simulator's state and count."""
        seconds = int(time.perf_counter() - self.started)
        parts = []
        with self.lock:
            for key, (what, done) in self.state.items():
                differ = f" ({self.failed[key]:,} {verb(self.failed[key], 'differs', 'differ')})" \
                    if self.failed[key] else ""
                parts.append(f"{key} {what} {done:,} of {self.total:,} {self.noun}s{differ}")
        return f"[{seconds // 60}:{seconds % 60:02d}] " + "; ".join(parts)

    def _tick(self) -> None:
        while not self.stop.wait(PLAIN_EVERY):
            self.note(self.line())

    def __enter__(self) -> Board:
        self.progress.__enter__()
        if not self.live:
            threading.Thread(target=self._tick, name="cosim-progress", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.progress.__exit__(*exc)
