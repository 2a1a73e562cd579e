"""Deferrable cloud jobs (OSDEC).

``deferrable_workload(azure_file, slots=288, seed=...)`` returns a ``"model": "osdec"``
instance dict (``deferrable_model`` the ``OSDECModel``, ``save_workload`` writes the file;
CLI ``hpcopt workload osdec``).  The paper's processed Azure data was never released; the
recipe is ours, on the Azure v1 derived files in the data directory's
``cloud/azure_v1_vmtable_derived`` (Azure Public Dataset V1 ``vmtable``, CC-BY-4.0, binned by
huaweicloud/trace_generation_rnn):

1. *Read* (``hpcopt.traces.azure``).  A split is a flavor file (``v1.train.txt.gz``,
   ``v1.dev.txt.gz``) and, for dev, a lifetime file; the reader pairs them token by token.
2. *Lifetimes.*  A VM's lifetime is drawn uniformly among the 300 s steps its bin holds
   (bins 0..12 hold one step, 0..3600 s; wider bins 12, 288 or 2,880 steps); its slots are
   ``d = max(1, ceil(lifetime / 300))``.  A censored bin is used as it is (a lower bound; the
   VM is alive until the split's end anyway).  The train split has no lifetime file (absent
   from the snapshot, PROVENANCE.md): its VMs draw (bin, censored) from the empirical
   distribution of the dev pairs *of the same flavor* (``meta.lifetimes_used = "empirical"``).
3. *Streams.*  Each VM is deferrable with probability q (``deferrable_share``, default 0.05,
   seeded Bernoulli; ``split_by="batch"``: one draw per tenant batch), else on-demand.  An
   on-demand VM runs on this machine with probability r (``on_demand_share``, default 0.02:
   the machine is a seeded 2% slice of the region, so that the on-demand swings are on the
   scale of the deferrable demand; r = 1 makes the whole region one machine, as the spec
   reads, on which the deferrable jobs hardly ever compete for capacity).
   Every random draw is a per-purpose stream whose k-th value belongs to the k-th VM of the
   file, so a VM's fate does not depend on the window or horizon chosen.
4. *Window.*  Slot = one 300 s bin; the window is bins ``start .. start + T - 1`` counted
   from the file's first line (``start`` a bin index or days, ``"1d"`` = 288 bins, the
   default: one day of warm-up).
5. *Capacity.*  ``L_t`` = cores of the on-demand VMs alive at slot t: a VM arriving at
   slot a (warm-up VMs too, a < 0) occupies ``a .. a + d - 1``.  ``D_t`` = cores of the
   window's deferrable jobs if each ran from its earliest slot.  The machine size is
   ``M = max(max_t L_t, ceil(quantile_p(L_t + D_t)))`` (p = ``machine_quantile``, default 0.8;
   or ``machine_size`` given, refused below the on-demand peak) and ``C_t = M - L_t >= 0``:
   every on-demand VM is served, and the deferrable jobs get what is left.  VMs running
   before the file's first line are not in the file, so ``L_t`` keeps growing over the first
   days (long-lived VMs accumulate); on these files the on-demand peak, late in the window,
   usually sets M.
6. *Jobs* (the deferrable VMs arriving in the window): id ``"<t_seconds>:<index in line>"``,
   ``cores`` from the flavor, ``duration = min(d, max_duration)`` (default cap 24 slots, two
   hours: with whole-day jobs the violation penalty swamps every online policy; ``None``: T),
   ``submit = g`` (arrival slot), ``earliest = min(g + U{0..A}, T - 1)``, ``latest =
   min(earliest + U{0..W}, T - 1)`` (A = ``max_defer`` default 6, W = ``window`` default
   12); ``real_time=True``: ``earliest = latest = submit`` (the paper's Table 2 variant).
   ``w1 = 2``, ``w2 = 10`` (Table 3).
7. *Synthetic sensitivity cases* (Table 4): ``synthetic="core:K"`` draws every job's cores
   over {1, 2, 4, 8} with [0.51, 0.37, 0.08, 0.04], uniform, [0.4, 0.3, 0.2, 0.1] (K = 1, 2,
   3); ``"duration:K"`` its duration over 1..6 slots with uniform, [0.4, 0.25, 0.15, 0.1,
   0.05, 0.05], [0.6, 0.25, 0.1, 0.05, 0, 0].  Arrivals, windows and the on-demand capacity
   stay those of the trace; M is computed after the draw.

``meta`` records every setting, the machine size and its rule, the on-demand peak, the VM and
job counts, the capacity's mean and minimum, and how much the capacity binds: ``load`` =
``sum_t D_t / sum_t C_t`` and ``binding_slots``, the slots where ``D_t > C_t``.

**The regime.**  The defaults are the benchmark family (``DEFERRABLE_FAMILY``), the regime of
the paper's comparison: a load of about 0.5-0.6, capacity binding in a fifth of the slots, the
online policies a few percent apart.  A day with load below ``LOOSE_LOAD`` (0.2; the whole
region as one machine, ``on_demand_share=1``, gives about 0.07) is loose: capacity binds in a
few slots at most, almost every job starts at its earliest slot under any policy, and the
policies tie; ``loose_warning`` says so and what to change (the CLI prints it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..datadir import data_path
from ..errors import TraceError, closest
from ..instances import _dumps, instance_from_dict
from ..traces.azure import (
    BIN_SECONDS,
    lifetime_bins,
    read_azure_vms,
    resolve_azure_pair,
    split_prefix,
)

AZURE = "cloud/azure_v1_vmtable_derived"
SLOTS_PER_DAY = 86400 // BIN_SECONDS
CORE_CASES = {1: (0.51, 0.37, 0.08, 0.04), 2: (0.25, 0.25, 0.25, 0.25), 3: (0.4, 0.3, 0.2, 0.1)}
SYNTHETIC_CORES = (1, 2, 4, 8)
DURATION_CASES = {1: (1 / 6,) * 6, 2: (0.4, 0.25, 0.15, 0.1, 0.05, 0.05),
                  3: (0.6, 0.25, 0.1, 0.05, 0.0, 0.0)}
SYNTHETIC_DURATIONS = (1, 2, 3, 4, 5, 6)  # slots (spec osdec.md: "ours: 1..6 slots")
SPLIT_BY = ("vm", "batch")
# one independent uniform stream per purpose; value k of a stream belongs to the k-th VM of
# the file (counted from its first line), so a VM's draws never depend on the window chosen
_STREAMS = {"split": 1, "lifetime": 2, "defer": 3, "window": 4, "synthetic": 5, "empirical": 6,
            "machine": 7}


def azure_path(name: str, needed_by: str) -> Path:
    """The Azure v1 derived file ``name`` in the data directory (the generators' default)."""
    return data_path(f"{AZURE}/{name}", needed_by)


def _streams(seed: int, n: int) -> dict:
    """One stream of ``n`` uniforms per purpose (value k belongs to the k-th VM of the file)."""
    return {name: np.random.default_rng([int(seed), code]).random(n)
            for name, code in _STREAMS.items()}


def _parse_start(start) -> int:
    """``--start``: a bin index from the file's first line (``600``) or days (``1d``,
    ``day1``, ``day:1``: 288 bins a day)."""
    if isinstance(start, (int, np.integer)) and not isinstance(start, bool):
        value = int(start)
    else:
        text = str(start).strip().lower()
        days = None
        for pre, suf in (("day:", ""), ("day", ""), ("", "d")):
            if text.startswith(pre) and text.endswith(suf) and text != pre + suf:
                body = text[len(pre):len(text) - len(suf)]
                if (pre or suf) and body.isdigit():
                    days = int(body)
                    break
        if days is not None:
            value = days * SLOTS_PER_DAY
        elif text.isdigit():
            value = int(text)
        else:
            raise TraceError(f"start: expected a bin index (e.g. 600) or days (e.g. 1d), got "
                             f"{start!r}")
    if value < 0:
        raise TraceError(f"start: expected a bin index >= 0, got {value}")
    return value


def _parse_synthetic(synthetic) -> tuple[str, int] | None:
    if synthetic is None:
        return None
    text = str(synthetic).strip().lower()
    what, _, case = text.partition(":")
    if what not in ("core", "duration") or case not in ("1", "2", "3"):
        raise TraceError(f"synthetic: expected core:1|2|3 or duration:1|2|3 (the paper's "
                         f"Table 4 cases), got {synthetic!r}")
    return what, int(case)


def _check_number(name, value, lo, hi=None, integer=False):
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if ok:
        ok = np.isfinite(value) and value >= lo and (hi is None or value <= hi) and \
            (not integer or float(value).is_integer())
    if not ok:
        rng = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise TraceError(f"{name}: expected {'an integer' if integer else 'a number'} {rng}, "
                         f"got {value!r}")


def _empirical_lifetimes(flavors: np.ndarray, u: np.ndarray, source: Path, maps) -> tuple:
    """Lifetime bins drawn per flavor from the pairs of ``source`` (a lifetime file) and its
    flavor file (the pooled distribution for a flavor it never shows)."""
    flav_path, life_path, _ = resolve_azure_pair(source)
    ref = read_azure_vms(flav_path, lifetimes=life_path, maps=maps)
    key = ref.life_bin * 2 + ref.censored
    out = np.empty(flavors.size, dtype=np.int64)
    pooled = np.sort(key)
    for f in np.unique(flavors):
        mine = flavors == f
        pool = np.sort(key[ref.flavor == f])
        pool = pool if pool.size else pooled
        out[mine] = pool[np.minimum((u[mine] * pool.size).astype(np.int64), pool.size - 1)]
    return out // 2, (out % 2).astype(bool), str(life_path)


def deferrable_workload(azure_file=None, *, slots: int = 288, seed: int = 0,
                        deferrable_share: float = 0.05, max_defer: int = 6, window: int = 12,
                        start=SLOTS_PER_DAY, real_time: bool = False, synthetic=None,
                        split_by: str = "vm", on_demand_share: float = 0.02,
                        machine_size: int | None = None,
                        machine_quantile: float = 0.8, max_duration: int | None = 24,
                        lifetimes=None, maps=None, w1: float = 2, w2: float = 10,
                        name: str | None = None, progress: bool = False) -> dict:
    """An OSDEC workload (``"model": "osdec"`` instance dict) from the Azure v1 derived files.

    The recipe is the module docstring's "Deferrable cloud jobs" section.  ``azure_file``
    defaults to ``v1.dev.txt.gz`` in the data directory; ``start`` is a bin index from the
    file's first line or days (``"1d"``); ``synthetic`` ``"core:K"`` / ``"duration:K"`` (the
    paper's Table 4 cases, K = 1, 2, 3).  Deterministic given the arguments.  Returns the
    instance dict (``format``, ``name``, ``model``, ``description``, ``meta``, ``data``);
    ``hpcopt.instances.instance_from_dict`` builds the model, ``save_workload`` writes it.
    """
    _check_options(slots=slots, seed=seed, deferrable_share=deferrable_share,
                   max_defer=max_defer, window=window, machine_quantile=machine_quantile,
                   on_demand_share=on_demand_share, machine_size=machine_size,
                   max_duration=max_duration, split_by=split_by)
    slots, seed, max_defer, window = int(slots), int(seed), int(max_defer), int(window)
    max_duration = slots if max_duration is None else int(max_duration)
    syn = _parse_synthetic(synthetic)
    first = _parse_start(start)
    vms, flav_path, life_path, how = _read_window(azure_file, lifetimes, maps, first, slots,
                                                  progress)
    first_bin = vms.first_t // BIN_SECONDS
    u = _streams(seed, vms.n)
    life_bin, _, life_src = (vms.life_bin, vms.censored, str(life_path)) \
        if how == "paired" else _empirical_lifetimes(vms.flavor, u["empirical"], life_path, maps)
    life_slots = _life_slots(life_bin, u["lifetime"], _interval_bins(maps, flav_path))
    deferrable = _deferrable(vms.batch, u["split"], split_by, deferrable_share)
    # the on-demand VMs this machine hosts: each with probability r (a slice of the region)
    od = ~deferrable & (u["machine"] < on_demand_share)
    slot = vms.bin - first_bin - first  # slot of the window (negative: warm-up)
    # on-demand load L_t: cores of on-demand VMs alive at slot t (arrived in or before t)
    load = _alive_cores(slot[od], life_slots[od], vms.cores[od], slots)
    # deferrable jobs: the deferrable VMs that arrive in the window
    idx = np.flatnonzero(deferrable & (slot >= 0) & (slot < slots))
    submit = slot[idx]
    cores, duration = _job_sizes(syn, u["synthetic"][idx], vms.cores[idx].copy(),
                                 np.minimum(life_slots[idx], max_duration), max_duration)
    earliest, latest = (submit, submit) if real_time else _windows(
        submit, u["defer"][idx], u["window"][idx], max_defer, window, slots)
    # D_t: the deferrable jobs' cores if each ran from its earliest slot
    demand = _alive_cores(earliest, duration, cores, slots)
    machine_size, size_rule = _machine_size(load, demand, machine_size, machine_quantile)
    capacity = machine_size - load
    jobs = [{"id": f"{int(vms.bin[k]) * BIN_SECONDS}:{int(vms.index[k])}", "cores": int(c),
             "duration": int(d), "submit": int(s), "earliest": int(e), "latest": int(la)}
            for k, c, d, s, e, la in zip(idx, cores, duration, submit, earliest, latest)]
    window_t0 = (first_bin + first) * BIN_SECONDS
    tag = f"{split_prefix(flav_path)}-t{window_t0}-{slots}slots-q{deferrable_share:g}-s{seed}" \
        + _tag_tail(on_demand_share, machine_size if size_rule == "given" else None,
                    machine_quantile, syn, real_time)
    meta = {
        "generator": "hpcopt.workloads.osdec.deferrable_workload",
        "source": flav_path.name, "lifetimes": Path(life_src).name, "lifetimes_used": how,
        "start_bin": first, "window_start_t": window_t0, "slot_seconds": BIN_SECONDS,
        "slots": slots, "seed": seed, "deferrable_share": float(deferrable_share),
        "split_by": split_by, "on_demand_share": float(on_demand_share), "max_defer": max_defer,
        "window": window, "max_duration": max_duration, "real_time": bool(real_time),
        "synthetic": None if syn is None else f"{syn[0]}:{syn[1]}",
        "machine_size": machine_size, "machine_size_rule": size_rule,
        "machine_quantile": float(machine_quantile), "vms_read": vms.n,
        "on_demand_vms": int(od.sum()),
        **_load_meta(load, demand, capacity, cores, duration, len(jobs)),
        "licence": "Azure Public Dataset V1 (CC-BY-4.0), processed by huaweicloud/"
                   "trace_generation_rnn; see LICENSE-traces.txt beside the data",
    }
    return {"format": "hpcopt-instance", "version": 1, "name": name or tag, "model": "osdec",
            "description": f"deferrable jobs from {flav_path.name} (bins {first}.."
                           f"{first + slots - 1} from its first line), share {deferrable_share:g}"
                           f", seed {seed}" + (f", synthetic {syn[0]}:{syn[1]}" if syn else "")
                           + (", real-time" if real_time else ""),
            "meta": meta,
            "data": {"slots": slots, "capacity": capacity.tolist(), "w1": w1, "w2": w2,
                     "jobs": jobs}}


def _read_window(azure_file, lifetimes, maps, first: int, slots: int, progress: bool):
    """The VMs of the Azure file's bins up to the window's last (``first + slots``), nothing
    after: ``(vms, flavors file, lifetimes file, how the lifetimes are used)``."""
    n_lines = first + slots
    path = Path(azure_file) if azure_file is not None else \
        azure_path("v1.dev.txt.gz", "a deferrable workload without an Azure file")
    flav_path, life_path, how = resolve_azure_pair(path, lifetimes)
    vms = read_azure_vms(flav_path, lifetimes=life_path if how == "paired" else None,
                         maps=maps, max_lines=n_lines, progress=progress)
    have = int(vms.bin[-1]) - vms.first_t // BIN_SECONDS + 1
    if have < n_lines:
        raise TraceError(f"{flav_path.name}: has {have} bins; start {first} + {slots} slots "
                         f"needs {n_lines}")
    return vms, flav_path, life_path, how


def _windows(submit, u_defer, u_window, max_defer: int, window: int, slots: int):
    """Each job's ``(earliest, latest)`` start slot: put off by up to ``max_defer`` slots,
    then a start window of up to ``window`` slots (``u_*`` the draws), within the day."""
    earliest = np.minimum(submit + (u_defer * (max_defer + 1)).astype(np.int64), slots - 1)
    latest = np.minimum(earliest + (u_window * (window + 1)).astype(np.int64), slots - 1)
    return earliest, latest


def _tag_tail(on_demand_share: float, given_size: int | None, quantile: float, syn,
              real_time: bool) -> str:
    """The end of a day's name: the settings that differ from the usual ones."""
    return ((f"-r{on_demand_share:g}" if on_demand_share != 1 else "")
            + (f"-M{given_size}" if given_size is not None else
               f"-p{quantile:g}" if quantile != 0.9 else "")
            + (f"-{syn[0]}{syn[1]}" if syn else "") + ("-realtime" if real_time else ""))


def _check_options(*, slots, seed, deferrable_share, max_defer, window, machine_quantile,
                   on_demand_share, machine_size, max_duration, split_by) -> None:
    """``deferrable_workload``'s options checked: one-line ``TraceError``s."""
    _check_number("slots", slots, 1, integer=True)
    _check_number("seed", seed, 0, integer=True)
    _check_number("deferrable_share", deferrable_share, 0, 1)
    _check_number("max_defer", max_defer, 0, integer=True)
    _check_number("window", window, 0, integer=True)
    _check_number("machine_quantile", machine_quantile, 0, 1)
    _check_number("on_demand_share", on_demand_share, 0, 1)
    if machine_size is not None:
        _check_number("machine_size", machine_size, 1, integer=True)
    if max_duration is not None:
        _check_number("max_duration", max_duration, 1, integer=True)
    if split_by not in SPLIT_BY:
        raise TraceError(f"split_by: expected one of {list(SPLIT_BY)}, got {split_by!r}"
                         + closest(str(split_by), SPLIT_BY))


def _interval_bins(maps, flav_path: Path):
    """The 300 s steps of each lifetime bin (``v1.interval_map.txt`` of the maps folder)."""
    maps_dir = Path(maps) if maps is not None else flav_path.parent / "maps"
    return lifetime_bins(maps_dir / "v1.interval_map.txt")


def _life_slots(life_bin: np.ndarray, u: np.ndarray, bins) -> np.ndarray:
    """Each VM's lifetime in slots: a draw (``u``) among the 300 s steps of its lifetime bin;
    slots = max(1, ceil(lifetime / 300))."""
    seconds = np.empty(life_bin.size, dtype=np.int64)
    for b in np.unique(life_bin):
        mine = life_bin == b
        grid = bins[int(b)]
        seconds[mine] = grid[np.minimum((u[mine] * grid.size).astype(np.int64),
                                        grid.size - 1)]
    return np.maximum(1, -(-seconds // BIN_SECONDS))


def _deferrable(batch: np.ndarray, draw: np.ndarray, split_by: str, share: float) -> np.ndarray:
    """Which VMs are deferrable: Bernoulli(share) per VM, or per tenant batch (its first VM's
    draw)."""
    if split_by == "batch":
        firsts = np.r_[0, np.flatnonzero(np.diff(batch)) + 1]
        draw = draw[firsts][np.searchsorted(firsts, np.arange(draw.size), side="right") - 1]
    return draw < share


def _alive_cores(start: np.ndarray, length: np.ndarray, cores: np.ndarray,
                 slots: int) -> np.ndarray:
    """Cores alive at each slot 0..slots-1 of items from ``start`` for ``length`` slots
    (clipped to the window)."""
    out = np.zeros(slots + 1, dtype=np.int64)
    s0 = np.clip(start, 0, slots)
    s1 = np.clip(start + length, 0, slots)
    alive = s1 > s0
    np.add.at(out, s0[alive], cores[alive])
    np.add.at(out, s1[alive], -cores[alive])
    return np.cumsum(out)[:slots]


def _job_sizes(syn, u: np.ndarray, cores: np.ndarray, duration: np.ndarray,
               max_duration: int) -> tuple[np.ndarray, np.ndarray]:
    """The jobs' cores and durations: the VMs' own, or with ``synthetic`` one of them drawn
    (``u``) from the paper's Table 4 case."""
    if syn is None:
        return cores, duration
    what, case = syn
    values, probs = (SYNTHETIC_CORES, CORE_CASES[case]) if what == "core" else \
        (SYNTHETIC_DURATIONS, DURATION_CASES[case])
    cdf = np.cumsum(probs) / np.sum(probs)
    pick = np.minimum(np.searchsorted(cdf, u, side="right"), len(values) - 1)
    drawn = np.array(values, dtype=np.int64)[pick]
    if what == "core":
        return drawn, duration
    return cores, np.minimum(drawn, max_duration)


def _machine_size(load: np.ndarray, demand: np.ndarray, given: int | None,
                  quantile: float) -> tuple[int, str]:
    """Machine size M and its rule: every on-demand VM fits (M >= max L_t), and M is the
    q-quantile of the total demand L_t + D_t; or ``given`` (at least the on-demand peak)."""
    if given is None:
        return (max(int(load.max()), int(np.ceil(np.quantile(load + demand, quantile))), 1),
                f"max(max_t L_t, ceil(quantile_{quantile:g}(L_t + D_t)))")
    if int(given) < int(load.max()):
        raise TraceError(f"machine_size: {int(given)} cores is below the on-demand peak "
                         f"{int(load.max())} of this window (capacity would be negative)")
    return int(given), "given"


def _load_meta(load, demand, capacity, cores, duration, n_jobs: int) -> dict:
    """The day's jobs and load figures recorded in its ``meta``."""
    return {"on_demand_peak": int(load.max()), "jobs": n_jobs,
            "capacity_min": int(capacity.min()), "capacity_mean": float(capacity.mean()),
            "job_core_slots": int((cores * duration).sum()),
            "load": float(demand.sum() / capacity.sum()) if capacity.sum() else float("inf"),
            "binding_slots": int((demand > capacity).sum())}

LOOSE_LOAD = 0.2  # below this deferrable load a day is loose (module docstring, "The regime")


def loose_warning(instance: dict) -> str | None:
    """What to change when ``instance`` (``deferrable_workload``'s) is loose, else None."""
    m = instance["meta"]
    if m["load"] >= LOOSE_LOAD and m["binding_slots"]:
        return None
    return (f"this day is loose: the deferrable jobs ask for {m['load']:.0%} of the capacity "
            f"and exceed it in {m['binding_slots']} of {m['slots']} slots, so every policy "
            "starts almost every job at its earliest slot and the policies tie; for the "
            "regime where they differ keep the defaults --on-demand-share 0.02 "
            "--machine-quantile 0.8 --max-duration 24, or raise --deferrable-share")


# The trajectory family of the learned OSDEC agent and of benchmarks/osdec.py (the generator's
# defaults): a machine that is a 2% slice of the region (r = 0.02), sized at the 0.8 quantile
# of the demand, jobs of at most 24 slots (2 h).  On it the capacity binds and the heuristics
# land within a few percent of the offline optimum, the regime of the paper's Table 1.
DEFERRABLE_FAMILY = {"slots": SLOTS_PER_DAY, "on_demand_share": 0.02, "machine_quantile": 0.8,
                     "max_duration": 24}
SUITE_SPLITS = {"train": "v1.train.txt.gz", "test": "v1.dev.txt.gz"}


def deferrable_suite(split: str = "test", n: int = 20, *, seed: int = 0, azure_dir=None,
                     **overrides) -> list[dict]:
    """``n`` one-day OSDEC trajectories of ``DEFERRABLE_FAMILY`` (instance dicts).

    ``split`` ``"train"`` draws from ``v1.train.txt.gz`` (what ``hpcopt train osdec`` learns
    on), ``"test"`` from ``v1.dev.txt.gz`` (never seen in training).  Trajectory k starts at a
    bin drawn from ``seed`` (after one day of warm-up, ending inside the file) and uses
    generator seed ``seed * 1000 + k``, so the deferrable/on-demand split and the lifetimes
    differ between trajectories.  ``overrides`` go to ``deferrable_workload``
    (``real_time=True``, ``synthetic="core:2"``, ...).  Deterministic given the arguments.
    """
    if split not in SUITE_SPLITS:
        raise TraceError(f"split: expected one of {list(SUITE_SPLITS)}, got {split!r}")
    _check_number("n", n, 1, integer=True)
    _check_number("seed", seed, 0, integer=True)
    path = Path(azure_dir) / SUITE_SPLITS[split] if azure_dir is not None else \
        azure_path(SUITE_SPLITS[split], f"the OSDEC {split} pool")
    kw = {**DEFERRABLE_FAMILY, **overrides}
    slots = int(kw["slots"])
    bins = {"train": 5999, "test": 1000}[split]  # lines of the shipped split files
    last = bins - slots
    if last < SLOTS_PER_DAY:
        raise TraceError(f"{path.name}: {bins} bins leave no {slots}-slot window after a day "
                         f"of warm-up")
    rng = np.random.default_rng([int(seed), 0x05DEC])
    starts = rng.integers(SLOTS_PER_DAY, last + 1, size=int(n))
    return [deferrable_workload(path, seed=int(seed) * 1000 + k, start=int(b), **kw)
            for k, b in enumerate(starts)]


def deferrable_model(azure_file=None, **kwargs):
    """``deferrable_workload(...)`` as an ``OSDECModel``."""

    return instance_from_dict(deferrable_workload(azure_file, **kwargs)).model


def save_workload(instance: dict, path) -> Path:
    """Write an instance dict (``deferrable_workload``'s) after validating it; returns the
    path."""

    instance_from_dict(instance, path)  # schema + model checks: one-line InstanceError
    path = Path(path)
    path.write_text(_dumps(instance) + "\n")
    return path
