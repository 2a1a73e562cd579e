"""Plots of the files hpcopt writes, for what is easier seen than read.

- ``run``: a simulation's wait distribution and its utilization over time, from the
  ``jobs.csv`` and ``summary.json`` that ``hpcopt simulate --out DIR`` writes (several runs
  are drawn on the same axes, to compare them);
- ``pareto``: the Pareto fronts in ``hpcopt solve --out ROWS`` rows of multi-objective
  (BBSched) instances, with the point the decision rule chose;
- ``osdec``: an OSDEC day's load against its capacity, from the instance file and the
  online run's ``jobs.csv``;
- ``timeline``: a simulation's queue length, running jobs and utilization over time, from
  its ``jobs.csv`` (or the CSV ``hpcopt simulate --timeline`` writes);
- ``gantt``: a simulation's schedule, node ranks by time, each job a bar coloured by how it
  started (ready, reserved, backfilled), from its ``jobs.csv`` (``--from``/``--until``
  choose a time window of a large run, in hours like its axis).  The simulator counts
  nodes, it does not name them: the ranks are drawn here (each job takes the lowest ranks
  free at its start, which always fit since the driver never oversubscribes the machine),
  and the chart says so.

Every axis names its unit; times are hours (or days) of the trace's clock.

``hpcopt plot KIND INPUT... [--out FILE.png]`` writes a PNG, by default next to the first
input. matplotlib is imported only when a plot is drawn, with the Agg backend (no display).
"""

from __future__ import annotations

import csv
import heapq
import json
from pathlib import Path

import numpy as np

from .errors import HpcoptError
from .instances import load_instance
from .sim.metrics import TIMELINE_COLUMNS, timeline

KINDS = ("run", "pareto", "osdec", "timeline", "gantt")
MODE_COLORS = {"ready": "tab:blue", "reserved": "tab:orange", "backfilled": "tab:green"}
_DAY = 86400.0
_HOUR = 3600.0


class PlotError(HpcoptError):
    """An input a plot cannot use (a missing file or column, a row without a front)."""


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# -- reading what the commands wrote -------------------------------------------------------

def _run_files(path) -> tuple[Path, Path]:
    """``(jobs.csv, summary.json)`` of a run folder, or of the folder of a ``jobs.csv``."""
    path = Path(path)
    if not path.exists():
        raise PlotError(f"{path}: not found (expected a folder written by hpcopt simulate "
                        f"--out DIR, or its jobs.csv)")
    folder = path if path.is_dir() else path.parent
    jobs = path if path.is_file() else folder / "jobs.csv"
    summary = folder / "summary.json"
    for f in (jobs, summary):
        if not f.is_file():
            raise PlotError(f"{f}: not found (expected the output of hpcopt simulate --out "
                            f"DIR: DIR/jobs.csv and DIR/summary.json)")
    return jobs, summary


def _read_columns(path: Path, needed: tuple[str, ...]) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            raise PlotError(f"{path}: no column {', '.join(missing)} (has "
                            f"{', '.join(reader.fieldnames or []) or 'none'})")
        cols: dict[str, list[str]] = {c: [] for c in needed}
        for row in reader:
            for c in needed:
                cols[c].append(row[c])
    return cols


def _floats(path: Path, name: str, values: list[str]):
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if v not in ("", "nan", "None"):
            try:
                out[i] = float(v)
            except ValueError:
                raise PlotError(f"{path}: line {i + 2}: {name}: expected a number, got "
                                f"{v!r}") from None
    return out


def read_run(path) -> dict:
    """A run's label, its machine size (``machine``) and per-job arrays of submit, start,
    end, nodes and wait (jobs that never started are left out)."""

    jobs_csv, summary_json = _run_files(path)
    try:
        summary = json.loads(summary_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlotError(f"{summary_json}: not readable JSON ({exc})") from None
    nodes = (summary.get("settings") or {}).get("nodes")
    cols = _read_columns(jobs_csv, ("submit", "start", "end", "nodes", "wait"))
    arrays = {c: _floats(jobs_csv, c, v) for c, v in cols.items()}
    started = ~np.isnan(arrays["start"]) & ~np.isnan(arrays["end"])
    arrays = {c: a[started] for c, a in arrays.items()}
    if (summary.get("settings") or {}).get("model") == "osdec":
        raise PlotError(f"{summary_json}: an OSDEC run, whose capacity changes by slot: draw "
                        f"it with hpcopt plot osdec DAY.json {jobs_csv.parent}")
    if not nodes:
        raise PlotError(f"{summary_json}: settings.nodes missing (the machine size the "
                        f"utilization is measured against)")
    policy = (summary.get("settings") or {}).get("policy")
    label = jobs_csv.parent.name or str(policy)
    return {"label": label, "machine": float(nodes), **arrays}


def utilization_series(submit, start, end, nodes, machine: float, bins: int = 200):
    """Mean utilization per time bin from the jobs' start/end/nodes: the exact integral of
    the busy nodes over each bin, divided by the machine size and the bin's length.
    Returns ``(bin centres in seconds, utilization)``."""

    if len(start) == 0:
        return np.zeros(0), np.zeros(0)
    t0, t1 = float(min(submit.min(), start.min())), float(end.max())
    if t1 <= t0:
        t1 = t0 + 1.0
    times = np.concatenate([start, end])
    deltas = np.concatenate([nodes, -nodes])
    order = np.argsort(times, kind="stable")
    times, deltas = times[order], deltas[order]
    busy = np.cumsum(deltas)                        # busy nodes from times[i] on
    area = np.concatenate([[0.0], np.cumsum(busy[:-1] * np.diff(times))])  # at times[i]
    edges = np.linspace(t0, t1, bins + 1)
    # the busy area is piecewise linear in time between events, so interpolation is exact
    at_edges = np.interp(edges, times, area, left=0.0, right=area[-1])
    util = np.diff(at_edges) / (np.diff(edges) * machine)
    return (edges[:-1] + edges[1:]) / 2, util


def read_fronts(path) -> list[dict]:
    """The rows of a ``hpcopt solve`` output (JSON Lines, or CSV with a ``pareto`` column)
    that carry a Pareto front: instance, backend, rule, front points and the chosen one."""
    path = Path(path)
    if not path.is_file():
        raise PlotError(f"{path}: not found (expected rows written by hpcopt solve --out)")
    rows = []
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    raise PlotError(f"{path}:{number}: not a JSON row") from None
    fronts = []
    for row in rows:
        history = row.get("history")
        if isinstance(history, str) and history.startswith("["):
            history = json.loads(history)
        pareto, decision = row.get("pareto"), row.get("decision")
        for name, value in (("pareto", pareto), ("decision", decision)):
            if isinstance(value, str) and value.startswith("["):
                value = json.loads(value)
            if name == "pareto":
                pareto = value
            else:
                decision = value
        if not pareto:
            continue
        points = [tuple(float(x) for x in p["objectives"]) for p in pareto]
        chosen = next((tuple(float(x) for x in p["objectives"]) for p in pareto
                       if list(p["jobs"]) == list(decision or [])), None)
        fronts.append({"instance": row.get("instance", "?"), "backend": row.get("backend", "?"),
                       "rule": row.get("rule") or "", "points": points, "chosen": chosen,
                       "history": history or []})
    if not fronts:
        raise PlotError(f"{path}: no row with a Pareto front (solve a multi-objective "
                        f"instance, e.g. a bbsched one, with --out)")
    return fronts


def osdec_load(model, starts: dict[str, float]):
    """Cores in use at each slot of an OSDEC day, given each started job's start slot."""

    load = np.zeros(model.slots)
    ids = model.ids if model.ids is not None else range(len(model.cores))
    index = {str(jid): i for i, jid in enumerate(ids)}
    for jid, start in starts.items():
        i = index.get(str(jid))
        if i is None:
            continue
        s = int(start)
        load[max(s, 0):min(s + int(model.duration[i]), model.slots)] += int(model.cores[i])
    return load


# -- figures -------------------------------------------------------------------------------

def run_figure(paths):
    """Wait distribution (empirical CDF, hours) and utilization over time (days) of one or
    more simulation runs."""

    plt = _pyplot()
    fig, (ax_wait, ax_util) = plt.subplots(1, 2, figsize=(11, 4))
    for path in paths:
        run = read_run(path)
        waits = np.sort(run["wait"]) / _HOUR
        frac = np.arange(1, len(waits) + 1) / max(len(waits), 1)
        ax_wait.step(waits, frac, where="post",
                     label=f"{run['label']} (mean {waits.mean() if len(waits) else 0:.2f} h)")
        centres, util = utilization_series(run["submit"], run["start"], run["end"],
                                           run["nodes"], run["machine"])
        ax_util.plot(centres / _DAY, util, label=run["label"])
    # waits span seconds to days: a log axis, linear below a minute (where zero waits sit)
    ax_wait.set_xscale("symlog", linthresh=1 / 60, linscale=0.5)
    ax_wait.set(xlabel="wait (hours; log scale, linear below 1 minute)",
                ylabel="fraction of jobs (cumulative)", title="wait distribution", ylim=(0, 1.02))
    ax_util.set(xlabel="time (days)", ylabel="utilization (fraction of nodes busy)",
                title="utilization over time", ylim=(0, 1.05))
    for ax in (ax_wait, ax_util):
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def pareto_figure(paths):
    """The Pareto fronts of multi-objective solve rows (first two objectives), one panel
    per instance, one marker per backend, the rule's chosen point starred; below each, when
    the rows carry one, the convergence history of the population searches (the best of the
    first two objectives on the front, by evaluations)."""
    fronts = [f for path in paths for f in read_fronts(path)]
    instances = list(dict.fromkeys(f["instance"] for f in fronts))
    plt = _pyplot()
    cols = min(len(instances), 3)
    rows = -(-len(instances) // cols)
    histories = any(f["history"] for f in fronts)
    fig, axes = plt.subplots(rows * (2 if histories else 1), cols,
                             figsize=(5 * cols, 4 * rows * (2 if histories else 1)),
                             squeeze=False)
    if histories:
        for r in range(rows):
            for c in range(cols):
                k = r * cols + c
                if k < len(instances):
                    convergence_axes(axes[2 * r + 1][c],
                                     [f for f in fronts if f["instance"] == instances[k]])
                else:
                    axes[2 * r + 1][c].set_visible(False)
        axes = axes[::2]
    markers = "os^Dvx"
    for ax, name in zip(axes.flat, instances):
        for k, f in enumerate(x for x in fronts if x["instance"] == name):
            xs = [p[0] for p in f["points"]]
            ys = [p[1] for p in f["points"]]
            order = sorted(range(len(xs)), key=xs.__getitem__)
            line, = ax.plot([xs[i] for i in order], [ys[i] for i in order],
                            marker=markers[k % len(markers)], linestyle="--", alpha=0.8,
                            label=f"{f['backend']} ({len(xs)} point"
                                  f"{'' if len(xs) == 1 else 's'})")
            if f["chosen"] is not None:
                ax.plot(*f["chosen"][:2], marker="*", markersize=16, linestyle="none",
                        color=line.get_color(), markeredgecolor="black",
                        label=f"chosen by {f['rule'] or 'the rule'} ({f['backend']})")
        ax.set(xlabel="nodes used (objective 1, nodes)",
               ylabel="burst buffer used (objective 2, GB)", title=f"Pareto front: {name}")
        ax.grid(alpha=0.3)
        # below the axes, so that it never covers the front
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.15),
                  ncol=2, frameon=False)
    for ax in list(axes.flat)[len(instances):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def convergence_axes(ax, fronts) -> None:
    """The convergence histories of ``fronts`` (rows of one instance): the best first
    objective (solid, left axis) and second (dashed, right axis) on the current front, by
    evaluations."""
    twin = ax.twinx()
    names = []
    for k, f in enumerate(x for x in fronts if x["history"]):
        hist = f["history"]
        keys = [key for key in hist[0] if key.startswith("best_")][:2]
        names = keys
        evals = [h["evaluations"] for h in hist]
        color = f"C{k}"
        ax.plot(evals, [h[keys[0]] for h in hist], color=color, label=f"{f['backend']}")
        if len(keys) > 1:
            twin.plot(evals, [h[keys[1]] for h in hist], color=color, linestyle="--")
    label = [n[len("best_"):] for n in names]
    ax.set(xlabel="evaluations", ylabel=f"best {label[0]} on the front (solid)" if label else "",
           title=f"convergence: {fronts[0]['instance']}")
    if len(label) > 1:
        twin.set_ylabel(f"best {label[1]} on the front (dashed)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")


def osdec_figure(instance, runs):
    """An OSDEC day's capacity per slot against the load of each online run, with the
    violation (load above capacity) shaded."""

    model = load_instance(instance).model
    if getattr(model, "kind", None) != "osdec":
        raise PlotError(f"{instance}: expected an osdec instance file, got model "
                        f"{getattr(model, 'kind', '?')!r}")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 4))
    slots = np.arange(model.slots + 1)
    capacity = np.asarray(model.capacity, dtype=float)
    ax.step(slots, np.append(capacity, capacity[-1]), where="post", color="black",
            linewidth=2, label="capacity C_t")
    for path in runs:
        jobs_csv, _ = _run_files(path)
        cols = _read_columns(jobs_csv, ("job_id", "start"))
        starts = {jid: float(s) for jid, s in zip(cols["job_id"], cols["start"])
                  if s not in ("", "nan", "None")}
        load = osdec_load(model, starts)
        line, = ax.step(slots, np.append(load, load[-1]), where="post",
                        label=f"load: {jobs_csv.parent.name}")
        over = np.append(load > capacity, False)
        ax.fill_between(slots, np.append(capacity, capacity[-1]), np.append(load, load[-1]),
                        where=over, step="post", color=line.get_color(), alpha=0.25)
    ax.set(xlabel="slot", ylabel="cores", title=f"OSDEC day: {Path(instance).stem}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def timeline_figure(path):
    """One run's queue length, running jobs and utilization over time (hours), from its
    run folder (``jobs.csv``) or a ``simulate --timeline`` CSV."""
    path = Path(path)
    if path.is_file() and path.suffix == ".csv" and path.name != "jobs.csv":
        cols = _read_columns(path, TIMELINE_COLUMNS)
        line = {c: _floats(path, c, v) for c, v in cols.items()}
        label = path.stem
    else:
        run = read_run(path)
        line = timeline(run, run["machine"])
        label = run["label"]
    hours = line["time_s"] / _HOUR
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(11, 7), sharex=True)
    for ax, key, ylabel in zip(axes, ("queued_jobs", "running_jobs", "utilization"),
                               ("queued jobs (jobs)", "running jobs (jobs)",
                                "utilization (fraction of nodes busy)")):
        ax.step(hours, line[key], where="post", linewidth=0.8)
        ax.set(ylabel=ylabel)
        ax.grid(alpha=0.3)
    axes[2].set(ylim=(0, 1.05), xlabel="time (hours)")
    axes[0].set_title(f"queue and machine over time: {label}")
    fig.tight_layout()
    return fig


def gantt_layout(start, end, nodes, machine: int):
    """Node ranks for each job of a schedule: ``[(job index, first rank, count), ...]``, the
    contiguous runs of the lowest ranks free at each job's start (ends free their ranks
    before starts at the same time).  A job that finds too few free ranks (a table that is
    not a whole run) gets ranks past ``machine``."""

    order = sorted(range(len(start)), key=lambda i: (start[i], i))
    free = list(range(machine))
    heapq.heapify(free)
    ending: list[tuple[float, int]] = []  # (end, job index)
    held: dict[int, list[int]] = {}
    extra = machine
    runs = []
    for i in order:
        while ending and ending[0][0] <= start[i]:
            _, j = heapq.heappop(ending)
            for r in held.pop(j):
                heapq.heappush(free, r)
        take = int(nodes[i])
        ranks = [heapq.heappop(free) for _ in range(min(take, len(free)))]
        while len(ranks) < take:  # more than the machine holds: draw it above
            ranks.append(extra)
            extra += 1
        ranks.sort()
        held[i] = ranks
        heapq.heappush(ending, (end[i], i))
        cuts = np.flatnonzero(np.diff(ranks) != 1) + 1 if len(ranks) > 1 else []
        for part in np.split(np.asarray(ranks), cuts):
            if len(part):
                runs.append((i, int(part[0]), int(len(part))))
    return runs


def gantt_figure(path, t_from: float | None = None, t_until: float | None = None):
    """One run's schedule: node ranks by time (hours), a bar per job coloured by its start
    mode, within ``[t_from, t_until]`` (hours, like the axis) when given.  The ranks are
    drawn (``gantt_layout``), not node names the simulation knows: the chart says so."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    jobs_csv, summary_json = _run_files(path)
    run = read_run(path)
    cols = _read_columns(jobs_csv, ("start", "end", "mode"))
    ok = [i for i, (s, e) in enumerate(zip(cols["start"], cols["end"]))
          if s not in ("", "nan", "None") and e not in ("", "nan", "None")]
    modes = [cols["mode"][i] for i in ok]
    start, end, nodes = run["start"], run["end"], run["nodes"]
    machine = int(run["machine"])
    layout = gantt_layout(start, end, nodes, machine)
    lo = float(start.min()) if len(start) else 0.0
    hi = float(end.max()) if len(end) else 1.0
    lo = lo if t_from is None else float(t_from) * _HOUR
    hi = hi if t_until is None else float(t_until) * _HOUR
    if hi <= lo:
        raise PlotError(f"gantt: the time window [{lo / _HOUR:g}, {hi / _HOUR:g}] h is empty")
    verts, colors, shown, counts = [], [], set(), {}
    for i, rank, count in layout:
        if end[i] <= lo or start[i] >= hi:
            continue
        x0, x1 = max(start[i], lo) / _HOUR, min(end[i], hi) / _HOUR
        verts.append([(x0, rank), (x1, rank), (x1, rank + count), (x0, rank + count)])
        colors.append(MODE_COLORS.get(modes[i], "tab:gray"))
        if i not in shown:
            shown.add(i)
            counts[modes[i]] = counts.get(modes[i], 0) + 1
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(12, 5))
    edge = 0.3 if len(shown) <= 2000 else 0.0
    ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors="white",
                                     linewidths=edge))
    top = max([machine] + [r + c for _, r, c in layout])
    ax.set(xlim=(lo / _HOUR, hi / _HOUR), ylim=(0, top), xlabel="time (hours)",
           ylabel="node rank (drawn, not node ids)",
           title=f"schedule: {run['label']} ({len(shown)} jobs, {machine} nodes; each job "
                 f"drawn on the lowest node ranks free at its start)")
    if top > machine:
        ax.axhline(machine, color="black", linewidth=0.8)
    handles = [Patch(color=MODE_COLORS.get(m, "tab:gray"), label=f"{m or 'other'} ({n})")
               for m, n in sorted(counts.items(), key=lambda kv: list(MODE_COLORS).index(kv[0])
                                  if kv[0] in MODE_COLORS else 9)]
    handles.append(Patch(color="none", label="rows: node ranks drawn by the plot\n(the "
                                             "simulation counts nodes, not names)"))
    ax.legend(handles=handles, fontsize="small", loc="upper right")
    fig.tight_layout()
    return fig


def plot(kind: str, inputs, out=None, *, t_from: float | None = None,
         t_until: float | None = None) -> Path:
    """Draw ``kind`` from ``inputs`` and write the PNG to ``out`` (default: next to the
    first input); returns the path written.  ``t_from``/``t_until``: gantt's time window,
    in hours like its axis."""
    inputs = [Path(p) for p in inputs]
    if kind not in KINDS:
        raise PlotError(f"plot kind {kind!r}: expected one of {', '.join(KINDS)}")
    if not inputs:
        raise PlotError(f"plot {kind}: no input given")
    if kind == "run":
        fig = run_figure(inputs)
        first = inputs[0] if inputs[0].is_dir() else inputs[0].parent
        default = first / "run.png"
    elif kind == "pareto":
        fig = pareto_figure(inputs)
        default = inputs[0].with_suffix(".pareto.png")
    elif kind == "timeline":
        if len(inputs) != 1:
            raise PlotError("plot timeline: expected one run folder (hpcopt simulate --out DIR) "
                            "or one simulate --timeline CSV")
        fig = timeline_figure(inputs[0])
        first = inputs[0] if inputs[0].is_dir() else inputs[0].parent
        default = first / "timeline.png"
    elif kind == "gantt":
        if len(inputs) != 1:
            raise PlotError("plot gantt: expected one run folder (hpcopt simulate --out DIR)")
        fig = gantt_figure(inputs[0], t_from, t_until)
        first = inputs[0] if inputs[0].is_dir() else inputs[0].parent
        default = first / "gantt.png"
    else:
        if len(inputs) < 2:
            raise PlotError("plot osdec: expected the instance file, then one or more run "
                            "folders (hpcopt simulate DAY.json --out DIR)")
        fig = osdec_figure(inputs[0], inputs[1:])
        first = inputs[1] if inputs[1].is_dir() else inputs[1].parent
        default = first / "load.png"
    path = Path(out) if out else default
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    _pyplot().close(fig)
    return path


# -- the command ---------------------------------------------------------------------------

def add_plot_parser(sub):
    """The ``plot`` subcommand (called by ``hpcopt.cli``); ``run`` is its handler."""
    p = sub.add_parser("plot", help="draw a PNG from what simulate or solve wrote: run, "
                                    "pareto, osdec, timeline, gantt")
    p.add_argument("kind", choices=KINDS,
                   help="run: wait distribution and utilization of simulate --out folders; "
                        "pareto: the fronts in solve --out rows of multi-objective instances; "
                        "osdec: an osdec instance file, then run folders (load vs capacity); "
                        "timeline: one simulate --out folder or --timeline CSV (queue length, "
                        "running jobs, utilization over time); "
                        "gantt: one simulate --out folder (which job ran where and when, and "
                        "how it started)")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    p.add_argument("--out", default=None, metavar="FILE.png",
                   help="where to write the PNG (default: next to the first input: "
                        "DIR/run.png, ROWS.pareto.png, DIR/load.png, DIR/timeline.png, "
                        "DIR/gantt.png)")
    p.add_argument("--from", dest="t_from", type=float, default=None, metavar="HOURS",
                   help="gantt: draw from this time on (hours of the trace's clock, as on the "
                        "axis)")
    p.add_argument("--until", dest="t_until", type=float, default=None, metavar="HOURS",
                   help="gantt: draw up to this time (hours)")
    p.set_defaults(run=cmd_plot)
    return p


def cmd_plot(args) -> int:
    path = plot(args.kind, args.inputs, args.out, t_from=args.t_from, t_until=args.t_until)
    print(f"wrote {path}")
    return 0
