"""The testbed's configuration files: ``slurm.conf`` and what its options parse (licenses,
burst-buffer pool, SSD classes, scheduler parameters), ``topology.conf``, the burst buffer's
lua files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .common import OTHER_PARTITION, PARTITION, SHARED_PARTITION, SPLIT_PARTITION, TestbedError


def slurm_conf(d: Path, nodes: int, cpus: int, port: int, scheduler: str,
               hold: bool, plugin_dir: Path | None = None, *, dbd_port: int | None = None,
               licenses: dict[str, int] | None = None, topology: bool = False,
               shared: bool = False, epilog: Path | None = None, bb_pool: bool = False,
               ssd: list[tuple[int, int]] | None = None, ssd_feature: str | None = None,
               split: int | None = None, batch_sched_delay: int | None = None,
               scheduler_parameters: str | None = None, min_job_age: int = 600,
               conf_extra: tuple[str, ...] = ()) -> str:
    """The cluster's ``slurm.conf`` (``port`` for slurmctld, the next ``nodes`` for slurmd;
    ``dbd_port``: accounting through the slurmdbd there; ``licenses``: ``Licenses=``;
    ``topology``: ``topology/tree`` from the ``topology.conf`` beside it; ``shared``: a
    partition ``shared`` whose jobs share nodes core by core; ``bb_pool``: the
    ``burst_buffer/lua`` plugin, ``burst_buffer_files``; ``ssd``: SSD classes ``[(GB,
    nodes), ...]`` in node order, each node a gres ``ssd`` of that count and, with
    ``ssd_feature``, a feature ``ssd_feature`` + GB, e.g. ``ssd128``; ``split=K``:
    ``batch`` has the first K nodes, the managed partition ``batch2`` the others;
    ``batch_sched_delay``: Slurm's, the seconds a batch job's scheduling may wait, 3 unset;
    ``scheduler_parameters``: ``key=value,...`` over the testbed's own
    ``SchedulerParameters``; ``min_job_age``: seconds a finished job stays in ``squeue``;
    ``conf_extra``: ``KEY=VALUE`` lines added last, each replacing the testbed's own line of
    that key, e.g. ``PriorityType=priority/multifactor``)."""
    lines = [
        "ClusterName=hpcopt",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={port}",
        f"SlurmdPort={port + 1}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d}/munge/munge.socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        *_scheduler_lines(scheduler, batch_sched_delay, scheduler_parameters),
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={d}/log/jobcomp.txt",
        *_accounting_lines(d, dbd_port),
        "JobAcctGatherType=jobacct_gather/none",
        f"MinJobAge={min_job_age}",
        "OverTimeLimit=0",
        "KillWait=2",
        "InactiveLimit=0",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "MessageTimeout=10",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    if plugin_dir is not None:
        lines.append(f"PluginDir={plugin_dir}")
    if hold:
        lines.append("JobSubmitPlugins=lua")
    if licenses:
        lines.append("Licenses=" + ",".join(f"{k}:{v}" for k, v in licenses.items()))
    if topology:
        lines.append("TopologyPlugin=topology/tree")
    if epilog is not None:  # wakes an adapter as each job ends (hpcopt.slurm.wake)
        lines.append(f"EpilogSlurmctld={epilog}")
    if bb_pool:  # burst_buffer.conf and burst_buffer.lua beside slurm.conf
        lines.append("BurstBufferType=burst_buffer/lua")
    if ssd:
        lines.append("GresTypes=ssd")
    lines += _node_lines(nodes, cpus, port, ssd, ssd_feature)
    lines += _partition_lines(nodes, split, shared)
    extra = [check_conf_line(line) for line in conf_extra]
    keys = {line.partition("=")[0].lower() for line in extra}
    lines = [line for line in lines if line.partition("=")[0].lower() not in keys] + extra
    return "\n".join(lines) + "\n"


def check_conf_line(line: str) -> str:
    """A ``--conf`` line: ``KEY=VALUE`` with a slurm.conf key (letters first); node and
    partition lines are the testbed's own."""
    key, eq, value = line.strip().partition("=")
    if not (eq and re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", key) and value.strip()
            and "\n" not in line):
        raise TestbedError(f"--conf {line!r}: expected KEY=VALUE, e.g. "
                           "PriorityType=priority/multifactor")
    if key.lower() in ("nodename", "partitionname", "nodeset", "downnodes"):
        raise TestbedError(f"--conf {line!r}: the testbed writes its own {key} lines")
    return line.strip()


def _scheduler_lines(scheduler: str, batch_sched_delay: int | None,
                     scheduler_parameters: str | None) -> list[str]:
    """``SchedulerType`` and ``SchedulerParameters``: the testbed's own, then the given."""
    sched = "sched/backfill" if scheduler == "backfill" else "sched/builtin"
    params = dict(kv.partition("=")[::2] for kv in (
        "bf_interval=1,bf_resolution=1," if scheduler == "backfill" else "").split(",") if kv)
    params["sched_min_interval"] = "100000"
    if batch_sched_delay is not None:
        params["batch_sched_delay"] = str(batch_sched_delay)
    params.update(parse_scheduler_parameters(scheduler_parameters))
    return [f"SchedulerType={sched}",
            "SchedulerParameters=" + ",".join(k if v == "" else f"{k}={v}"
                                              for k, v in params.items())]


def _accounting_lines(d: Path, dbd_port: int | None) -> list[str]:
    """No accounting, or accounting through the testbed's slurmdbd on ``dbd_port``."""
    if dbd_port is None:
        return ["AccountingStorageType=accounting_storage/none"]
    return ["AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost", f"AccountingStoragePort={dbd_port}",
            # the munge socket for slurmdbd (AuthInfo's is not used for it)
            f"AccountingStoragePass={d}/munge/munge.socket"]


def _node_lines(nodes: int, cpus: int, port: int, ssd, ssd_feature: str | None) -> list[str]:
    """One ``NodeName`` line per SSD class (or one for all), each node its own slurmd port."""
    lines, first = [], 1
    for size, count in ssd or [(None, nodes)]:
        last = first + count - 1
        lines.append(f"NodeName=n[{first}-{last}] NodeHostname=localhost "
                     f"Port=[{port + first}-{port + last}] CPUs={cpus} RealMemory=1000 "
                     + (f"Gres=ssd:{size} " if size is not None else "")
                     + (f"Feature={ssd_feature}{size} " if size is not None and ssd_feature
                        else "") + "State=UNKNOWN")
        first = last + 1
    return lines


def _partition_lines(nodes: int, split: int | None, shared: bool) -> list[str]:
    """``batch`` (managed, the default), ``debug`` (same nodes, not held), with ``split`` a
    second managed ``batch2``, with ``shared`` the core-sharing ``shared``."""
    lines = [
        f"PartitionName={PARTITION} Nodes=n[1-{split or nodes}] Default=YES MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
        f"PartitionName={OTHER_PARTITION} Nodes=n[1-{nodes}] Default=NO MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
    ]
    if split:
        lines.append(f"PartitionName={SPLIT_PARTITION} Nodes=n[{split + 1}-{nodes}] Default=NO "
                     "MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE")
    if shared:
        lines.append(f"PartitionName={SHARED_PARTITION} Nodes=n[1-{nodes}] Default=NO "
                     "MaxTime=INFINITE State=UP OverSubscribe=NO")
    return lines


def parse_scheduler_parameters(text: str | None) -> dict[str, str]:
    """``"batch_sched_delay=0,defer"`` as {key: value} (a flag's value is "")."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        if not re.fullmatch(r"[a-z_]+", key) or not re.fullmatch(r"[\w.:-]*", value):
            raise TestbedError(f"scheduler_parameters: expected key=value,..., got {item!r}")
        out[key] = value
    return out


def licenses_option(text: str | dict | None) -> dict[str, int]:
    """The testbed's ``licenses`` option, ``bb:100,ssd:4`` (or a dict), checked as the
    ``Licenses=`` line it writes: ``{name: count}``, names of letters, digits, ``_`` and ``-``,
    distinct, counts whole numbers >= 1; a one-line ``TestbedError`` otherwise.  (Slurm's
    own license lists, as jobs ask them, are read by ``hpcopt.slurm.state.parse_licenses``.)"""
    if not text:
        return {}
    items = text.items() if isinstance(text, dict) else \
        [part.partition(":")[::2] for part in str(text).split(",")]
    out: dict[str, int] = {}
    for name, count in items:
        name, count = str(name).strip(), str(count).strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name) or not count.isdigit() \
                or int(count) < 1 or name in out:
            raise TestbedError(f"licenses: expected NAME:COUNT[,NAME:COUNT...] (distinct "
                               f"names, counts >= 1; e.g. bb:100), got {text!r}")
        out[name] = int(count)
    return out


def parse_bb_pool(text: str) -> tuple[str, int]:
    """``NAME:SIZE`` (a burst-buffer pool of SIZE units, GB in hpcopt) as ``(name, size)``;
    a one-line ``TestbedError`` otherwise."""
    name, _, size = str(text).partition(":")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name) or not size.isdigit() \
            or int(size) < 1:
        raise TestbedError(f"bb_pool: expected NAME:SIZE (a pool name and a whole number "
                           f">= 1; e.g. bb:100), got {text!r}")
    return name, int(size)


def parse_ssd(text: str, nodes: int) -> list[tuple[int, int]]:
    """``GB:NODES[,GB:NODES...]`` (SSD classes in node order, e.g. ``128:4,256:4``) as
    ``[(GB, nodes), ...]``; the counts must add up to ``nodes``; a one-line ``TestbedError``
    otherwise."""
    out = []
    for part in str(text).split(","):
        size, _, count = part.strip().partition(":")
        if not size.isdigit() or not count.isdigit() or int(size) < 1 or int(count) < 1:
            out = None
            break
        out.append((int(size), int(count)))
    if not out or sum(c for _, c in out) != nodes:
        raise TestbedError(f"ssd: expected GB:NODES[,GB:NODES...] with node counts adding up "
                           f"to the {nodes} nodes (e.g. 128:{nodes // 2 or 1},"
                           f"256:{nodes - nodes // 2}), got {text!r}")
    return out


def burst_buffer_files(name: str, size: int) -> dict[str, str]:
    """``burst_buffer.conf`` and ``burst_buffer.lua`` of a ``burst_buffer/lua`` plugin with
    one pool ``name`` of ``size`` units (granularity 1): every ``slurm_bb_*`` function the
    plugin calls succeeds at once (no data moves), so a job's request (``#BB_LUA
    pool=NAME capacity=N`` in its script) only takes its share of the pool from stage-in to
    teardown, which Slurm accounts (``scontrol show burst``)."""
    pools = json.dumps({"pools": [{"id": name, "quantity": size, "granularity": 1}]})
    steps = ("job_process", "setup", "data_in", "test_data_in", "real_size", "paths",
             "pre_run", "post_run", "data_out", "test_data_out", "job_teardown")
    lua = "\n".join([
        f"-- hpcopt testbed: burst_buffer/lua with one pool, {name} of {size} units",
        f"local pools = {json.dumps(pools)}",
        "function slurm_bb_pools(...) return slurm.SUCCESS, pools end",
        *(f"function slurm_bb_{step}(...) return slurm.SUCCESS end" for step in steps),
        f"function slurm_bb_get_status(...) return slurm.SUCCESS, \"pool {name}: {size}\\n\" end",
    ]) + "\n"
    conf = ("# hpcopt testbed: burst_buffer/lua (its pool is burst_buffer.lua's)\n"
            "StageInTimeout=30\nStageOutTimeout=30\nOtherTimeout=30\n")
    return {"burst_buffer.conf": conf, "burst_buffer.lua": lua}


def topology_conf(nodes: int, switch_size: int, pod_size: int | None = None) -> str:
    """A fat tree over ``n1..n{nodes}``: leaf switches ``s1..sL`` of ``switch_size`` nodes
    each in order (the last may have fewer; L = ceil(nodes / switch_size)) under one root
    switch ``s0``; with ``pod_size=P`` three levels: pod switches ``p1..pM`` of ``P`` leaves
    each in order under the root (the nodes must then fill every leaf and pod)."""
    if switch_size < 1:
        raise TestbedError(f"switch_size must be >= 1, got {switch_size}")
    leaves = -(-nodes // switch_size)
    if pod_size is not None and (pod_size < 1 or nodes % (switch_size * pod_size)):
        raise TestbedError(f"pod_size: expected a number P >= 1 of leaves per pod such that "
                           f"the {nodes} nodes fill pods of P x {switch_size} nodes, "
                           f"got {pod_size}")
    pods = leaves // pod_size if pod_size else 0
    lines = ["# hpcopt testbed: a " + (f"three-level fat tree, {pods} pod switch(es) of "
                                        f"{pod_size} leaf switch(es)" if pods else
                                        f"two-level fat tree, {leaves} leaf switch(es)")
             + f" of {switch_size} node(s) under s0"]
    for i in range(leaves):
        lo, hi = i * switch_size + 1, min(nodes, (i + 1) * switch_size)
        lines.append(f"SwitchName=s{i + 1} Nodes=" + (f"n{lo}" if lo == hi else f"n[{lo}-{hi}]"))
    for i in range(pods):
        lo, hi = i * pod_size + 1, (i + 1) * pod_size
        lines.append(f"SwitchName=p{i + 1} Switches=" + (f"s{lo}" if lo == hi else
                                                          f"s[{lo}-{hi}]"))
    top, n = ("p", pods) if pods else ("s", leaves)
    lines.append("SwitchName=s0 Switches=" + (f"{top}1" if n == 1 else f"{top}[1-{n}]"))
    return "\n".join(lines) + "\n"
