#!/usr/bin/env python3
"""The machine sweep (``make sweep``): the same programs on GA-2 of every array size.

For each machine (by default :data:`MACHINES`: the presets t2, t4, t8 and t16, T = 2, 4, 8, 16
with the LANES each needs, sim.machines.PRESETS, and T = 4 and 8 at OVERLAP = 1 and 2) the
programs are compiled for that machine and run on the reference machine, whose counters the
RTL matches exactly (``make cosim PARAMS=...`` checks it):

* the twelve graphs of seeds 100-111 (compiler.workloads.seedtable.compile_seed): total cycles
  and MXU utilisation (useful multiply-adds over T*T*cycles);
* running example A (one attention decode step);
* running example B (examples/own_graph.py) at hidden widths 8, 16, 32 and 48;
* the digits MLP of examples/digits.py (64-32-10, batch 8, trained once): cycles per image.

The synthesis figures (LUT4, flip-flops, DSP blocks, DP16KD, Fmax on the ECP5-85F) take tens
of minutes a machine, so they are not measured by default: ``--synth`` runs flows/synth for
every machine (``build/machines/<tag>/synth``), each machine a task of a campaign's farm
(cosim.farm: Ray on this machine or, with RAY_ADDRESS, on a cluster: docs/cluster.md); without
it the table shows the figures of the last full run, kept in docs/sweep.json with its date and
tool versions. ``--write`` stores the run in docs/sweep.json and rewrites docs/sweep.md
(docs/change-the-machine.md quotes it).

Usage: python examples/sweep.py [--machines t2 t8 "T=8 LANES=16"] [--synth] [--write] [--epochs 60]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import digits
import own_graph
from _cli import positive  # examples/_cli.py

from compiler import compile_graph
from compiler.testing.perf import measure
from sim import machines
from sim.spec import Params

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "docs" / "sweep.json"
"""The last run written with --write: the figures, its date and the tool versions."""
YOSYS_CACHE = ROOT / "build" / "yosys-cache"
"""Yosys's results by a hash of the Verilog, the script and Yosys (flows/synth/run.py)."""
PAGE = ROOT / "docs" / "sweep.md"
"""The tables of RECORD as Markdown."""
MACHINES = ("t2", "t4", "t8", "t16", "t4 OVERLAP=1", "t4 OVERLAP=2", "t8 OVERLAP=1", "t8 OVERLAP=2")
"""Every array size on the serial machine, and T = 4 and 8 with the engines side by side
(OVERLAP = 1) and decoupled (OVERLAP = 2, issue 27)."""
WIDTHS = (8, 16, 32, 48)
"""Example B's hidden widths (GA2.md section 6 quotes the seed chip at these)."""
SYNTH_KEYS = (("LUT4", "LUT4"), ("TRELLIS_FF", "FF"), ("MULT18X18D", "DSP"), ("DP16KD", "DP16KD"))


@dataclass
class Figures:
    """One machine's figures."""

    machine: str
    params: dict
    seeds_cycles: int
    seeds_mxu_util: float
    example_a: int
    example_b: dict[int, int | str]
    digits_per_image: float
    synth: dict = field(default_factory=dict)


def fast_figures(name: str, params: Params, digits_model) -> Figures:
    """Everything but synthesis: compiled for ``params``, run on the reference machine."""
    rows, example = measure(params)
    cycles = sum(r.counters.cycles for r in rows)
    macs = sum(r.macs for r in rows)
    widths = {}
    for width in WIDTHS:
        row = own_graph.compile_width(width, params=params)
        widths[width] = row.cycles if row.cycles is not None else f"refused: {row.refusal}"
    lowered, calibration, feed = digits_model
    program = compile_graph(lowered.graph, calibration, params=params)
    per_image = program.run(feed).counters.cycles / digits.BATCH
    return Figures(name, asdict(params), cycles, round(100 * macs / (params.T ** 2 * cycles), 1),
                   example.counters.cycles, widths, per_image)


def digits_model(epochs: int):
    """The digits MLP trained as examples/digits.py trains it (seed 0), lowered for batches of
    8, its calibration batches and the first test batch."""
    import torch

    from compiler.frontend import from_torch

    torch.set_num_threads(1)
    split = digits.load_split()
    mlp, classifier = digits.make_models(0)
    digits.train(mlp, split, epochs, 0)
    lowered = from_torch(classifier, (digits.PIXELS,), batch=digits.BATCH)
    train = digits.batches(split.train_x)[:len(split.train_x) // digits.BATCH]
    calibration = [lowered.feed(b) for b in train]
    return lowered, calibration, lowered.feed(digits.batches(split.test_x)[0])


def synth_dir(params: Params) -> Path:
    """Where flows/synth puts a machine's report: build/synth, build/machines/<tag>/synth."""
    return machines.machine_dir(ROOT / "build", params) / "synth"


SYNTH_SECONDS = 30 * 60
"""Rough time of one machine's synthesis (the farm's estimate: Ray from a minute of work on)."""


def synthesise_all(chosen: dict[str, Params], engine: str = "auto") -> dict[str, dict]:
    """flows/synth for every machine, each a task of a campaign's farm (cosim.farm: a local pool,
    or Ray on this machine or the cluster at RAY_ADDRESS); each report lands in the machine's
    build/machines/<tag>/synth here, wherever it ran. The figures per machine name."""
    from cosim.farm import TaskError, open_farm
    from flows.synth import SynthError
    from flows.synth.run import synthesis_job

    out: dict[str, dict] = {}
    with open_farm(engine, estimate=len(chosen) * SYNTH_SECONDS, tasks=len(chosen)) as f:
        print(f"synthesis of {len(chosen)} machines (tens of minutes each) on {f.where}", flush=True)
        for name, params in chosen.items():
            folder = synth_dir(params)
            command = f"python examples/sweep.py --synth ({folder})"
            f.submit(name, synthesis_job, (params, str(folder), command, str(YOSYS_CACHE)))
        while f.running:
            for done in f.wait(1.0):
                params = chosen[done.key]
                if isinstance(done.error, (SynthError, ValueError, TaskError)):
                    out[done.key] = {"error": str(done.error)}
                elif done.error is not None:
                    raise done.error
                else:
                    report, files = done.value
                    for file, text in files.items():
                        (synth_dir(params) / file).write_text(text)
                    out[done.key] = report_figures(report, params)
                what = "refused" if "error" in out[done.key] else "done"
                print(f"  {done.key}: synthesis {what}", flush=True)
    return out


def report_figures(report, params: Params) -> dict:
    """The figures the sweep keeps of a flows.synth Report, with the date and the Yosys cache
    key of the sources they are of (flows.synth.run.current_key), so that a later run can tell
    the record is still current without the report (a fresh clone has none)."""
    from flows.synth.run import current_key

    used = {label: report.utilisation[key]["used"] for key, label in SYNTH_KEYS}
    return {**used, "Fmax": report.fmax, "target": report.freq_target, "overfull": report.overfull,
            "versions": report.versions,
            "seconds": report.seconds.get("total"), "date": datetime.date.today().isoformat(),
            "carries": report.carries, "router": report.router,
            "yosys_key": current_key(params, report.yosys["mapper"])}


def still_current(params: Params, record: dict) -> dict:
    """A machine's synthesis figures from the last record, if they carry the Yosys cache key of
    the current sources and were placed by today's flow (the carry chains rewritten:
    flows/synth/carries.py); else {} (figures of other sources or flows are never kept)."""
    from flows.synth.run import current_key

    if record and record.get("carries") and record.get("yosys_key") == current_key(params):
        return record
    return {}


def reported(params: Params) -> dict:
    """The figures of the machine's last synthesis report (``report.json`` in its synth folder:
    what ``make synth PARAMS=...`` or an earlier ``--synth`` wrote), or {} when there is none or
    it was not made from the current Verilog and Yosys script (flows.synth.run.report_is_current:
    a report of older sources is never recorded)."""
    from flows.synth import Report
    from flows.synth.run import report_is_current

    folder = synth_dir(params)
    try:
        report = Report(**json.loads((folder / "report.json").read_text()))
    except (OSError, ValueError, TypeError):
        print(f"  no synthesis report in {folder}", flush=True)
        return {}
    if not report_is_current(report, params, YOSYS_CACHE):
        print(f"  the report in {folder} was made from other sources: not used", flush=True)
        return {}
    if report.dsp_registers:
        print(f"  the report in {folder} placed the products registered in the DSP blocks "
              "(make synth DSP_REGISTERS=1): not the sweep's flow, not used", flush=True)
        return {}
    if not report.carries:
        print(f"  the report in {folder} placed the carry chains as Yosys mapped them (make synth "
              "CARRIES=0, or a flow before flows/synth/carries.py): not the sweep's flow, not used",
              flush=True)
        return {}
    previous = report_figures(report, params)
    folder_date = datetime.date.fromtimestamp((folder / "report.json").stat().st_mtime).isoformat()
    return {**previous, "date": folder_date}


def cycle_table(figures: list[Figures]) -> list[str]:
    head = ["machine", "T", "LANES", "seeds 100-111", "MXU util", "example A",
            *(f"B w{w}" for w in WIDTHS), "digits / image"]
    rows = []
    for f in figures:
        b = [str(v) if isinstance(v, int) else "refused" for v in f.example_b.values()]
        rows.append([f.machine, f.params["T"], f.params["LANES"], f.seeds_cycles, f"{f.seeds_mxu_util}%",
                     f.example_a, *b, f"{f.digits_per_image:.1f}"])
    return _markdown(head, rows)


def synth_table(figures: list[Figures]) -> list[str]:
    head = ["machine", *(label for _, label in SYNTH_KEYS), "Fmax (MHz)", "target (MHz)", "fits the 85F",
            "run on"]
    rows = []
    for f in figures:
        s = f.synth
        if not s or set(s) <= {"dsp"}:
            rows.append([f.machine, *["not run"] * (len(SYNTH_KEYS) + 4)])
        elif "error" in s:
            rows.append([f.machine, *["-"] * (len(SYNTH_KEYS) + 2), f"refused: {s['error']}", "-"])
        else:
            fmax = "-" if s["Fmax"] is None else f"{s['Fmax']:.1f}"
            rows.append([f.machine, *(f"{s[label]:,}" for _, label in SYNTH_KEYS), fmax, _target(s),
                         _fits(s), s.get("date", "-")])
    return _markdown(head, rows)


def _fits(synth: dict) -> str:
    """Whether a record's machine fits the 85F: placed (it has an Fmax), or not (what is over);
    a Yosys-only record is said so, since nextpnr packs more logic cells than Yosys counts (the
    T = 8, OVERLAP = 2 machine: 73,491 by Yosys's count, 85,679 packed, of 83,640)."""
    if synth["overfull"]:
        return f"no: {synth['overfull']}"
    if synth["Fmax"] is None:
        return "by Yosys's count (not placed)"
    return "yes" if synth.get("router", "router1") == "router1" else f"yes ({synth['router']})"


def _target(synth: dict) -> str:
    """nextpnr's ``--freq`` of a record (100 for the records made before it was kept)."""
    return f"{synth.get('target', 100.0):g}"


def superseded(last: dict, figures: list[Figures]) -> list[dict]:
    """The synthesis figures of the last record that this run replaces with figures of other
    sources (another Yosys cache key), each as a history entry: the machine, Fmax, LUT4, FF,
    the target and the day it ran. A machine whose figures are not replaced (the same key, or
    no new figures) leaves nothing."""
    before = {f["machine"]: f.get("synth", {}) for f in last.get("figures", [])}
    out = []
    for f in figures:
        old = before.get(f.machine, {})
        new_key = f.synth.get("yosys_key")
        if old.get("Fmax") is not None and new_key and old.get("yosys_key") != new_key:
            out.append(history_entry(f.machine, old))
    return out


def history_entry(machine: str, synth: dict) -> dict:
    """A machine's synthesis figures as the record's history keeps them."""
    return {"machine": machine, "Fmax": synth["Fmax"], "LUT4": synth["LUT4"], "FF": synth["FF"],
            "target": synth.get("target", 100.0), "date": synth.get("date", "-")}


def report_history(path: Path) -> dict:
    """A history entry from a flows/synth report.json of earlier sources (``--history``): its
    machine (the preset, then the changed parameters), Fmax, LUT4, FF, target, and the day the
    file was written.

    Raises:
        ValueError: the file is not a report with an Fmax (its path named).
    """
    from flows.synth import Report

    try:
        report = Report(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as e:
        raise ValueError(f"{path}: not a synthesis report ({e})") from None
    if report.fmax is None:
        raise ValueError(f"{path}: a report without Fmax (Yosys only)")
    params = Params(**report.params)
    used = {label: report.utilisation[key]["used"] for key, label in SYNTH_KEYS}
    date = datetime.date.fromtimestamp(path.stat().st_mtime).isoformat()
    return history_entry(machine_name(params), {**used, "Fmax": report.fmax, "target": report.freq_target,
                                                "date": date})


def machine_name(params: Params) -> str:
    """A machine as the sweep names it: the preset of its T and LANES, then what else differs
    (``t4 OVERLAP=2``), or the changed parameters when no preset has its T and LANES."""
    base = next((name for name, p in machines.PRESETS.items()
                 if name != "default" and (p.T, p.LANES) == (params.T, params.LANES)), None)
    if base is None:
        return machines.describe(params)
    rest = {k: v for k, v in machines.changed(params).items() if getattr(machines.PRESETS[base], k) != v}
    return " ".join([base, *(f"{k}={v}" for k, v in rest.items())])


def history_table(history: list[dict]) -> list[str]:
    head = ["machine", "Fmax (MHz)", "target (MHz)", "LUT4", "FF", "run on"]
    rows = [[h["machine"], f"{h['Fmax']:.1f}", f"{h['target']:g}", f"{h['LUT4']:,}", f"{h['FF']:,}",
             h["date"]] for h in history]
    return _markdown(head, rows)


def _key(params: Params) -> tuple:
    """A machine as the record's key: every parameter, defaults filled in."""
    return tuple(sorted(asdict(params).items()))


def _markdown(head: list, rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(map(str, head)) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return out + ["| " + " | ".join(map(str, row)) + " |" for row in rows]


def page(record: dict) -> str:
    """docs/sweep.md: the two tables of a record, its date and tools."""
    figures = [Figures(**f) for f in record["figures"]]
    versions = record.get("versions") or {}
    lines = ["# The machine sweep", "",
             f"<!-- Written by `{record.get('command', 'python examples/sweep.py --synth --write')}` on "
             f"{record['date']}. "
             "Do not edit by hand. -->", "",
             "Cycles on the reference machine (the RTL's counters are the same: `make cosim PARAMS=...`), "
             "each program compiled for the machine it runs on. MXU utilisation: useful multiply-adds "
             "over T*T*cycles, seeds 100-111. Example B: the network of examples/own_graph.py at "
             "hidden width w (batch 4). Digits: the MLP of examples/digits.py, cycles per image in "
             "batches of 8.", "", *cycle_table(figures), "",
             "Synthesis on the ECP5-85F (speed 6, out of context, nextpnr seed 1, `--freq` the target "
             "column, router1 unless the last column says, the carry chains rewritten: "
             "flows/synth/carries.py), each of the current sources (its Yosys cache key: "
             "flows/synth/run.py current_key), "
             "on the day it ran; Fmax '-': Yosys only (no place and route), 'not run': no report of the "
             "current sources:", "", *synth_table(figures), ""]
    if record.get("history"):
        lines += ["Earlier figures, of sources that have changed since (the table above has the "
                  "machine's figures of today; `--history REPORT` adds a report of earlier sources, "
                  "and a run that replaces a machine's figures moves them here):", "",
                  *history_table(record["history"]), ""]
    notes = [f"- {f.machine}: {f.synth['dsp']}" for f in figures if f.synth.get("dsp")]
    if notes:
        lines += [*notes, ""]
    if versions:
        lines += ["Tools: " + "; ".join(f"{k} {v}" for k, v in versions.items()) + ".", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cycles (and, with --synth, synthesis figures) of the same "
                                     "programs on GA-2 of every array size.")
    parser.add_argument("--machines", nargs="+", type=machines.argument, default=list(MACHINES),
                        metavar="MACHINE", help="machines, each a preset or NAME=VALUE items in quotes "
                        f"(default: {' '.join(MACHINES)})")
    parser.add_argument("--synth", action="store_true", help="run synthesis for every machine (slow)")
    parser.add_argument("--synth-reports", action="store_true",
                        help="take each machine's synthesis figures from its last report (make synth "
                        "PARAMS=..., build/machines/<tag>/synth/report.json) when it synthesised the current "
                        "sources")
    parser.add_argument("--write", action="store_true", help=f"store the run in {RECORD.relative_to(ROOT)} "
                        f"and rewrite {PAGE.relative_to(ROOT)}")
    parser.add_argument("--history", nargs="+", type=Path, default=[], metavar="REPORT",
                        help="flows/synth report.json files of earlier sources, added to the record's "
                             "history (with --write)")
    parser.add_argument("--epochs", type=positive, default=60, help="digits training epochs (default 60)")
    parser.add_argument("--engine", choices=("auto", "ray", "local"), default="auto",
                        help="where --synth runs the machines' synthesis: ray (a local instance, or the "
                             "cluster at RAY_ADDRESS), local (a pool of processes), auto (default: Ray)")
    args = parser.parse_args(argv)
    try:
        chosen = {text: machines.parse(text) for text in args.machines}
    except ValueError as e:
        parser.error(str(e))
    if args.write and not (args.synth or args.synth_reports):
        parser.error("--write records synthesis figures: give --synth or --synth-reports too")
    if args.synth and args.synth_reports:
        parser.error("--synth runs synthesis, --synth-reports reads its last reports: give one")
    try:
        added = [report_history(path) for path in args.history]
    except ValueError as e:
        parser.error(str(e))
    last = json.loads(RECORD.read_text()) if RECORD.exists() else {"figures": []}
    recorded = {_key(Params(**f["params"])): f.get("synth", {}) for f in last["figures"]}

    synthesised = synthesise_all(chosen, args.engine) if args.synth else {}
    print(f"training the digits MLP ({args.epochs} epochs) ...", flush=True)
    model = digits_model(args.epochs)
    figures = []
    for name, params in chosen.items():
        print(f"{name}: {machines.describe(params)}", flush=True)
        f = fast_figures(name, params, model)
        if args.synth:
            f.synth = {**synthesised[name], "dsp": _dsp(params)}
        elif args.synth_reports:
            found = reported(params)
            if not found:
                found = still_current(params, recorded.get(_key(params), {}))
                if found:
                    print(f"  kept the record of {found.get('date', 'an earlier run')}: the same sources",
                          flush=True)
            f.synth = {**found, "dsp": _dsp(params)} if found else {}
        else:
            f.synth = recorded.get(_key(params), {})
        figures.append(f)
    print()
    print("\n".join(cycle_table(figures)))
    print()
    when = ("this run" if args.synth else "the machines' last reports" if args.synth_reports
            else f"the last full run ({last.get('date', 'none')})")
    print(f"synthesis on the ECP5-85F, {when}:")
    print("\n".join(synth_table(figures)))
    if args.write:
        versions = next((f.synth["versions"] for f in figures if f.synth.get("versions")), {})
        command = " ".join(["python examples/sweep.py", *(sys.argv[1:] if argv is None else argv)])
        history = [*last.get("history", []), *added, *superseded(last, figures)]
        record = {"date": datetime.date.today().isoformat(), "command": command, "versions": versions,
                  "figures": [asdict(f) for f in figures], **({"history": history} if history else {})}
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        PAGE.write_text(page(record))
        print(f"\nwrote {RECORD} and {PAGE}")
    return 0


def _dsp(params: Params) -> str:
    from flows.synth import dsp

    return dsp.summary(params)


if __name__ == "__main__":
    sys.exit(main())
