"""Slurm's state, read through its own command-line tools: every read of Slurm is here.

``squeue -O`` text gives every job Slurm has not finished (id, state, reason, priority,
submit and start times, time limit, node counts, allocated nodes, array, hetjob, mark,
requests: ``parse_squeue_text``), a tenth of the time of ``squeue --json``, which prints
every field of every job (22.05 ignores ``-p``, ``-t`` and ``--jobs`` there; where the text
cannot tell a released array task apart, ``squeue --json`` is read: ``Slurm.jobs``); ``sinfo
--json`` every node with its state and flags; ``scontrol`` the licenses and the burst-buffer
pools; ``sacct`` a job's accounting (read by its header: ``hpcopt.traces.slurm.sacct_rows``);
``scontrol release`` starts a held job.  ``squeue --json`` documents are read in both
layouts (``parse_squeue``, ``parse_sinfo``): Slurm 22.05's (OpenAPI data v0.0.38: plain
numbers, a job state string, a node state string and a list of flags) and that of 23.02 and
later (data_parser v0.0.39 to v0.0.44: numbers as ``{set, infinite, number}``, node states as
one list of names, job states too from 23.11, the allocated nodes under
``job_resources.nodes.allocation`` from 24.05); each job and node reads as the equivalent 22.05
record would.  A field in a shape neither layout has is a ``SlurmCommandError`` naming the
field and what was there.  Each command runs under a time limit and is retried with a growing
pause; a command that still fails is a ``SlurmCommandError`` (one line: the command, its exit
status and Slurm's message), which the adapter logs and survives.  ``SLURM_CONF`` is honored as
by Slurm's tools (they read it).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import HpcoptError, TraceError
from ..sim.limits import SiteLimits
from ..sim.slurmconf import SlurmConf, SlurmConfError, parse_slurm_conf
from .limits_text import (
    ASSOC_FORMAT,
    QOS_FORMAT,
    USAGE_FORMAT,
    LimitsTextError,
    merged,
    parse_assoc_limits,
    parse_qos_limits,
    parse_qos_usage,
    parse_usage,
)
from .topology import TopologyConfError, expand_hostlist

NO_VALUE = 0xFFFFFFFE  # Slurm's INFINITE (and NO_VAL - 1) for a time limit in minutes
#: node state flags that keep a node from taking new jobs (it stays out of the capacity);
#: PLANNED is not one: Slurm's backfill plans an idle node for a job about to start
UNAVAILABLE = frozenset({"DRAIN", "DRAINING", "DRAINED", "FAIL", "FAILING", "MAINTENANCE",
                         "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERED_DOWN",
                         "POWERING_DOWN", "POWER_DOWN", "POWERING_UP", "NOT_RESPONDING",
                         "INVALID_REG", "RESERVED"})
USABLE_STATES = frozenset({"idle", "allocated", "mixed"})
#: node base states (the rest of a 23.02+ state list are flags, 22.05's ``state_flags``)
NODE_BASE_STATES = frozenset({"INVALID", "UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR",
                              "MIXED", "FUTURE"})
#: job base states, as a 23.02+ ``job_state`` list names them
JOB_BASE_STATES = frozenset({"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED",
                             "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                             "DEADLINE", "OUT_OF_MEMORY"})
#: states of a finished job (the text read lists none; the JSON read leaves them out)
FINISHED = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
                      "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"})
#: job state flags that Slurm 22.05 prints instead of the base state, first match wins
#: (its ``job_state_string``); other flags leave the base state
JOB_FLAGS_SHOWN = ("COMPLETING", "STAGE_OUT", "CONFIGURING", "RESIZING", "REQUEUED",
                   "REQUEUE_FED", "REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED",
                   "RESV_DEL_HOLD", "SIGNALING")


class SlurmCommandError(HpcoptError):
    """A Slurm command failed or timed out after its retries."""


class UnknownOption(SlurmCommandError):
    """This release of a Slurm tool has no such option (``Slurm.call``'s
    ``unknown_option``)."""


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """One job as ``squeue --json`` shows it (times in epoch seconds, limit in seconds).

    ``nodes`` is Slurm's minimum node count and ``max_nodes`` the maximum asked (0: none
    asked).  A pending array is one record: its tasks in ``array_tasks`` (Slurm's text,
    ``1-9:2,12%4``), ``array_id`` its job id and ``array_max`` the throttle (0: none); a task
    split out of it has ``array_task`` set.  A hetjob is one record per component, all with
    ``het_id`` the leader's id and ``het_offset`` 0, 1, ...  ``mark`` is the job's
    AdminComment (the submit script's ``hpcopt:held``).  ``burst_buffer`` is the job's
    burst-buffer request as Slurm keeps it (``#BB_LUA pool=bb capacity=60`` lines of its
    script under ``burst_buffer/lua``), ``gres`` its generic resources per node
    (``tres_per_node``: ``gres:ssd:200`` in 22.05, ``gres/ssd:200`` in 24.11), ``features``
    its constraint (``--constraint``: ``ssd256``, ``ssd128|ssd256``).
    """

    id: int
    state: str
    reason: str
    priority: int
    partition: str
    submit: float
    start: float
    limit: float | None  # None: no time limit
    nodes: int
    node_names: tuple[str, ...]
    max_nodes: int = 0
    tasks: int = 1
    array_id: int = 0
    array_task: int | None = None
    array_tasks: str = ""
    array_max: int = 0
    het_id: int = 0
    het_offset: int = 0
    restarts: int = 0
    mark: str = ""
    user_id: int = -1
    dependency: str = ""
    licenses: str = ""
    required_nodes: str = ""
    burst_buffer: str = ""
    gres: str = ""
    features: str = ""
    begin: float = 0.0  # eligible from (its begin time; a requeue sets one), 0: unknown
    excluded_nodes: str = ""
    # what Slurm's multifactor priority reads of the job (hpcopt.slurm.priority)
    account: str = ""
    qos: str = ""
    nice: int = 0
    cpus: int = 0  # processors asked (0: unknown)
    user_name: str = ""

    @property
    def held(self) -> bool:
        """Pending with priority 0: held (``sbatch -H``, the job_submit.lua, scontrol hold)."""
        return self.state == "PENDING" and self.priority == 0

    @property
    def key(self) -> str:
        """The id Slurm's commands take: ``123``, an array task ``123_4``, a pending
        array's remaining tasks ``123_[1-9]``."""
        if self.array_task is not None:
            return f"{self.array_id}_{self.array_task}"
        return str(self.id)


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    state: str  # idle, allocated, mixed, down, ...
    flags: frozenset[str]
    partitions: tuple[str, ...]

    @property
    def usable(self) -> bool:
        """Up and taking jobs (idle, allocated or mixed, with no draining/failing flag)."""
        return self.state in USABLE_STATES and not (self.flags & UNAVAILABLE)

    @property
    def idle(self) -> bool:
        """Free for a job now (usable, idle and not completing a job)."""
        return self.usable and self.state == "idle" and "COMPLETING" not in self.flags


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one read saw: ``time`` is when slurmctld answered the jobs' read (epoch seconds;
    after a stall or retries, not when the read began); where a cycle schedules them, the
    licenses (``Slurm.licenses``), the burst-buffer pools (``Slurm.burst_pools``) and each
    node's gres or features (``Slurm.node_gres``, ``Slurm.node_features``)."""

    time: float
    jobs: tuple[SlurmJob, ...]
    nodes: tuple[SlurmNode, ...]
    read_s: float
    version: str = ""
    licenses: dict | None = None
    pools: dict | None = None
    node_gres: dict | None = None
    node_features: dict | None = None


Runner = Callable[..., subprocess.CompletedProcess]
GONE = "Invalid job id"  # squeue's answer for a job that has left Slurm


class Slurm:
    """Slurm's command-line tools with a time limit per call and retries.

    ``timeout`` seconds per call, ``retries`` further tries after a failure, pausing
    ``backoff``, then twice that, ...; ``on_error(message)`` hears every failed try (the
    adapter logs them).  ``env`` (default: this process's) is passed to the tools.
    """

    def __init__(self, *, timeout: float = 10.0, retries: int = 2, backoff: float = 0.5,
                 env: dict | None = None, on_error: Callable[[str], None] | None = None,
                 run: Runner = subprocess.run) -> None:
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.env = dict(os.environ) if env is None else env
        self.on_error = on_error
        self._run = run
        self._text = True  # jobs as squeue -O text (squeue takes --array-unique)
        self._took = {"one": 0.0, "all": 0.0}  # seconds of the last read of one job, of all

    def call(self, *args: str, retry: bool = True, parse: Callable[[str], object] | None = None,
             epoch_times: bool = False, unknown_option: str | None = None,
             answer: str | None = None):
        """Run one command; its standard output (or ``parse(output)``), or
        ``SlurmCommandError`` after the retries.  A ``parse`` that raises
        ``SlurmCommandError`` (an answer with errors in it) counts as a failed try.
        ``epoch_times``: the tool prints times as epoch seconds (``SLURM_TIME_FORMAT=%s``);
        ``unknown_option``: an option this release of the tool may not have: ``UnknownOption``
        at once where it says so (not a failed try); ``answer``: a message that is Slurm's
        answer, not a failure (``"Invalid job id"``: the job has left): ``SlurmCommandError``
        at once where it says so, not heard by ``on_error``."""
        env = {**self.env, "SLURM_TIME_FORMAT": "%s"} if epoch_times else self.env
        conf = self.env.get("SLURM_CONF")
        if conf and not os.path.isfile(conf):
            raise SlurmCommandError(f"SLURM_CONF={conf}: no such file (Slurm's tools read the "
                                    "cluster's configuration from it)")
        tries = self.retries + 1 if retry else 1
        pause = self.backoff
        for attempt in range(tries):
            try:
                proc = self._run(list(args), env=env, capture_output=True, text=True,
                                 timeout=self.timeout)
            except subprocess.TimeoutExpired as exc:
                said = _decoded(exc.stderr).strip().splitlines()
                msg = f"{args[0]}: no answer in {self.timeout:g} s" + \
                    (f" ({said[-1].strip()})" if said else "")
            except OSError as exc:
                msg = f"{args[0]}: {exc.strerror or exc}"
            else:
                if proc.returncode == 0:
                    if parse is None:
                        return proc.stdout
                    try:
                        return parse(proc.stdout)
                    except SlurmCommandError as exc:
                        if answer and answer in str(exc):
                            raise
                        msg = str(exc)
                else:
                    text = (proc.stderr or proc.stdout).strip().replace("\n", "; ")
                    msg = f"{' '.join(args[:2])}: exit {proc.returncode}: {text}"
                    if unknown_option and f"unrecognized option '{unknown_option}'" in text:
                        raise UnknownOption(msg)
                    if answer and answer in text:
                        raise SlurmCommandError(msg)
            if self.on_error is not None:
                self.on_error(msg + (f" (try {attempt + 1} of {tries})" if tries > 1 else ""))
            if attempt + 1 < tries:
                time.sleep(pause)
                pause *= 2
        raise SlurmCommandError(msg)

    def json_doc(self, *args: str, answer: str | None = None) -> dict:
        """The JSON document a command prints (``squeue --json ...``); one with errors in
        it (slurmctld down) is a failed try."""
        def parse(out: str) -> dict:
            try:
                doc = json.loads(out)
            except json.JSONDecodeError as exc:
                raise SlurmCommandError(f"{' '.join(args)}: not JSON ({exc.msg} at line "
                                        f"{exc.lineno})") from None
            if not isinstance(doc, dict):
                raise SlurmCommandError(f"{' '.join(args)}: not a JSON object")
            errors = doc.get("errors") or []
            if errors:  # slurmctld down: exit 0 with the error in the document
                raise SlurmCommandError(f"{' '.join(args)}: {_error_text(errors[0])}")
            return doc

        return self.call(*args, parse=parse, answer=answer)

    def jobs(self, ids=None) -> tuple[SlurmJob, ...]:
        """Every job Slurm has not finished (pending, running, completing, ...: all
        partitions), or those of ``ids`` (job ids; none left: empty), in id order.  Read as
        text (``squeue -O``: ``parse_squeue_text``) where ``squeue --array-unique`` prints
        a released array task that has not started as a line of its own (22.05); where
        squeue has no such option (24.11) it folds such tasks into their array's line, and
        the jobs are read from ``squeue --json`` (which filters there).  Several ids are
        read one call each where that is cheaper (``one_by_one``)."""
        if ids is not None:
            ids = sorted(set(ids))
            if not ids:
                return ()
            if self.one_by_one(len(ids)):
                found = {j.id: j for i in ids for j in self._jobs([i])}  # (an array's tasks)
                return tuple(sorted(found.values(), key=_job_id))
        return self._jobs(ids)

    def one_by_one(self, n: int) -> bool:
        """Whether ``n`` jobs are read cheaper one squeue call each (``--jobs=ID``) than in
        one: given one id squeue asks slurmctld for that job alone, given several for the
        whole queue, which it filters itself (at 20,000 pending jobs 0.035 s against 0.34 s:
        ``benchmarks/slurm_read_options.py``); as the last reads of one job and of the
        whole queue took (none yet: one call)."""
        return n > 1 and n * self._took["one"] < self._took["all"]

    def _jobs(self, ids: list | None) -> tuple[SlurmJob, ...]:
        """``jobs`` in one squeue call: every job (``ids`` None) or those of ``ids``."""
        c0 = time.perf_counter()
        jobs = self._jobs_read(ids)
        if ids is None or len(ids) == 1:
            self._took["all" if ids is None else "one"] = time.perf_counter() - c0
        return jobs

    def _jobs_read(self, ids: list | None) -> tuple[SlurmJob, ...]:
        only = [] if ids is None else ["--jobs=" + ",".join(map(str, ids))]
        try:
            if self._text:
                try:
                    return self.call("squeue", "-h", "-a", "--array-unique", "-O",
                                     SQUEUE_FORMAT, *only, parse=parse_squeue_text,
                                     epoch_times=True, unknown_option="--array-unique",
                                     answer=GONE)
                except UnknownOption:
                    self._text = False
            jobs = parse_squeue(self.json_doc("squeue", "--json", "-a", *only, answer=GONE))
            return tuple(sorted((j for j in jobs if j.state not in FINISHED),
                                key=lambda j: j.id))
        except SlurmCommandError as exc:
            if ids is not None and GONE in str(exc):
                return ()  # every one of them has left Slurm
            raise

    def excluded_nodes(self, ids) -> dict[int, str]:
        """The nodes each job of ``ids`` excludes (``--exclude``), by job id, for those that
        exclude any: ``squeue -o %x`` (22.05's ``squeue -O`` has no such field, so the
        cycle's read cannot carry it; read for the picked jobs alone)."""
        ids = sorted(set(ids))
        if self.one_by_one(len(ids)):  # one call each, as ``jobs``
            return {k: v for i in ids for k, v in self._excluded_nodes([i]).items()}
        return self._excluded_nodes(ids) if ids else {}

    def _excluded_nodes(self, ids: list) -> dict[int, str]:
        """``excluded_nodes`` in one squeue call."""

        def parse(text: str) -> dict[int, str]:
            out = {}
            for rec in text.split(_END):
                f = rec.strip("\n").split(_SEP)
                if len(f) == 2 and f[0].isdigit() and f[1] not in _UNSET:
                    out[int(f[0])] = f[1]
            return out

        try:
            return self.call("squeue", "-h", "--jobs=" + ",".join(map(str, ids)),
                             "-o", f"%A{_SEP}%x{_END}", parse=parse, answer=GONE)
        except SlurmCommandError as exc:
            if GONE in str(exc):
                return {}
            raise

    def nodes(self) -> tuple[SlurmNode, ...]:
        return self.nodes_and_version()[0]

    def nodes_and_version(self) -> tuple[tuple[SlurmNode, ...], str]:
        """Every node (``sinfo --json``) and Slurm's version (its document's meta)."""
        doc = self.json_doc("sinfo", "--json")
        return parse_sinfo(doc), _version(doc)

    def snapshot(self) -> Snapshot:
        """Jobs, then nodes (a job that ends between the two reads leaves an idle node that
        the jobs' read still counts as busy: the safe side)."""
        c0 = time.perf_counter()
        jobs = self.jobs()
        t0 = time.time()  # the decision's "now": the jobs as read, however long that took
        nodes, version = self.nodes_and_version()
        return Snapshot(t0, jobs, nodes, time.perf_counter() - c0, version)

    def partitions(self) -> tuple[dict[str, tuple[int, int]], str | None]:
        """Each partition's nodes and its smallest node's cores (``sinfo -o %P|%D|%c``:
        {name: (nodes, cores per node)}), and Slurm's default partition (None: none)."""
        return self.call("sinfo", "-h", "-o", "%P|%D|%c", parse=parse_partitions)

    def accounting(self, ids, fields: tuple[str, ...]) -> list[dict[str, str]]:
        """Jobs ``ids`` in Slurm's accounting (``sacct -X --parsable2``, read by its header:
        ``hpcopt.traces.slurm.sacct_rows``), each as {field: text} of ``fields``; times as
        epoch seconds (``SLURM_TIME_FORMAT=%s``)."""
        from ..traces.slurm import sacct_rows

        def parse(text: str) -> list[dict[str, str]]:
            try:
                return [rec for _, rec in sacct_rows(text, "sacct")[1]]
            except TraceError as exc:
                raise SlurmCommandError(str(exc)) from None

        return self.call("sacct", "-X", "--parsable2", "-j", ",".join(map(str, sorted(ids))),
                         "-o", ",".join(fields), parse=parse, epoch_times=True)

    def licenses(self) -> dict[str, tuple[int, int]]:
        """Each license of the cluster: name -> (total, used) (``scontrol -o show
        licenses``, one ``LicenseName=... Total=... Used=...`` line each)."""
        return self.call("scontrol", "-o", "show", "licenses", parse=parse_license_totals)

    def burst_pools(self) -> dict[str, Pool]:
        """Each pool of the ``burst_buffer`` plugin (``scontrol show burst``): name ->
        ``Pool`` (its total and used units, and the jobs holding part of it)."""
        return self.call("scontrol", "show", "burst", parse=parse_burst)

    def node_gres(self) -> dict[str, str]:
        """Each node's generic resources as ``sinfo`` prints them (``%G``, ``ssd:128``)."""
        return self._per_node("%G")

    def node_features(self) -> dict[str, str]:
        """Each node's active features as ``sinfo`` prints them (``%b``, ``ssd128,intel``;
        ``(null)``: none), the ones a job's constraint is matched against."""
        return self._per_node("%b")

    def _per_node(self, field: str) -> dict[str, str]:
        """One ``sinfo`` field of each node: one line per node, the same text in Slurm 22.05
        and 24.11 (24.11's ``sinfo --json`` groups nodes of different gres or features into
        one record)."""
        def parse(text: str) -> dict[str, str]:
            out = {}
            for line in text.splitlines():
                name, sep, value = line.strip().partition("|")
                if not sep or not name:
                    raise SlurmCommandError(f"sinfo -N -o %N|{field}: unreadable line "
                                            f"{line!r}")
                out[name] = value
            return out

        return self.call("sinfo", "-N", "-h", "-o", f"%N|{field}", parse=parse)

    def priority_config(self) -> SlurmConf:
        """The cluster's priority plugin and weights (``scontrol show config``'s
        ``Priority*`` lines, read as the slurm.conf reader reads a file)."""
        return self.call("scontrol", "show", "config", parse=parse_priority_config)

    def priority_data(self, conf: SlurmConf | None = None) -> PriorityData:
        """What Slurm's multifactor priority of a job is computed from, besides the job:
        the weights (``conf``, else read), the fairshare factor of each association
        (``sshare -l -a -P``; none without accounting), each partition's and each QOS's
        factor, the cluster's nodes and processors, the partitions that give jobs whole
        nodes.  A factor without weight is not read."""
        conf = self.priority_config() if conf is None else conf
        fairshare = qos = None
        if conf.weight_fairshare:
            try:
                fairshare = self.call("sshare", "-l", "-a", "-P", parse=parse_sshare,
                                      retry=False)
            except SlurmCommandError:  # no slurmdbd: no associations, no fairshare
                fairshare = None
        if conf.weight_qos:
            try:
                qos = self.call("sacctmgr", "-n", "-P", "show", "qos",
                                "format=name,priority", parse=parse_qos_priorities,
                                retry=False)
            except SlurmCommandError:
                qos = None
        partitions, whole = self.call("scontrol", "-o", "show", "partition",
                                      parse=parse_partition_factors)
        cpus = self.call("sinfo", "-h", "-N", "-o", "%N %c", parse=parse_node_cpus)
        return PriorityData(conf, fairshare, partitions, qos or {}, len(cpus),
                            sum(cpus.values()), whole)

    def enforces_limits(self) -> bool:
        """Slurm enforces association and QOS limits (``AccountingStorageEnforce`` with
        ``limits``, in ``scontrol show config``)."""
        return "limits" in self._enforce()

    def _enforce(self) -> str:
        """``AccountingStorageEnforce`` of ``scontrol show config``, in lower case."""
        config = self.call("scontrol", "show", "config")
        return next((line.partition("=")[2].strip() for line in config.splitlines()
                     if line.split("=")[0].strip() == "AccountingStorageEnforce"), "").lower()

    def site_limits(self) -> SiteLimits:
        """The association tree and QOS limits (``sacctmgr show assoc``, ``show qos``), with
        what each association used where a ``GrpTRESMins`` needs it (``sshare``) and
        whether the site enforces ``safe`` (``hpcopt.slurm.limits_text``)."""
        assoc = self.call("sacctmgr", "-P", "show", "assoc", f"format={ASSOC_FORMAT}",
                          parse=_as_command_error(parse_assoc_limits))
        qos = self.call("sacctmgr", "-P", "show", "qos", f"format={QOS_FORMAT}",
                        parse=_as_command_error(parse_qos_limits))
        limits = replace(assoc, qos=qos.qos, qos_users=qos.qos_users,
                         qos_accounts=qos.qos_accounts)
        if limits.charging or any(lim.run_mins for lim in limits.limits()):
            usage = [self.call("sshare", "-a", "-P", "-o", USAGE_FORMAT,
                               parse=_as_command_error(parse_usage))]
            if any(q.mins or q.run_mins for q in limits.qos.values()):
                usage.append(self.call("scontrol", "show", "assoc_mgr", "flags=qos",
                                       parse=_as_command_error(parse_qos_usage)))
            limits = merged([limits, *usage])
            limits = replace(limits, safe="safe" in self._enforce())
        return limits

    def reservations(self) -> tuple[SlurmReservation, ...]:
        """The advance reservations (``scontrol -o show reservation``, epoch times)."""
        return self.call("scontrol", "-o", "show", "reservation", parse=parse_reservations,
                         epoch_times=True)

    def release(self, key: str | int) -> None:
        """Release a held job (once: a release is not retried, so it never happens twice);
        ``key`` as Slurm's commands take it (``123``, an array task ``123_4``)."""
        self.call("scontrol", "release", str(key), retry=False)

    def hold(self, key: str | int) -> None:
        """Hold a pending job again as a user hold (JobHeldUser, which ``release`` lifts)."""
        self.call("scontrol", "uhold", str(key), retry=False)

    def update(self, key: str | int, **fields: str | int) -> None:
        """``scontrol update JobId=key Field=value ...`` (not retried)."""
        self.call("scontrol", "update", f"JobId={key}",
                  *(f"{k}={v}" for k, v in fields.items()), retry=False)


def parse_partitions(text: str) -> tuple[dict[str, tuple[int, int]], str | None]:
    """``sinfo -h -o %P|%D|%c`` -> ({partition: (nodes, cores of its smallest node)}, the
    default partition, marked ``*``, or None); lines of another shape are left out."""
    sizes: dict[str, tuple[int, int]] = {}
    default = None
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 3:
            continue
        name, nodes, cpus = parts
        if name.endswith("*"):
            name = name[:-1]
            default = default or name
        try:
            n, c = int(nodes), int(cpus.rstrip("+"))
        except ValueError:
            continue
        had, cores = sizes.get(name, (0, c))
        sizes[name] = (had + n, min(cores, c))
    return sizes, default


@dataclass(frozen=True)
class PriorityData:
    """What ``Slurm.priority_data`` read: ``fairshare`` maps (account, user) to Slurm's
    fairshare factor (``None``: no accounting), ``partitions`` and ``qos`` map names to
    their factors (each priority over the largest), ``nodes``/``cpus`` the cluster's;
    ``whole_nodes`` the partitions with ``OverSubscribe=EXCLUSIVE``."""

    conf: SlurmConf
    fairshare: dict | None
    partitions: dict
    qos: dict
    nodes: int
    cpus: int
    whole_nodes: frozenset = frozenset()


def parse_priority_config(text: str) -> SlurmConf:
    """The ``Priority*`` lines of ``scontrol show config`` (``Key = Value``) as a
    ``SlurmConf``; unset values (``(null)``) are left out."""
    lines = []
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if eq and key.startswith("Priority") and value not in _UNSET and " " not in value:
            lines.append(f"{key}={value}")
    try:
        return parse_slurm_conf("\n".join(lines), "scontrol show config")
    except SlurmConfError as exc:
        raise SlurmCommandError(str(exc)) from None


def parse_sshare(text: str) -> dict[tuple[str, str], float]:
    """``sshare -l -a -P``: each user association's (account, user) fairshare factor."""
    rows = [line.split("|") for line in text.splitlines() if line.strip()]
    if not rows or "FairShare" not in rows[0] or "Account" not in rows[0]:
        raise SlurmCommandError(f"sshare -l -a -P: no FairShare column in {text[:80]!r}")
    head = rows[0]
    a, u, f = head.index("Account"), head.index("User"), head.index("FairShare")
    out = {}
    for row in rows[1:]:
        if len(row) != len(head):
            raise SlurmCommandError(f"sshare -l -a -P: unreadable line {'|'.join(row)!r}")
        if row[u] and row[f] not in _UNSET:
            try:
                out[(row[a].strip(), row[u])] = float(row[f])
            except ValueError:
                raise SlurmCommandError(f"sshare -l -a -P: unreadable FairShare {row[f]!r}"
                                        ) from None
    return out


def _factors(priorities: dict[str, int]) -> dict[str, float]:
    """Each priority over the largest (all 0 when the largest is 0), as Slurm normalizes
    partition and QOS priorities."""
    top = max(priorities.values(), default=0)
    return {k: (v / top if top > 0 else 0.0) for k, v in priorities.items()}


def parse_qos_priorities(text: str) -> dict[str, float]:
    """``sacctmgr -n -P show qos format=name,priority``: each QOS's factor."""
    out = {}
    for line in filter(None, (x.strip() for x in text.splitlines())):
        name, _, prio = line.partition("|")
        out[name] = _count(prio, "sacctmgr show qos", "Priority")
    return _factors(out)


def parse_partition_factors(text: str) -> tuple[dict[str, float], frozenset]:
    """``scontrol -o show partition``: each partition's ``PriorityJobFactor`` over the
    largest, and the partitions whose jobs get whole nodes (``OverSubscribe=EXCLUSIVE``)."""
    out, whole = {}, set()
    for line in filter(None, (x.strip() for x in text.splitlines())):
        fields = dict(w.partition("=")[::2] for w in line.split() if "=" in w)
        if "PartitionName" in fields:
            name = fields["PartitionName"]
            out[name] = _count(fields.get("PriorityJobFactor", "1"), "scontrol show partition",
                               "PriorityJobFactor")
            if fields.get("OverSubscribe", "").upper().startswith("EXCLUSIVE"):
                whole.add(name)
    return _factors(out), frozenset(whole)


def parse_node_cpus(text: str) -> dict[str, int]:
    """``sinfo -h -N -o '%N %c'``: each node's processors (a node in several partitions
    is listed once per partition)."""
    out = {}
    for line in filter(None, (x.strip() for x in text.splitlines())):
        name, _, cpus = line.partition(" ")
        out[name] = _count(cpus.strip(), "sinfo -N", "CPUs")
    return out


def _as_command_error(parse: Callable[[str], object]) -> Callable[[str], object]:
    """``parse`` whose unreadable text is a ``SlurmCommandError`` (a failed command)."""
    def read(text: str) -> object:
        try:
            return parse(text)
        except LimitsTextError as exc:
            raise SlurmCommandError(str(exc)) from None

    return read


def parse_license_totals(text: str) -> dict[str, tuple[int, int]]:
    """``scontrol -o show licenses`` -> {name: (total, used)}; a line without the three
    fields is a ``SlurmCommandError`` naming it."""
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("No licenses"):
            continue
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        try:
            out[fields["LicenseName"]] = (int(fields["Total"]), int(fields["Used"]))
        except (KeyError, ValueError):
            raise SlurmCommandError(f"scontrol show licenses: unreadable line "
                                    f"{line.strip()[:80]!r}") from None
    return out


@dataclass(frozen=True, slots=True)
class Pool:
    """One burst-buffer pool: ``total`` and ``used`` units, ``jobs`` the job ids holding
    part of it (from stage-in to teardown) with their sizes."""

    total: float
    used: float
    jobs: dict


_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4, "p": 1024 ** 5}


def bb_size(text: str) -> float | None:
    """A burst-buffer size as Slurm writes one (``60``, ``4K``, ``2GiB``; K, M, G, T, P
    multiply by 1024, as Slurm's burst-buffer sizes do, ``KB`` ... by 1000); None when
    unreadable."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)", text.strip().lower())
    if m is None or (m[3] and not m[2]):
        return None
    unit = _UNITS[m[2]]
    if m[3] == "b":  # KB, MB, ...: powers of 1000
        unit = 1000 ** list(_UNITS).index(m[2])
    return float(m[1]) * unit


def parse_burst(text: str) -> dict[str, Pool]:
    """``scontrol show burst`` -> {pool: Pool}: each ``PoolName[i]=NAME ... TotalSpace=N
    ... UsedSpace=N`` line, and each ``JobID=N ... Pool=NAME Size=N`` allocation line (Slurm
    22.05 and 24.11 print the same); a pool line without readable sizes is a
    ``SlurmCommandError`` naming it."""
    pools: dict[str, Pool] = {}
    held: list[tuple[str, int, float]] = []
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        name = next((v for k, v in fields.items() if k.startswith("PoolName")), None)
        if name is not None:
            total, used = bb_size(fields.get("TotalSpace", "")), \
                bb_size(fields.get("UsedSpace", ""))
            if total is None or used is None:
                raise SlurmCommandError(f"scontrol show burst: unreadable pool line "
                                        f"{line.strip()[:80]!r}")
            pools[name] = Pool(total, used, {})
        elif "JobID" in fields and "Pool" in fields:
            size = bb_size(fields.get("Size", ""))
            jid = fields["JobID"].split("_", 1)[0]
            if size is None or not jid.isdigit():
                raise SlurmCommandError(f"scontrol show burst: unreadable allocation line "
                                        f"{line.strip()[:80]!r}")
            held.append((fields["Pool"], int(jid), size))
    for pool, jid, size in held:
        if pool in pools:
            pools[pool].jobs[jid] = size
    return pools


def job_bb_request(text: str, directive: str = "#BB_LUA") -> dict[str, float] | None:
    """A job's ``burst_buffer/lua`` request (its ``#BB_LUA pool=NAME capacity=N`` lines, as
    ``squeue`` shows them) -> {pool: size}; ``{}`` when it asks none; None when a line is
    not ``key=value`` words, or names a capacity without a pool or one unreadable."""
    out: dict[str, float] = {}
    for line in filter(None, (t.strip() for t in text.splitlines())):
        if not line.startswith(directive):
            return None
        fields = {}
        for word in line[len(directive):].split():
            key, sep, value = word.partition("=")
            if not sep:
                return None
            fields[key.lower()] = value
        if "capacity" not in fields:
            continue
        size = bb_size(fields["capacity"])
        if size is None or not fields.get("pool"):
            return None
        out[fields["pool"]] = out.get(fields["pool"], 0.0) + size
    return out


def gres_count(text: str, name: str) -> int | None:
    """The count of gres ``name`` in a gres list as Slurm prints one (a node's ``ssd:128``,
    ``ssd:128(S:0)``, a job's ``gres:ssd:200`` or ``gres/ssd:200``; a typed ``ssd:big:128``
    counts too); 0 when absent, None when unreadable."""
    total = 0
    for item in filter(None, (t.strip() for t in text.split(","))):
        item = item.split("(", 1)[0]
        for prefix in ("gres:", "gres/"):
            item = item[len(prefix):] if item.startswith(prefix) else item
        parts = item.split(":")
        if parts[0] != name:
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        if not count.isdigit():
            return None
        total += int(count)
    return total


def feature_size(word: str, prefix: str) -> float | None:
    """The GB of an SSD feature ``PREFIX<GB>`` (``ssd256`` with prefix ``ssd``: 256); None
    for any other feature."""
    m = re.fullmatch(re.escape(prefix) + r"(\d+)", word.strip())
    return float(m[1]) if m else None


def node_features(text: str) -> list[str]:
    """A node's features as ``sinfo`` prints them (``ssd128,intel``; ``(null)``: none)."""
    return [f for f in (t.strip() for t in text.split(",")) if f and f != "(null)"]


def constraint_terms(text: str) -> tuple[str, list[str]] | None:
    """A job's constraint (``--constraint``, ``squeue``'s ``features``) as its operator
    (``&``, ``|``, or ``""`` for one feature or none) and its features; None when it is not
    features joined by one operator (brackets, counts ``*N``, negation, both operators)."""
    text = "" if text.strip() == "(null)" else text.strip()
    if not text:
        return "", []
    ops = {c for c in "&|" if c in text}
    if len(ops) > 1 or any(c in text for c in "[]()*!,@ "):
        return None
    op = ops.pop() if ops else ""
    words = text.split(op) if op else [text]
    return (op, words) if all(words) else None


def parse_licenses(text: str) -> dict[str, int] | None:
    """A license list as Slurm writes one (a job's request as ``squeue`` prints it,
    ``bb:60,matlab:1``; ``bb*60`` and a bare name, one, as Slurm accepts them) -> {name:
    count}; None when unreadable."""
    out: dict[str, int] = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, sep, count = item.replace("*", ":").partition(":")
        name = name.split("@", 1)[0]  # a remote license's server
        if not name or (sep and not count.isdigit()):
            return None
        out[name] = out.get(name, 0) + (int(count) if sep else 1)
    return out


def _decoded(data: object) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def parse_job(j: dict) -> SlurmJob:
    """One ``squeue --json`` job, in Slurm 22.05's layout or 23.02's and later."""
    jid = number(j.get("job_id"), "squeue --json job", "job_id")
    if not isinstance(jid, int):
        raise _unreadable("squeue --json job", "job_id", j.get("job_id"))
    where = f"squeue --json job {jid}"
    limit = number(j.get("time_limit"), where, "time_limit")
    priority = number(j.get("priority"), where, "priority")
    nodes = number(j.get("node_count"), where, "node_count")
    if nodes == math.inf:
        raise _unreadable(where, "node_count", j.get("node_count"))
    array_task = number(j.get("array_task_id"), where, "array_task_id")
    max_nodes = number(j.get("max_nodes"), where, "max_nodes")
    tasks = number(j.get("tasks"), where, "tasks")
    return SlurmJob(
        id=jid,
        state=job_state(j.get("job_state", ""), where),
        reason=str(j.get("state_reason", "")),
        priority=0 if priority is None or priority == math.inf else int(priority),
        partition=str(j.get("partition", "")),
        submit=epoch(j.get("submit_time"), where, "submit_time"),
        start=epoch(j.get("start_time"), where, "start_time"),
        limit=None if limit is None or limit >= NO_VALUE else int(limit) * 60.0,
        nodes=max(1, int(nodes or 1)),
        node_names=_allocated_nodes(j.get("job_resources"), where),
        max_nodes=0 if max_nodes is None or not 0 < max_nodes < NO_VALUE else int(max_nodes),
        tasks=1 if tasks is None or not 0 < tasks < NO_VALUE else int(tasks),
        array_id=_int(j.get("array_job_id"), where, "array_job_id"),
        array_task=None if array_task is None or not 0 <= array_task < NO_VALUE
        else int(array_task),
        array_tasks=_text(j.get("array_task_string"), where, "array_task_string"),
        array_max=_int(j.get("array_max_tasks"), where, "array_max_tasks"),
        het_id=_int(j.get("het_job_id"), where, "het_job_id"),
        het_offset=_int(j.get("het_job_offset"), where, "het_job_offset"),
        restarts=_int(j.get("restart_cnt"), where, "restart_cnt"),
        mark=_text(j.get("admin_comment"), where, "admin_comment"),
        user_id=_int(j.get("user_id"), where, "user_id", -1),
        dependency=_text(j.get("dependency"), where, "dependency"),
        licenses=_text(j.get("licenses"), where, "licenses"),
        required_nodes=_text(j.get("required_nodes"), where, "required_nodes"),
        burst_buffer=_text(j.get("burst_buffer"), where, "burst_buffer"),
        gres=_text(j.get("tres_per_node"), where, "tres_per_node"),
        features=_text(j.get("features"), where, "features"),
        begin=epoch(j.get("eligible_time"), where, "eligible_time"),
        excluded_nodes=_text(j.get("excluded_nodes"), where, "excluded_nodes"),
        account=_text(j.get("account"), where, "account"),
        qos=_text(j.get("qos"), where, "qos"),
        nice=int(number(j.get("nice"), where, "nice") or 0),
        cpus=_int(j.get("cpus"), where, "cpus"),
        user_name=_text(j.get("user_name"), where, "user_name"),
    )


def _int(value: object, where: str, field: str, unset: int = 0) -> int:
    """A count or id field: ``unset`` when missing, unset or infinite (NO_VAL)."""
    v = number(value, where, field)
    if v is None or v == math.inf or not -1 < v < NO_VALUE:
        return unset
    if int(v) != v:
        raise _unreadable(where, field, value)
    return int(v)


def _text(value: object, where: str, field: str) -> str:
    """A string field; missing or null: empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise _unreadable(where, field, value)


def parse_node(n: dict) -> SlurmNode:
    """One ``sinfo --json`` node, in Slurm 22.05's layout or 23.02's and later."""
    name = n.get("name")
    if not isinstance(name, str) or not name:
        raise _unreadable("sinfo --json node", "name", name)
    where = f"sinfo --json node {name}"
    state, flags = _node_state(n.get("state", ""), n.get("state_flags"), where)
    return SlurmNode(name=name, state=state, flags=flags,
                     partitions=_names(n.get("partitions"), where, "partitions"))


def parse_squeue(doc: dict) -> tuple[SlurmJob, ...]:
    """Every job of a ``squeue --json`` document.  A document without its ``jobs`` list, or a
    job in a shape the parser does not know, is a ``SlurmCommandError`` naming the Slurm
    version and the field (never "no jobs")."""
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise _in_version(doc, _unreadable("squeue --json", "jobs",
                                           jobs if "jobs" in doc else sorted(doc)))
    try:
        return tuple(parse_job(j) for j in jobs)
    except SlurmCommandError as exc:
        raise _in_version(doc, exc) from None


#: ``squeue -O`` fields, one per ``SlurmJob`` field read (``parse_squeue_text``); each
#: ends with a unit separator, the last with a record separator (a burst-buffer request
#: spans lines)
SQUEUE_FIELDS = ("JobID", "ArrayJobID", "ArrayTaskID", "State", "Reason", "PriorityLong",
                 "Partition", "SubmitTime", "StartTime", "TimeLimit", "NumNodes", "MaxNodes",
                 "NumTasks", "NodeList", "HetJobID", "HetJobOffset", "RestartCnt",
                 "Admin_Comment", "UserID", "Dependency", "Licenses", "ReqNodes",
                 "tres-per-node", "Feature", "EligibleTime", "Account", "QOS", "Nice",
                 "NumCPUs", "UserName", "BurstBuffer")
_SEP, _END = "\x1f", "\x1e"
SQUEUE_FORMAT = ",".join(f"{f}:{_SEP}" for f in SQUEUE_FIELDS[:-1]) + \
    f",{SQUEUE_FIELDS[-1]}:{_END}"
_UNSET = frozenset({"", "N/A", "(null)", "None", "Unknown"})


def parse_squeue_text(text: str) -> tuple[SlurmJob, ...]:
    """The jobs of ``squeue -h -O SQUEUE_FORMAT`` output (times as epoch seconds:
    ``SLURM_TIME_FORMAT=%s``), in id order: each reads as its ``squeue --json`` record
    (``parse_job``) does, in every field the adapter reads.  Where the text cannot tell an
    unset maximum node count from one equal to the minimum, the maximum reads as unset (the
    job is then pinned to its minimum: the same size); an array's last task, alone in its
    array's record, shows no throttle.  Pending array tasks released apart from their array
    are lines of their own (``--array-unique``).  A record in another shape is a
    ``SlurmCommandError`` naming the job and the field."""
    from ..traces.slurm import duration  # sacct's reader of [D-][HH:]MM:SS, squeue's too

    limits: dict = {}  # each limit's text read once (most jobs share a few)
    hosts: dict = {"": ()}
    jobs = []
    n = len(SQUEUE_FIELDS)
    for rec in text.split(_END):
        rec = rec.lstrip("\n")
        if not rec:
            continue
        f = rec.split(_SEP)
        if len(f) != n:
            raise SlurmCommandError(f"squeue -O: unreadable record {rec[:80]!r} ({len(f)} "
                                    f"fields, {n} expected)")
        jobs.append(_text_job(f, duration, limits, hosts))
    # the throttle shows on the array's pending line only: its tasks carry it too, as in
    # the JSON (a last task left alone in the array's record shows none)
    throttle = {j.array_id: j.array_max for j in jobs if j.array_max}
    if throttle:
        jobs = [replace(j, array_max=throttle[j.array_id])
                if j.array_id in throttle and not j.array_max else j for j in jobs]
    jobs.sort(key=_job_id)
    return tuple(jobs)


def _job_id(j: SlurmJob) -> int:
    return j.id


def _count(text: str, where: str, field: str, unset: int = 0) -> int:
    """A count field of the text read: ``unset`` when Slurm prints none."""
    if text.isdigit():
        return int(text)
    if text in _UNSET:
        return unset
    raise SlurmCommandError(f"{where}: unreadable {field}: {text!r}")


def _signed(text: str, where: str, field: str) -> int:
    """A signed count of the text read (a job's nice may be negative): 0 when unset."""
    text = text.strip()
    return -_count(text[1:], where, field) if text.startswith("-") else \
        _count(text, where, field)


def _words(text: str) -> str:
    return "" if text in _UNSET else text


def _text_job(f: list[str], duration, limits: dict, hosts: dict) -> SlurmJob:
    """One ``squeue -O`` record (its fields in ``SQUEUE_FIELDS`` order); ``duration`` reads
    its time limit; ``limits`` and ``hosts`` keep the limits and host lists read."""
    (jid, array_id, task, state, reason, priority, partition, submit, start, limit, nodes,
     max_nodes, tasks, node_list, het_id, het_offset, restarts, mark, user, dependency,
     licenses, required, gres, features, eligible, account, qos, nice, cpus, user_name,
     bb) = f
    where = f"squeue -O job {jid}"
    try:
        wall = limits[limit]
    except KeyError:
        try:
            wall = limits[limit] = None if limit in _UNSET else \
                duration(limit, where, "TimeLimit")
        except TraceError as exc:
            raise SlurmCommandError(str(exc)) from None
    try:
        names = hosts[node_list]
    except KeyError:
        try:
            names = hosts[node_list] = () if node_list in _UNSET else \
                tuple(expand_hostlist(node_list))
        except TopologyConfError as exc:
            raise SlurmCommandError(f"{where}: {exc}") from None
    in_array = task not in _UNSET
    pending_tasks = "" if task.isdigit() or not in_array else task
    throttle = pending_tasks.rpartition("%")[2] if "%" in pending_tasks else ""
    minimum = max(1, _count(nodes, where, "NumNodes", 1))
    most = _count(max_nodes, where, "MaxNodes")
    return SlurmJob(
        id=_count(jid, where, "JobID"), state=state, reason=reason,
        priority=_count(priority, where, "PriorityLong"), partition=partition,
        submit=float(_count(submit, where, "SubmitTime")),
        start=float(_count(start, where, "StartTime")), limit=wall, nodes=minimum,
        node_names=names, max_nodes=most if minimum < most < NO_VALUE else 0,
        tasks=_count(tasks, where, "NumTasks", 1) or 1,
        array_id=_count(array_id, where, "ArrayJobID") if in_array else 0,
        array_task=int(task) if task.isdigit() else None, array_tasks=pending_tasks,
        array_max=int(throttle) if throttle.isdigit() else 0,
        het_id=_count(het_id, where, "HetJobID"),
        het_offset=_count(het_offset, where, "HetJobOffset"),
        restarts=_count(restarts, where, "RestartCnt"), mark=_words(mark),
        user_id=_count(user, where, "UserID", -1), dependency=_words(dependency),
        licenses=_words(licenses), required_nodes=_words(required),
        burst_buffer=_words(bb), gres=_words(gres), features=_words(features),
        begin=float(_count(eligible, where, "EligibleTime")), account=_words(account),
        qos=_words(qos), nice=_signed(nice, where, "Nice"),
        cpus=_count(cpus, where, "NumCPUs"), user_name=_words(user_name))


def parse_sinfo(doc: dict) -> tuple[SlurmNode, ...]:
    """Every node of a ``sinfo --json`` document: its ``nodes`` list (Slurm 22.05 to 23.11:
    one record per node with its ``partitions``) or its ``sinfo`` list (24.11, seen live:
    one record per partition and node state, ``{partition: {name}, node: {state}, nodes:
    {nodes: [names], total}}``; a node in several partitions is in several records, merged
    here).  A document without either list, records naming no nodes, or nodes that are in
    no partition at all (a renamed key would read so) are a ``SlurmCommandError`` naming
    the Slurm version and the field, never "no nodes"."""
    try:
        if isinstance(doc.get("sinfo"), list):
            nodes = _sinfo_groups(doc["sinfo"])
        elif isinstance(doc.get("nodes"), list):
            nodes = tuple(parse_node(n) for n in doc["nodes"])
        else:
            raise _unreadable("sinfo --json", "nodes", sorted(doc))
        if nodes and not any(n.partitions for n in nodes):
            raise _unreadable("sinfo --json", "partitions",
                              "no node is in a partition")
    except SlurmCommandError as exc:
        raise _in_version(doc, exc) from None
    return nodes


def _sinfo_groups(groups: list) -> tuple[SlurmNode, ...]:
    """The nodes of 24.11's grouped ``sinfo`` records, each node once with all its
    partitions (in the order they come)."""
    merged: dict[str, dict] = {}
    for g in groups:
        where = "sinfo --json sinfo[]"
        part = g.get("partition") if isinstance(g, dict) else None
        name = part.get("name") if isinstance(part, dict) else None
        if not isinstance(name, str):
            raise _unreadable(where, "partition.name", part)
        where = f"sinfo --json sinfo[partition {name}]"
        state = g["node"].get("state") if isinstance(g.get("node"), dict) else None
        if state is None:
            raise _unreadable(where, "node.state", g.get("node"))
        nodes = g.get("nodes")
        names = _names(nodes.get("nodes") if isinstance(nodes, dict) else nodes, where,
                       "nodes.nodes")
        total = number(nodes.get("total"), where, "nodes.total") \
            if isinstance(nodes, dict) else None
        if not names and total:
            raise _unreadable(where, "nodes.nodes", nodes)
        for n in names:
            rec = merged.setdefault(n, {"name": n, "state": state, "partitions": []})
            if name not in rec["partitions"]:
                rec["partitions"].append(name)
    return tuple(parse_node(r) for r in merged.values())


def _in_version(doc: dict, exc: SlurmCommandError) -> SlurmCommandError:
    """``exc`` with the Slurm version of the document (and its data_parser) appended."""
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    plugin = meta.get("plugin") if isinstance(meta.get("plugin"), dict) else {}
    parser = plugin.get("data_parser") or ""
    version = _version(doc) or "version unknown"
    return SlurmCommandError(f"{exc} (Slurm {version}" + (f", {parser})" if parser else ")"))


def _version(doc: dict) -> str:
    """Slurm's release: ``meta.Slurm.release`` (22.05, 23.02), ``meta.slurm.release`` (23.11
    and later), else ``major.minor.micro`` from the version object; "" when none is there."""
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    for key in ("slurm", "Slurm"):
        slurm = meta.get(key)
        if not isinstance(slurm, dict):
            continue
        if slurm.get("release"):
            return str(slurm["release"])
        v = slurm.get("version")
        if isinstance(v, dict) and all(v.get(k) not in (None, "")
                                       for k in ("major", "minor", "micro")):
            return f"{v['major']}.{v['minor']}.{v['micro']}"
    return ""


def _unreadable(where: str, field: str, found: object) -> SlurmCommandError:
    """The one-line error for a field in a shape neither layout has."""
    text = json.dumps(found, separators=(",", ":"), default=repr)
    if len(text) > 80:
        text = text[:77] + "..."
    return SlurmCommandError(f"{where}: unreadable {field}: {text}")


def number(value: object, where: str, field: str) -> int | float | None:
    """A number field of Slurm's JSON (``where``, ``field`` name it in errors): a plain
    number (22.05) or a ``{set, infinite, number}`` object (23.02 and later; a
    data_parser in its "complex" mode prints null, a number or "Infinity"): the number,
    ``None`` when unset (22.05's null), ``math.inf`` when infinite."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if value == "Infinity":
        return math.inf
    if isinstance(value, dict) and "set" in value and "number" in value:
        if value.get("infinite") is True:
            return math.inf
        if value["set"] is False:
            return None
        num = value["number"]
        if value["set"] is True and isinstance(num, (int, float)) and not isinstance(num, bool):
            return num
    raise _unreadable(where, field, value)


def epoch(value: object, where: str, field: str) -> float:
    """Epoch seconds; 0 when unset, as 22.05 prints an unset time."""
    t = number(value, where, field)
    return 0.0 if t is None or t == math.inf else float(t)


def job_state(value: object, where: str) -> str:
    """22.05's (and 23.02's) state string, or a 23.11+ list of names (one base state and its
    flags) turned into that string: the first of ``JOB_FLAGS_SHOWN`` present, else the base."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        names = {s.upper() for s in value}
        base = names & JOB_BASE_STATES
        if len(base) == 1:  # Slurm always lists exactly one base state
            return next((f for f in JOB_FLAGS_SHOWN if f in names), base.pop())
    raise _unreadable(where, "job_state", value)


def _node_state(state: object, state_flags: object, where: str) -> tuple[str, frozenset[str]]:
    """(base state in lower case, flags in upper case) from 22.05's ``state`` string and
    ``state_flags`` list, or from a 23.02+ ``state`` list (one base state among the flags)."""
    if isinstance(state, str):
        flags = _names(state_flags, where, "state_flags")
        return state.lower(), frozenset(f.upper() for f in flags)
    if isinstance(state, list) and all(isinstance(s, str) for s in state):
        names = {s.upper() for s in state}
        base = names & NODE_BASE_STATES
        if len(base) == 1:
            flags = names - base
            if state_flags is not None:  # not printed from 23.02 on; read it if present
                flags |= {f.upper() for f in _names(state_flags, where, "state_flags")}
            return base.pop().lower(), frozenset(flags)
    raise _unreadable(where, "state", state)


def _names(value: object, where: str, field: str) -> tuple[str, ...]:
    """A list of strings (every version prints lists here); missing or null: empty."""
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise _unreadable(where, field, value)


def _allocated_nodes(res: object, where: str) -> tuple[str, ...]:
    """The names of a job's allocated nodes: ``job_resources.allocated_nodes[].nodename``
    (22.05 to 23.11) or ``job_resources.nodes.allocation[].name`` (24.05 and later)."""
    if res is None:
        return ()
    if not isinstance(res, dict):
        raise _unreadable(where, "job_resources", res)
    nodes = res.get("nodes")
    if isinstance(nodes, dict):  # 24.05+: nodes is {count, select_type, list, whole, allocation}
        items, key, field = nodes.get("allocation"), "name", "job_resources.nodes.allocation"
    else:  # up to 23.11: nodes is the host list string
        items, key = res.get("allocated_nodes"), "nodename"
        field = "job_resources.allocated_nodes"
    if items is None:
        return ()
    if isinstance(items, list) and all(isinstance(i, dict) and isinstance(i.get(key), str)
                                       for i in items):
        return tuple(i[key] for i in items)
    raise _unreadable(where, field, items)


def _error_text(error: object) -> str:
    """One entry of a document's ``errors``: its description (or error name) when it is an
    object, as Slurm prints them, else its text."""
    if isinstance(error, dict):
        text = error.get("description") or error.get("error")
        if text:
            return str(text)
    return str(error)


@dataclass(frozen=True, slots=True)
class SlurmReservation:
    """One advance reservation as ``scontrol -o show reservation`` lists it: its nodes from
    ``start`` to ``end`` (epoch seconds), who may use it, its flags (``MAINT``, ...), its
    partition (``None``: not tied to one) and whether it has begun."""

    name: str
    start: float
    end: float
    nodes: tuple[str, ...]
    users: tuple[str, ...]
    accounts: tuple[str, ...]
    flags: frozenset[str]
    partition: str | None
    active: bool


def parse_reservations(text: str) -> tuple[SlurmReservation, ...]:
    """``scontrol -o show reservation`` (``SLURM_TIME_FORMAT=%s``) -> its reservations, one
    ``ReservationName=...`` line each (other lines, "No reservations in the system", are
    none); a line without a readable field is a ``SlurmCommandError`` naming it."""
    out = []
    for line in text.splitlines():
        if not line.startswith("ReservationName="):
            continue
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        name = fields["ReservationName"]
        where = f"scontrol show reservation {name}"
        try:
            res = SlurmReservation(
                name, _epoch_text(fields, "StartTime"), _epoch_text(fields, "EndTime"),
                tuple(expand_hostlist(",".join(_listed(fields, "Nodes")))),
                _listed(fields, "Users"), _listed(fields, "Accounts"),
                frozenset(_listed(fields, "Flags")),
                (_listed(fields, "PartitionName") or (None,))[0],
                fields.get("State") == "ACTIVE")
        except (TopologyConfError, ValueError) as exc:
            raise SlurmCommandError(f"{where}: unreadable line ({exc})") from None
        out.append(res)
    return tuple(out)


def _listed(fields: dict, key: str) -> tuple[str, ...]:
    """A comma list field (``(null)``: none)."""
    value = fields.get(key, "(null)")
    return () if value in ("(null)", "") else tuple(value.split(","))


def _epoch_text(fields: dict, key: str) -> float:
    """A time field printed as epoch seconds (``SLURM_TIME_FORMAT=%s``)."""
    value = fields.get(key, "")
    if not value.isdigit():
        raise ValueError(f"{key}={value or '(missing)'}, expected epoch seconds")
    return float(value)
