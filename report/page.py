"""The report page of one program: a self-contained HTML file (no script, no network, no server).

The page holds, each in a ``<section>`` with a fixed id: a summary (``summary``), the
graph drawn (``graph``), the account of :mod:`compiler.explain` as tables (``ranges``,
``scales``, ``requantizers``, ``tiles``, ``allocation``, ``listing``, ``checks`` when test
inputs are given) with the plots of :mod:`viz` inline as SVG (the scales, the tiling, the
memory map, the engine timeline), the roofline (``roofline``), a width sweep when one is
given (``sweep``), and the co-simulation's PASS or FAIL per simulator (``cosim``: "not run"
when the page was made without it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from compiler import Program
from compiler.explain import Section, account, cell_text
from compiler.timeline import timeline
from viz import (
    SweepPoint,
    figure_svg,
    graph_svg,
    plot_memory_map,
    plot_roofline,
    plot_scales,
    plot_sweep,
    plot_tiling,
    plot_timeline,
    roofline_point,
)

from .rtl import RtlResult
from .style import CSS

SECTION_IDS = (
    "summary",
    "graph",
    "ranges",
    "scales",
    "requantizers",
    "tiles",
    "allocation",
    "listing",
    "roofline",
    "cosim",
)
"""The sections every page has (``checks`` too when test inputs are given, ``sweep`` with a sweep)."""


@dataclass
class Subject:
    """What a page is about.

    Attributes:
        title: the page's title (``seed 100``).
        program: the compiled program.
        inputs: test inputs for the checks and the RTL runs (input name -> array), or None.
        samples: how many calibration samples set the ranges, or None.
        origin: how the program was made, for the summary (a command, a function).
    """

    title: str
    program: Program
    inputs: Mapping[str, object] | None = None
    samples: int | None = None
    origin: str = ""


def _table(section: Section) -> str:
    if section.table is None:
        return ""
    table = section.table
    right = table.right + (False,) * (len(table.headers) - len(table.right))
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = []
    for row in table.rows:
        cells = "".join(
            f'<td class="num">{escape(cell_text(v))}</td>' if r else f"<td>{escape(cell_text(v))}</td>"
            for v, r in zip(row, right, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    body = "".join(rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _figure(svg: str, caption: str) -> str:
    return f'<figure><div class="plot">{svg}</div><figcaption>{escape(caption)}</figcaption></figure>'


def _section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}"><h2>{escape(title)}</h2>{body}</section>'


PLOTS = {
    "scales": (
        plot_scales,
        "The scale of every tensor (log axis); hatched orange: pinned by the hardware; "
        "black tick: the tensor's own range / 127.",
    ),
    "tiles": (plot_tiling, "Each product's output cut into tiles: one MM instruction per outlined tile."),
    "allocation": (
        plot_memory_map,
        "The scratchpad over time: each buffer from its alloc to its free; "
        "a concatenation's parts drawn inside their buffer.",
    ),
    "listing": (plot_timeline, "The engine timeline: when each unit is busy, instruction by instruction."),
}
"""Section key -> the plot drawn at its head, and its caption."""


def _explained(program: Program, section: Section) -> str:
    body = f"<p>{escape(section.lead)}</p>"
    if section.key == "graph":
        body += _figure(
            graph_svg(program),
            "The graph, layer by layer: sources at the top, outputs at the "
            "bottom; dashed boxes are views (no instruction).",
        )
    if section.key in PLOTS:
        plot, caption = PLOTS[section.key]
        body += _figure(figure_svg(plot(program)), caption)
    body += _table(section)
    if section.notes:
        body += "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in section.notes) + "</ul>"
    return _section(section.key, section.title, body)


def _summary(subject: Subject) -> str:
    program = subject.program
    cycles = timeline(program.code, program.machine)[-1].end
    facts = [
        ("nodes", len(program.graph.nodes)),
        ("instructions", len(program.code)),
        ("cycles", cycles),
        ("scratchpad high-water mark", f"{program.spad_high} of {program.machine.SPAD_WORDS} words"),
        ("machine", f"T = {program.machine.T}, {program.machine.LANES} lanes"),
    ]
    if subject.origin:
        facts.insert(0, ("made by", subject.origin))
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts)
    notes = "".join(f"<li>{escape(n)}</li>" for n in program.notes)
    body = f'<table class="facts">{rows}</table>' + (
        f"<p>Compiler notes:</p><ul>{notes}</ul>" if notes else ""
    )
    return _section("summary", "summary", body)


def _roofline(program: Program) -> str:
    point = roofline_point(program)
    lead = (
        f"{point.macs} multiply-adds and {point.words} DMA words in {point.cycles} cycles: at least "
        f"{point.mxu_bound:.1f} cycles on the MXU and {point.words / point.bandwidth:.1f} on the DMA."
    )
    body = f"<p>{escape(lead)}</p>" + _figure(
        figure_svg(plot_roofline(program)),
        "The roofline: the program's multiply-adds per cycle against its "
        "multiply-adds per DMA word, under the MXU and DMA roofs.",
    )
    return _section("roofline", "roofline", body)


def _sweep(points: Sequence[SweepPoint], what: str, spad_words: int) -> str:
    rows = "".join(
        f"<tr><td class='num'>{p.width}</td><td class='num'>{p.spad or ''}</td>"
        f"<td class='num'>{p.spad_no_reuse or 'does not fit'}</td><td class='num'>{p.cycles or ''}</td>"
        f"<td class='num'>{'' if p.error is None else f'{100 * p.error:.2f}%'}</td>"
        f"<td>{escape(p.refusal)}</td></tr>"
        for p in sorted(points, key=lambda p: p.width)
    )
    table = (
        f"<div class='scroll'><table><thead><tr><th>{escape(what)}</th><th>spad words</th><th>without "
        f"reuse</th><th>cycles</th><th>error</th><th>refusal</th></tr></thead><tbody>{rows}</tbody></table>"
        "</div>"
    )
    return _section(
        "sweep",
        f"sweep of the {what}",
        _figure(
            figure_svg(plot_sweep(points, spad_words, what)), "Footprint, cycles and error against the width."
        )
        + table,
    )


def _cosim(rtl: Sequence[RtlResult] | None) -> str:
    if not rtl:
        body = (
            "<p>Not run on the RTL for this page. <code>python -m report ... --sim both</code> runs the "
            "program under Icarus and Verilator and compares every memory word and counter with the "
            "reference machine.</p>"
        )
        return _section("cosim", "co-simulation: not run", body)
    rows = "".join(
        f'<tr><td>{escape(r.simulator)}</td><td class="verdict {r.verdict.split()[0].lower()}">'
        f"{escape(r.verdict)}</td><td>{escape(r.summary())}</td></tr>"
        for r in rtl
    )
    details = "".join(
        f"<li>{escape(r.simulator)}, run {k}: {escape('; '.join(lines))}</li>"
        for r in rtl
        for k, lines in sorted(r.differences.items())
    )
    body = (
        "<p>The program on the Verilog, compared with the reference machine word for word and counter for "
        f"counter.</p><table><thead><tr><th>simulator</th><th>result</th><th>detail</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>" + (f"<ul>{details}</ul>" if details else "")
    )
    verdict = "PASS" if all(r.passed for r in rtl) else "FAIL"
    return _section("cosim", f"co-simulation: {verdict}", body)


def page_html(
    subject: Subject,
    rtl: Sequence[RtlResult] | None = None,
    sweep: tuple[Sequence[SweepPoint], str] | None = None,
) -> str:
    """The whole page as a string.

    Args:
        subject: the program and its context.
        rtl: the co-simulation's results (:func:`report.rtl.run_rtl`), or None.
        sweep: (points, what is swept) for a sweep section, or None.

    Raises:
        ValueError: bad test inputs (see :meth:`compiler.Program.run`).
    """
    program = subject.program
    sections = account(program, subject.inputs, samples=subject.samples)
    parts = [_summary(subject)] + [_explained(program, s) for s in sections] + [_roofline(program)]
    if sweep is not None:
        parts.append(_sweep(sweep[0], sweep[1], program.machine.SPAD_WORDS))
    parts.append(_cosim(rtl))
    ids = ["summary", *(s.key for s in sections), "roofline", *(["sweep"] if sweep else []), "cosim"]
    nav = " ".join(f'<a href="#{k}">{k}</a>' for k in ids)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(subject.title)}: GA-2 / Capra report</title><style>{CSS}</style></head>"
        f"<body><header><h1>{escape(subject.title)}</h1><nav>{nav}</nav></header><main>"
        + "\n".join(parts)
        + "</main></body></html>\n"
    )


def write_report(
    path: str | Path,
    subject: Subject,
    rtl: Sequence[RtlResult] | None = None,
    sweep: tuple[Sequence[SweepPoint], str] | None = None,
) -> Path:
    """Write :func:`page_html` to ``path`` (its folder is created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page_html(subject, rtl, sweep), encoding="utf-8")
    return target
