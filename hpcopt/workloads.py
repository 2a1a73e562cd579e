"""Workloads of the source papers: readers of their data sets and seeded generators.

Burst-buffer and local-SSD workloads for BBSched (Fan et al., HPDC'19, sections 4.1, 5)
---------------------------------------------------------------------------------------

Readers:

- ``load_batsim(path)``: the Kopanski & Rzadca Batsim workloads (KTH-SP2 jobs with modelled
  burst-buffer requests, ``../shared/data/burst_buffer/kopanski_kth_batsim``, the default
  path); the reader and its rules are in ``hpcopt.traces.batsim``.
- ``load_bb_swf(path)``: SWF whose records carry a 19th field (burst buffer, GB for the whole
  job) and optionally a 20th (SSD, GB per node); ``write_bb_swf`` writes them.

Generators (``make_workload(jobs, name, system=, seed=)``), seeded, following the paper's
recipe on any trace:

- ``original``: the jobs as they are;
- ``S1``/``S2``: 50% / 75% of the jobs (a seeded random subset) request burst buffer, sizes
  drawn from the pool of requests above 5 TB; ``S3``/``S4``: the same above 20 TB.  The
  paper's pool is Cori's and Theta's real requests, which are not public; ours is the real
  per-job requests of the Kopanski KTH workload, as shares of their system's 480 GB, mapped
  onto the target system's capacity.  The thresholds keep the paper's proportion to the
  machine: 5 TB and 20 TB of Theta's 2.16 PB (0.23% and 0.93% of the capacity); requests
  above the capacity are left out of the pool;
- ``S5``/``S6``/``S7``: S2 plus local-SSD requests per node, 80/20, 50/50, 20/80 of the jobs
  in 0-128 GB / 129-256 GB (uniform integers), for a system of half 128 GB and half 256 GB
  nodes (``bb_system(nodes, ssd=True)``); a job with more nodes than the 256 GB half gets a
  0-128 GB request instead (it could never run otherwise).

Topology-aware job allocation (TJAP) workloads (Lan et al., CLUSTER'23)
-----------------------------------------------------------------------

- ``generate_tjap_jobs``: the paper's generator, seeded: inter-arrival U[5, 30] s (the
  authors' ``generate.py``, per the data's PROVENANCE), nodes U[1, 40], runtime U[10, 1800] s,
  all uniform integers.
- ``tjap_system``: a ``System`` whose nodes are the leaves of a fat-tree (default the paper's
  1,000 nodes).

The job files of ``../shared/data/topology_alloc`` are read by
``hpcopt.traces.tjap.load_tjap_jobs``; the allocation windows that the window-period driver
meets on such a workload (the instances of the paper's Tables III and IV) come from
``hpcopt.policies.topology.generate_windows``.

Deferrable cloud jobs (OSDEC, seed paper 004; spec osdec.md, "Data")
--------------------------------------------------------------------

``deferrable_workload(azure_file, slots=288, seed=...)`` returns a ``"model": "osdec"``
instance dict (``deferrable_model`` the ``OSDECModel``, ``save_workload`` writes the file;
CLI ``hpcopt workload deferrable``).  The paper's processed Azure data was never released; the
recipe is ours, on the Azure v1 derived files of ``../shared/data/cloud/
azure_v1_vmtable_derived`` (Azure Public Dataset V1 ``vmtable``, CC-BY-4.0, binned by
huaweicloud/trace_generation_rnn):

1. *Read.*  A split is a flavor file (``v1.train.txt.gz``, ``v1.dev.txt.gz``) and, for dev, a
   lifetime file (``v1.dev.c2100000.txt.gz``) of the same shape: one line per 300 s bin,
   ``<t_seconds> <tokens>``, tokens comma-separated, each tenant batch closed by ``|``.  A
   flavor token is a letter a..p -> (vCPUs, GB) by ``maps/flav_map.txt`` (cores 1, 2, 4, 8,
   16); a lifetime token is ``U<bin>`` (uncensored) or ``C<bin>`` (censored at the split's
   end, 2.1e6 s) with bins by ``maps/v1.interval_map.txt``.  The two files pair token by
   token (same bins, same batch sizes: checked).  Either file may be given; the other is found
   beside it by name.  Only the lines up to the window's last bin are read.  A malformed line
   is a one-line ``TraceError`` naming file, line and field.
2. *Lifetimes.*  A VM's lifetime is drawn uniformly among the 300 s steps its bin holds
   (bins 0..12 hold one step, 0..3600 s; wider bins 12, 288 or 2,880 steps); its slots are
   ``d = max(1, ceil(lifetime / 300))``.  A censored bin is used as it is (a lower bound; the
   VM is alive until the split's end anyway).  The train split has no lifetime file (absent
   from the snapshot, PROVENANCE.md): its VMs draw (bin, censored) from the empirical
   distribution of the dev pairs *of the same flavor* (``meta.lifetimes_used = "empirical"``).
3. *Streams.*  Each VM is deferrable with probability q (``deferrable_share``, default 0.05,
   seeded Bernoulli; ``split_by="batch"``: one draw per tenant batch), else on-demand.  An
   on-demand VM runs on this machine with probability r (``on_demand_share``, default 1: the
   whole region is one machine, as the spec reads); r < 1 makes the machine a seeded slice of
   the region, so that the on-demand swings are on the scale of the deferrable demand.
   Every random draw is a per-purpose stream whose k-th value belongs to the k-th VM of the
   file, so a VM's fate does not depend on the window or horizon chosen.
4. *Window.*  Slot = one 300 s bin; the window is bins ``start .. start + T - 1`` counted
   from the file's first line (``start`` a bin index or days, ``"1d"`` = 288 bins, the
   default: one day of warm-up).
5. *Capacity.*  ``L_t`` = cores of the on-demand VMs alive at slot t: a VM arriving at
   slot a (warm-up VMs too, a < 0) occupies ``a .. a + d - 1``.  ``D_t`` = cores of the
   window's deferrable jobs if each ran from its earliest slot.  The machine size is
   ``M = max(max_t L_t, ceil(quantile_p(L_t + D_t)))`` (p = ``machine_quantile``, default 0.9;
   or ``machine_size`` given, refused below the on-demand peak) and ``C_t = M - L_t >= 0``:
   every on-demand VM is served, and the deferrable jobs get what is left.  VMs running
   before the file's first line are not in the file, so ``L_t`` keeps growing over the first
   days (long-lived VMs accumulate); on these files the on-demand peak, late in the window,
   usually sets M.
6. *Jobs* (the deferrable VMs arriving in the window): id ``"<t_seconds>:<index in line>"``,
   ``cores`` from the flavor, ``duration = min(d, max_duration)`` (default cap: T),
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
job counts and the capacity's mean and minimum.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .datadir import data_path
from .domain import Job, System
from .errors import TraceError, closest
from .topology import FatTree

KOPANSKI = "burst_buffer/kopanski_kth_batsim/KTH-SP2-1996-2.1-cln-io-aware-1000.json.gz"
KOPANSKI_BB_GB = 480.0  # 12 storage nodes x 40 GB (platform_dragonfly96.yaml)
BB_PER_NODE_GB = 5.0  # the same ratio per compute node (480 GB / 96 nodes)
THETA_BB_GB = 2.16e6
THRESHOLDS = {"S1": 5e3, "S2": 5e3, "S3": 20e3, "S4": 20e3}  # GB on Theta's 2.16 PB
SHARES = {"S1": 0.5, "S2": 0.75, "S3": 0.5, "S4": 0.75}
SSD_SPLITS = {"S5": 0.8, "S6": 0.5, "S7": 0.2}  # share of jobs asking 0-128 GB per node
NAMES = ("original", "S1", "S2", "S3", "S4", "S5", "S6", "S7")


def load_batsim(path=None, **kwargs):
    """A Batsim workload with burst-buffer profiles as a ``Trace``; ``path`` defaults to the
    Kopanski KTH workload in the data directory (``hpcopt.datadir``).  The reader is
    ``hpcopt.traces.batsim.load_batsim`` (``kwargs`` go to it), which ``hpcopt.load_trace``
    and ``hpcopt simulate FILE.json`` use too."""
    from .traces.batsim import load_batsim as _load

    return _load(data_path(KOPANSKI, "the burst-buffer pool of S1-S7") if path is None else path,
                 **kwargs)


def kopanski_pool(path=None) -> np.ndarray:
    """Per-job burst-buffer requests of the Kopanski KTH workload as shares of its system's
    capacity (the S1-S4 pool)."""
    trace = load_batsim(path)
    return np.array([j.bb for j in trace.jobs if j.bb > 0]) / trace.system.bb


def bb_system(nodes: int, *, bb: float | None = None, ssd: bool = False) -> System:
    """A BBSched test machine: ``bb`` GB of burst buffer (default 5 GB per node, the Kopanski
    ratio) and, with ``ssd``, half 128 GB and half 256 GB SSD nodes."""
    classes = {128: nodes // 2, 256: nodes - nodes // 2} if ssd else {}
    return System(nodes, bb=BB_PER_NODE_GB * nodes if bb is None else bb, ssd_classes=classes)


def make_workload(jobs, name: str, *, system: System, seed: int | None = 0,
                  pool: np.ndarray | None = None) -> list[Job]:
    """The paper's workload ``name`` (original, S1..S7) applied to ``jobs`` on ``system``."""
    if name not in NAMES:
        raise TraceError(f"unknown workload {name!r}; expected one of {list(NAMES)}."
                         + closest(name, NAMES))
    jobs = list(jobs)
    if name == "original":
        return jobs
    rng = np.random.default_rng(seed)
    if name in SSD_SPLITS:
        jobs = make_workload(jobs, "S2", system=system, seed=seed, pool=pool)
        big = int(system.ssd_classes.get(256, 0))
        if not big:
            raise TraceError(f"workload {name}: the system needs 256 GB SSD nodes "
                             "(use bb_system(nodes, ssd=True))")
        small = rng.random(len(jobs)) < SSD_SPLITS[name]
        low, high = rng.integers(0, 129, len(jobs)), rng.integers(129, 257, len(jobs))
        return [replace(j, ssd=float(low[k] if small[k] or j.nodes > big else high[k]))
                for k, j in enumerate(jobs)]
    if system.bb <= 0:
        raise TraceError(f"workload {name}: the system has no burst buffer")
    shares = kopanski_pool() if pool is None else np.asarray(pool, dtype=float)
    sizes = shares * system.bb
    sizes = sizes[(sizes > THRESHOLDS[name] / THETA_BB_GB * system.bb) & (sizes <= system.bb)]
    if not sizes.size:
        raise TraceError(f"workload {name}: no pool request between the threshold and the "
                         f"system's {system.bb:g} GB")
    chosen = rng.permutation(len(jobs))[: int(round(SHARES[name] * len(jobs)))]
    draw = np.ceil(rng.choice(sizes, len(chosen)))
    out = list(jobs)
    for k, size in zip(chosen, draw):
        out[k] = replace(out[k], bb=float(min(size, system.bb)))
    return out


def load_bb_swf(path, **kwargs):
    """An SWF trace whose records have a 19th field (burst buffer GB) and optionally a 20th
    (SSD GB per node); ``kwargs`` go to ``load_trace``."""
    from .traces import load_trace
    from .traces._text import read_text

    path = Path(path)
    trace = load_trace(path, extra_fields="ignore", **kwargs)
    extra = {}
    for lineno, line in enumerate(read_text(path, str(path)).splitlines(), 1):
        fields = line.split()
        if not fields or line.lstrip().startswith(";"):
            continue
        if len(fields) not in (19, 20):
            raise TraceError(f"{path.name}:{lineno}: expected 19 or 20 fields (18 SWF fields, "
                             f"burst buffer GB[, SSD GB per node]), got {len(fields)}")
        values = []
        for k, text in enumerate(fields[18:], 19):
            try:
                v = float(text)
            except ValueError:
                v = -1.0
            if not (np.isfinite(v) and v >= 0):
                what = "burst buffer GB" if k == 19 else "SSD GB per node"
                raise TraceError(f"{path.name}:{lineno}: field {k} ({what}): expected a "
                                 f"number >= 0, got {text!r}")
            values.append(v)
        extra[int(float(fields[0]))] = (values[0], values[1] if len(values) > 1 else 0.0)
    jobs = tuple(replace(j, bb=extra[j.id][0], ssd=extra[j.id][1]) for j in trace.jobs)
    return replace(trace, jobs=jobs)


def write_bb_swf(jobs, path) -> Path:
    """Write jobs as SWF records with burst buffer (field 19) and SSD (field 20)."""
    path = Path(path)
    lines = ["; SWF with burst buffer (field 19, GB) and SSD per node (field 20, GB)"]
    for j in jobs:
        lines.append(f"{j.id} {j.submit:g} -1 {j.runtime:g} {j.nodes} -1 -1 {j.nodes} "
                     f"{j.walltime:g} -1 1 {j.user} -1 -1 {j.queue} -1 -1 -1 {j.bb:g} {j.ssd:g}")
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------- TJAP
def generate_tjap_jobs(n_jobs: int, *, seed: int = 0, nodes=(1, 40), runtime=(10, 1800),
                       interarrival=(5, 30), first_id: int = 1) -> list[Job]:
    """``n_jobs`` jobs drawn as in the paper (bounds inclusive, uniform integers), seeded."""
    rng = np.random.default_rng(seed)
    gaps = rng.integers(interarrival[0], interarrival[1] + 1, n_jobs)
    arrival = np.cumsum(gaps)
    run = rng.integers(runtime[0], runtime[1] + 1, n_jobs)
    size = rng.integers(nodes[0], nodes[1] + 1, n_jobs)
    return [Job(first_id + i, float(a), float(r), float(r), int(s))
            for i, (a, r, s) in enumerate(zip(arrival, run, size))]


def tjap_system(topology="paper-1000") -> System:
    """A system whose nodes are the leaves of ``topology`` (a FatTree, preset name or dict)."""
    if isinstance(topology, str):
        topology = FatTree.preset(topology)
    elif isinstance(topology, dict):
        topology = FatTree.from_dict(topology)
    return System(topology.n_nodes, topology=topology, name=topology.name)


# --------------------------------------------------------------------------- deferrable (OSDEC)
AZURE = "cloud/azure_v1_vmtable_derived"
BIN_SECONDS = 300  # the Azure v1 derived files have one line per 300 s bin; one slot = one bin
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


@dataclass(frozen=True)
class AzureLine:
    """One line of an Azure v1 derived file: ``t`` (seconds), its 1-based line number, and
    its tokens per tenant batch (flavor letters, or lifetime tokens ``U<bin>``/``C<bin>``)."""

    lineno: int
    t: int
    batches: tuple


def _open_text(path: Path):
    import gzip

    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rt", encoding="ascii", newline="") if magic == b"\x1f\x8b" \
        else open(path, encoding="ascii", newline="")


def read_azure_lines(path, *, max_lines: int | None = None):
    """Yield the ``AzureLine`` of each line of an Azure v1 derived file (gzip or plain text).

    A line is ``<t_seconds> <tokens>``: tokens separated by ``,``, each tenant batch closed by
    a ``|`` token.  Lines are 300 s apart.  A malformed line is a ``TraceError`` naming the
    file, the line and the field.
    """
    path = Path(path)
    name = path.name
    prev = None
    try:
        fh = _open_text(path)
    except OSError as err:
        raise TraceError(f"{path}: cannot read file ({err.strerror})") from None
    with fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                if max_lines is not None and lineno > max_lines:
                    return
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                head, sep, rest = line.partition(" ")
                try:
                    t = int(head)
                except ValueError:
                    t = -1
                if t < 0 or t % BIN_SECONDS:
                    raise TraceError(f"{name}:{lineno}: field 1 (bin time, s): expected a "
                                     f"multiple of {BIN_SECONDS} >= 0, got {head[:20]!r}")
                if prev is not None and t != prev + BIN_SECONDS:
                    raise TraceError(f"{name}:{lineno}: field 1 (bin time, s): expected "
                                     f"{prev + BIN_SECONDS} (bins are {BIN_SECONDS} s apart), "
                                     f"got {t}")
                prev = t
                tokens = rest.strip().split(",") if rest.strip() else []
                if not sep or not tokens or tokens[-1] != "|":
                    raise TraceError(f"{name}:{lineno}: field 2 (tokens): expected "
                                     "comma-separated tokens ending with '|', got "
                                     f"{rest[-20:]!r}")
                batches, cur = [], []
                for k, tok in enumerate(tokens, 1):
                    if tok == "|":
                        if not cur:
                            raise TraceError(f"{name}:{lineno}: token {k}: empty tenant batch "
                                             "(two '|' in a row)")
                        batches.append(tuple(cur))
                        cur = []
                    elif not tok or tok != tok.strip():
                        raise TraceError(f"{name}:{lineno}: token {k}: empty or padded token "
                                         f"{tok!r}")
                    else:
                        cur.append(tok)
                yield AzureLine(lineno, t, tuple(batches))
        except (UnicodeDecodeError, EOFError, OSError) as err:
            raise TraceError(f"{path}: not a readable text or gzip file ({err})") from None


def _file_kind(path: Path) -> str:
    """``"flavors"`` or ``"lifetimes"`` from the first token of the file."""
    for line in read_azure_lines(path, max_lines=1):
        tok = line.batches[0][0]
        return "lifetimes" if tok[:1] in ("U", "C") and tok[1:].isdigit() else "flavors"
    raise TraceError(f"{path}: empty file")


def _split_prefix(path: Path) -> str:
    """``v1.dev`` for ``v1.dev.txt.gz`` and for ``v1.dev.c2100000.txt.gz``."""
    import re

    name = re.sub(r"\.txt(\.gz)?$", "", path.name)
    return re.sub(r"\.c\d+$", "", name)


def _map_lines(path: Path):
    """(line number, line) of the non-blank lines of an Azure map file."""
    try:
        text = path.read_text()
    except OSError as err:
        raise TraceError(f"{path}: cannot read file ({err.strerror})") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def flavor_cores(path) -> dict:
    """``maps/flav_map.txt``: flavor letter -> vCPU count (lines ``<vcpus>,<memory GB>
    <letter>``)."""
    path = Path(path)
    out = {}
    for lineno, line in _map_lines(path):
        fields = line.split()
        try:
            cores = int(fields[0].split(",")[0])
            if len(fields) != 2 or cores < 1:
                raise ValueError
        except (ValueError, IndexError):
            raise TraceError(f"{path.name}:{lineno}: expected '<vcpus>,<memory GB> <flavor>', "
                             f"got {line[:40]!r}") from None
        out[fields[1]] = cores
    return out


def lifetime_bins(path) -> dict:
    """``maps/v1.interval_map.txt``: lifetime bin -> the sorted lifetimes (s) it holds (lines
    ``<seconds> <bin>``; bins 0..12 hold one 300 s step each, wider bins 12, 288 and 2,880)."""
    path = Path(path)
    bins: dict = {}
    for lineno, line in _map_lines(path):
        try:
            seconds, b = (int(x) for x in line.split())
            if seconds < 0 or b < 0:
                raise ValueError
        except ValueError:
            raise TraceError(f"{path.name}:{lineno}: expected '<seconds> <bin>', "
                             f"got {line[:40]!r}") from None
        bins.setdefault(b, []).append(seconds)
    return {b: np.array(sorted(v), dtype=np.int64) for b, v in bins.items()}


def _parse_lifetime(tok: str, where: str, bins: dict) -> tuple[int, bool]:
    if tok[:1] not in ("U", "C") or not tok[1:].isdigit() or int(tok[1:]) not in bins:
        raise TraceError(f"{where}: expected a lifetime token U<bin> or C<bin> with a bin of "
                         f"the interval map (0..{max(bins)}), got {tok!r}")
    return int(tok[1:]), tok[0] == "C"


@dataclass(frozen=True)
class AzureVMs:
    """The VMs of an Azure v1 derived split, one entry per VM in file order (read from the
    first line up to a last bin): arrival bin (``t // 300``), the 1-based line number, the
    index within the line, the tenant batch number (global), the flavor letter, the cores, the
    lifetime bin and whether it is censored (``None`` when the lifetimes are drawn)."""

    source: str
    first_t: int
    bin: np.ndarray
    lineno: np.ndarray
    index: np.ndarray
    batch: np.ndarray
    flavor: np.ndarray
    cores: np.ndarray
    life_bin: np.ndarray | None
    censored: np.ndarray | None

    @property
    def n(self) -> int:
        return int(self.bin.size)


def read_azure_vms(path, *, lifetimes=None, maps=None, max_lines: int | None = None,
                   progress: bool = False) -> AzureVMs:
    """The VMs of a flavor file (``v1.train.txt.gz``, ``v1.dev.txt.gz``) with, when
    ``lifetimes`` is the lifetime file of the same split (``v1.dev.c2100000.txt.gz``), their
    lifetime bins, paired token by token (same bins, same batches; checked).  ``maps`` is the
    folder of ``flav_map.txt`` (default ``maps/`` beside the file).  Only the first
    ``max_lines`` lines are read when given."""
    path = Path(path)
    maps = Path(maps) if maps is not None else path.parent / "maps"
    cores_of = flavor_cores(maps / "flav_map.txt")
    bins = lifetime_bins(maps / "v1.interval_map.txt") if lifetimes is not None else None
    cols: dict = {k: [] for k in ("bin", "lineno", "index", "batch", "flavor", "cores",
                                  "life_bin", "censored")}
    life_iter = read_azure_lines(lifetimes, max_lines=max_lines) if lifetimes else None
    batch_no = 0
    first_t = None
    lines = read_azure_lines(path, max_lines=max_lines)
    if progress:
        from tqdm.auto import tqdm

        lines = tqdm(lines, total=max_lines, unit=" bins", desc=f"reading {path.name}",
                     leave=False)
    for line in lines:
        first_t = line.t if first_t is None else first_t
        life = next(life_iter, None) if life_iter is not None else None
        if life_iter is not None:
            lname = Path(lifetimes).name
            if life is None or life.t != line.t or \
                    [len(b) for b in life.batches] != [len(b) for b in line.batches]:
                raise TraceError(f"{lname}:{line.lineno}: does not pair with {path.name}:"
                                 f"{line.lineno} (expected bin {line.t} with batches of "
                                 f"{[len(b) for b in line.batches][:8]} VMs)")
        k = 0
        for j, batch in enumerate(line.batches):
            for m, flavor in enumerate(batch):
                if flavor not in cores_of:
                    raise TraceError(f"{path.name}:{line.lineno}: VM {k} (flavor): unknown "
                                     f"flavor {flavor!r}; expected one of "
                                     f"{''.join(sorted(cores_of))} (maps/flav_map.txt)")
                cols["bin"].append(line.t // BIN_SECONDS)
                cols["lineno"].append(line.lineno)
                cols["index"].append(k)
                cols["batch"].append(batch_no)
                cols["flavor"].append(flavor)
                cols["cores"].append(cores_of[flavor])
                if life is not None:
                    b, c = _parse_lifetime(life.batches[j][m],
                                           f"{Path(lifetimes).name}:{line.lineno}: VM {k} "
                                           "(lifetime)", bins)
                    cols["life_bin"].append(b)
                    cols["censored"].append(c)
                k += 1
            batch_no += 1
    if first_t is None:
        raise TraceError(f"{path}: no VM read")
    arr = {k: np.array(v, dtype=object if k == "flavor" else
                       (bool if k == "censored" else np.int64)) for k, v in cols.items()}
    paired = life_iter is not None
    return AzureVMs(str(path), first_t, arr["bin"], arr["lineno"], arr["index"], arr["batch"],
                    arr["flavor"].astype(str), arr["cores"],
                    arr["life_bin"] if paired else None, arr["censored"] if paired else None)


def _streams(seed: int, n: int) -> dict:
    """One stream of ``n`` uniforms per purpose (value k belongs to the k-th VM of the file)."""
    return {name: np.random.default_rng([int(seed), code]).random(n)
            for name, code in _STREAMS.items()}


def _parse_start(start, n_bins_hint=None) -> int:
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


def resolve_azure_pair(path, lifetimes=None) -> tuple[Path, Path | None, str]:
    """The flavor file, the lifetime file and how lifetimes are used (``"paired"``: the same
    split's lifetime file, token by token; ``"empirical"``: drawn per flavor from another
    split's pair).  ``path`` may name either file of a split; a lifetime file found beside a
    flavor file with the same prefix (``v1.dev.txt.gz`` -> ``v1.dev.c*.txt*``) is paired."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    if _file_kind(path) == "lifetimes":
        prefix = _split_prefix(path)
        flav = sorted(p for p in path.parent.glob(prefix + ".txt*") if p.is_file())
        if not flav:
            raise TraceError(f"{path}: a lifetime file; its flavor file {prefix}.txt[.gz] is "
                             "not beside it")
        if lifetimes is None:
            return flav[0], path, "paired"
        path = flav[0]
    if lifetimes is not None:
        lifetimes = Path(lifetimes)
        if not lifetimes.is_file():
            raise TraceError(f"{lifetimes}: no such file")
        if _file_kind(lifetimes) != "lifetimes":
            raise TraceError(f"{lifetimes}: not a lifetime file (expected U<bin>/C<bin> tokens)")
        same = _split_prefix(lifetimes) == _split_prefix(path)
        return path, lifetimes, "paired" if same else "empirical"
    prefix = _split_prefix(path)
    own = sorted(p for p in path.parent.glob(prefix + ".c*.txt*") if p.is_file())
    if own:
        return path, own[0], "paired"
    other = sorted(p for p in path.parent.glob("*.c*.txt*") if p.is_file())
    if not other:
        raise TraceError(f"{path}: no lifetime file (*.cNNNN.txt[.gz]) beside it; pass "
                         "lifetimes=")
    return path, other[0], "empirical"


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
                        split_by: str = "vm", on_demand_share: float = 1.0,
                        machine_size: int | None = None,
                        machine_quantile: float = 0.9, max_duration: int | None = None,
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
    slots, seed, max_defer, window = int(slots), int(seed), int(max_defer), int(window)
    max_duration = slots if max_duration is None else int(max_duration)
    syn = _parse_synthetic(synthetic)
    first = _parse_start(start)
    path = Path(azure_file) if azure_file is not None else \
        data_path(f"{AZURE}/v1.dev.txt.gz", "a deferrable workload without an Azure file")
    flav_path, life_path, how = resolve_azure_pair(path, lifetimes)
    n_lines = first + slots  # read up to the window's last bin, nothing after
    vms = read_azure_vms(flav_path, lifetimes=life_path if how == "paired" else None,
                         maps=maps, max_lines=n_lines, progress=progress)
    first_bin = vms.first_t // BIN_SECONDS
    if int(vms.bin[-1]) - first_bin + 1 < n_lines:
        raise TraceError(f"{flav_path.name}: has {int(vms.bin[-1]) - first_bin + 1} bins; "
                         f"start {first} + {slots} slots needs {n_lines}")
    u = _streams(seed, vms.n)
    maps_dir = Path(maps) if maps is not None else flav_path.parent / "maps"
    bins = lifetime_bins(maps_dir / "v1.interval_map.txt")
    if how == "paired":
        life_bin, censored, life_src = vms.life_bin, vms.censored, str(life_path)
    else:
        life_bin, censored, life_src = _empirical_lifetimes(vms.flavor, u["empirical"],
                                                            life_path, maps)
    # lifetime: a draw among the 300 s steps of its bin; slots = max(1, ceil(lifetime / 300))
    seconds = np.empty(vms.n, dtype=np.int64)
    for b in np.unique(life_bin):
        mine = life_bin == b
        grid = bins[int(b)]
        seconds[mine] = grid[np.minimum((u["lifetime"][mine] * grid.size).astype(np.int64),
                                        grid.size - 1)]
    life_slots = np.maximum(1, -(-seconds // BIN_SECONDS))
    # which VMs are deferrable: Bernoulli(q) per VM, or per tenant batch (its first VM's draw)
    draw = u["split"]
    if split_by == "batch":
        firsts = np.r_[0, np.flatnonzero(np.diff(vms.batch)) + 1]
        draw = draw[firsts][np.searchsorted(firsts, np.arange(vms.n), side="right") - 1]
    deferrable = draw < deferrable_share
    # the on-demand VMs this machine hosts: each with probability r (a slice of the region)
    here = deferrable | (u["machine"] < on_demand_share)
    slot = vms.bin - first_bin - first  # slot of the window (negative: warm-up)
    # on-demand load L_t: cores of on-demand VMs alive at slot t (arrived in or before t)
    load = np.zeros(slots + 1, dtype=np.int64)
    od = ~deferrable & here
    s0 = np.clip(slot[od], 0, slots)
    s1 = np.clip(slot[od] + life_slots[od], 0, slots)
    alive = s1 > s0
    np.add.at(load, s0[alive], vms.cores[od][alive])
    np.add.at(load, s1[alive], -vms.cores[od][alive])
    load = np.cumsum(load)[:slots]
    # deferrable jobs: the deferrable VMs that arrive in the window
    mine = deferrable & (slot >= 0) & (slot < slots)
    idx = np.flatnonzero(mine)
    submit = slot[idx]
    cores = vms.cores[idx].copy()
    duration = np.minimum(life_slots[idx], max_duration)
    if syn is not None:
        what, case = syn
        values, probs = (SYNTHETIC_CORES, CORE_CASES[case]) if what == "core" else \
            (SYNTHETIC_DURATIONS, DURATION_CASES[case])
        cdf = np.cumsum(probs) / np.sum(probs)
        pick = np.minimum(np.searchsorted(cdf, u["synthetic"][idx], side="right"),
                          len(values) - 1)
        drawn = np.array(values, dtype=np.int64)[pick]
        if what == "core":
            cores = drawn
        else:
            duration = np.minimum(drawn, max_duration)
    if real_time:
        earliest = latest = submit
    else:
        earliest = np.minimum(submit + (u["defer"][idx] * (max_defer + 1)).astype(np.int64),
                              slots - 1)
        latest = np.minimum(earliest + (u["window"][idx] * (window + 1)).astype(np.int64),
                            slots - 1)
    # machine size M: every on-demand VM fits (M >= max L_t), and M is the q-quantile of the
    # total demand L_t + D_t, D_t the deferrable jobs' cores if each ran from its earliest slot
    demand = np.zeros(slots + 1, dtype=np.int64)
    np.add.at(demand, earliest, cores)
    np.add.at(demand, np.minimum(earliest + duration, slots), -cores)
    demand = np.cumsum(demand)[:slots]
    if machine_size is None:
        machine_size = max(int(load.max()),
                           int(np.ceil(np.quantile(load + demand, machine_quantile))), 1)
        size_rule = f"max(max_t L_t, ceil(quantile_{machine_quantile:g}(L_t + D_t)))"
    else:
        machine_size = int(machine_size)
        size_rule = "given"
        if machine_size < int(load.max()):
            raise TraceError(f"machine_size: {machine_size} cores is below the on-demand peak "
                             f"{int(load.max())} of this window (capacity would be negative)")
    capacity = machine_size - load
    ids = [f"{int(vms.bin[k]) * BIN_SECONDS}:{int(vms.index[k])}" for k in idx]
    jobs = [{"id": ids[n], "cores": int(cores[n]), "duration": int(duration[n]),
             "submit": int(submit[n]), "earliest": int(earliest[n]), "latest": int(latest[n])}
            for n in range(idx.size)]
    window_t0 = (first_bin + first) * BIN_SECONDS
    tag = f"{_split_prefix(flav_path)}-t{window_t0}-{slots}slots-q{deferrable_share:g}-s{seed}" \
        + (f"-r{on_demand_share:g}" if on_demand_share != 1 else "") \
        + (f"-M{machine_size}" if size_rule == "given" else
           f"-p{machine_quantile:g}" if machine_quantile != 0.9 else "") \
        + (f"-{syn[0]}{syn[1]}" if syn else "") + ("-realtime" if real_time else "")
    meta = {
        "generator": "hpcopt.workloads.deferrable_workload",
        "source": flav_path.name, "lifetimes": Path(life_src).name, "lifetimes_used": how,
        "start_bin": first, "window_start_t": window_t0, "slot_seconds": BIN_SECONDS,
        "slots": slots, "seed": seed, "deferrable_share": float(deferrable_share),
        "split_by": split_by, "on_demand_share": float(on_demand_share),
        "max_defer": max_defer, "window": window,
        "max_duration": max_duration, "real_time": bool(real_time),
        "synthetic": None if syn is None else f"{syn[0]}:{syn[1]}",
        "machine_size": machine_size, "machine_size_rule": size_rule,
        "machine_quantile": float(machine_quantile),
        "vms_read": vms.n, "on_demand_vms": int(od.sum()),
        "on_demand_peak": int(load.max()), "jobs": len(jobs),
        "capacity_min": int(capacity.min()), "capacity_mean": float(capacity.mean()),
        "job_core_slots": int((cores * duration).sum()),
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


# The trajectory family of the learned OSDEC agent and of benchmarks/osdec.py: a machine that
# is a 2% slice of the region (r = 0.02), sized at the 0.8 quantile of the demand, jobs of at
# most 24 slots (2 h).  On it the capacity binds and the heuristics land within a few percent
# of the offline optimum, the regime of the paper's Table 1 (on the generator's defaults the
# capacity hardly binds; with whole-day jobs the violation penalty swamps every online policy).
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
        data_path(f"{AZURE}/{SUITE_SPLITS[split]}", f"the OSDEC {split} pool")
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
    from .instances import instance_from_dict

    return instance_from_dict(deferrable_workload(azure_file, **kwargs)).model


def save_workload(instance: dict, path) -> Path:
    """Write an instance dict (``deferrable_workload``'s) after validating it; returns the
    path."""
    from .instances import _dumps, instance_from_dict

    instance_from_dict(instance, path)  # schema + model checks: one-line InstanceError
    path = Path(path)
    path.write_text(_dumps(instance) + "\n")
    return path
