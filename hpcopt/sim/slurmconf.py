"""Slurm's scheduling configuration, read from a ``slurm.conf``: what ``--policy slurm``
(``hpcopt.policies.slurm_backfill``) runs under.

``read_slurm_conf(path)`` returns a frozen ``SlurmConf``: the scheduler type, the
``SchedulerParameters`` that shape Slurm's main scheduler and ``sched/backfill``, the
priority plugin and its weights and decay half-life, the cluster's licenses, the nodes (and
cores per node) of the default partition and whether it shares nodes core by core.  Every
key the file leaves out takes Slurm's documented default; ``SchedulerParameters`` that the
simulation does not model are kept in ``SlurmConf.ignored`` (docs/slurm-model.md lists them
option by option).  A line it cannot read is a ``SlurmConfError`` naming the file, the line
and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from hpcopt.errors import HpcoptError

# SchedulerParameters the model reads: name -> (SlurmConf field, unit factor to seconds, or
# None for counts; flags have no value)
_SECONDS = {"bf_interval": 1, "bf_resolution": 1, "batch_sched_delay": 1,
            "sched_interval": 1, "bf_window": 60, "bf_max_time": 1}
_COUNTS = ("bf_max_job_test", "bf_job_part_count_reserve", "default_queue_depth")
_FLAGS = ("bf_licenses", "bf_continue", "bf_running_job_reserve")
# microseconds in Slurm, read as seconds here
_MICROSECONDS = ("sched_min_interval",)


# the plugins the model knows: SlurmConf field -> (plugin type, kinds)
_PLUGINS = {"scheduler": ("sched", ("backfill", "builtin")),
            "priority": ("priority", ("basic", "multifactor"))}


class SlurmConfError(HpcoptError, ValueError):
    """A slurm.conf (or a SchedulerParameters string) the model cannot read."""


@dataclass(frozen=True)
class SlurmConf:
    """Slurm's scheduling settings; each default is Slurm's own (slurm.conf(5))."""

    scheduler: str = "backfill"
    """``backfill`` (``sched/backfill``: the main scheduler plus backfill passes) or
    ``builtin`` (``sched/builtin``: the main scheduler only, strict priority order)."""
    bf_interval: float = 30.0
    """Seconds between backfill passes."""
    bf_resolution: float = 60.0
    """Seconds of the backfill plan's time grid (reservations start and end on it)."""
    bf_window: float = 86400.0
    """How far ahead the plan looks, seconds (``bf_window`` is given in minutes: 1440)."""
    bf_max_job_test: int = 500
    """Jobs a backfill pass tests at most."""
    bf_job_part_count_reserve: int = 0
    """Only the first N tested jobs of a partition get a reservation; 0: every one."""
    bf_licenses: bool = False
    """Licenses are planned over time in the backfill plan; without it a job whose
    licenses are taken now is not tested at all."""
    bf_continue: bool = False
    """Read and kept; a simulated pass is never interrupted, so it changes nothing."""
    bf_running_job_reserve: bool = False
    """Running jobs enter the plan as reservations (their ends on the time grid); implied
    by ``bf_licenses``."""
    bf_max_time: float | None = None
    """Read and kept (default ``bf_interval``); a simulated pass takes no time."""
    batch_sched_delay: float = 3.0
    """Seconds a main-scheduler pass for newly submitted batch jobs may wait."""
    sched_interval: float = 60.0
    """Seconds between full main-scheduler passes."""
    default_queue_depth: int = 100
    """Jobs an event-triggered main-scheduler pass tests at most."""
    sched_min_interval: float = 2e-6
    """Seconds between main-scheduler passes at least (Slurm: microseconds, default 2)."""
    priority: str = "basic"
    """``basic`` (first come first served) or ``multifactor`` (``hpcopt.sim.priority``)."""
    weight_age: float = 0.0
    weight_job_size: float = 0.0
    weight_fairshare: float = 0.0
    weight_partition: float = 0.0
    weight_qos: float = 0.0
    decay_half_life: float = 7 * 86400.0
    """``PriorityDecayHalfLife``: seconds over which past usage loses half its weight in the
    fairshare factor; 0: no decay."""
    max_age: float = 7 * 86400.0
    """``PriorityMaxAge``: the age at which the age factor reaches 1, seconds."""
    calc_period: float = 300.0
    """``PriorityCalcPeriod``: seconds between Slurm's recomputations of the usage, the
    fairshare factors and the pending jobs' priorities."""
    favor_small: bool = False
    """``PriorityFavorSmall``: the job-size factor is larger for smaller jobs."""
    licenses: dict = field(default_factory=dict)
    """``Licenses=`` as {name: count}."""
    nodes: int | None = None
    """Nodes of the default partition (``None``: the file names none)."""
    cpus_per_node: int = 1
    shared_cores: bool = False
    """The default partition shares nodes core by core (``OverSubscribe`` not EXCLUSIVE
    under ``select/cons_tres`` or ``cons_res`` with a core or CPU ``SelectTypeParameters``):
    jobs are sized in cores, and the backfill plan still reserves whole nodes."""
    ignored: tuple = ()
    """SchedulerParameters read but not modelled (docs/slurm-model.md)."""
    version: str = "24.11"
    """The Slurm release whose backfill to model (``MAJOR.MINOR``; a slurm.conf does not
    say): before 24.11 the plan rounds reservation and running-job ends down to
    ``bf_resolution``, from 24.11 up (``round_ends_up``)."""

    @property
    def since_2411(self) -> bool:
        """Whether the release is 24.11 or later, whose backfill differs from 22.05's in
        more than rounding: its will-run test is told backfill's ``start_res`` and
        ``later_start`` and tests licenses, and ``later_start`` has one more rule
        (docs/slurm-model.md)."""
        major, minor = (int(x) for x in self.version.split("."))
        return (major, minor) >= (24, 11)

    @property
    def round_ends_up(self) -> bool:
        """Whether the backfill plan rounds ends up to ``bf_resolution`` (Slurm 24.11 and
        later, its commit "Round up end_time"), else down (earlier releases)."""
        return self.since_2411

    def with_version(self, version: str, where: str = "slurm_version") -> SlurmConf:
        """These settings for Slurm release ``version`` (``MAJOR.MINOR``, e.g. ``22.05``)."""
        text = str(version).strip()
        if not re.fullmatch(r"\d{2}\.\d{2}", text):
            raise SlurmConfError(f"{where}: expected a Slurm release MAJOR.MINOR such as 22.05 "
                                 f"or 24.11, got {version!r}")
        return replace(self, version=text)

    def with_parameters(self, text: str, where: str = "SchedulerParameters") -> SlurmConf:
        """These settings with ``key=value,...`` (``SchedulerParameters``'s syntax) over
        them."""
        return replace(self, **parse_scheduler_parameters(text, where, self.ignored))


def parse_scheduler_parameters(text: str, where: str = "SchedulerParameters",
                               ignored: tuple = ()) -> dict:
    """``SchedulerParameters``'s ``key=value,...`` as ``SlurmConf`` fields (``ignored``
    grows by the keys not modelled)."""
    out: dict = {}
    left = list(ignored)
    for item in filter(None, (s.strip() for s in str(text).split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        try:
            if key in _SECONDS:
                out[key] = _number(value) * _SECONDS[key]
            elif key in _MICROSECONDS:
                out[key] = _number(value) / 1e6
            elif key in _COUNTS:
                out[key] = int(_number(value, integer=True))
            elif key in _FLAGS:
                if eq:
                    raise ValueError("a flag takes no value")
                out[key] = True
            else:
                left.append(key)
        except ValueError as e:
            raise SlurmConfError(f"{where}: {item!r}: {e}") from None
    checks = {"bf_interval": 1, "bf_resolution": 1, "bf_window": 60, "bf_max_job_test": 1,
              "bf_job_part_count_reserve": 0, "batch_sched_delay": 0, "sched_interval": 0,
              "default_queue_depth": 1, "sched_min_interval": 0}
    for key, low in checks.items():
        if key in out and out[key] < low:
            raise SlurmConfError(f"{where}: {key}={out[key]:g}: expected >= {low}")
    if out.get("bf_licenses"):
        out["bf_running_job_reserve"] = True
    out["ignored"] = tuple(dict.fromkeys(left))
    return out


def _number(text: str, integer: bool = False) -> float:
    text = text.strip()
    if not re.fullmatch(r"\d+" if integer else r"\d+(\.\d+)?", text):
        raise ValueError(f"expected a{'n integer' if integer else ' number'} >= 0, got "
                         f"{text!r}")
    return float(text)


def read_slurm_conf(path: str | Path, partition: str | None = None) -> SlurmConf:
    """The scheduling settings of a ``slurm.conf`` file (module docstring); ``partition``:
    the partition whose nodes and sharing to read (default: the default partition)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SlurmConfError(f"{path}: cannot read: {e.strerror or e}") from None
    return parse_slurm_conf(text, str(path), partition)


def parse_slurm_conf(text: str, name: str = "slurm.conf",
                     partition: str | None = None) -> SlurmConf:
    """``read_slurm_conf`` of the file's text (``name`` is the file for messages)."""
    keys: dict[str, tuple[str, int]] = {}
    node_lines: list[tuple[dict, int]] = []
    partitions: list[tuple[dict, int]] = []
    for pairs, no in conf_lines(text, name):
        first = next(iter(pairs))
        if first == "nodename":
            node_lines.append((pairs, no))
        elif first == "partitionname":
            partitions.append((pairs, no))
        else:
            for k, v in pairs.items():
                keys[k] = (v, no)
    conf = SlurmConf()
    fields: dict = {}
    for key, label, attr in (("schedulertype", "SchedulerType", "scheduler"),
                             ("prioritytype", "PriorityType", "priority")):
        if key in keys:
            value, no = keys[key]
            plugin, kind = value.lower().partition("/")[::2]
            if plugin != _PLUGINS[attr][0] or kind not in _PLUGINS[attr][1]:
                raise SlurmConfError(f"{name}:{no}: {label}: expected " + " or ".join(
                    f"{_PLUGINS[attr][0]}/{k}" for k in _PLUGINS[attr][1]) + f", got {value!r}")
            fields[attr] = kind
    if "schedulerparameters" in keys:
        value, no = keys["schedulerparameters"]
        fields.update(parse_scheduler_parameters(value, f"{name}:{no}: SchedulerParameters"))
    for key, attr in (("priorityweightage", "weight_age"),
                      ("priorityweightjobsize", "weight_job_size"),
                      ("priorityweightfairshare", "weight_fairshare"),
                      ("priorityweightpartition", "weight_partition"),
                      ("priorityweightqos", "weight_qos")):
        if key in keys:
            value, no = keys[key]
            fields[attr] = _field_number(value, f"{name}:{no}", key)
    if "prioritymaxage" in keys:
        value, no = keys["prioritymaxage"]
        fields["max_age"] = _duration(value, f"{name}:{no}: PriorityMaxAge")
    if "prioritydecayhalflife" in keys:
        value, no = keys["prioritydecayhalflife"]
        fields["decay_half_life"] = _duration(value, f"{name}:{no}: PriorityDecayHalfLife")
    if "prioritycalcperiod" in keys:
        value, no = keys["prioritycalcperiod"]
        fields["calc_period"] = _duration(value, f"{name}:{no}: PriorityCalcPeriod")
    if "priorityfavorsmall" in keys:
        fields["favor_small"] = keys["priorityfavorsmall"][0].lower() in ("yes", "true", "1")
    if "licenses" in keys:
        value, no = keys["licenses"]
        fields["licenses"] = _licenses(value, f"{name}:{no}: Licenses")
    fields.update(_partition(node_lines, partitions, keys, name, partition))
    return replace(conf, **fields)


_PAIR = re.compile(r"\s*([A-Za-z][A-Za-z0-9_]*)=(\"[^\"]*\"|\S*)")


def conf_lines(text: str, name: str = "slurm.conf"):
    """Each line of a slurm.conf's ``text`` with a setting: its ``Key=Value`` pairs (keys
    lower-cased, first key first) and its line number; comments and blank lines left out.
    A line in another shape is a one-line ``SlurmConfError`` naming ``name`` and the line."""
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            yield _pairs(line, f"{name}:{no}"), no


def _pairs(line: str, where: str) -> dict[str, str]:
    """``Key=Value Key2=Value2`` (keys lower-cased, first key first)."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(line):
        m = _PAIR.match(line, pos)
        if m is None:
            raise SlurmConfError(f"{where}: expected Key=Value, got {line[pos:].strip()!r}")
        out[m[1].lower()] = m[2].strip('"')
        pos = m.end()
        while pos < len(line) and line[pos].isspace():
            pos += 1
    return out


def _field_number(value: str, where: str, key: str) -> float:
    try:
        return _number(value)
    except ValueError as e:
        raise SlurmConfError(f"{where}: {key}: {e}") from None


def _duration(value: str, where: str) -> float:
    """Slurm's time format (``minutes``, ``D-HH``, ``D-HH:MM``, ``HH:MM:SS`` ...) in
    seconds."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value.strip())
    if m is None:
        raise SlurmConfError(f"{where}: expected minutes, D-HH[:MM[:SS]] or HH:MM:SS, got "
                             f"{value!r}")
    days, a, b, c = m.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        return ((int(days) * 24 + int(a)) * 60 + int(b or 0)) * 60 + int(c or 0)
    if b is None:  # minutes
        return int(a) * 60.0
    if c is None:  # MM:SS
        return int(a) * 60.0 + int(b)
    return (int(a) * 60 + int(b)) * 60.0 + int(c)


def _licenses(value: str, where: str) -> dict[str, int]:
    out = {}
    for item in filter(None, value.split(",")):
        name, _, count = item.partition(":")
        if not re.fullmatch(r"[\w.-]+", name) or not (count or "1").isdigit():
            raise SlurmConfError(f"{where}: expected NAME[:COUNT],..., got {item!r}")
        out[name] = int(count or 1)
    return out


def hostlist_count(text: str, where: str) -> int:
    """How many hosts a Slurm host list names (``n[1-8],m2``: 9)."""
    count, depth, groups, cur = 0, 0, [], ""
    for ch in text + ",":
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            groups.append(cur)
            cur = ""
        else:
            cur += ch
    for item in filter(None, groups):
        n = 1
        for body in re.findall(r"\[([^\[\]]*)\]", item):
            inside = 0
            for part in body.split(","):
                m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
                if m is None or (m[2] and int(m[2]) < int(m[1])):
                    raise SlurmConfError(f"{where}: host list {text!r}: range {part!r} is not "
                                         "N or N-M")
                inside += int(m[2]) - int(m[1]) + 1 if m[2] else 1
            n *= inside
        count += n
    return count


def _partition(node_lines, partitions, keys, name, which: str | None) -> dict:
    """Nodes, cores per node and core sharing of partition ``which``, else of the default
    partition (the first one marked ``Default=YES``, else the first)."""
    cpus: dict[str, int] = {}
    total = 0
    for pairs, no in node_lines:
        where = f"{name}:{no}: NodeName"
        if pairs["nodename"].upper() == "DEFAULT":
            continue
        n = hostlist_count(pairs["nodename"], where)
        c = int(_field_number(pairs.get("cpus", "1"), where, "CPUs"))
        cpus[pairs["nodename"]] = c
        total += n
    out: dict = {}
    if cpus:
        out["cpus_per_node"] = min(cpus.values())
        out["nodes"] = total
    if which is not None:
        chosen = [(p, n) for p, n in partitions if p["partitionname"] == which]
        if not chosen:
            raise SlurmConfError(f"{name}: no PartitionName={which} (partitions: "
                                 f"{', '.join(p['partitionname'] for p, _ in partitions)})")
        partitions = chosen
    if partitions:
        pairs, no = next(((p, n) for p, n in partitions
                          if p.get("default", "").upper() == "YES"), partitions[0])
        nodes = pairs.get("nodes", "")
        if nodes and nodes.upper() != "ALL":
            out["nodes"] = hostlist_count(nodes, f"{name}:{no}: PartitionName Nodes")
        over = pairs.get("oversubscribe", pairs.get("shared", "NO")).upper()
        select = keys.get("selecttype", ("select/linear", 0))[0].lower()
        params = keys.get("selecttypeparameters", ("", 0))[0].upper()
        out["shared_cores"] = (not over.startswith("EXCLUSIVE")
                               and select in ("select/cons_tres", "select/cons_res")
                               and any(p in params for p in ("CORE", "CPU")))
    return out
