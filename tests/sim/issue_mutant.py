"""A pytest plugin that breaks the reference machine's issue rule (sim/spec.py, GA2.md section 7)
in the way the environment variable ISSUE_MUTANT names, for tests/sim/test_issue_rule_mutants.py:
the hand-worked and pairwise tests of tests/sim/test_overlap.py must then fail."""

from __future__ import annotations

import os

from sim import spec


def _conflict(raw: bool, war: bool, waw: bool):
    """spec.conflict(new, in_flight) seeing only the kinds asked for."""
    def conflict(a, b) -> bool:
        for s1, e1, r1, w1 in a:
            for s2, e2, r2, w2 in b:
                kinds = (raw and r1 and w2) or (war and w1 and r2) or (waw and w1 and w2)
                if s1 < e2 and s2 < e1 and kinds:
                    return True
        return False
    return conflict


class _Idle(dict):
    """An engine_end that says every engine is free."""

    def __getitem__(self, key):
        return 0


def _engines_never_busy() -> None:
    init = spec.Issue.__init__

    def patched(self, params=spec.DEFAULT, **kwargs):
        init(self, params, **kwargs)
        self.engine_end = _Idle(self.engine_end)
    spec.Issue.__init__ = patched


def _stop_without_draining() -> None:
    stop = spec.Issue.stop
    spec.Issue.stop = lambda self: self._earliest() if self.overlap else stop(self)


def _regions_one_word_short() -> None:
    accesses = spec.spad_accesses
    spec.spad_accesses = lambda ispec, fields: [(s, e - 1, r, w) for s, e, r, w in accesses(ispec, fields)]


def _steal_not_counted() -> None:
    move = spec.Issue._move_ld

    def patched(self, first, end):
        busy = self.busy[spec.SHARED_WRITER]
        move(self, first, end)
        self.busy[spec.SHARED_WRITER] = busy
    spec.Issue._move_ld = patched


MUTANTS = {
    "read after write ignored": lambda: setattr(spec, "conflict", _conflict(False, True, True)),
    "write after read ignored": lambda: setattr(spec, "conflict", _conflict(True, False, True)),
    "write after write ignored": lambda: setattr(spec, "conflict", _conflict(True, True, False)),
    "an engine runs the next instruction before the last one ends": _engines_never_busy,
    "instructions issue one cycle apart": lambda: setattr(spec, "OVERLAP_ISSUE_CYCLES", 1),
    "a stop does not wait for the engines": _stop_without_draining,
    "the read ports are free for every reader": lambda: setattr(spec, "reads", lambda *a, **k: 0),
    "the write port is free for every writer": lambda: setattr(spec, "writes", lambda *a, **k: 0),
    "a region's last word is left out of the hazard check": _regions_one_word_short,
    "an LD never yields: it holds the write port for its window":
        lambda: setattr(spec, "SHARED_WRITER", None),
    "a window placed after an LD does not move its end": lambda: setattr(spec.Issue, "_move_ld",
                                                                         lambda self, first, end: None),
    "an LD's end moves but its busy cycles do not grow": _steal_not_counted,
}
"""Broken issue rules, by name. (MM with acc = 1 reading its destination is not among them: that
region is also written, so the write alone gives the same conflicts; the mutant is equivalent.)"""

if os.environ.get("ISSUE_MUTANT"):
    MUTANTS[os.environ["ISSUE_MUTANT"]]()
