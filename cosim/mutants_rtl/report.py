"""The mutants' table, the score line and the JSON report (build/mutants-rtl/report.json)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .draw import UNITS, Mutation
from .grade import CAUGHT, ERROR, Grade
from .verdicts import EQUIVALENT, Verdict


@dataclass
class Row:
    """One mutant: its id, the mutation, cosim's grade and, for a survivor, the verdict; ``aim``:
    the feature an aimed mutant was put on (cosim/mutants_rtl/aimed.py), "" for a drawn one."""

    ident: str
    mutation: Mutation
    grade: Grade | None = None
    verdict: Verdict | None = None
    aim: str = ""

    @property
    def unit(self) -> str:
        """The unit, for the tables (an aimed mutant's feature after it)."""
        name = UNITS.get(self.mutation.unit, self.mutation.unit)
        return f"{name} (aimed: {self.aim})" if self.aim else name

    @property
    def outcome(self) -> str:
        """caught, equivalent, GAP, error, or "" while not graded."""
        if self.grade is None:
            return ""
        if self.grade.status == CAUGHT:
            return "caught"
        if self.grade.status == ERROR:
            return "error"
        return EQUIVALENT if self.verdict is not None and self.verdict.equivalent else "GAP"


@dataclass(frozen=True)
class Score:
    caught: int
    equivalent: int
    gaps: int
    errors: int

    @property
    def non_equivalent(self) -> int:
        return self.caught + self.gaps

    @property
    def percent(self) -> float:
        return 100.0 * self.caught / self.non_equivalent if self.non_equivalent else 100.0

    def line(self) -> str:
        return (f"RTL mutants: {self.caught} of {self.non_equivalent} non-equivalent caught "
                f"({self.percent:.1f}%); {self.equivalent} equivalent; {self.errors} tool "
                f"error{'' if self.errors == 1 else 's'}")


def score(rows: Sequence[Row]) -> Score:
    outcomes = [r.outcome for r in rows]
    return Score(outcomes.count("caught"), outcomes.count(EQUIVALENT), outcomes.count("GAP"),
                 outcomes.count("error"))


def listing_table(rows: Sequence[Row], title: str) -> Table:
    """The drawn mutants: id, unit, Python line, mode, where in the netlist."""
    table = Table(title=title, title_justify="left", show_lines=False)
    for name in ("id", "unit", "src", "mode", "signal", "netlist (module cell.port[bit])"):
        table.add_column(name, overflow="fold")
    for r in rows:
        m = r.mutation
        table.add_row(r.ident, r.unit, m.src or "-", m.mode, m.signal or "-", m.where)
    return table


def result_table(rows: Sequence[Row]) -> Table:
    """Every mutant with its outcome: what caught it, or the survivor's verdict."""
    table = Table(title="RTL mutants", title_justify="left")
    for name in ("id", "unit", "src", "mode", "signal", "outcome", "by / why", "s"):
        table.add_column(name, overflow="fold", justify="right" if name == "s" else "left")
    for r in rows:
        m, g = r.mutation, r.grade
        if g is None:
            outcome, why = "", ""
        elif g.status == CAUGHT:
            outcome = "caught"
            why = g.step + (" (hang: cycle limit)" if g.hang else "")
            why += f": {g.detail[1]}" if len(g.detail) > 1 else ""
        elif g.status == ERROR:
            outcome, why = "error", "; ".join(g.detail)
        else:
            outcome = r.outcome
            why = r.verdict.why if r.verdict is not None else ""
        style = {"caught": "green", "GAP": "bold red", "error": "red", EQUIVALENT: "yellow"}.get(outcome, "")
        table.add_row(r.ident, r.unit, m.src or "-", m.mode, m.signal or "-",
                      f"[{style}]{outcome}[/]" if style else outcome, why,
                      f"{g.seconds:.0f}" if g else "")
    return table


def write_json(path: Path, rows: Sequence[Row], settings: dict, seconds: float) -> None:
    """The report: settings, the score, and every mutant with its mutation, grade and verdict."""
    s = score(rows)
    data = {
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "settings": settings,
        "seconds": round(seconds, 1),
        "score": {"caught": s.caught, "non_equivalent": s.non_equivalent, "equivalent": s.equivalent,
                  "gaps": s.gaps, "errors": s.errors, "percent": round(s.percent, 2), "line": s.line()},
        "mutants": [{"id": r.ident, "aim": r.aim, "outcome": r.outcome, "mutation": r.mutation.as_dict(),
                     "grade": r.grade.as_dict() if r.grade else None,
                     "verdict": r.verdict.as_dict() if r.verdict else None} for r in rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def show(console: Console, rows: Sequence[Row]) -> None:
    console.print(result_table(rows))
    survivors = [r for r in rows if r.outcome in ("GAP", EQUIVALENT)]
    if survivors:
        console.print("survivors:", highlight=False)
        for r in survivors:
            what = "GAP" if r.outcome == "GAP" else "equivalent"
            console.print(f"  {r.ident} {r.mutation.src or r.mutation.unit} {r.mutation.mode}: {what} "
                          f"({r.verdict.why if r.verdict else ''})", highlight=False)
    console.print(score(rows).line(), highlight=False)
