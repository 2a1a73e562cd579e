"""A site's association and QOS limits as Slurm's accounting tools print them
(``sacctmgr -P show assoc``/``show qos`` and ``sshare -P``), read into
``hpcopt.sim.limits.SiteLimits`` for the adapter (``Slurm.site_limits``) and the simulator
(``hpcopt simulate --limits``).

Each text has a header line (sacctmgr's column names, any order; ``-n`` output without one
is read in the short column orders ``ASSOC_SHORT`` and ``QOS_SHORT``).  Only the node and
processor counts of a TRES limit are read (``node=``, ``cpu=``); others (memory, GPUs,
licences) stay Slurm's alone.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import HpcoptError, TraceError
from ..sim.limits import Limit, SiteLimits, Tres


class LimitsTextError(HpcoptError):
    """A line of sacctmgr's or sshare's text that cannot be read."""


ASSOC_FORMAT = ("account,user,parentname,maxjobs,grpjobs,grptres,maxwall,maxsubmitjobs,"
                "grpsubmitjobs,maxtresminsperjob,grptresmins,grptresrunmins")
"""The columns ``Slurm.site_limits`` asks ``sacctmgr show assoc`` for."""
QOS_FORMAT = ("name,grpjobs,grptres,maxwall,maxjobsperuser,maxtresperuser,maxjobsperaccount,"
              "maxtresperaccount,maxsubmitjobsperuser,maxsubmitjobsperaccount,grpsubmitjobs,"
              "maxtresmins,grptresmins,grptresrunmins")
"""The columns ``Slurm.site_limits`` asks ``sacctmgr show qos`` for."""
USAGE_FORMAT = "account,user,grptresraw,tresrunmins"
"""The columns ``Slurm.site_limits`` asks ``sshare -a`` for (TRES-minutes used, decayed,
and held by running jobs)."""
ASSOC_SHORT = ("account", "user", "maxjobs", "grpjobs", "grptres", "maxwall")
QOS_SHORT = ("name", "grpjobs", "grptres", "maxwall")

# sacctmgr's header names (lower case) -> the names above
_ALIASES = {"par name": "parentname", "maxsubmit": "maxsubmitjobs",
            "grpsubmit": "grpsubmitjobs", "maxtresmins": "maxtresminsperjob",
            "maxjobspu": "maxjobsperuser", "maxtrespu": "maxtresperuser",
            "maxjobspa": "maxjobsperaccount", "maxtrespa": "maxtresperaccount",
            "maxsubmitpu": "maxsubmitjobsperuser", "maxsubmitpa": "maxsubmitjobsperaccount"}


def _rows(text: str, where: str, short: tuple[str, ...], first: str) -> list[dict]:
    """The lines of ``text`` as dicts by column name: named by a header line (its first
    column ``first``), else in the ``short`` order."""
    lines = [(n, x.strip()) for n, x in enumerate(text.splitlines(), 1) if x.strip()]
    if not lines:
        return []
    head = [c.strip().lower() for c in lines[0][1].split("|")]
    if head[0] == first:
        names, body = [_ALIASES.get(c, c) for c in head], lines[1:]
    else:
        names, body = list(short), lines
    out = []
    for n, line in body:
        f = line.split("|")
        if line.endswith("|") and len(f) == len(names) + 1:
            f = f[:-1]  # (sacctmgr -p ends each line with one)
        if len(f) != len(names):
            raise LimitsTextError(f"{where} line {n}: unreadable line {line!r}: expected "
                                  f"{len(names)} fields ({'|'.join(names)})")
        out.append(dict(zip(names, (x.strip() for x in f))))
    return out


def _number(text: str, where: str, name: str) -> int | None:
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise LimitsTextError(f"{where}: {name} {text!r} is not a whole number") from None
    if value < 0:
        raise LimitsTextError(f"{where}: {name} {text!r} is negative")
    return value


def _tres(text: str, where: str, name: str) -> Tres:
    """The node and processor amounts of a TRES list (``cpu=8,mem=1G,node=2``)."""
    found: dict[str, int | None] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise LimitsTextError(f"{where}: {name} {text!r}: expected TRES=amount items")
        if key in ("node", "cpu"):
            found[key] = _number(value, where, f"{name} {key}")
    return Tres(found.get("node"), found.get("cpu"))


def _wall(text: str, where: str) -> float | None:
    from ..traces.slurm import duration  # (the trace reader's [D-]HH:MM:SS)

    if not text:
        return None
    try:
        return duration(text, where, "MaxWall")
    except TraceError as exc:
        raise LimitsTextError(str(exc)) from None


def _caps(row: dict, where: str, *, jobs: str, tres: str, submit: str, wall: str = "",
          mins: str = "", run_mins: str = "", job_mins: str = "") -> Limit:
    """A ``Limit`` of ``row``'s columns of those names (absent or empty: none)."""
    count = _tres(row.get(tres, ""), where, tres)
    return Limit(jobs=_number(row.get(jobs, ""), where, jobs),
                 nodes=None if count.node is None else int(count.node),
                 cpus=None if count.cpu is None else int(count.cpu),
                 wall=_wall(row.get(wall, ""), where),
                 submit=_number(row.get(submit, ""), where, submit),
                 mins=_tres(row.get(mins, ""), where, mins),
                 run_mins=_tres(row.get(run_mins, ""), where, run_mins),
                 job_mins=_tres(row.get(job_mins, ""), where, job_mins))


def _tighter(a: Limit, b: Limit) -> Limit:
    """Both limits at once on the same jobs: the smaller cap of each."""
    def low(x, y):
        if isinstance(x, Tres):
            return Tres(low(x.node, y.node), low(x.cpu, y.cpu))
        return y if x is None else x if y is None else min(x, y)

    return Limit(*(low(getattr(a, f), getattr(b, f)) for f in (
        "jobs", "nodes", "cpus", "wall", "submit", "mins", "run_mins", "job_mins")))


def parse_assoc_limits(text: str, where: str = "sacctmgr show assoc") -> SiteLimits:
    """``sacctmgr -P show assoc format=ASSOC_FORMAT`` (or the ``ASSOC_SHORT`` columns
    without a header): the association tree and its limits.

    An account's ``Grp*`` limits (``GrpJobs``, ``GrpTRES``, ``GrpSubmitJobs``,
    ``GrpTRESMins``, ``GrpTRESRunMins``) hold all its users and sub-accounts together; its
    ``Max*`` limits (``MaxJobs``, ``MaxWall``, ``MaxSubmitJobs``, ``MaxTRESMinsPerJob``)
    are each user association's, inherited down the tree where one below sets none.  A
    user association's own ``Grp*`` and ``Max*`` limits are its own."""
    rows = _rows(text, where, ASSOC_SHORT, "account")
    grp = {"jobs": "grpjobs", "tres": "grptres", "submit": "grpsubmitjobs",
           "mins": "grptresmins", "run_mins": "grptresrunmins"}
    own = {"jobs": "maxjobs", "tres": "", "submit": "maxsubmitjobs", "wall": "maxwall",
           "job_mins": "maxtresminsperjob"}
    parents: dict[str, str] = {}
    accounts: dict[str, Limit] = {}
    inherited: dict[str, Limit] = {}  # an account's Max* limits as set on it
    for row in rows:
        if not row.get("user"):
            account, at = row.get("account", ""), f"{where}: account {row.get('account')}"
            if row.get("parentname"):
                parents[account] = row["parentname"]
            accounts[account] = _caps(row, at, **grp)
            inherited[account] = _caps(row, at, **own)
    limits = SiteLimits(accounts={a: lim for a, lim in accounts.items() if lim},
                        parents=parents)
    users: dict[tuple[str, str], Limit] = {}
    for row in rows:
        if row.get("user"):
            account, user = row.get("account", ""), row["user"]
            at = f"{where}: user {user} in account {account}"
            mine = _caps(row, at, **own)
            for up in limits.lineage(account):
                mine = mine.over(inherited.get(up, Limit()))
            mine = _tighter(mine, _caps(row, at, **grp))
            if mine:
                users[(account, user)] = mine
    return replace(limits, users=users)


def parse_qos_limits(text: str, where: str = "sacctmgr show qos") -> SiteLimits:
    """``sacctmgr -P show qos format=QOS_FORMAT`` (or the ``QOS_SHORT`` columns without a
    header): each QOS's limits over all its jobs (``GrpJobs``, ``GrpTRES``,
    ``GrpSubmitJobs``, ``GrpTRESMins``, ``GrpTRESRunMins``) and per job (``MaxWall``,
    ``MaxTRESMins``), and per user and per account within it (``MaxJobsPerUser``,
    ``MaxTRESPerUser``, ``MaxSubmitJobsPerUser``; ``...PerAccount``)."""
    qos: dict[str, Limit] = {}
    users: dict[str, Limit] = {}
    accounts: dict[str, Limit] = {}
    for row in _rows(text, where, QOS_SHORT, "name"):
        name = row.get("name", "")
        at = f"{where}: {name}"
        for into, caps in ((qos, _caps(row, at, jobs="grpjobs", tres="grptres",
                                       submit="grpsubmitjobs", wall="maxwall",
                                       mins="grptresmins", run_mins="grptresrunmins",
                                       job_mins="maxtresminsperjob")),
                           (users, _caps(row, at, jobs="maxjobsperuser", tres="maxtresperuser",
                                         submit="maxsubmitjobsperuser")),
                           (accounts, _caps(row, at, jobs="maxjobsperaccount",
                                            tres="maxtresperaccount",
                                            submit="maxsubmitjobsperaccount"))):
            if caps:
                into[name] = caps
    return SiteLimits(qos=qos, qos_users=users, qos_accounts=accounts)


def parse_usage(text: str, where: str = "sshare") -> SiteLimits:
    """``sshare -a -P -o account,user,grptresraw,tresrunmins``: the TRES-minutes each
    association used (decayed, running jobs included; an account's counts its whole
    subtree) and Slurm's count of those its running jobs hold, as ``SiteLimits.used`` and
    ``run_mins``."""
    used: dict[tuple, Tres] = {}
    running: dict[tuple, Tres] = {}
    for row in _rows(text, where, tuple(USAGE_FORMAT.split(",")), "account"):
        account, user = row.get("account", ""), row.get("user", "")
        key = ("user", account, user) if user else ("account", account)
        at = f"{where}: {account} {user}".strip()
        for into, column in ((used, "grptresraw"), (running, "tresrunmins")):
            amount = _tres(row.get(column, ""), at, column)
            if amount:
                into[key] = amount
    return SiteLimits(used=used, run_mins=running)


def parse_qos_usage(text: str, where: str = "scontrol show assoc_mgr flags=qos"
                    ) -> SiteLimits:
    """``scontrol show assoc_mgr flags=qos``: the TRES-minutes each QOS used and those its
    running jobs hold (the amounts in parentheses after each ``GrpTRESMins`` and
    ``GrpTRESRunMins`` item, ``node=50(12)``), keyed ``("qos", name)``."""
    out: dict = {"GrpTRESMins": {}, "GrpTRESRunMins": {}}
    name = None
    for line in text.splitlines():
        for word in line.split():
            key, _, value = word.partition("=")
            if key == "QOS":
                name = value.partition("(")[0]
            elif key in out and name is not None:
                found = {}
                for item in value.split(","):
                    tres, _, amount = item.partition("=")
                    used = amount.partition("(")[2].rstrip(")")
                    if tres in ("node", "cpu") and used:
                        found[tres] = _number(used, f"{where}: QOS {name}", f"{tres} used")
                if found:
                    out[key][("qos", name)] = Tres(found.get("node"), found.get("cpu"))
    return SiteLimits(used=out["GrpTRESMins"], run_mins=out["GrpTRESRunMins"])


def parse_limits_dump(text: str, where: str) -> SiteLimits:
    """One saved text of ``sacctmgr show assoc``, ``sacctmgr show qos`` or ``sshare``,
    told apart by its header (first column ``Account`` with ``GrpTRESRaw``: sshare;
    ``Name``: a QOS list; else the association tree, headerless in ``ASSOC_SHORT``)."""
    head = next((x.strip().lower() for x in text.splitlines() if x.strip()), "")
    names = [_ALIASES.get(c.strip(), c.strip()) for c in head.split("|")]
    if names[0] == "name":
        return parse_qos_limits(text, where)
    if names[0] == "account" and "grptresraw" in names:
        return parse_usage(text, where)
    return parse_assoc_limits(text, where)


def merged(parts: list[SiteLimits]) -> SiteLimits:
    """The limits of several texts together (``parse_limits_dump``): each part's maps
    joined, a later one's entries over an earlier one's."""
    out = SiteLimits()
    for part in parts:
        out = replace(out, **{name: {**getattr(out, name), **getattr(part, name)} for name in (
            "users", "accounts", "qos", "qos_users", "qos_accounts", "parents", "used",
            "run_mins")},
            safe=out.safe or part.safe)
    return out


__all__ = ["ASSOC_FORMAT", "QOS_FORMAT", "USAGE_FORMAT", "LimitsTextError",
           "merged", "parse_assoc_limits", "parse_limits_dump", "parse_qos_limits",
           "parse_qos_usage", "parse_usage"]
