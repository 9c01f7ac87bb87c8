"""``python -m cosim.mutants_rtl`` (``make mutants-rtl``): mutate GA-2's hardware with Yosys and grade
each mutant with cosim and stress.

For each of --count mutants (drawn by Yosys's ``mutate -list`` over the core, an equal share
from every unit: MXU, requantizer, softmax, its divider and exp table, vector unit, DMA,
scratchpad banks, control, counters, checker, top) and the aimed ones (a mutation on each
feature a draw can miss: VADD relu, MM acc, LD fmt = 1, the LUT's byte select; cosim/mutants_rtl/
aimed.py), it writes the mutated Verilog, runs
``python -m cosim seeds 100-111`` on it, then ``python -m cosim faults`` (every fault the checker
must see, one short program each) and ``python -m cosim stress`` in growing chunks of seeds
(the stress mix includes the edge programs of cosim/edges.py), and stops at the first
FAIL: the mutant is caught. A survivor is judged equivalent (with the reason: a note, or a
proof by Yosys) or a GAP. The unmutated round trip through Yosys (mutant ``none``) is graded
first, alongside; it must pass, or the run stops with an error.

Output: the table, one line per survivor, and the score line, e.g. ``RTL mutants: 47 of 49
non-equivalent caught (95.9%); 3 equivalent; 0 tool errors``; the JSON report goes to
build/mutants-rtl/report.json, the mutants' Verilog to build/cosim/mutants-rtl/<id>/.
Exit status: 0 when the score reaches --target and no tool error happened, 1 when it does
not, 2 when the run could not be done (no Yosys, the none mutant fails, ...).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from flows.memmap import PORTS_JSON
from sim import machines
from sim.spec import DEFAULT, Params

from .. import farm, runner
from ..farm import shipping
from ..text import plain
from . import aimed, bus, draw, grade, report, verdicts, yosys

OUT = runner.BUILD / "mutants-rtl"
"""The default machine's netlist and report (another machine's: :func:`out_dir`)."""
MUTANTS_DIR = runner.COSIM_BUILD / "mutants-rtl"
"""Where the default machine's mutants' Verilog goes (inside build/cosim, so each one's simulator
build sits in its own folder and goes with it; another machine's: :func:`mutants_dir`)."""


def out_dir(params: Params) -> Path:
    """The netlist and report folder of the machine ``params``: :data:`OUT` for the default one,
    ``build/machines/<tag>/mutants-rtl`` for another (``sim.machines.machine_dir``)."""
    return machines.machine_dir(runner.BUILD, params) / "mutants-rtl"


def mutants_dir(params: Params) -> Path:
    """Where the mutants of the machine ``params`` go (:data:`MUTANTS_DIR` for the default one)."""
    return machines.machine_dir(runner.COSIM_BUILD, params) / "mutants-rtl"

LISTED = 4000
"""Mutations Yosys lists (its even sampling) before the draw picks --count of them."""
NONE = "none"
BUS_NONE = "none-bus"
BUS = "b"
"""Rows whose id starts so are the system top's bus mutants (cosim/mutants_rtl/bus.py)."""
LIMIT_SLACK = 60.0
"""Seconds a grading task gets beyond --timeout (which its own steps enforce) before the farm
stops it as hung."""
WIDE = 180
"""Columns of the table when the output is not a terminal (a log keeps whole lines)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    doc = plain(__doc__)
    p = argparse.ArgumentParser(prog="python -m cosim.mutants_rtl", description=doc.split("\n\n")[0],
                                epilog="\n\n".join(doc.split("\n\n")[1:]),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=48, help="mutants to draw, at least 1 (default 48)")
    p.add_argument("--seed", type=int, default=1, help="seed of Yosys's listing and of the draw (default 1)")
    p.add_argument("--jobs", type=int, default=2,
                   help="mutants graded at the same time on this machine (default 2; a Ray cluster has "
                        "its own)")
    p.add_argument("--engine", choices=farm.ENGINES, default="auto",
                   help="where the mutants are graded: ray (a local instance, or the cluster at "
                        "RAY_ADDRESS), local (a pool of processes), auto (default: Ray with RAY_ADDRESS or "
                        "for a minute of work or more)")
    p.add_argument("--sim", choices=runner.SIMULATORS, default="icarus",
                   help="simulator (default icarus: its build takes a second, Verilator's half a "
                        "minute or more, and each mutant is a new build)")
    p.add_argument("--seeds", default="100-111", help="cosim seeds run first (default 100-111)")
    p.add_argument("--stress-n", type=int, default=140, help="stress programs after the seeds (default 140)")
    p.add_argument("--stress-seed", type=int, default=1, help="first stress seed (default 1)")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds one mutant may take, all steps (default 900); beyond it: a tool error")
    p.add_argument("--only", default="", help="grade only these ids (comma-separated, e.g. m03,m17)")
    p.add_argument("--list", action="store_true", help="list the drawn mutants and stop")
    p.add_argument("--no-aimed", action="store_true",
                   help="only the drawn mutants (not the aimed ones of cosim/mutants_rtl/aimed.py)")
    p.add_argument("--no-proofs", action="store_true",
                   help="judge survivors by the netlist and the notes only (no Yosys proof)")
    p.add_argument("--target", type=float, default=95.0, help="the score to reach, in percent (default 95)")
    p.add_argument("--keep", action="store_true", help="keep each mutant's simulator build")
    p.add_argument("--bus-count", type=int, default=16,
                   help="mutants of the AXI system top's bus logic, graded through AXI "
                        "(cosim/mutants_rtl/bus.py; default 16, 0: none)")
    p.add_argument("--bus-stress-n", type=int, default=40,
                   help="stress programs through AXI after the seeds, per bus mutant (default 40)")
    machines.add_argument(p)
    args = p.parse_args(argv)
    args.params = machines.from_args(args, p)
    if args.params != DEFAULT:      # the AXI top's bus logic is the default machine's (bus.py)
        args.bus_count = 0
    if args.count < 1 or args.jobs < 1 or args.stress_n < 0 or args.timeout <= 0 or args.bus_count < 0:
        p.error("--count and --jobs must be at least 1, --stress-n and --bus-count at least 0, "
                "--timeout positive")
    return args


def drawn(args: argparse.Namespace,
          console: Console) -> tuple[Path, yosys.Netlist, draw.Netlist, list[report.Row]]:
    """Export (if stale), read into Yosys, list, attribute and draw."""
    verilog = runner.fresh_verilog(say=lambda s: console.print(s, highlight=False), params=args.params)
    t0 = time.perf_counter()
    net = yosys.prepare(verilog, out_dir(args.params))
    graph = draw.Netlist(net.json)
    lines = yosys.listing(net, max(LISTED, args.count), args.seed)
    listed = [graph.attribute(draw.parse(line)) for line in lines]
    candidates = [m for m in listed if not verdicts.unchanged_in(graph.modules, m)]
    picked = draw.draw(candidates, args.count, args.seed)
    width = len(str(len(picked)))
    rows = [report.Row(f"m{k + 1:0{width}d}", m) for k, m in enumerate(picked)]
    drawn_units = len({r.mutation.unit for r in rows})
    if not args.no_aimed:
        keys = {r.mutation.key for r in rows}
        picked_aims = aimed.pick_all(net, graph, args.seed, aimed.aims_for(args.params))
        rows += [report.Row(f"a{k}", m, aim=aim.name) for k, (aim, m) in enumerate(picked_aims, 1)
                 if m.key not in keys]
    aims = [r.aim for r in rows if r.aim]
    console.print(f"Yosys: {len(listed)} mutations listed over the core ({len(listed) - len(candidates)} "
                  f"change nothing: a bit forced to the constant it is), {len(picked)} drawn from "
                  f"{drawn_units} units" + (f", {len(aims)} aimed ({', '.join(aims)})" if aims else "")
                  + f" ({time.perf_counter() - t0:.1f} s)", highlight=False)
    return verilog, net, graph, rows


def drawn_bus(args: argparse.Namespace, console: Console) -> tuple[Path, yosys.Netlist, draw.Netlist,
                                                                   list[report.Row]]:
    """The bus mutants: the system top's simulation Verilog, its netlist, --bus-count drawn rows."""
    verilog = bus.verilog(say=lambda s: console.print(s, highlight=False))
    net = yosys.prepare(verilog, OUT, top=bus.TOP, strip=False)   # the AXI bench loads no memory
    graph = draw.Netlist(net.json)
    lines = yosys.listing(net, max(LISTED // 4, args.bus_count), args.seed, scope=bus.SCOPE)
    listed = [graph.attribute(draw.parse(line)) for line in lines]
    candidates = [m for m in listed if not verdicts.unchanged_in(graph.modules, m)]
    picked = draw.draw(candidates, args.bus_count, args.seed)
    width = len(str(len(picked)))
    rows = [report.Row(f"{BUS}{k + 1:0{width}d}", m) for k, m in enumerate(picked)]
    console.print(f"Yosys: {len(listed)} mutations listed over the AXI top's bus logic, {len(picked)} drawn "
                  f"from {len({r.mutation.unit for r in rows})} units", highlight=False)
    return verilog, net, graph, rows


def steps_for(ident: str, args: argparse.Namespace) -> list[grade.Step]:
    """The grading steps of a row (or of a none mutant): cosim's, or through AXI for the bus's."""
    if ident.startswith(BUS) or ident == BUS_NONE:
        return bus.plan(args.seeds, args.bus_stress_n, args.stress_seed)
    return grade.plan(args.seeds, args.stress_n, args.stress_seed)


SECONDS_PER_MUTANT = 15.0
"""Rough grading time of one mutant on Icarus (make mutants-rtl: 53 in 7.5 minutes on 2 cores),
the farm's estimate (cosim.farm.choose)."""


def _works(rows: list[report.Row], nones: dict[str, Path], paths: dict[str, Path], args: argparse.Namespace,
           f: farm.Farm) -> list[grade.Work]:
    out = []
    for ident, path in [*nones.items()] + [(r.ident, paths[r.ident]) for r in rows]:
        bus_top = ident.startswith(BUS) or ident == BUS_NONE     # its Verilog is all it needs
        names = (path.name,) if bus_top else (path.name, PORTS_JSON)
        files = f.share(shipping.pack_files(path.parent, names)) if f.engine == "ray" else None
        out.append(grade.Work(ident, path, files, tuple(steps_for(ident, args)), args.sim, args.timeout,
                              args.keep))
    return out


def grade_all(rows: list[report.Row], nones: dict[str, Path], paths: dict[str, Path],
              args: argparse.Namespace, console: Console) -> dict[str, grade.Grade]:
    """Grade the none mutants and every row as tasks of a farm (--engine: a local pool of --jobs
    processes, or Ray on this machine or the cluster at RAY_ADDRESS), with a progress bar (or
    lines); the none mutants' grades."""
    live = console.is_terminal
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console, disable=not live, transient=True)
    total = len(rows) + len(nones)
    task = bar.add_task("grading mutants", total=total)
    result: dict[str, grade.Grade] = {}
    with farm.open_farm(args.engine, jobs=args.jobs, estimate=total * SECONDS_PER_MUTANT, tasks=total) as f:
        console.print(f"grading on {f.where}", highlight=False)
        works = _works(rows, nones, paths, args, f)
        for work in works:
            f.submit(work.ident, grade.grade_task, work, limit=args.timeout + LIMIT_SLACK)
        with bar:
            while f.running:
                for done in f.wait(0.5):
                    if done.error is not None and not isinstance(done.error, farm.TaskError):
                        raise done.error
                    ident, g = (done.key, grade.Grade(grade.ERROR, detail=[str(done.error)])) \
                        if done.error is not None else done.value
                    result[ident] = g
                    bar.update(task, completed=len(result))
                    what = g.status + (f" by {g.step}" if g.step and g.status != "survived" else "")
                    line = f"[{len(result)}/{len(works)}] {ident}: {what} ({g.seconds:.0f} s)"
                    if live:
                        bar.console.print(line, highlight=False)
                    else:
                        print(line, file=sys.stderr, flush=True)
    for r in rows:
        r.grade = result[r.ident]
    return {ident: result[ident] for ident in nones}


def _write(benches: dict[str, tuple[yosys.Netlist, Path, list[report.Row]]], where: Path = MUTANTS_DIR
           ) -> tuple[dict[str, Path], dict[str, Path]]:
    """Write every mutant's Verilog and each bench's unmutated round trip (its none mutant):
    (the mutants' paths by id, the none mutants' paths by id).

    Raises:
        yosys.YosysError: Yosys could not write a mutant.
    """
    paths, nones = {}, {}
    for none_id, (netlist, source, mine) in benches.items():
        paths |= yosys.write_mutants(netlist, [(r.ident, r.mutation.line) for r in mine], source, where)
        nones[none_id] = where / none_id / netlist.none.name
        nones[none_id].parent.mkdir(parents=True, exist_ok=True)
        for f in netlist.none.parent.iterdir():
            shutil.copyfile(f, nones[none_id].parent / f.name)
    return paths, nones


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, WIDE))
    t0 = time.perf_counter()
    try:
        verilog, net, graph, rows = drawn(args, console)
        bus_verilog, bus_net, bus_graph, bus_rows = (drawn_bus(args, console) if args.bus_count
                                                     else (None, None, None, []))
        rows += bus_rows
    except (yosys.YosysError, runner.CosimError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.list:
        console.print(report.listing_table(rows, f"{len(rows)} mutants (seed {args.seed})"))
        return 0
    if args.only:
        wanted = {s.strip() for s in args.only.split(",") if s.strip()}
        unknown = wanted - {r.ident for r in rows}
        if unknown:
            print(f"error: --only: no mutant {', '.join(sorted(unknown))} in this draw", file=sys.stderr)
            return 2
        rows = [r for r in rows if r.ident in wanted]
    benches = {NONE: (net, verilog, [r for r in rows if not r.ident.startswith(BUS)])}
    if bus_net is not None:
        benches[BUS_NONE] = (bus_net, bus_verilog, [r for r in rows if r.ident.startswith(BUS)])
    if args.only:     # a bench none of whose mutants is asked for is not graded, its none mutant neither
        benches = {k: bench for k, bench in benches.items() if bench[2]}
    try:
        paths, nones = _write(benches, mutants_dir(args.params))
    except yosys.YosysError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for none_id in nones:
        console.print(f"grading {len(benches[none_id][2])} mutants and the unmutated round trip "
                      f"({none_id}) on {args.sim}: {', '.join(s.name for s in steps_for(none_id, args))}",
                      highlight=False)
    bases = grade_all(rows, nones, paths, args, console)
    for none_id, base in bases.items():
        if base.status != grade.SURVIVED:
            print(f"error: the unmutated netlist ({nones[none_id]}) does not pass: {base.status} by "
                  f"{base.step}: {'; '.join(base.detail)}", file=sys.stderr)
            return 2
    found = {}
    for none_id, (netlist, graph_of) in {NONE: (net, graph), BUS_NONE: (bus_net, bus_graph)}.items():
        if none_id not in benches:
            continue
        survivors = [(r.ident, r.mutation) for r in benches[none_id][2] if r.grade.status == grade.SURVIVED]
        if survivors:
            console.print(f"judging {len(survivors)} survivor{'s' if len(survivors) != 1 else ''}",
                          highlight=False)
        found |= verdicts.judge_all(netlist, graph_of.modules, survivors, proofs=not args.no_proofs,
                                    params=args.params if none_id == NONE else DEFAULT)   # the bus: DEFAULT's
    for r in rows:
        r.verdict = found.get(r.ident)
    seconds = time.perf_counter() - t0
    left_out = ("list", "keep", "engine", "param", "params")
    settings = {k: v for k, v in vars(args).items() if k not in left_out} | {
        "verilog_sha256": net.digest, "listed": max(LISTED, args.count)}
    if args.params != DEFAULT:
        settings["machine"] = repr(args.params)
    out = out_dir(args.params)
    report.write_json(out / "report.json", rows, settings, seconds)
    report.show(console, rows)
    console.print(f"{seconds / 60:.1f} minutes; the report: {out / 'report.json'}", highlight=False)
    s = report.score(rows)
    return 0 if s.percent >= args.target and not s.errors else 1


if __name__ == "__main__":
    sys.exit(main())
